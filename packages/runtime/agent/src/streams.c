/*
 * Streams: the table of open exec, file and relay streams, their fds in the
 * epoll set, and flow control. An output fd is read only while the host has
 * granted window for its channel and the outgoing queue is not full, so the
 * agent's memory stays bounded however fast a command prints. Input from the
 * host is accepted up to the window the agent granted, and more is granted
 * as it is written out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "agent.h"

/* Output fds of commands that ended while something else still held them: drained and dropped. */
#define MAX_DISCARDS 512
static int discards[MAX_DISCARDS];
static bool discards_ready;

unsigned stream_slot(const struct stream *stream) {
  return (unsigned)(stream - agent.streams);
}

struct stream *stream_find(uint32_t id) {
  for (unsigned i = 0; i < MAX_STREAMS; i++) {
    if (agent.streams[i].kind != STREAM_FREE && agent.streams[i].id == id) return &agent.streams[i];
  }
  return NULL;
}

size_t streams_open_count(void) {
  size_t count = 0;
  for (unsigned i = 0; i < MAX_STREAMS; i++) count += agent.streams[i].kind != STREAM_FREE;
  return count;
}

struct stream *stream_open(uint32_t id, enum stream_kind kind) {
  for (unsigned i = 0; i < MAX_STREAMS; i++) {
    struct stream *stream = &agent.streams[i];
    if (stream->kind != STREAM_FREE) continue;
    memset(stream, 0, sizeof *stream);
    stream->kind = kind;
    stream->id = id;
    for (int e = 0; e < STREAM_ENDPOINTS; e++) stream->endpoints[e].fd = -1;
    for (int c = 0; c < 3; c++) stream->send_window[c] = INITIAL_WINDOW;
    stream->input_allowance = INITIAL_WINDOW;
    stream->error_pipe = -1;
    stream->file_fd = -1;
    stream->directory_fd = -1;
    return stream;
  }
  return NULL;
}

static void endpoint_release(struct endpoint *endpoint, bool keep_draining) {
  if (endpoint->fd < 0) return;
  if (endpoint->in_epoll) epoll_ctl(agent.epoll, EPOLL_CTL_DEL, endpoint->fd, NULL);
  if (keep_draining && endpoint->channel >= 0 && !endpoint->eof && !endpoint->takes_input) discard_add(endpoint->fd);
  else close(endpoint->fd);
  endpoint->fd = -1;
  endpoint->in_epoll = false;
}

/*
 * Frees the stream. Output pipes nobody reached the end of keep being
 * drained: a background process of the command may still write to them and
 * must neither block nor die of SIGPIPE.
 */
void stream_close(struct stream *stream) {
  for (int e = 0; e < STREAM_ENDPOINTS; e++) endpoint_release(&stream->endpoints[e], stream->kind == STREAM_EXEC && !stream->pty);
  if (stream->error_pipe >= 0) {
    epoll_ctl(agent.epoll, EPOLL_CTL_DEL, stream->error_pipe, NULL);
    close(stream->error_pipe);
  }
  if (stream->file_fd >= 0) close(stream->file_fd);
  if (stream->directory_fd >= 0) close(stream->directory_fd);
  free(stream->final_name);
  buffer_free(&stream->input);
  buffer_free(&stream->error_text);
  stream->kind = STREAM_FREE;
}

int stream_add_endpoint(struct stream *stream, int fd, int channel, bool takes_input) {
  for (int e = 0; e < STREAM_ENDPOINTS; e++) {
    struct endpoint *endpoint = &stream->endpoints[e];
    if (endpoint->fd >= 0) continue;
    *endpoint = (struct endpoint){.fd = fd, .channel = channel, .takes_input = takes_input};
    return e;
  }
  return -1;
}

