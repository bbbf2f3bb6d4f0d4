/**
 * The busybox shell scripts that run inside every long-lived sandbox.
 *
 * Why not plain `runsc exec CMD`: runsc 20240729 kills every process that
 * descends from a `runsc exec` when it restores a checkpoint, and a process
 * that still holds the host pipes of an exec makes the image unrestorable
 * ("no host FD available for :host:2"). Both were measured. So commands are
 * started by the container's init (pid 1) instead (ADR 0001):
 *
 *   host ── runsc exec RELAY ─┬─ dd < sN.out ──▶ host stdout
 *                             ├─ dd < sN.err ──▶ host stderr
 *                             └─ "go" ▶ sN.go ▶ JOB ─ COMMAND (+ background children)
 *                             exit code ◀ sN.rc ◀┘      └▶ sN.out, sN.err
 *   INIT keeps one slot sN ready: its fifos made and its JOB parked with the
 *   command's subshell already forked, so a command waits for no fork but
 *   its own exec. The relay's two copiers are its only other processes.
 *
 * The command and everything it leaves running descend from init, so they
 * survive restore, and they hold in-sandbox fifos only, never host FDs. JOB
 * holds read ends of the output fifos throughout: if background processes
 * still hold the output when the relay leaves, JOB drains it, so such a
 * process loses its later output instead of dying of SIGPIPE or blocking.
 * Each JOB is a session and process-group leader, so a timeout kills the
 * whole group.
 *
 * Fifo rules the scripts rely on: a read-write open never blocks, and a
 * read-only or write-only open succeeds at once while the other side is
 * open, so nothing parks in an open (a process blocked in a fifo *open* gets
 * EINTR when the sandbox is checkpointed and its redirection fails after
 * restore, measured; a blocked read resumes). A read from a fifo that has no
 * writer returns EOF, so a copier may only start reading while someone holds
 * the write end: the relay does, until the command's subshell says it holds
 * its own.
 *
 * Two host facts shape the scripts: a fork costs ~15–25 ms and an exec
 * another ~15–20 ms under systrap on this host kind, a builtin ~0.1–0.5 ms
 * (bench/exec-latency.bench.ts). So: builtins, few forks, no byte-by-byte
 * reads in loops, and helpers named bare (`dd`, `mkfifo`, `rm`), which the
 * toolbox busybox runs as NOEXEC applets, in the forked shell without an exec
 * (after `exec`, in the shell itself; see `applets`). And ash exits when a
 * fork fails, which for pid 1 would kill the sandbox. So init runs with
 * RLIMIT_NPROC raised by a reserve and each command lowers it to the
 * session's limit (`ulimit -u`): a fork bomb exhausts the command's quota,
 * never init's.
 */

import { START_MARKER_PRINTF } from './start-marker.js';

/** Where the driver bind-mounts a static busybox (read-only) in every sandbox. */
export const TOOLBOX_PATH = '/.airlock/bin/busybox';
/** A sandbox-private tmpfs holding the control fifo and the command slots. */
export const RUN_DIR = '/.airlock/run';
/** Processes kept for Airlock's own helpers above the session's RLIMIT_NPROC. */
export const NPROC_RESERVE = 64;

/**
 * Shell lines that make each named applet callable by its bare name: the
 * toolbox's own applet, never a program of the image. A busybox built to
 * prefer its applets (Debian's static one) finds them with an empty PATH and
 * runs NOEXEC ones without an exec; any other gets a function calling the
 * toolbox by path. PATH itself is left alone: commands inherit it.
 */
function applets(...names: string[]): string {
  return `for a in ${names.join(' ')}; do PATH=/.airlock/none command -v $a >/dev/null || eval "$a() { ${TOOLBOX_PATH} $a \\"\\$@\\"; }"; done`;
}

/** The fifos of one slot: the start signal (then the verdict), the exit code, the three streams. */
const SLOT_FIFOS = 'go rc out err in';

/**
 * pid 1. `$1` is the JOB script, `$2` the session's process limit. Keeps one
 * slot ready (named in `next`) and replaces it once claimed when woken
 * through `ctl`: a relay writes there when it ends, so the new JOB's start (a
 * fork and two execs) does not compete with a running command, or when it
 * finds no slot ready (concurrent calls); init also looks every second. One
 * `mkfifo` makes the fifos of four slots. The `jobs` builtin reaps finished
 * jobs and orphans re-parented to pid 1 without forking. `idle` is never
 * written: relays wait on it.
 */
