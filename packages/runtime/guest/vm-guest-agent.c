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
 * virtio-serial port; see docs/decisions/0014-microvm-driver.md.
 *
 * Single-threaded: one poll loop over the port, a signalfd (SIGCHLD, and
 * SIGIO from the port when the host side connects or goes away), and the
 * pipes of running commands. Built static (gcc -static -Os).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/random.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
enum { EXEC_STDIN = 1 };

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

static int port = -1;
static const char *port_path;
static int connected;
static int synced;
static struct buffer inbound, outbound;
static struct stream streams[MAX_STREAMS];

static void die(const char *what) {
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

static void append(struct buffer *buffer, const void *data, size_t length) {
  reserve(buffer, length);
  memcpy(buffer->data + buffer->length, data, length);
  buffer->length += length;
}

static void consume(struct buffer *buffer, size_t length) {
  memmove(buffer->data, buffer->data + length, buffer->length - length);
  buffer->length -= length;
}

static void put32(unsigned char *at, uint32_t value) {
  for (int i = 0; i < 4; i++) at[i] = (unsigned char)(value >> (8 * i));
}

static uint32_t get32(const unsigned char *at) {
  return (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
}

/* Queues one frame for the host; dropped while no host is connected (nobody would read it). */
static void send_frame(int type, uint32_t stream, const void *payload, size_t length) {
  if (!connected || !synced) return;
  unsigned char header[HEADER_BYTES];
  put32(header, (uint32_t)(length + 5));
  header[4] = (unsigned char)type;
  put32(header + 5, stream);
  append(&outbound, header, sizeof header);
  if (length) append(&outbound, payload, length);
}

static void send_error(uint32_t stream, const char *format, const char *detail) {
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

static struct stream *find_stream(uint32_t id) {
  for (int i = 0; i < MAX_STREAMS; i++)
    if (streams[i].used && streams[i].id == id) return &streams[i];
  return NULL;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

static void release_stream(struct stream *stream) {
  close_fd(&stream->in_fd);
  close_fd(&stream->out_fd);
  close_fd(&stream->err_fd);
  free(stream->pending_input.data);
  memset(stream, 0, sizeof *stream);
  stream->in_fd = stream->out_fd = stream->err_fd = -1;
}

/* Reads what a command's pipe holds now; returns 0 at EOF (the fd is closed then). */
static int pump_output(struct stream *stream, int *fd, int type, int forward, int bounded) {
  unsigned char chunk[CHUNK];
  for (;;) {
    ssize_t got = read(*fd, chunk, sizeof chunk);
    if (got > 0) {
      if (forward) send_frame(type, stream->id, chunk, (size_t)got);
      if (bounded && outbound.length > OUTPUT_HIGH_WATER) return 1;
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && errno == EAGAIN) return 1;
    close_fd(fd);
    return 0;
  }
}

static void write_pending_input(struct stream *stream) {
  while (stream->in_fd >= 0 && stream->pending_input.length > 0) {
    ssize_t written = write(stream->in_fd, stream->pending_input.data, stream->pending_input.length);
    if (written > 0) {
      consume(&stream->pending_input, (size_t)written);
      continue;
    }
    if (written < 0 && errno == EINTR) continue;
    if (written < 0 && errno == EAGAIN) return;
    /* EPIPE: the command stopped reading; the rest of its input is dropped */
    stream->pending_input.length = 0;
    close_fd(&stream->in_fd);
  }
  if (stream->in_fd >= 0 && stream->input_ended && stream->pending_input.length == 0) close_fd(&stream->in_fd);
}

/* The command's main process ended: forward what its pipes hold, then say how it ended. */
static void finish_stream(struct stream *stream, int status) {
  /* Unbounded: everything the command wrote before it ended goes out before its exit code. */
  if (stream->out_fd >= 0) pump_output(stream, &stream->out_fd, G_STDOUT, 1, 0);
  if (stream->err_fd >= 0) pump_output(stream, &stream->err_fd, G_STDERR, 1, 0);
  unsigned char code[4];
  int exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  put32(code, (uint32_t)exit_code);
  send_frame(G_EXITED, stream->id, code, sizeof code);
  stream->exited = 1;
  close_fd(&stream->in_fd);
  /* Background processes may still hold the output pipes: keep draining them (discarding) so they
     neither block nor die of SIGPIPE; the slot is released at EOF. */
  if (stream->out_fd < 0 && stream->err_fd < 0) release_stream(stream);
}

static void reap_children(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (int i = 0; i < MAX_STREAMS; i++) {
      if (streams[i].used && !streams[i].exited && streams[i].pid == pid) {
        finish_stream(&streams[i], status);
        break;
      }
    }
  }
}

static int write_text(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t written = write(fd, text, strlen(text));
  int saved = errno;
  close(fd);
  errno = saved;
  return written == (ssize_t)strlen(text) ? 0 : -1;
}

static void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* EXEC payload: u32 flags, u32 argc, u32 envc, then NUL-terminated cwd, argv[argc], env[envc] ("K=V"). */
static void start_command(uint32_t id, const unsigned char *payload, size_t length) {
  if (find_stream(id)) {
    errno = EEXIST;
    send_error(id, "stream %s is in use: %s", "id");
    return;
  }
  if (length < 12) {
    errno = EINVAL;
    send_error(id, "malformed exec request (%s): %s", "short");
    return;
  }
  uint32_t flags = get32(payload), argc = get32(payload + 4), envc = get32(payload + 8);
  if (argc == 0 || argc > 65536 || envc > 65536) {
    errno = EINVAL;
    send_error(id, "malformed exec request (%s): %s", "counts");
    return;
  }
  char **strings = calloc(1 + argc + envc, sizeof *strings);
  char **argv = calloc(argc + 1, sizeof *argv);
  char **envp = calloc(envc + 1, sizeof *envp);
  if (!strings || !argv || !envp) die("out of memory");
  const char *cursor = (const char *)payload + 12, *end = (const char *)payload + length;
  for (uint32_t i = 0; i < 1 + argc + envc; i++) {
    const char *nul = memchr(cursor, 0, (size_t)(end - cursor));
    if (!nul) {
      free(strings), free(argv), free(envp);
      errno = EINVAL;
      send_error(id, "malformed exec request (%s): %s", "strings");
      return;
    }
    strings[i] = (char *)cursor;
    cursor = nul + 1;
  }
  for (uint32_t i = 0; i < argc; i++) argv[i] = strings[1 + i];
  for (uint32_t i = 0; i < envc; i++) envp[i] = strings[1 + argc + i];
  const char *cwd = strings[0];

  struct stream *slot = NULL;
  for (int i = 0; i < MAX_STREAMS && !slot; i++)
    if (!streams[i].used) slot = &streams[i];
  int in_pipe[2] = {-1, -1}, out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (!slot || pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0 || ((flags & EXEC_STDIN) && pipe2(in_pipe, O_CLOEXEC) < 0)) {
    if (!slot) errno = EMFILE;
    send_error(id, "cannot start %s: %s", argv[0]);
    for (int i = 0; i < 2; i++) close(in_pipe[i]), close(out_pipe[i]), close(err_pipe[i]);
    free(strings), free(argv), free(envp);
    return;
  }
  pid_t pid = fork();
  if (pid < 0) {
    send_error(id, "cannot start %s: %s", argv[0]);
    for (int i = 0; i < 2; i++) close(in_pipe[i]), close(out_pipe[i]), close(err_pipe[i]);
    free(strings), free(argv), free(envp);
    return;
  }
  if (pid == 0) {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    setsid();
    /* Every command lives in the workload cgroup: its pids.max is the session's process limit,
       and freezing it stops every command process at once. */
    write_text(WORKLOAD_CGROUP "/cgroup.procs", "0");
    int devnull = open("/dev/null", O_RDONLY);
    dup2((flags & EXEC_STDIN) ? in_pipe[0] : devnull, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    if (chdir(cwd) < 0) {
      dprintf(2, "cd: %s: %s\n", cwd, strerror(errno));
      _exit(1);
    }
    environ = envp;
    execvp(argv[0], argv);
    int failure = errno;
    if (failure == ENOENT) dprintf(2, "%s: command not found\n", argv[0]);
    else dprintf(2, "%s: %s\n", argv[0], strerror(failure));
    _exit(failure == ENOENT ? 127 : 126);
  }
  close(in_pipe[0]), close(out_pipe[1]), close(err_pipe[1]);
  memset(slot, 0, sizeof *slot);
  slot->used = 1;
  slot->id = id;
  slot->pid = pid;
  slot->in_fd = in_pipe[1];
  slot->out_fd = out_pipe[0];
  slot->err_fd = err_pipe[0];
  if (slot->in_fd >= 0) set_nonblocking(slot->in_fd);
  set_nonblocking(slot->out_fd);
  set_nonblocking(slot->err_fd);
  free(strings), free(argv), free(envp);
  unsigned char started[4];
  put32(started, (uint32_t)pid);
  send_frame(G_STARTED, id, started, sizeof started);
}

static int wait_frozen(int frozen) {
  char want[16];
  snprintf(want, sizeof want, "frozen %d", frozen);
  for (int attempt = 0; attempt < 500; attempt++) {
    char text[256] = {0};
    int fd = open(WORKLOAD_CGROUP "/cgroup.events", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t got = read(fd, text, sizeof text - 1);
    close(fd);
    if (got > 0 && strstr(text, want)) return 0;
    struct timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  errno = ETIMEDOUT;
  return -1;
}

static void set_frozen(uint32_t id, int frozen) {
  if (write_text(WORKLOAD_CGROUP "/cgroup.freeze", frozen ? "1" : "0") < 0 || wait_frozen(frozen) < 0) {
    send_error(id, "cannot %s the workload: %s", frozen ? "freeze" : "thaw");
    return;
  }
  send_frame(G_OK, id, NULL, 0);
}

/* IDENTITY payload: u32 hostname length, hostname, u32 machine id length, machine id, entropy (the rest).
   A length of 0 keeps that item as it is (a resumed machine only gets fresh entropy). */
static void apply_identity(uint32_t id, const unsigned char *payload, size_t length) {
  if (length < 8) goto malformed;
  uint32_t host_length = get32(payload);
  if (host_length > 64 || 8 + (size_t)host_length > length) goto malformed;
  uint32_t machine_length = get32(payload + 4 + host_length);
  if ((machine_length != 0 && machine_length != 32) || 8 + (size_t)host_length + machine_length > length) goto malformed;
  const char *hostname = (const char *)payload + 4;
  const char *machine_id = (const char *)payload + 8 + host_length;
  const unsigned char *entropy = payload + 8 + host_length + machine_length;
  size_t entropy_length = length - 8 - host_length - machine_length;
  if (entropy_length < 32 || entropy_length > 512) goto malformed;

  /* Entropy first, credited, then a forced reseed: every later read of the CRNG (by this machine's
     processes or kernel) differs from its clones'. */
  int random_fd = open("/dev/urandom", O_RDWR | O_CLOEXEC);
  if (random_fd < 0) {
    send_error(id, "cannot open %s: %s", "/dev/urandom");
    return;
  }
  struct rand_pool_info *pool = malloc(sizeof *pool + entropy_length);
  if (!pool) die("out of memory");
  pool->entropy_count = (int)(entropy_length * 8);
  pool->buf_size = (int)entropy_length;
  memcpy(pool->buf, entropy, entropy_length);
  int added = ioctl(random_fd, RNDADDENTROPY, pool);
  free(pool);
  if (added < 0 || ioctl(random_fd, RNDRESEEDCRNG) < 0) {
    send_error(id, "cannot reseed the kernel RNG (%s): %s", added < 0 ? "RNDADDENTROPY" : "RNDRESEEDCRNG");
    close(random_fd);
    return;
  }
  close(random_fd);

  char line[80];
  if (host_length > 0) {
    if (sethostname(hostname, host_length) < 0) {
      send_error(id, "cannot set the hostname (%s): %s", "sethostname");
      return;
    }
    snprintf(line, sizeof line, "%.*s\n", (int)host_length, hostname);
    int fd = open("/etc/hostname", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) { /* best effort: a read-only /etc is the image's choice */
      ssize_t ignored = write(fd, line, strlen(line));
      (void)ignored;
      close(fd);
    }
  }
  if (machine_length > 0) {
    snprintf(line, sizeof line, "%.32s\n", machine_id);
    int fd = open("/etc/machine-id.airlock-new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0 || write(fd, line, 33) != 33 || fsync(fd) < 0 || rename("/etc/machine-id.airlock-new", "/etc/machine-id") < 0) {
      send_error(id, "cannot write %s: %s", "/etc/machine-id");
      if (fd >= 0) close(fd);
      return;
    }
    close(fd);
  }
  send_frame(G_OK, id, NULL, 0);
  return;
malformed:
  errno = EINVAL;
  send_error(id, "malformed identity request (%s): %s", "fields");
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

/* A new host connection: forget every stream's host side (their processes run on, their output is dropped). */
static void reset_connection(void) {
  inbound.length = 0;
  outbound.length = 0;
  synced = 0;
  for (int i = 0; i < MAX_STREAMS; i++) {
    if (!streams[i].used) continue;
    close_fd(&streams[i].in_fd);
    streams[i].id = 0xffffffffu - (uint32_t)i; /* no host id reaches these */
    if (streams[i].exited && streams[i].out_fd < 0 && streams[i].err_fd < 0) release_stream(&streams[i]);
  }
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
