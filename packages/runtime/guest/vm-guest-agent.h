/*
 * Shared declarations of the microVM guest agent (see vm-guest-agent.c for
 * what it is and guest-protocol.ts for the wire format).
 */
#ifndef AIRLOCK_VM_GUEST_AGENT_H
#define AIRLOCK_VM_GUEST_AGENT_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define AGENT_VERSION "airlock-vm-agent/1"
#define SYNC_MAGIC "\0" "AIRLOCK-SYNC-v1" /* split: a hex escape would swallow the A */
#define SYNC_MAGIC_BYTES 16
#define HEADER_BYTES 9 /* u32 length (of type + stream + payload), u8 type, u32 stream */
#define MAX_FRAME (1024 * 1024)
#define CHUNK 65536
#define MAX_STREAMS 256
#define OUTPUT_HIGH_WATER (1024 * 1024)
#define WORKLOAD_CGROUP "/sys/fs/cgroup/workload"

/* Host → guest. */
enum { H_HELLO = 1, H_EXEC = 2, H_STDIN = 3, H_STDIN_END = 4, H_SIGNAL = 5, H_IDENTITY = 6, H_FREEZE = 7, H_THAW = 8 };
/* Guest → host. */
enum { G_HELLO = 64, G_STARTED = 65, G_STDOUT = 66, G_STDERR = 67, G_EXITED = 68, G_OK = 69, G_ERROR = 70 };
/* EXEC flags. */
/* EXEC flags: a stdin pipe; outside the workload cgroup (the driver's own work: never frozen, not counted). */
enum { EXEC_STDIN = 1, EXEC_OUTSIDE_WORKLOAD = 2 };

struct buffer {
  unsigned char *data;
  size_t length;
  size_t capacity;
};

struct stream {
  int used;
  uint32_t id;
  pid_t pid;
  int in_fd, out_fd, err_fd;
  struct buffer pending_input;
  int input_ended;
  int exited;
};


/* The host connection and the commands in flight, owned by vm-guest-agent.c. */
extern int port;
extern int null_fd;
extern int connected;
extern int synced;
extern struct buffer inbound, outbound;
extern struct stream streams[MAX_STREAMS];

/* Buffers, framing and errors (vm-guest-agent.c). */
void die(const char *what);
void append(struct buffer *buffer, const void *data, size_t length);
void consume(struct buffer *buffer, size_t length);
void put32(unsigned char *at, uint32_t value);
uint32_t get32(const unsigned char *at);
void send_frame(int type, uint32_t stream, const void *payload, size_t length);
void send_error(uint32_t stream, const char *format, const char *detail);

/* Commands (guest-commands.c). */
struct stream *find_stream(uint32_t id);
void close_fd(int *fd);
void release_stream(struct stream *stream);
int pump_output(struct stream *stream, int *fd, int type, int forward, int bounded);
void write_pending_input(struct stream *stream);
void reap_children(void);
void start_command(uint32_t id, const unsigned char *payload, size_t length);

/* Identity and the workload's freezer (guest-identity.c). */
void set_frozen(uint32_t id, int frozen);
void apply_identity(uint32_t id, const unsigned char *payload, size_t length);

#endif
