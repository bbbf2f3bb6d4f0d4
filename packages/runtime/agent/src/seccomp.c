/*
 * The seccomp filter the agent installs on itself right after its boot
 * mounts, inherited by every process it starts: no process of the sandbox
 * may change the mount table, so the contract's filesystem rules (the OCI
 * spec's mounts, ADR 0017) hold. Installed here rather than by runsc
 * (--oci-seccomp) because the agent itself mounts the bounded /proc at boot
 * (ADR 0011), which runsc's filter would refuse before it ran.
 *
 * Measured on runsc 20240729 without a filter: a process that makes its own
 * user and mount namespace (unshare(CLONE_NEWUSER | CLONE_NEWNS), no
 * privilege needed) remounts a read-only bind read-write and writes through
 * it, and mounts a tmpfs over a protected path and unmounts it again. With
 * it, each of those calls fails with EPERM.
 *
 * The mount calls are refused in every namespace, which is the guarantee;
 * refusing new user and mount namespaces through unshare and clone is a
 * second fence. clone3 is left alone: it passes its flags in memory, where a
 * filter cannot look, and refusing it outright breaks threads (libc falls
 * back to clone only on ENOSYS). Everything else is allowed: gVisor's own
 * filter guards the host; this one guards the mounts inside the sandbox.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FILTER_ARCH AUDIT_ARCH_AARCH64
#else
#error "the agent's seccomp filter knows x86_64 and aarch64 only"
#endif

#define REFUSE BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
/* next instruction if the number differs, else the REFUSE at the end of the list */
#define REFUSE_CALL(number) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (number), 0, 1), REFUSE

int seccomp_lock_mounts(void) {
  struct sock_filter program[] = {
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, FILTER_ARCH, 1, 0),
    REFUSE,
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
    /* the x32 numbers would name the same calls under other numbers */
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
    REFUSE,
#endif
    REFUSE_CALL(SYS_mount),
    REFUSE_CALL(SYS_umount2),
    REFUSE_CALL(SYS_pivot_root),
    REFUSE_CALL(SYS_move_mount),
    REFUSE_CALL(SYS_open_tree),
    REFUSE_CALL(SYS_fsopen),
    REFUSE_CALL(SYS_fsconfig),
    REFUSE_CALL(SYS_fsmount),
    REFUSE_CALL(SYS_fspick),
    REFUSE_CALL(SYS_mount_setattr),
    REFUSE_CALL(SYS_setns),
    /* unshare and clone carry their flags in the first argument (its low 32 bits hold every CLONE_NEW*) */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_unshare, 1, 0),
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone, 0, 3),
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
    BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER | CLONE_NEWNS, 0, 1),
    REFUSE,
    ALLOW,
  };
  struct sock_fprog filter = {.len = sizeof program / sizeof program[0], .filter = program};
  /* the OCI spec sets no_new_privs already; a filter needs it (or CAP_SYS_ADMIN) either way */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter) == 0) return 0;
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter, 0, 0);
}
