/*
 * airlock-agent: the first process (pid 1) of every Airlock gVisor machine.
 * It connects out to the host's Unix socket and serves one multiplexed
 * protocol (docs/agent-protocol.md) until it is asked to park before a
 * checkpoint; then it holds no host fd and waits to be woken.
 *
 *   airlock-agent                          in a sandbox: /.airlock/host/agent.sock, root /
 *   airlock-agent --connect PATH --root DIR   on the host, for tests
 *   airlock-agent --fd N --root DIR           on the host, over an inherited socket
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"

struct agent agent;

#define DEFAULT_SOCKET "/.airlock/host/agent.sock"

uint64_t watch_of(enum watch_kind kind, unsigned slot, unsigned index) {
  return (uint64_t)kind << 48 | (uint64_t)slot << 16 | index;
}

int64_t now_ms(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

void log_line(const char *format, ...) {
  char line[512];
  va_list arguments;
  va_start(arguments, format);
  int length = vsnprintf(line, sizeof line - 1, format, arguments);
  va_end(arguments);
  if (length < 0) return;
  if (length > (int)sizeof line - 2) length = sizeof line - 2;
  line[length++] = '\n';
  /* stderr is the sandbox log on the host; a full or closed one must not stop the agent */
  (void)!write(2, line, (size_t)length);
}

/* ---- requests from the host ---- */

static void pong(uint32_t stream) {
  size_t frame = frame_begin(&agent.outgoing, MSG_PONG, 0, stream);
  field_int(&agent.outgoing, TAG_CHILDREN, (int64_t)exec_children());
  field_int(&agent.outgoing, TAG_UPTIME_MS, now_ms() - agent.booted_ms);
  field_int(&agent.outgoing, TAG_PID, getpid());
  frame_finish(&agent.outgoing, frame);
}

/*
 * The end of a throw-away machine: everything it started is killed and the
 * agent exits, so the sandbox stops by itself, which runsc tears down far
 * faster than a `delete -force` of a running one (measured: ~0.3 s against
 * ~2 s). Answers OK first.
 */
static void shutdown_machine(uint32_t stream) {
  streams_drop_all();
  send_simple(MSG_OK, 0, stream);
  flush_outgoing();
  if (!agent.host_mode) kill(-1, SIGKILL);
  _exit(0);
}

/* Frames about an existing stream. Ones for a stream that already ended are late, not wrong: ignored. */
static void stream_message(uint8_t type, uint8_t flags, uint32_t id, const uint8_t *payload, uint32_t length) {
  struct stream *stream = stream_find(id);
  if (!stream) return;
  if (type == MSG_DATA && flags == CHANNEL_INPUT) {
    stream_accept_input(stream, payload, length);
    return;
  }
  if (type == MSG_END && flags == CHANNEL_INPUT) {
    stream->input_ended = true;
    if (stream->kind == STREAM_WRITE) files_write_end(stream);
    else if (stream->kind == STREAM_EXEC && !stream->pty) stream_close_finished_input(stream);
    if (stream->kind != STREAM_FREE) stream_refresh(stream);
    if (stream->kind == STREAM_RELAY) relay_try_finish(stream);
    return;
  }
  if (type == MSG_CANCEL) {
    if (stream->kind == STREAM_EXEC) exec_cancel(stream);
    else if (stream->kind == STREAM_WRITE) files_write_cancel(stream);
    else stream_close(stream);
    return;
  }
  struct request request;
  const char *why = NULL;
  if (request_parse(&request, payload, length, &why) != 0) return;
  if (type == MSG_WINDOW) stream_on_window(stream, flags, request.bytes);
  else if (type == MSG_SIGNAL && stream->kind == STREAM_EXEC) exec_signal(stream, (int)request.signal);
  else if (type == MSG_RESIZE && stream->kind == STREAM_EXEC) exec_resize(stream, request.rows, request.columns);
  request_free(&request);
}

