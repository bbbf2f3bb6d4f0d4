/*
 * The microVM guest agent: pid 1 of every Airlock microVM (after the
 * initramfs's /init switched to the real root). It speaks one small framed
 * protocol with the host over a virtio-serial port (drivers/qemu/
 * guest-protocol.ts is the other side, and its header comment is the
 * protocol's reference): run commands with streamed stdin/stdout/stderr and
 * their exit code, signal their process group, freeze and thaw every
 * command's process (the `workload` cgroup) around a snapshot, and give a
 * restored machine its own identity (credited entropy and a CRNG reseed,
 * hostname, machine id) before anything else runs.
 *
 * Interim: the shared in-sandbox agent (packages/runtime/agent, one protocol
 * for gVisor and microVMs) replaces this file once it speaks over a
 * virtio-serial port; see docs/decisions/0016-microvm-driver.md.
 *
 * Single-threaded: one poll loop over the port, a signalfd (SIGCHLD, and
 * SIGIO from the port when the host side connects or goes away), and the
 * pipes of running commands. This file holds the loop, the connection and
 * the framing; guest-commands.c the commands; guest-identity.c identity and
 * the freezer. Built static (gcc -static -Os *.c) by drivers/qemu/guest-kit.ts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vm-guest-agent.h"

int port = -1;
int null_fd = -1;
static const char *port_path;
int connected;
int synced;
struct buffer inbound, outbound;
struct stream streams[MAX_STREAMS];

void die(const char *what) {
  fprintf(stderr, "airlock-vm-agent: %s: %s\n", what, strerror(errno));
  /* pid 1 exiting panics the kernel: the host sees the machine die, which is the truth. */
  exit(1);
}

static void reserve(struct buffer *buffer, size_t extra) {
  if (buffer->length + extra <= buffer->capacity) return;
  size_t capacity = buffer->capacity ? buffer->capacity : 4096;
  while (capacity < buffer->length + extra) capacity *= 2;
  unsigned char *grown = realloc(buffer->data, capacity);
  if (!grown) die("out of memory");
  buffer->data = grown;
  buffer->capacity = capacity;
}

void append(struct buffer *buffer, const void *data, size_t length) {
  reserve(buffer, length);
  memcpy(buffer->data + buffer->length, data, length);
  buffer->length += length;
}

void consume(struct buffer *buffer, size_t length) {
  memmove(buffer->data, buffer->data + length, buffer->length - length);
  buffer->length -= length;
}

void put32(unsigned char *at, uint32_t value) {
  for (int i = 0; i < 4; i++) at[i] = (unsigned char)(value >> (8 * i));
}

