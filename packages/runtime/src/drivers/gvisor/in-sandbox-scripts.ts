/**
 * The busybox shell scripts that run inside every long-lived sandbox.
 *
 * Why not plain `runsc exec CMD`: runsc 20240729 kills every process that
 * descends from a `runsc exec` when it restores a checkpoint, and a process
 * that still holds the host pipes of an exec makes the image unrestorable
 * ("no host FD available for :host:2"). Both were measured. So commands are
 * started by the container's init (pid 1) instead:
 *
 *   host ── runsc exec RELAY ─┬─ cat sN.out ──▶ host stdout
 *                             ├─ cat sN.err ──▶ host stderr
 *                             └─ "go" ▶ sN.go ▶ JOB ─ COMMAND (+ background children)
 *                                                  └─ tee ×2 (command output ▶ sN.out/err)
 *   INIT keeps one slot sN ready: its fifos made and its JOB parked, with
 *   the tees already forked, so a command waits for no fork but its own.
 *
 * The command and everything it leaves running descend from init, so they
 * survive restore, and they hold in-sandbox fifos only, never host FDs. The
 * tees ignore SIGPIPE: after the relay has gone, a background process that
 * keeps printing loses its output instead of dying or blocking. Each JOB is a
 * session and process-group leader, so a timeout kills the whole group.
 *
 * Two host facts shape the scripts: a fork costs 20–50 ms and a syscall
 * ~0.1–0.2 ms under systrap on this host kind (so builtins, few forks, no
 * byte-by-byte reads in loops); and ash exits when a fork fails, which for
 * pid 1 would kill the sandbox. So init runs with RLIMIT_NPROC raised by a
 * reserve and each command lowers it to the session's limit (`ulimit -u`):
 * a fork bomb exhausts the command's quota, never init's.
 */

import { START_MARKER_PRINTF } from './start-marker.js';

/** Where the driver bind-mounts a static busybox (read-only) in every sandbox. */
export const TOOLBOX_PATH = '/.airlock/bin/busybox';
/** A sandbox-private tmpfs holding the control fifo and the command slots. */
export const RUN_DIR = '/.airlock/run';
/** Processes kept for Airlock's own helpers above the session's RLIMIT_NPROC. */
export const NPROC_RESERVE = 64;

/**
 * pid 1. `$1` is the JOB script, `$2` the session's process limit. Keeps one
 * slot ready (named in `next`) and makes a new one as soon as a relay claims
 * it (relays write to `ctl` to wake it). The `jobs` builtin reaps finished
 * jobs and orphans re-parented to pid 1 without forking.
 */
export const INIT_SCRIPT = `B=${TOOLBOX_PATH}
R=${RUN_DIR}
JOB=$1
M=$2
[ -p $R/ctl ] || $B mkfifo $R/ctl
exec 3<>$R/ctl
n=0
s=
while :; do
  if [ -z "$s" ] || [ -e $R/$s.claim ] || [ ! -p $R/$s.go ]; then
    n=$((n+1))
    if $B mkfifo $R/s$n.o1 $R/s$n.e1 $R/s$n.out $R/s$n.err $R/s$n.rc $R/s$n.in $R/s$n.go $R/s$n.g1 $R/s$n.g2 2>/dev/null; then
      $B setsid $B sh -c "$JOB" airlock-job $R/s$n "$M" </dev/null >/dev/null 2>&1 &
      s=s$n
      echo $s >$R/next
    fi
  fi
  read -r -t 1 _ <&3
  jobs >/dev/null
done
`;

/**
 * A parked command slot: $1 the slot path, $2 the process limit. Records its
 * process group first (so a kill finds it at any later moment) and gives up
 * when cancelled before that. Forks the tees and the command's subshell in
 * advance; each waits for its own "go" in a read from a fifo it opened
 * read-write. A process blocked in a fifo *open* gets EINTR when the sandbox
 * is checkpointed (measured: its redirection fails after restore), while a
 * blocked read resumes, so nothing parks in an open. The tees open the relay's
 * fifo before the command's, so no fifo is recreated as a plain file by a late open.
 */
export const JOB_SCRIPT = `B=${TOOLBOX_PATH}
J=$1
echo $$ >$J.pgid
[ -e $J.cancel ] && exit 0
( trap '' PIPE; exec 8<>$J.g1; read -r _ <&8; exec $B tee >$J.out <$J.o1 8<&- ) &
( trap '' PIPE; exec 8<>$J.g2; read -r _ <&8; exec $B tee >$J.err <$J.e1 8<&- ) &
(
  exec 8<>$J.go
  read -r go <&8
  exec 8<&-
  ulimit -u $2
  i=/dev/null
  [ "$go" = 1 ] && i=$J.in
  exec <$i >$J.o1 2>$J.e1
  . $J.cmd
) &
wait $!
echo $? 1<>$J.rc
$B rm -f $J.*
`;