static void dispatch(uint8_t type, uint8_t flags, uint32_t id, const uint8_t *payload, uint32_t length) {
  switch (type) {
    case MSG_DATA:
    case MSG_END:
    case MSG_WINDOW:
    case MSG_SIGNAL:
    case MSG_RESIZE:
    case MSG_CANCEL:
      stream_message(type, flags, id, payload, length);
      return;
    case MSG_PING:
      pong(id);
      return;
    case MSG_PARK:
      link_park(id);
      return;
    case MSG_SHUTDOWN:
      shutdown_machine(id);
      return;
    default:
      break;
  }
  if (id == 0) {
    send_error(id, EINVAL, "requests need a stream id other than 0", NULL);
    return;
  }
  if (stream_find(id)) {
    send_error(id, EBUSY, "a stream with this id is still open", NULL);
    return;
  }
  struct request request;
  const char *why = "malformed request";
  int error = request_parse(&request, payload, length, &why);
  if (error) {
    send_error(id, error, why, NULL);
    return;
  }
  switch (type) {
    case MSG_EXEC: exec_start(id, &request); break;
    case MSG_READ:
    case MSG_WRITE:
    case MSG_STAT:
    case MSG_LIST:
    case MSG_MKDIR:
    case MSG_REMOVE:
    case MSG_RENAME:
    case MSG_CANONICAL: files_handle(type, id, &request); break;
    case MSG_PROCESSES: system_processes(id); break;
    case MSG_KILL: system_kill(id, &request); break;
    case MSG_IDENTITY: system_identity(id, &request); break;
    case MSG_CONNECT: relay_start(id, &request); break;
    default: send_error(id, ENOSYS, "unknown message type; this agent speaks protocol 1.0", NULL); break;
  }
  request_free(&request);
}

static void read_connection(void) {
  for (;;) {
    buffer_reserve(&agent.incoming, 65536);
    ssize_t got = recv(agent.connection, agent.incoming.data + agent.incoming.length, agent.incoming.capacity - agent.incoming.length, 0);
    if (got == 0) {
      link_lost("the host closed the connection");
      return;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      link_lost("reading from the host failed");
      return;
    }
    agent.incoming.length += (size_t)got;
    while (buffer_size(&agent.incoming) >= 4) {
      const uint8_t *head = agent.incoming.data + agent.incoming.start;
      uint32_t length = read_u32(head);
      if (length < FRAME_HEADER_BYTES - 4 || length > FRAME_HEADER_BYTES - 4 + FRAME_MAX_PAYLOAD) {
        link_lost("the host sent a frame of a bad length");
        return;
      }
      if (buffer_size(&agent.incoming) < 4 + (size_t)length) break;
      uint8_t type = head[4];
      uint8_t flags = head[5];
      uint32_t id = read_u32(head + 8);
      uint32_t payload = length - (FRAME_HEADER_BYTES - 4);
      /* Handlers may queue output but never touch `incoming`, so `head` stays valid. */
      dispatch(type, flags, id, head + FRAME_HEADER_BYTES, payload);
      if (agent.connection < 0) return;
      buffer_consume(&agent.incoming, 4 + (size_t)length);
    }
  }
}

/* ---- signals ---- */

static void read_signals(bool *woken) {
  struct signalfd_siginfo info;
  while (read(agent.signal_fd, &info, sizeof info) == (ssize_t)sizeof info) {
    if (info.ssi_signo == SIGCHLD) {
      int status;
      pid_t pid;
      while ((pid = waitpid(-1, &status, WNOHANG)) > 0) exec_reaped(pid, status);
    } else if (info.ssi_signo == SIGUSR1) {
      *woken = true;
    } else if (agent.host_mode && (info.ssi_signo == SIGTERM || info.ssi_signo == SIGINT)) {
      exit(0);
    }
    /* Anything else a process in the sandbox sends pid 1 is ignored on purpose. */
  }
}

static void usage(void) {
  fprintf(stderr, "usage: airlock-agent [--connect PATH | --fd N] [--root DIR]\n");
  exit(64);
}

