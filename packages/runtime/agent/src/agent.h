/*
 * State shared by the agent's parts: the link to the host, the streams
 * (one per exec, file transfer or port relay) and the epoll set that drives
 * them. The agent is single-threaded: every handler runs to completion from
 * the event loop in main.c.
 */
#ifndef AIRLOCK_AGENT_H
#define AIRLOCK_AGENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "buffer.h"
#include "protocol.h"
#include "request.h"

/* How the agent reaches the host right now. */
enum link_state {
  LINK_CONNECTED,
  /* asked to park: no host fd open, waits for SIGUSR1 (or the EINTR a restore brings) */
  LINK_PARKED,
  /* lost the host without being asked: retries with a backoff */
  LINK_RETRYING,
};

enum stream_kind {
  STREAM_FREE = 0,
  STREAM_EXEC,
  STREAM_READ,
  STREAM_WRITE,
  STREAM_RELAY,
};

/* One fd of a stream: a source of one output channel, a sink of the input, or both (pty, socket). */
struct endpoint {
  int fd;
  /* output channel this fd feeds, or -1 */
  int channel;
  /* host input (channel 0) is written to this fd */
  bool takes_input;
  bool eof;
  bool in_epoll;
  uint32_t events;
};

#define STREAM_ENDPOINTS 3

struct stream {
  enum stream_kind kind;
  uint32_t id;
  struct endpoint endpoints[STREAM_ENDPOINTS];
  /* bytes the agent may still send per output channel */
  int64_t send_window[3];
  /* host input waiting to be written, and flow control of it */
  struct buffer input;
  bool input_ended;
  bool input_broken;
  int64_t input_allowance;
  int64_t input_consumed;
  /* exec */
  pid_t pid;
  bool exited;
  int wait_status;
  bool pty;
  /* a pty's slave side may deliver the last output a moment after the exit (gVisor): wait until then */
  int64_t drain_deadline_ms;
  bool detach;
  int error_pipe;
  struct buffer error_text;
  /* file read */
  int file_fd;
  int64_t offset;
  int64_t remaining;
  int64_t size;
  int64_t sent;
  /* file write */
  int directory_fd;
  char temp_name[48];
  char *final_name;
  int64_t written;
  /* relay */
  bool connecting;
  bool output_closed;
};

/* Everything the agent owns. */
struct agent {
  int epoll;
  int signal_fd;
  int connection;
  enum link_state link;
  struct buffer incoming;
  struct buffer outgoing;
  const char *socket_path;
  /* a connected socket handed over at start (tests); the agent exits when it closes */
  int inherited_fd;
  /* run as a plain host process: no mounts, capabilities or identity changes */
  bool host_mode;
  int root_fd;
  int devnull;
  int64_t connects;
  int64_t retry_delay_ms;
  int64_t retry_at_ms;
  int64_t booted_ms;
  struct stream streams[MAX_STREAMS];
};

extern struct agent agent;

/* epoll data: what an event is about. */
enum watch_kind {
  WATCH_CONNECTION = 1,
  WATCH_SIGNALS,
  WATCH_ENDPOINT,
  WATCH_ERROR_PIPE,
  WATCH_DISCARD,
};
uint64_t watch_of(enum watch_kind kind, unsigned slot, unsigned index);

int64_t now_ms(void);
void log_line(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* link.c: sending to the host, and the link's states. */
#define LINK_RETRY_FIRST_MS 20
bool link_ready(void);
void flush_outgoing(void);
void link_attach(int fd);
bool link_try_connect(void);
void link_lost(const char *why);
void link_park(uint32_t stream);
void link_wake(void);
void link_retry_due(void);
void send_error(uint32_t stream, int error, const char *message, const char *detail);
void send_ok_begin(uint32_t stream, size_t *frame);
void send_simple(uint8_t type, uint8_t flags, uint32_t stream);
void send_data(uint32_t stream, uint8_t channel, const void *bytes, size_t count);
void send_window(uint32_t stream, uint8_t channel, int64_t bytes);
bool outgoing_full(void);

/* streams.c */
struct stream *stream_open(uint32_t id, enum stream_kind kind);
struct stream *stream_find(uint32_t id);
unsigned stream_slot(const struct stream *stream);
void stream_close(struct stream *stream);
void stream_refresh(struct stream *stream);
void streams_refresh_all(void);
int stream_add_endpoint(struct stream *stream, int fd, int channel, bool takes_input);
/* Reads an endpoint's fd into DATA frames while the window allows: 1 EOF, 0 drained (EAGAIN), -1 held by the window. */
int stream_pump_endpoint(struct stream *stream, struct endpoint *endpoint);
void stream_write_input(struct stream *stream, struct endpoint *endpoint);
void stream_accept_input(struct stream *stream, const uint8_t *bytes, size_t count);
void stream_grant_input(struct stream *stream, size_t consumed);
void stream_close_finished_input(struct stream *stream);
void stream_on_window(struct stream *stream, uint8_t channel, int64_t bytes);
void stream_on_event(unsigned slot, unsigned index, uint32_t events);
void discard_add(int fd);
void discard_on_event(unsigned slot);
void streams_drop_all(void);
size_t streams_open_count(void);

/* exec.c */
void exec_start(uint32_t id, struct request *request);
void exec_reaped(pid_t pid, int status);
void exec_signal(struct stream *stream, int signal);
void exec_resize(struct stream *stream, int64_t rows, int64_t columns);
void exec_try_finish(struct stream *stream);
void exec_on_error_pipe(unsigned slot);
void exec_cancel(struct stream *stream);
/* Milliseconds until the next drain deadline of a pty, or -1 when none. */
int exec_next_deadline(void);
void exec_deadlines_due(void);
size_t exec_children(void);

/* files.c */
void files_handle(uint8_t type, uint32_t id, struct request *request);
void files_read_pump(struct stream *stream);
void files_write_data(struct stream *stream, const uint8_t *bytes, size_t count);
void files_write_end(struct stream *stream);
void files_write_cancel(struct stream *stream);

/* relay.c */
void relay_start(uint32_t id, struct request *request);
void relay_connected(struct stream *stream);
void relay_try_finish(struct stream *stream);

/* system.c */
void system_boot(void);
void system_processes(uint32_t id);
void system_kill(uint32_t id, struct request *request);
void system_identity(uint32_t id, struct request *request);
int capability_raise(int capability);
void capability_lower(int capability);
/* In a child about to exec: drops every privilege the agent keeps for itself. */
void capabilities_drop_for_child(void);
/* pins.c: binds each parent of a rule's mount onto itself (the host's list); 0, or -1 when one failed. */
int pins_apply(void);
/* Refuses every mount-changing call to the agent and all it starts (seccomp.c); 0, or -1 with errno. */
int seccomp_lock_mounts(void);

#endif
