/**
 * The OCI seccomp profile runsc installs on a sandbox's first process (with
 * `--oci-seccomp`), inherited by every process it starts: the workload may
 * not change the mount table. Measured on runsc 20240729: without it, a
 * process that makes its own user and mount namespace (`unshare(CLONE_NEWUSER
 * | CLONE_NEWNS)`, no privilege needed) remounts a read-only bind of the OCI
 * spec read-write and writes through it, and mounts a tmpfs over a protected
 * path and unmounts it again. With it, each of those calls fails with EPERM.
 *
 * The mount calls are refused in every namespace, which is the guarantee;
 * refusing new user and mount namespaces through `unshare` and `clone` is a
 * second fence. `clone3` is left alone: it passes its flags in memory, where
 * a filter cannot look, and refusing it outright breaks threads (libc falls
 * back to `clone` only on ENOSYS, and runsc 20240729 ignores `errnoRet`, so
 * the refusal would be EPERM; measured: Python could not start a thread).
 *
 * Everything else is allowed: gVisor's own syscall filter guards the host;
 * this one guards the contract's mounts inside the sandbox. The control
 * plane's own one-off commands (`runsc exec`, e.g. the bounded /proc mount)
 * are not children of the first process and are not filtered.
 */

/** `flags` bits that make new namespaces which could lift the mounts (linux/sched.h). */
const CLONE_NEWNS = 0x00020000;
const CLONE_NEWUSER = 0x10000000;

/** Calls that change, move or replace mounts, or enter another namespace; refused with EPERM. */
export const MOUNT_SYSCALLS = [
  'mount',
  'umount2',
  'pivot_root',
  'move_mount',
  'open_tree',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'setns',
] as const;

/** One syscall rule of an OCI seccomp profile. */
interface SeccompRule {
  names: string[];
  action: 'SCMP_ACT_ERRNO';
  args?: { index: number; value: number; valueTwo: number; op: 'SCMP_CMP_MASKED_EQ' }[];
}

/** The `linux.seccomp` section of a sandbox's OCI spec. */
export function sandboxSeccompProfile(): { defaultAction: 'SCMP_ACT_ALLOW'; architectures: string[]; syscalls: SeccompRule[] } {
  const withFlag = (names: string[], flag: number): SeccompRule => ({
    names,
    action: 'SCMP_ACT_ERRNO',
    // One rule per flag: runsc joins several conditions on one argument with OR, but a rule is simpler to read.
    args: [{ index: 0, value: flag, valueTwo: flag, op: 'SCMP_CMP_MASKED_EQ' }],
  });
  return {
    defaultAction: 'SCMP_ACT_ALLOW',
    architectures: ['SCMP_ARCH_X86_64'],
    syscalls: [
      { names: [...MOUNT_SYSCALLS], action: 'SCMP_ACT_ERRNO' },
      withFlag(['unshare', 'clone'], CLONE_NEWUSER),
      withFlag(['unshare', 'clone'], CLONE_NEWNS),
    ],
  };
}