static void parse_arguments(int argc, char **argv) {
  agent.socket_path = DEFAULT_SOCKET;
  agent.inherited_fd = -1;
  const char *root = "/";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--version")) {
      printf("airlock-agent %s (protocol %d.%d)\n", AGENT_VERSION, PROTOCOL_MAJOR, PROTOCOL_MINOR);
      exit(0);
    } else if (!strcmp(argv[i], "--connect") && i + 1 < argc) {
      agent.socket_path = argv[++i];
    } else if (!strcmp(argv[i], "--fd") && i + 1 < argc) {
      agent.inherited_fd = atoi(argv[++i]);
      agent.socket_path = NULL;
    } else if (!strcmp(argv[i], "--root") && i + 1 < argc) {
      root = argv[++i];
      agent.host_mode = true;
    } else {
      usage();
    }
  }
  if (strlen(agent.socket_path ? agent.socket_path : "") >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    fprintf(stderr, "airlock-agent: socket path too long\n");
    exit(64);
  }
  agent.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (agent.root_fd < 0) {
    fprintf(stderr, "airlock-agent: cannot open root %s: %s\n", root, strerror(errno));
    exit(66);
  }
  /* Tests start it as a child that must not take the host's signals for itself. */
  if (!agent.host_mode && getpid() != 1) agent.host_mode = true;
}

static void setup_signals(void) {
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  sigprocmask(SIG_BLOCK, &all, NULL);
  agent.signal_fd = signalfd(-1, &all, SFD_NONBLOCK | SFD_CLOEXEC);
  signal(SIGPIPE, SIG_IGN);
  struct epoll_event event = {.events = EPOLLIN, .data.u64 = watch_of(WATCH_SIGNALS, 0, 0)};
  epoll_ctl(agent.epoll, EPOLL_CTL_ADD, agent.signal_fd, &event);
}

int main(int argc, char **argv) {
  parse_arguments(argc, argv);
  agent.booted_ms = now_ms();
  agent.connection = -1;
  agent.retry_delay_ms = LINK_RETRY_FIRST_MS;
  agent.epoll = epoll_create1(EPOLL_CLOEXEC);
  setup_signals();
  system_boot();
  if (agent.inherited_fd >= 0) {
    fcntl(agent.inherited_fd, F_SETFD, FD_CLOEXEC);
    fcntl(agent.inherited_fd, F_SETFL, O_NONBLOCK);
    link_attach(agent.inherited_fd);
  } else if (!link_try_connect()) {
    agent.link = LINK_RETRYING;
    agent.retry_at_ms = now_ms() + agent.retry_delay_ms;
  }
  struct epoll_event events[64];
  for (;;) {
    flush_outgoing();
    int timeout = exec_next_deadline();
    if (agent.link == LINK_RETRYING) {
      int64_t wait = agent.retry_at_ms - now_ms();
      if (wait < 0) wait = 0;
      if (timeout < 0 || wait < timeout) timeout = (int)wait;
    }
    int count = epoll_wait(agent.epoll, events, 64, timeout);
    bool woken = false;
    if (count < 0) {
      /* A restore interrupts the wait (measured on runsc 20240729); a signal handler would too. */
      if (errno == EINTR) woken = true;
      count = 0;
    }
    for (int i = 0; i < count; i++) {
      uint64_t data = events[i].data.u64;
      unsigned kind = (unsigned)(data >> 48);
      unsigned slot = (unsigned)(data >> 16) & 0xffffffffu;
      unsigned index = (unsigned)(data & 0xffff);
      switch (kind) {
        case WATCH_CONNECTION:
          if (agent.connection < 0) break;
          if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_connection();
          if (agent.connection >= 0 && (events[i].events & EPOLLOUT)) flush_outgoing();
          break;
        case WATCH_SIGNALS: read_signals(&woken); break;
        case WATCH_ENDPOINT: stream_on_event(slot, index, events[i].events); break;
        case WATCH_ERROR_PIPE: exec_on_error_pipe(slot); break;
        case WATCH_DISCARD: discard_on_event(slot); break;
        default: break;
      }
    }
    if (woken) link_wake();
    exec_deadlines_due();
    link_retry_due();
  }
}