/* Puts the fd in epoll for what it can do now; takes it out when it can do nothing (a hung-up pipe would spin). */
static void endpoint_refresh(struct stream *stream, unsigned index) {
  struct endpoint *endpoint = &stream->endpoints[index];
  if (endpoint->fd < 0) return;
  uint32_t wanted = 0;
  if (endpoint->channel >= 0 && !endpoint->eof && stream->send_window[endpoint->channel] > 0 && !outgoing_full() && !stream->connecting) wanted |= EPOLLIN;
  if (endpoint->takes_input && !stream->input_broken && (buffer_size(&stream->input) > 0 || stream->connecting)) wanted |= EPOLLOUT;
  if (wanted == 0) {
    if (endpoint->in_epoll) epoll_ctl(agent.epoll, EPOLL_CTL_DEL, endpoint->fd, NULL);
    endpoint->in_epoll = false;
    return;
  }
  struct epoll_event event = {.events = wanted, .data.u64 = watch_of(WATCH_ENDPOINT, stream_slot(stream), index)};
  if (!endpoint->in_epoll) {
    if (epoll_ctl(agent.epoll, EPOLL_CTL_ADD, endpoint->fd, &event) == 0) endpoint->in_epoll = true;
  } else if (endpoint->events != wanted) {
    epoll_ctl(agent.epoll, EPOLL_CTL_MOD, endpoint->fd, &event);
  }
  endpoint->events = wanted;
}

void stream_refresh(struct stream *stream) {
  for (unsigned e = 0; e < STREAM_ENDPOINTS; e++) endpoint_refresh(stream, e);
}

void streams_refresh_all(void) {
  for (unsigned i = 0; i < MAX_STREAMS; i++) {
    struct stream *stream = &agent.streams[i];
    if (stream->kind == STREAM_FREE) continue;
    if (stream->kind == STREAM_READ) files_read_pump(stream);
    else stream_refresh(stream);
  }
}

