/*
 * The guest agent's commands: start one (its own session and process group,
 * in the workload cgroup), feed its stdin, forward its output, report how it
 * ended, and keep draining pipes that background processes still hold.
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
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vm-guest-agent.h"

struct stream *find_stream(uint32_t id) {
  for (int i = 0; i < MAX_STREAMS; i++)
    if (streams[i].used && streams[i].id == id) return &streams[i];
  return NULL;
}

void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void release_stream(struct stream *stream) {
  close_fd(&stream->in_fd);
  close_fd(&stream->out_fd);
  close_fd(&stream->err_fd);
  free(stream->pending_input.data);
  memset(stream, 0, sizeof *stream);
  stream->in_fd = stream->out_fd = stream->err_fd = -1;
}

/* Reads what a command's pipe holds now; returns 0 at EOF (the fd is closed then). */
int pump_output(struct stream *stream, int *fd, int type, int forward, int bounded) {
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

void write_pending_input(struct stream *stream) {
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

void reap_children(void) {
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

static void set_nonblocking(int fd) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* The session's commands get root without the powers over the machine itself (as the shared agent's
   children): no CAP_SYS_ADMIN (hostname, mounts), CAP_DAC_OVERRIDE or CAP_SETPCAP, bounding set included,
   so no program they exec gets them back. The driver's own commands (outside the workload) keep them. */
static void drop_machine_powers(void) {
  static const int dropped[] = {CAP_SYS_ADMIN, CAP_DAC_OVERRIDE, CAP_SETPCAP};
  for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++) prctl(PR_CAPBSET_DROP, dropped[i], 0, 0, 0);
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  if (syscall(SYS_capget, &header, data) < 0) _exit(126);
  for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++) {
    uint32_t bit = 1u << (dropped[i] % 32);
    int word = dropped[i] / 32;
    data[word].effective &= ~bit, data[word].permitted &= ~bit, data[word].inheritable &= ~bit;
  }
  if (syscall(SYS_capset, &header, data) < 0) _exit(126);
}

static int join_workload(void) {
  int fd = open(WORKLOAD_CGROUP "/cgroup.procs", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t written = write(fd, "0", 1);
  close(fd);
  return written == 1 ? 0 : -1;
}

/* EXEC payload: u32 flags, u32 argc, u32 envc, then NUL-terminated cwd, argv[argc], env[envc] ("K=V"). */
void start_command(uint32_t id, const unsigned char *payload, size_t length) {
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
    if (!(flags & EXEC_OUTSIDE_WORKLOAD)) {
      join_workload();
      drop_machine_powers();
    }
    /* The agent's own /dev/null, opened at boot: a session may replace the file at that path. */
    dup2((flags & EXEC_STDIN) ? in_pipe[0] : null_fd, 0);
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