/**
 * Runs under \`runsc exec\`: $1 the command script, $2 "1" when the caller
 * sends stdin. Claims the ready slot (an O_EXCL create holding its own pid,
 * so the kill script can find the slot), prints the start marker (see
 * start-marker.ts) as it starts the command, streams the output, waits for the
 * exit code, lets the output drain (at most ~150 ms while background
 * processes still hold the pipes), then kills its own helpers: no
 * exec-owned process may keep host pipes (it would also spoil a checkpoint).
 */
export const RELAY_SCRIPT = `B=${TOOLBOX_PATH}
R=${RUN_DIR}
exec 4<&0
n=0
while :; do
  s=
  read -r s 2>/dev/null <$R/next
  if [ -n "$s" ] && [ -p $R/$s.go ] && [ ! -e $R/$s.claim ]; then
    set -C
    if { echo $$ >$R/$s.claim; } 2>/dev/null; then set +C; break; fi
    set +C
  fi
  n=$((n+1))
  [ $n -gt 500 ] && { echo 'airlock: no command slot became ready within 5 s; is the sandbox out of processes?' >&2; exit 125; }
  $B usleep 10000
done
J=$R/$s
echo $s >$R/ctl
printf '%s' "$1" >$J.cmd
exec 5<>$J.rc
echo >$J.g1
echo >$J.g2
printf '${START_MARKER_PRINTF}'
echo "$2" >$J.go
$B cat $J.out & op=$!
$B cat $J.err >&2 & ep=$!
ip=
[ "$2" = 1 ] && { $B cat <&4 >$J.in & ip=$!; }
exec 4<&-
read -r rc <&5
n=0
while [ $n -lt 25 ] && { [ -e /proc/$op/fd/1 ] || [ -e /proc/$ep/fd/1 ]; }; do
  n=$((n+1))
  read -r -t 0.005 _ <&5
done
kill -9 $op $ep $ip 2>/dev/null
exit \${rc:-125}
`;

/**
 * Kills the command of the relay with pid $1, its process group, and the
 * relay's own group. Builtins only, so it works while the sandbox is out of
 * processes. The cancel marker stops a JOB that has not recorded its group.
 */
export const KILL_SCRIPT = `R=${RUN_DIR}
for c in $R/*.claim; do
  p=
  read -r p 2>/dev/null <$c
  [ "$p" = "$1" ] || continue
  J=\${c%.claim}
  : >$J.cancel
  g=
  read -r g 2>/dev/null <$J.pgid
  for n in 1 2 3; do [ -n "$g" ] && kill -9 -- -$g 2>/dev/null; done
  [ -n "$g" ] && ${TOOLBOX_PATH} rm -f $J.* 2>/dev/null
done
for n in 1 2 3; do kill -9 -- -$1 2>/dev/null; done
exit 0
`;

/** Quotes one word for a POSIX shell: everything inside single quotes is literal. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/**
 * Runs "$@" as the image would: a program name without a slash is looked up
 * in $PATH by hand. The toolbox shell would otherwise run its own applet of
 * that name (BusyBox prefers applets), so `grep` would be BusyBox's grep
 * instead of the image's. A name found nowhere fails like a shell's, 127.
 */
export const EXEC_FROM_PATH = `p=$1
shift
case $p in
  */*) ;;
  *)
    f=
    o=$IFS
    IFS=:
    for d in $PATH; do
      [ -n "$d" ] && [ -f "$d/$p" ] && [ -x "$d/$p" ] && { f=$d/$p; break; }
    done
    IFS=$o
    [ -n "$f" ] || { echo "$p: command not found" >&2; exit 127; }
    p=$f
    ;;
esac
exec "$p" "$@"`;

/**
 * The script a JOB sources: working directory, extra environment, then
 * `exec` of the argv found in $PATH. Everything user-supplied is
 * single-quoted, so it is data to the shell, never code. Callers validate env
 * names beforehand.
 */
export function commandScript(argv: readonly string[], cwd: string, env: Readonly<Record<string, string>>): string {
  const lines = [`cd -- ${shellQuote(cwd)} || exit 126`];
  for (const [name, value] of Object.entries(env)) lines.push(`export ${shellQuote(`${name}=${value}`)}`);
  lines.push(`set -- ${argv.map(shellQuote).join(' ')}`, EXEC_FROM_PATH);
  return `${lines.join('\n')}\n`;
}
