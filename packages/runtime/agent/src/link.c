/*
 * The agent's link to the host: sending frames (queued, flushed once per
 * loop turn), connecting out with CAP_DAC_OVERRIDE raised for that call
 * only, parking before a checkpoint, waking, and retrying with a backoff
 * after the host went away.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/capability.h>

#include "agent.h"

/* Above this much unsent output the agent stops reading its children until the host catches up. */
#define OUTGOING_HIGH (1024 * 1024)

#define RETRY_MAX_MS 1000

/* ---- sending ---- */

bool link_ready(void) {
  return agent.link == LINK_CONNECTED;
}

bool outgoing_full(void) {
  return buffer_size(&agent.outgoing) > OUTGOING_HIGH;
}

void connection_interest(void) {
  if (agent.connection < 0) return;
  struct epoll_event event = {.events = EPOLLIN | (buffer_size(&agent.outgoing) ? EPOLLOUT : 0), .data.u64 = watch_of(WATCH_CONNECTION, 0, 0)};
  epoll_ctl(agent.epoll, EPOLL_CTL_MOD, agent.connection, &event);
}

void link_lost(const char *why);

void flush_outgoing(void) {
  while (agent.connection >= 0 && buffer_size(&agent.outgoing) > 0) {
    ssize_t sent = send(agent.connection, agent.outgoing.data + agent.outgoing.start, buffer_size(&agent.outgoing), MSG_NOSIGNAL);
    if (sent > 0) {
      bool was_full = outgoing_full();
      buffer_consume(&agent.outgoing, (size_t)sent);
      if (was_full && !outgoing_full()) streams_refresh_all();
      continue;
    }
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    link_lost("sending to the host failed");
    return;
  }
  connection_interest();
}

/* Frames are queued and flushed at the end of each loop turn, so one turn's frames leave in one write. */
static size_t begin(uint8_t type, uint8_t flags, uint32_t stream) {
  return frame_begin(&agent.outgoing, type, flags, stream);
}

static void finish(size_t frame) {
  frame_finish(&agent.outgoing, frame);
}

void send_simple(uint8_t type, uint8_t flags, uint32_t stream) {
  if (!link_ready()) return;
  finish(begin(type, flags, stream));
}

void send_error(uint32_t stream, int error, const char *message, const char *detail) {
  if (!link_ready()) return;
  size_t frame = begin(MSG_ERROR, 0, stream);
  field_int(&agent.outgoing, TAG_ERRNO, error);
  field_string(&agent.outgoing, TAG_MESSAGE, message);
  if (detail) field_string(&agent.outgoing, TAG_DETAIL, detail);
  finish(frame);
}

/* Starts an OK frame; the caller adds fields to agent.outgoing and calls frame_finish. */
void send_ok_begin(uint32_t stream, size_t *frame) {
  *frame = begin(MSG_OK, 0, stream);
}

void send_data(uint32_t stream, uint8_t channel, const void *bytes, size_t count) {
  if (!link_ready()) return;
  size_t frame = begin(MSG_DATA, channel, stream);
  buffer_append(&agent.outgoing, bytes, count);
  finish(frame);
}

void send_window(uint32_t stream, uint8_t channel, int64_t bytes) {
  if (!link_ready()) return;
  size_t frame = begin(MSG_WINDOW, channel, stream);
  field_int(&agent.outgoing, TAG_BYTES, bytes);
  finish(frame);
}

/* ---- the link ---- */

static void send_hello(void) {
  size_t frame = begin(MSG_HELLO, 0, 0);
  field_int(&agent.outgoing, TAG_PROTOCOL_MAJOR, PROTOCOL_MAJOR);
  field_int(&agent.outgoing, TAG_PROTOCOL_MINOR, PROTOCOL_MINOR);
  field_string(&agent.outgoing, TAG_AGENT_VERSION, AGENT_VERSION);
  field_int(&agent.outgoing, TAG_PID, getpid());
  field_int(&agent.outgoing, TAG_CONNECTS, agent.connects);
  field_string(&agent.outgoing, TAG_MODE, agent.host_mode ? "host" : "sandbox");
  finish(frame);
}