int stream_pump_endpoint(struct stream *stream, struct endpoint *endpoint) {
  static uint8_t chunk[DATA_CHUNK];
  if (endpoint->fd < 0 || endpoint->channel < 0 || endpoint->eof) return 1;
  while (stream->send_window[endpoint->channel] > 0 && !outgoing_full()) {
    size_t room = (size_t)stream->send_window[endpoint->channel];
    ssize_t got = read(endpoint->fd, chunk, room < sizeof chunk ? room : sizeof chunk);
    if (got > 0) {
      send_data(stream->id, (uint8_t)endpoint->channel, chunk, (size_t)got);
      stream->send_window[endpoint->channel] -= got;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    /* 0 is the end; EIO is how a pty master says its last slave closed */
    endpoint->eof = true;
    if (!endpoint->takes_input) {
      if (endpoint->in_epoll) epoll_ctl(agent.epoll, EPOLL_CTL_DEL, endpoint->fd, NULL);
      endpoint->in_epoll = false;
    }
    send_simple(MSG_END, (uint8_t)endpoint->channel, stream->id);
    return 1;
  }
  return -1;
}

/* Writes queued host input to the fd; grants the host more window for what left the queue. */
void stream_write_input(struct stream *stream, struct endpoint *endpoint) {
  size_t before = buffer_size(&stream->input);
  while (buffer_size(&stream->input) > 0 && !stream->input_broken) {
    ssize_t wrote = write(endpoint->fd, stream->input.data + stream->input.start, buffer_size(&stream->input));
    if (wrote > 0) {
      buffer_consume(&stream->input, (size_t)wrote);
      continue;
    }
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    /* The reader went away (EPIPE): the rest is dropped, and still granted, so the host never stalls. */
    stream->input_broken = true;
    buffer_consume(&stream->input, buffer_size(&stream->input));
  }
  stream_grant_input(stream, before - buffer_size(&stream->input));
}

/* A command's stdin is closed once the host ended it and all of it was written: the command sees EOF. */
void stream_close_finished_input(struct stream *stream) {
  if (!stream->input_ended || buffer_size(&stream->input) > 0) return;
  for (int e = 0; e < STREAM_ENDPOINTS; e++) {
    struct endpoint *endpoint = &stream->endpoints[e];
    if (endpoint->fd >= 0 && endpoint->takes_input && endpoint->channel < 0) endpoint_release(endpoint, false);
  }
}

void stream_grant_input(struct stream *stream, size_t consumed) {
  stream->input_consumed += (int64_t)consumed;
  /* Grant in halves of the window: fewer frames, and the host never waits for a full drain. */
  if (stream->input_consumed >= INITIAL_WINDOW / 2) {
    send_window(stream->id, CHANNEL_INPUT, stream->input_consumed);
    stream->input_allowance += stream->input_consumed;
    stream->input_consumed = 0;
  }
}

void stream_accept_input(struct stream *stream, const uint8_t *bytes, size_t count) {
  if ((int64_t)count > stream->input_allowance) {
    log_line("airlock-agent: the host overran the input window of stream %u", stream->id);
    count = (size_t)(stream->input_allowance > 0 ? stream->input_allowance : 0);
  }
  stream->input_allowance -= (int64_t)count;
  if (stream->kind == STREAM_WRITE) {
    files_write_data(stream, bytes, count);
    return;
  }
  if (stream->input_broken) {
    stream_grant_input(stream, count);
    return;
  }
  buffer_append(&stream->input, bytes, count);
  for (int e = 0; e < STREAM_ENDPOINTS; e++) {
    if (stream->endpoints[e].fd >= 0 && stream->endpoints[e].takes_input && !stream->connecting) stream_write_input(stream, &stream->endpoints[e]);
  }
  stream_refresh(stream);
}

void stream_on_window(struct stream *stream, uint8_t channel, int64_t bytes) {
  if (channel > 2 || bytes <= 0 || bytes > INT32_MAX) return;
  stream->send_window[channel] += bytes;
  if (stream->kind == STREAM_READ) {
    files_read_pump(stream);
    return;
  }
  stream_refresh(stream);
  if (stream->kind == STREAM_EXEC && stream->exited) exec_try_finish(stream);
}

void stream_on_event(unsigned slot, unsigned index, uint32_t events) {
  if (slot >= MAX_STREAMS || index >= STREAM_ENDPOINTS) return;
  struct stream *stream = &agent.streams[slot];
  if (stream->kind == STREAM_FREE) return;
  struct endpoint *endpoint = &stream->endpoints[index];
  if (endpoint->fd < 0) return;
  if (stream->kind == STREAM_RELAY && stream->connecting) {
    relay_connected(stream);
    return;
  }
  if ((events & EPOLLOUT) || ((events & (EPOLLERR | EPOLLHUP)) && endpoint->takes_input && endpoint->channel < 0)) {
    stream_write_input(stream, endpoint);
    if (stream->input_broken && endpoint->channel < 0) endpoint_release(endpoint, false);
  }
  if (endpoint->fd >= 0 && endpoint->channel >= 0 && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) stream_pump_endpoint(stream, endpoint);
  if (stream->kind == STREAM_EXEC) {
    stream_close_finished_input(stream);
    if (stream->exited) {
      exec_try_finish(stream);
      return;
    }
  }
  if (stream->kind == STREAM_RELAY) {
    relay_try_finish(stream);
    if (stream->kind == STREAM_FREE) return;
  }
  stream_refresh(stream);
}

void discard_add(int fd) {
  if (!discards_ready) {
    for (int i = 0; i < MAX_DISCARDS; i++) discards[i] = -1;
    discards_ready = true;
  }
  for (unsigned i = 0; i < MAX_DISCARDS; i++) {
    if (discards[i] >= 0) continue;
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = watch_of(WATCH_DISCARD, i, 0)};
    if (epoll_ctl(agent.epoll, EPOLL_CTL_ADD, fd, &event) != 0) break;
    discards[i] = fd;
    return;
  }
  /* Table full: the writer gets SIGPIPE from now on, as if nobody read its output. */
  close(fd);
}

void discard_on_event(unsigned slot) {
  static uint8_t sink[DATA_CHUNK];
  if (slot >= MAX_DISCARDS || discards[slot] < 0) return;
  for (;;) {
    ssize_t got = read(discards[slot], sink, sizeof sink);
    if (got > 0) continue;
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    epoll_ctl(agent.epoll, EPOLL_CTL_DEL, discards[slot], NULL);
    close(discards[slot]);
    discards[slot] = -1;
    return;
  }
}

/* The host went away: every stream's caller is gone, so commands are killed like an aborted call. */
void streams_drop_all(void) {
  for (unsigned i = 0; i < MAX_STREAMS; i++) {
    struct stream *stream = &agent.streams[i];
    if (stream->kind == STREAM_EXEC) exec_cancel(stream);
    else if (stream->kind == STREAM_WRITE) files_write_cancel(stream);
    else if (stream->kind != STREAM_FREE) stream_close(stream);
  }
}
