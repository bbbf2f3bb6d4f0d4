/*
 * Commands: vfork, then in the child a new session and process group, the
 * stdio the host asked for (pipes, a pty, or /dev/null and a log file for a
 * detached command), the session's process limit, no privilege the agent
 * keeps for itself, the working directory, and an exec of the program found
 * in $PATH. The command descends from pid 1, so it survives a checkpoint and
 * restore, and holds in-sandbox fds only.
 *
 * A command is finished when it exited and its output pipes were read to
 * their end or, if a background process still holds them, to what was
 * there: everything the command itself wrote is in the pipe before it
 * exits, so nothing of its own output is lost and nothing waits for its
 * children. Pipes still held are drained to nowhere from then on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent.h"
#include "child.h"

#define ERROR_TEXT_MAX 4096
#define PTY_DRAIN_MS 100

/* ---- in the agent ---- */

static int open_pty(int *master, int *slave, int64_t rows, int64_t columns) {
  char slave_name[128];
  *master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (*master < 0) return errno;
  if (grantpt(*master) != 0 || unlockpt(*master) != 0 || ptsname_r(*master, slave_name, sizeof slave_name) != 0 ||
      (*slave = open(slave_name, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
    int error = errno;
    close(*master);
    return error;
  }
  struct winsize window = {.ws_row = (unsigned short)(rows > 0 && rows < 10000 ? rows : 24), .ws_col = (unsigned short)(columns > 0 && columns < 10000 ? columns : 80)};
  ioctl(*master, TIOCSWINSZ, &window);
  fcntl(*master, F_SETFL, O_NONBLOCK);
  return 0;
}

static void close_all(int *fds, int count) {
  for (int i = 0; i < count; i++) {
    if (fds[i] >= 0) close(fds[i]);
    fds[i] = -1;
  }
}

void exec_start(uint32_t id, struct request *request) {
  if (request->arg_count == 0) {
    send_error(id, EINVAL, "exec needs at least one argument", NULL);
    return;
  }
  bool detach = request->exec_flags & EXEC_DETACH;
  bool pty = !detach && (request->exec_flags & EXEC_PTY);
  bool with_stdin = !detach && (request->exec_flags & EXEC_STDIN);
  struct stream *stream = stream_open(id, STREAM_EXEC);
  if (!stream) {
    send_error(id, EMFILE, "too many streams are open in the agent", NULL);
    return;
  }
  /* [0] stdin read, [1] stdin write, [2] stdout read, [3] stdout write, [4] stderr read, [5] stderr write, [6] report read, [7] report write */
  int fds[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
  int master = -1;
  int slave = -1;
  int error = 0;
  if (pty) {
    error = open_pty(&master, &slave, request->rows, request->columns);
  } else if (detach) {
    if (pipe2(fds + 6, O_CLOEXEC) != 0) error = errno;
    if (!error && agent.devnull < 0 && pipe2(fds + 2, O_CLOEXEC | O_NONBLOCK) != 0) error = errno;
  } else {
    if (pipe2(fds + 2, O_CLOEXEC) != 0 || pipe2(fds + 4, O_CLOEXEC) != 0) error = errno;
    if (!error && (with_stdin || agent.devnull < 0) && pipe2(fds, O_CLOEXEC) != 0) error = errno;
  }
  if (error) {
    close_all(fds, 8);
    stream_close(stream);
    send_error(id, error, "cannot make the command's pipes or terminal", NULL);
    return;
  }
  struct child_plan plan = {.stdin_fd = agent.devnull, .stdout_fd = agent.devnull, .stderr_fd = agent.devnull, .pty_slave = slave, .report_fd = -1};
  if (fds[0] >= 0) plan.stdin_fd = fds[0];
  if (fds[3] >= 0) plan.stdout_fd = fds[3];
  if (fds[5] >= 0) plan.stderr_fd = fds[5];
  if (detach) {
    plan.report_fd = fds[7];
    if (agent.devnull < 0) plan.stderr_fd = fds[3];
  }
  char **environment = merged_environment(request->env);
  pid_t pid = vfork();
  if (pid == 0) run_child(request, &plan, environment);
  if (environment != request->env) free(environment);
  if (pid < 0) {
    error = errno;
    close_all(fds, 8);
    if (master >= 0) close(master);
    if (slave >= 0) close(slave);
    stream_close(stream);
    send_error(id, error, "cannot fork the command", NULL);
    return;
  }
  /* The parent keeps only its own ends. */
  int parent_ends[] = {fds[0], fds[3], fds[5], fds[7], slave};
  close_all(parent_ends, 5);
  stream->pid = pid;
  stream->pty = pty;
  stream->detach = detach;
  if (pty) {
    stream_add_endpoint(stream, master, CHANNEL_OUTPUT, true);
  } else if (detach) {
    if (fds[2] >= 0) discard_add(fds[2]);
    stream->error_pipe = fds[6];
    fcntl(stream->error_pipe, F_SETFL, O_NONBLOCK);
    struct epoll_event event = {.events = EPOLLIN, .data.u64 = watch_of(WATCH_ERROR_PIPE, stream_slot(stream), 0)};
    epoll_ctl(agent.epoll, EPOLL_CTL_ADD, stream->error_pipe, &event);
    return;
  } else {
    fcntl(fds[2], F_SETFL, O_NONBLOCK);
    fcntl(fds[4], F_SETFL, O_NONBLOCK);
    stream_add_endpoint(stream, fds[2], CHANNEL_OUTPUT, false);
    stream_add_endpoint(stream, fds[4], CHANNEL_ERROR, false);
    if (fds[1] >= 0) {
      fcntl(fds[1], F_SETFL, O_NONBLOCK);
      if (with_stdin) stream_add_endpoint(stream, fds[1], -1, true);
      else close(fds[1]); /* an empty stdin when /dev/null is gone */
    } else {
      stream->input_ended = true;
    }
  }
  size_t frame;
  frame = frame_begin(&agent.outgoing, MSG_STARTED, 0, id);
  field_int(&agent.outgoing, TAG_PID, pid);
  frame_finish(&agent.outgoing, frame);
  stream_refresh(stream);
}

static void send_exited(struct stream *stream) {
  int status = stream->wait_status;
  size_t frame = frame_begin(&agent.outgoing, MSG_EXITED, 0, stream->id);
  field_int(&agent.outgoing, TAG_EXIT_CODE, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  field_int(&agent.outgoing, TAG_SIGNAL, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  frame_finish(&agent.outgoing, frame);
}

void exec_try_finish(struct stream *stream) {
  if (!stream->exited) return;
  if (stream->detach) {
    /* A detached command that could not start: its error text and exit status, once both are in. */
    if (stream->error_pipe >= 0) return;
    if (buffer_size(&stream->error_text) > 0) send_data(stream->id, CHANNEL_ERROR, stream->error_text.data + stream->error_text.start, buffer_size(&stream->error_text));
    send_exited(stream);
    stream_close(stream);
    return;
  }
  for (int e = 0; e < STREAM_ENDPOINTS; e++) {
    struct endpoint *endpoint = &stream->endpoints[e];
    if (endpoint->fd < 0 || endpoint->channel < 0) continue;
    int pumped = stream_pump_endpoint(stream, endpoint);
    /* held by the window: the rest comes when the host grants more */
    if (pumped < 0) {
      stream_refresh(stream);
      return;
    }
    /* A pty's output may still be in transit after the exit; its end (EIO) or a short grace ends it. */
    if (pumped == 0 && stream->pty) {
      if (stream->drain_deadline_ms == 0) stream->drain_deadline_ms = now_ms() + PTY_DRAIN_MS;
      if (now_ms() < stream->drain_deadline_ms) {
        stream_refresh(stream);
        return;
      }
    }
  }
  send_exited(stream);
  stream_close(stream);
}

/* Process groups killed with SIGKILL, killed again until they are empty: a fork racing the first kill
   can leave a child that goes on forking and holds every process slot (hostile suite: a fork bomb). */
#define SWEEP_GROUPS 64
#define SWEEP_INTERVAL_MS 20
#define SWEEP_FOR_MS 5000
static struct {
  pid_t group;
  int64_t until_ms;
} sweeps[SWEEP_GROUPS];

static void sweep_add(pid_t group) {
  int free_slot = -1;
  for (int i = 0; i < SWEEP_GROUPS; i++) {
    if (sweeps[i].group == group) free_slot = i;
    else if (sweeps[i].group == 0 && free_slot < 0) free_slot = i;
  }
  if (free_slot < 0) return;
  sweeps[free_slot].group = group;
  sweeps[free_slot].until_ms = now_ms() + SWEEP_FOR_MS;
}

static void sweep_due(void) {
  for (int i = 0; i < SWEEP_GROUPS; i++) {
    if (sweeps[i].group == 0) continue;
    /* ESRCH: nobody left in the group (zombies count until the agent reaps them). */
    if (kill(-sweeps[i].group, SIGKILL) != 0 || now_ms() >= sweeps[i].until_ms) sweeps[i].group = 0;
  }
}

int exec_next_deadline(void) {
  int64_t next = -1;
  for (int i = 0; i < SWEEP_GROUPS; i++) {
    if (sweeps[i].group != 0) {
      next = SWEEP_INTERVAL_MS;
      break;
    }
  }
  for (unsigned i = 0; i < MAX_STREAMS; i++) {
    struct stream *stream = &agent.streams[i];
    if (stream->kind != STREAM_EXEC || stream->drain_deadline_ms == 0) continue;
    int64_t wait = stream->drain_deadline_ms - now_ms();
    if (wait < 0) wait = 0;
    if (next < 0 || wait < next) next = wait;
  }
  return (int)next;
}

void exec_deadlines_due(void) {
  sweep_due();
  for (unsigned i = 0; i < MAX_STREAMS; i++) {
    struct stream *stream = &agent.streams[i];
    if (stream->kind == STREAM_EXEC && stream->drain_deadline_ms != 0 && now_ms() >= stream->drain_deadline_ms) exec_try_finish(stream);
  }
}

void exec_reaped(pid_t pid, int status) {
  for (unsigned i = 0; i < MAX_STREAMS; i++) {
    struct stream *stream = &agent.streams[i];
    if (stream->kind != STREAM_EXEC || stream->pid != pid || stream->exited) continue;
    stream->exited = true;
    stream->wait_status = status;
    exec_try_finish(stream);
    return;
  }
  /* Not a command in flight: a detached one, or an orphan that pid 1 inherited. */
}

void exec_on_error_pipe(unsigned slot) {
  if (slot >= MAX_STREAMS) return;
  struct stream *stream = &agent.streams[slot];
  if (stream->kind != STREAM_EXEC || stream->error_pipe < 0) return;
  char chunk[1024];
  for (;;) {
    ssize_t got = read(stream->error_pipe, chunk, sizeof chunk);
    if (got > 0) {
      if (buffer_size(&stream->error_text) + (size_t)got <= ERROR_TEXT_MAX) buffer_append(&stream->error_text, chunk, (size_t)got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    break;
  }
  /* End of the pipe: the exec succeeded (it closed on exec) or the child reported and exited. */
  epoll_ctl(agent.epoll, EPOLL_CTL_DEL, stream->error_pipe, NULL);
  close(stream->error_pipe);
  stream->error_pipe = -1;
  if (buffer_size(&stream->error_text) == 0) {
    size_t frame = frame_begin(&agent.outgoing, MSG_STARTED, 0, stream->id);
    field_int(&agent.outgoing, TAG_PID, stream->pid);
    frame_finish(&agent.outgoing, frame);
    send_ok_begin(stream->id, &frame);
    field_int(&agent.outgoing, TAG_PID, stream->pid);
    frame_finish(&agent.outgoing, frame);
    stream_close(stream);
    return;
  }
  exec_try_finish(stream);
}

void exec_signal(struct stream *stream, int signal) {
  if (signal < 0 || signal >= NSIG || stream->exited || stream->pid <= 0) return;
  /* The command leads its own process group; its children that did not leave it go too. */
  if (kill(-stream->pid, signal) != 0) kill(stream->pid, signal);
  else if (signal == SIGKILL) sweep_add(stream->pid);
}

void exec_resize(struct stream *stream, int64_t rows, int64_t columns) {
  if (!stream->pty || stream->endpoints[0].fd < 0 || rows <= 0 || columns <= 0 || rows > 10000 || columns > 10000) return;
  struct winsize window = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)columns};
  ioctl(stream->endpoints[0].fd, TIOCSWINSZ, &window);
}

void exec_cancel(struct stream *stream) {
  if (!stream->detach) exec_signal(stream, SIGKILL);
  stream_close(stream);
}

size_t exec_children(void) {
  size_t count = 0;
  for (unsigned i = 0; i < MAX_STREAMS; i++) count += agent.streams[i].kind == STREAM_EXEC && !agent.streams[i].exited;
  return count;
}