uint32_t get32(const unsigned char *at) {
  return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

/* Queues one frame for the host; dropped while no host is connected (nobody would read it). */
void send_frame(int type, uint32_t stream, const void *payload, size_t length) {
  if (!connected || !synced) return;
  unsigned char header[HEADER_BYTES];
  put32(header, (uint32_t)(length + 5));
  header[4] = (unsigned char)type;
  put32(header + 5, stream);
  append(&outbound, header, sizeof header);
  if (length) append(&outbound, payload, length);
}

void send_error(uint32_t stream, const char *format, const char *detail) {
  char message[512];
  snprintf(message, sizeof message, format, detail, strerror(errno));
  send_frame(G_ERROR, stream, message, strlen(message));
}

static void flush_outbound(void) {
  while (outbound.length > 0) {
    ssize_t written = write(port, outbound.data, outbound.length);
    if (written > 0) {
      consume(&outbound, (size_t)written);
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    return; /* EAGAIN: poll says when; EPIPE and friends: the host went away, HUP handles it */
  }
}

static void handle_frame(int type, uint32_t id, const unsigned char *payload, size_t length) {
  struct stream *stream = find_stream(id);
  switch (type) {
  case H_EXEC:
    start_command(id, payload, length);
    break;
  case H_STDIN:
    if (stream && !stream->input_ended && stream->in_fd >= 0) {
      append(&stream->pending_input, payload, length);
      write_pending_input(stream);
    }
    break;
  case H_STDIN_END:
    if (stream) {
      stream->input_ended = 1;
      write_pending_input(stream);
    }
    break;
  case H_SIGNAL:
    /* The group exists once the child ran setsid(); a signal that comes sooner goes to the child itself. */
    if (stream && !stream->exited && length >= 4 && kill(-stream->pid, (int)get32(payload)) < 0) kill(stream->pid, (int)get32(payload));
    break;
  case H_IDENTITY:
    apply_identity(id, payload, length);
    break;
  case H_FREEZE:
  case H_THAW:
    set_frozen(id, type == H_FREEZE);
    break;
  default:
    errno = EINVAL;
    send_error(id, "unknown request type (%s): %s", "?");
  }
}

/* Forget every stream's host side (their processes run on, their output is dropped): a new host numbers
   its streams from 1 again. */
static void forget_host_streams(void) {
  for (int i = 0; i < MAX_STREAMS; i++) {
    if (!streams[i].used) continue;
    close_fd(&streams[i].in_fd);
    streams[i].id = 0xffffffffu - (uint32_t)i; /* no host id reaches these */
    if (streams[i].exited && streams[i].out_fd < 0 && streams[i].err_fd < 0) release_stream(&streams[i]);
  }
}

/* A new host connection. */
static void reset_connection(void) {
  inbound.length = 0;
  outbound.length = 0;
  synced = 0;
  forget_host_streams();
}

static void parse_inbound(void) {
  for (;;) {
    if (!synced) {
      /* Bytes from before this connection may precede the host's hello: skip to the sync magic. */
      unsigned char *found = memmem(inbound.data, inbound.length, SYNC_MAGIC, SYNC_MAGIC_BYTES);
      if (!found) {
        if (inbound.length > SYNC_MAGIC_BYTES) consume(&inbound, inbound.length - SYNC_MAGIC_BYTES);
        return;
      }
      consume(&inbound, (size_t)(found - inbound.data) + SYNC_MAGIC_BYTES);
      synced = 1;
      /* Only a new host sends the magic. A VM restored from a memory image never saw its old host go
         (no POLLHUP): without this its streams keep ids the new host hands out again ("stream id is in use"). */
      forget_host_streams();
      outbound.length = 0;
      append(&outbound, SYNC_MAGIC, SYNC_MAGIC_BYTES);
    }
    if (inbound.length < HEADER_BYTES) return;
    uint32_t length = get32(inbound.data);
    if (length < 5 || length > MAX_FRAME) {
      synced = 0; /* garbage: wait for the host to sync again */
      continue;
    }
    if (inbound.length < 4 + (size_t)length) return;
    int type = inbound.data[4];
    uint32_t id = get32(inbound.data + 5);
    if (type == H_HELLO) {
      /* The reply echoes the host's nonce, then names this agent. */
      struct buffer hello = {0};
      append(&hello, inbound.data + HEADER_BYTES, length - 5);
      append(&hello, AGENT_VERSION, strlen(AGENT_VERSION));
      send_frame(G_HELLO, id, hello.data, hello.length);
      free(hello.data);
    } else {
      handle_frame(type, id, inbound.data + HEADER_BYTES, length - 5);
    }
    consume(&inbound, 4 + (size_t)length);
  }
}

static int host_is_connected(void) {
  struct pollfd probe = {.fd = port, .events = POLLIN};
  if (poll(&probe, 1, 0) < 0) return 0;
  return !(probe.revents & POLLHUP);
}

static void drain_port(void) {
  unsigned char chunk[CHUNK];
  while (read(port, chunk, sizeof chunk) > 0) {
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s /dev/vportNpM\n", argv[0]);
    return 2;
  }
  port_path = argv[1];
  for (int i = 0; i < MAX_STREAMS; i++) streams[i].in_fd = streams[i].out_fd = streams[i].err_fd = -1;
  signal(SIGPIPE, SIG_IGN);
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  sigaddset(&handled, SIGIO);
  sigprocmask(SIG_BLOCK, &handled, NULL);
  int signals = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  if (signals < 0) die("signalfd");
  struct stat null_info;
  null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0 || fstat(null_fd, &null_info) < 0 || !S_ISCHR(null_info.st_mode)) die("/dev/null is not a character device");
  port = open(port_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (port < 0) die(port_path);
  /* The port raises SIGIO when the host side connects or goes away: no polling while disconnected. */
  fcntl(port, F_SETOWN, getpid());
  fcntl(port, F_SETFL, fcntl(port, F_GETFL) | O_ASYNC);
  connected = host_is_connected();

  struct pollfd fds[2 + 2 * MAX_STREAMS];
  struct stream *owners[2 + 2 * MAX_STREAMS];
  int kinds[2 + 2 * MAX_STREAMS];
  for (;;) {
    int count = 0;
    fds[count] = (struct pollfd){.fd = signals, .events = POLLIN};
    owners[count] = NULL, kinds[count++] = 0;
    if (connected) {
      fds[count] = (struct pollfd){.fd = port, .events = POLLIN | (outbound.length ? POLLOUT : 0)};
      owners[count] = NULL, kinds[count++] = 1;
    }
    int reading = outbound.length <= OUTPUT_HIGH_WATER;
    for (int i = 0; i < MAX_STREAMS; i++) {
      struct stream *stream = &streams[i];
      if (!stream->used) continue;
      /* Output of finished commands (background writers) is drained whatever the host does. */
      if (stream->out_fd >= 0 && (reading || stream->exited)) {
        fds[count] = (struct pollfd){.fd = stream->out_fd, .events = POLLIN};
        owners[count] = stream, kinds[count++] = 2;
      }
      if (stream->err_fd >= 0 && (reading || stream->exited)) {
        fds[count] = (struct pollfd){.fd = stream->err_fd, .events = POLLIN};
        owners[count] = stream, kinds[count++] = 3;
      }
      if (stream->in_fd >= 0 && stream->pending_input.length > 0) {
        fds[count] = (struct pollfd){.fd = stream->in_fd, .events = POLLOUT};
        owners[count] = stream, kinds[count++] = 4;
      }
    }
    /* A timeout as a safety net: a lost SIGIO costs at most a second of deafness. */
    if (poll(fds, (nfds_t)count, connected ? -1 : 1000) < 0 && errno != EINTR) die("poll");
    for (int i = 0; i < count; i++) {
      if (!fds[i].revents) continue;
      struct stream *stream = owners[i];
      switch (kinds[i]) {
      case 0: {
        struct signalfd_siginfo info;
        while (read(signals, &info, sizeof info) == sizeof info) {
        }
        reap_children();
        break;
      }
      case 1:
        if (fds[i].revents & POLLIN) {
          unsigned char chunk[CHUNK];
          ssize_t got;
          while ((got = read(port, chunk, sizeof chunk)) > 0) append(&inbound, chunk, (size_t)got);
          parse_inbound();
        }
        if (fds[i].revents & POLLOUT) flush_outbound();
        if (fds[i].revents & (POLLHUP | POLLERR)) {
          connected = 0;
          drain_port();
          reset_connection();
        }
        break;
      case 2:
      case 3: {
        int *fd = kinds[i] == 2 ? &stream->out_fd : &stream->err_fd;
        if (*fd >= 0 && stream->used) pump_output(stream, fd, kinds[i] == 2 ? G_STDOUT : G_STDERR, !stream->exited, 1);
        if (stream->used && stream->exited && stream->out_fd < 0 && stream->err_fd < 0) release_stream(stream);
        break;
      }
      case 4:
        if (stream->used) write_pending_input(stream);
        break;
      }
    }
    if (!connected && host_is_connected()) {
      /* Not drained: the new host's hello may already wait in the port; stale bytes before it are
         skipped by the sync search. */
      connected = 1;
      reset_connection();
    }
    if (connected) flush_outbound();
  }
}