void link_attach(int fd) {
  agent.connection = fd;
  agent.link = LINK_CONNECTED;
  agent.connects++;
  agent.retry_delay_ms = LINK_RETRY_FIRST_MS;
  buffer_free(&agent.incoming);
  buffer_free(&agent.outgoing);
  struct epoll_event event = {.events = EPOLLIN, .data.u64 = watch_of(WATCH_CONNECTION, 0, 0)};
  epoll_ctl(agent.epoll, EPOLL_CTL_ADD, fd, &event);
  send_hello();
}

/* One attempt; the socket dir is readable only with CAP_DAC_OVERRIDE, which only this call raises. */
bool link_try_connect(void) {
  if (!agent.socket_path) return false;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  struct sockaddr_un address = {.sun_family = AF_UNIX};
  strncpy(address.sun_path, agent.socket_path, sizeof address.sun_path - 1);
  int raised = agent.host_mode ? 0 : capability_raise(CAP_DAC_OVERRIDE);
  int connected = connect(fd, (struct sockaddr *)&address, sizeof address);
  if (!agent.host_mode && raised == 0) capability_lower(CAP_DAC_OVERRIDE);
  if (connected != 0) {
    close(fd);
    return false;
  }
  fcntl(fd, F_SETFL, O_NONBLOCK);
  link_attach(fd);
  return true;
}

void link_detach(void) {
  if (agent.connection >= 0) {
    epoll_ctl(agent.epoll, EPOLL_CTL_DEL, agent.connection, NULL);
    close(agent.connection);
  }
  agent.connection = -1;
  buffer_free(&agent.incoming);
  buffer_free(&agent.outgoing);
}

void link_lost(const char *why) {
  log_line("airlock-agent: link to the host lost (%s)", why);
  /* Calls in flight die with their caller, like an aborted call. */
  agent.link = LINK_RETRYING;
  streams_drop_all();
  link_detach();
  if (agent.inherited_fd >= 0) exit(0);
  agent.retry_at_ms = now_ms() + agent.retry_delay_ms;
}

void link_park(uint32_t stream) {
  if (streams_open_count() > 0) {
    send_error(stream, EBUSY, "streams are still open; end them before parking", NULL);
    return;
  }
  send_simple(MSG_PARKED, 0, stream);
  /* Everything queued goes out before the socket closes: the host waits for PARKED, then EOF. */
  int flags = fcntl(agent.connection, F_GETFL);
  fcntl(agent.connection, F_SETFL, flags & ~O_NONBLOCK);
  while (buffer_size(&agent.outgoing) > 0) {
    ssize_t sent = send(agent.connection, agent.outgoing.data + agent.outgoing.start, buffer_size(&agent.outgoing), MSG_NOSIGNAL);
    if (sent <= 0 && errno != EINTR) break;
    if (sent > 0) buffer_consume(&agent.outgoing, (size_t)sent);
  }
  link_detach();
  agent.link = LINK_PARKED;
  if (agent.inherited_fd >= 0) exit(0);
}

/* Woken by SIGUSR1, or by the EINTR that a restore brings: try the host now. */
void link_wake(void) {
  if (agent.link == LINK_CONNECTED) return;
  if (!link_try_connect() && agent.link == LINK_RETRYING) agent.retry_at_ms = now_ms() + agent.retry_delay_ms;
}

void link_retry_due(void) {
  if (agent.link != LINK_RETRYING || now_ms() < agent.retry_at_ms) return;
  if (link_try_connect()) return;
  agent.retry_delay_ms = agent.retry_delay_ms * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : agent.retry_delay_ms * 2;
  agent.retry_at_ms = now_ms() + agent.retry_delay_ms;
}