export const INIT_SCRIPT = `B=${TOOLBOX_PATH}
R=${RUN_DIR}
JOB=$1
M=$2
${applets('mkfifo')}
[ -p $R/ctl ] || mkfifo $R/ctl
[ -p $R/idle ] || mkfifo $R/idle
exec 3<>$R/ctl
n=0
s=
while :; do
  if [ -z "$s" ] || [ -e $R/$s.claim ] || [ ! -p $R/$s.go ]; then
    n=$((n+1))
    m=
    for x in ${SLOT_FIFOS}; do [ -p $R/s$n.$x ] || m=1; done
    if [ -n "$m" ]; then
      set --
      for i in $n $((n+1)) $((n+2)) $((n+3)); do for x in ${SLOT_FIFOS}; do [ -e $R/s$i.$x ] || set -- "$@" $R/s$i.$x; done; done
      mkfifo "$@" 2>/dev/null
      m=
      for x in ${SLOT_FIFOS}; do [ -p $R/s$n.$x ] || m=1; done
    fi
    if [ -z "$m" ]; then
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
 * when cancelled before that. Holds a write end of `rc` (so the relay's reads
 * never see an early EOF) and read ends of `out`/`err` (see above), and forks
 * the command's subshell in advance; that waits for "go" in a read, opens
 * the command's stdio, reports `s` on `rc` and sources the command script.
 * Then JOB reports the exit code and waits for the relay's verdict on `go`:
 * 0, everything was copied; 1 (or the relay gone without one), background
 * processes still hold the output, so drain it to /dev/null until they close
 * it. The claim goes last, so a relay never claims a slot being removed.
 */
export const JOB_SCRIPT = `J=$1
echo $$ >$J.pgid
[ -e $J.cancel ] && exit 0
exec 7<>$J.rc 8<>$J.go 5<>$J.out 6<>$J.err
exec 3<$J.out 4<$J.err 5>&- 6>&-
(
  exec 3<&- 4<&-
  read -r go <&8
  exec 8<&-
  ulimit -u $2
  i=/dev/null
  [ "$go" = 1 ] && i=$J.in
  exec <$i >$J.out 2>$J.err
  echo s >&7
  exec 7>&-
  . $J.cmd
) &
wait $!
echo $? >&7
exec 7>&-
p=
read -r p <$J.claim
v=
while ! read -r -t 1 v <&8; do [ -n "$p" ] && [ -d /proc/$p ] || break; done
exec 8<&-
${applets('rm', 'dd')}
set -- $J.go $J.rc $J.out $J.err $J.in $J.cmd $J.pgid $J.claim
[ "$v" = 0 ] && exec rm -f "$@"
rm -f "$@"
dd bs=65536 status=none <&4 >/dev/null 2>&1 3<&- &
exec dd bs=65536 status=none <&3 >/dev/null 2>&1 4<&-
`;

/**
 * Runs under \`runsc exec\`: $1 the command script, $2 "1" when the caller
 * sends stdin. Claims the ready slot (an O_EXCL create holding its own pid,
 * so the kill script can find the slot), holds write ends of `out`/`err`,
 * prints the start marker (see start-marker.ts) and says "go", then forks its
 * copiers while the command starts. It drops its write ends once the
 * command's subshell reports `s`, reads the exit code, and waits for the
 * copiers to reach EOF: they hold write ends of `rc`, so one blocking read
 * sees them all gone, or gives up after 150 ms while background processes
 * still hold the output. Then it kills its helpers (no exec-owned process may
 * keep host pipes; it would also spoil a checkpoint), hands the output over
 * to JOB with its verdict, and wakes init to make the next slot.
 */
export const RELAY_SCRIPT = `R=${RUN_DIR}
${applets('dd')}
exec 4<&0
n=0
while :; do
  s=
  read -r s 2>/dev/null <$R/next
  if [ -n "$s" ] && [ -p $R/$s.go ] && [ ! -e $R/$s.claim ]; then
    set -C
    if { echo $$ >$R/$s.claim; } 2>/dev/null; then set +C; [ -p $R/$s.go ] && break; fi
    set +C
  fi
  n=$((n+1))
  [ $n -gt 500 ] && { echo 'airlock: no command slot became ready within 5 s; is the sandbox out of processes?' >&2; exit 125; }
  [ $n = 1 ] && { exec 9<>$R/idle; echo >$R/ctl; }
  read -r -t 0.01 _ <&9
done
exec 9<&-
J=$R/$s
printf '%s' "$1" >$J.cmd
exec 6<>$J.out 7<>$J.err
exec 3<$J.out 8<$J.err 5<$J.rc 9>$J.rc
printf '${START_MARKER_PRINTF}'
echo "$2" >$J.go
dd bs=65536 status=none <&3 2>/dev/null 4<&- 5<&- 6<&- 7<&- 8<&- &
op=$!
dd bs=65536 status=none <&8 >&2 2>/dev/null 3<&- 4<&- 5<&- 6<&- 7<&- &
ep=$!
exec 3<&- 8<&- 9>&-
ip=
[ "$2" = 1 ] && { dd bs=65536 status=none <&4 >$J.in 2>/dev/null 5<&- 6<&- 7<&- & ip=$!; }
exec 4<&-
read -r rc <&5
exec 6<&- 7<&-
[ "$rc" = s ] && read -r rc <&5
read -r -t 0.15 _ <&5
v=0
{ [ -e /proc/$op/fd/1 ] || [ -e /proc/$ep/fd/1 ]; } && v=1
kill -9 $op $ep $ip 2>/dev/null
[ -p $J.go ] && echo $v >$J.go
echo >$R/ctl
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
