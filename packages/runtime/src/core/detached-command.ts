/**
 * `exec --detach`: a long-running process (a dev server, a database) started
 * on the session machine, answered at once with its pid. The process gets
 * its own session (`setsid`), so the call's timeout or abort, which kill the
 * call's process group, leave it alone; its output goes to a log file in the
 * machine's /tmp, which is saved with the machine when it is suspended.
 */

/** Directory inside the machine holding the logs of detached processes. */
export const DETACHED_LOG_DIR = '/tmp/airlock';

/**
 * Run by the toolbox shell: `$1` the log path, the rest the command. Waits a
 * moment so that a command that cannot start (not found, bad arguments)
 * fails the call with its own message instead of leaving a dead pid; a
 * command that daemonizes itself (parent exits 0) is fine.
 */
const DETACH_SCRIPT = `L=$1
shift
B=$0
$B mkdir -p ${DETACHED_LOG_DIR} || exit 125
$B setsid "$@" </dev/null >>"$L" 2>&1 &
p=$!
$B usleep 200000
st=
read -r _ _ st _ 2>/dev/null </proc/$p/stat
if [ -z "$st" ] || [ "$st" = Z ]; then
  wait $p
  rc=$?
  if [ $rc -ne 0 ]; then $B cat "$L" >&2; exit $rc; fi
fi
echo $p
`;

/** The argv that starts `argv` detached, logging to `logPath`; its stdout is the pid. */
export function detachedArgv(toolboxPath: string, argv: readonly string[], logPath: string): string[] {
  // $0 of the script is the toolbox itself, so the script needs no path baked in.
  return [toolboxPath, 'sh', '-c', DETACH_SCRIPT, toolboxPath, logPath, ...argv];
}

/** The pid a detached start printed, or undefined when it printed none. */
export function detachedPid(stdout: Buffer): number | undefined {
  const pid = Number.parseInt(stdout.toString('utf8').trim().split('\n').at(-1) ?? '', 10);
  return Number.isInteger(pid) && pid > 0 ? pid : undefined;
}
