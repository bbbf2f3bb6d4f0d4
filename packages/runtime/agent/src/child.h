/* The child side of a command: what runs between vfork and exec (child.c). */
#ifndef AIRLOCK_CHILD_H
#define AIRLOCK_CHILD_H

#include "request.h"

/* The stdio a child gets; -1 for an fd means an empty stdin, or unused. */
struct child_plan {
  int stdin_fd;
  int stdout_fd;
  int stderr_fd;
  /* the pty's slave, opened by the agent: a master without an open slave reads EIO at once in gVisor (measured) */
  int pty_slave;
  int report_fd;
};

/* The agent's environment with the request's variables on top, made in the parent (a vfork child may not allocate). */
char **merged_environment(char **extra);
/* In the vfork child: sets the child up and execs the request's program; never returns. */
void run_child(const struct request *request, const struct child_plan *plan, char **environment) __attribute__((noreturn));

#endif
