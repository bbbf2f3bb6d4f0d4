/**
 * The machine-level operations of the microvm driver while its guest agent
 * is the interim one, as toolbox scripts (guest-toolbox.ts): the process
 * list, a signal to one process, a detached service, and the health probe.
 */
import { AirlockError } from '../../core/errors.js';
import type { ExecOutcome, ExecRequest, SandboxHealth, SandboxProcess } from '../../core/sandbox-driver.js';
import { signalNumber } from '../agent/agent-system.js';
import type { GuestAgentClient } from './guest-agent-client.js';
import { fromHex, GUEST_BUSYBOX, runToolboxScript } from './guest-toolbox.js';

const TIMEOUT_MS = 60_000;
/** How long the health probe waits for an answer. */
const HEALTH_TIMEOUT_MS = 10_000;
/** Processes a listing returns at most (as the agent). */
const PROCESS_LIMIT = 10_000;
/** Exit code of the signal script when the process does not exist. */
const NO_PROCESS = 44;

// One line per process: its stat line and its command line (NUL-separated), hex. Kernel threads (children of kthreadd, pid 2) are left out.
const PROCESSES = `n=0
for d in /proc/[0-9]*; do
  read -r s < $d/stat 2>/dev/null || continue
  r=\${s##*) }; set -- $r
  [ "\${d#/proc/}" = 2 ] || [ "$2" = 2 ] && continue
  n=$((n + 1)); [ $n -gt ${PROCESS_LIMIT} ] && break
  { printf '%s\\0' "$s"; bb cat $d/cmdline 2>/dev/null; } | bb od -An -tx1 -v | bb tr -d ' \\n'; echo
done`;

const SIGNAL = `[ -d /proc/$2 ] || exit ${NO_PROCESS}
m=$(bb kill -$1 $2 2>&1) && exit 0
case "$m" in *"o such process"*) exit ${NO_PROCESS};; esac
printf '%s\\n' "$m" >&2; exit 1`;

/**
 * Starts "$@" in its own session, stdio to the log (or nowhere), and prints its pid. A program that cannot
 * be found fails the call the way the agent fails it (127, "NAME: command not found").
 */
const DETACH = `log=$1; shift
case "$1" in */*) [ -x "$1" ] || { printf '%s: command not found\\n' "$1" >&2; exit 127; };;
  *) command -v -- "$1" >/dev/null 2>&1 || { printf '%s: command not found\\n' "$1" >&2; exit 127; };; esac
out=/dev/null
if [ -n "$log" ]; then bb mkdir -p -- "$(bb dirname -- "$log")" || exit 125; out=$log; fi
bb setsid "$@" </dev/null >>"$out" 2>&1 &
echo $!`;

/** Every process of the VM except kernel threads, sorted by pid. */
export async function listGuestProcesses(agent: GuestAgentClient): Promise<SandboxProcess[]> {
  const out = await runToolboxScript(agent, PROCESSES, [], { timeoutMs: TIMEOUT_MS });
  if (out.exitCode !== 0) throw new AirlockError('DRIVER_FAILED', `listing the VM's processes failed: ${out.stderr || `exit ${out.exitCode}`}`);
  const processes: SandboxProcess[] = [];
  for (const line of out.stdout.toString('ascii').split('\n').slice(0, PROCESS_LIMIT)) {
    const record = fromHex(line);
    const end = record.indexOf(0);
    if (end < 0) continue;
    const parsed = parseStat(record.subarray(0, end).toString('utf8'));
    if (!parsed) continue;
    const argv = record.subarray(end + 1).toString('utf8').split('\0');
    if (argv.at(-1) === '') argv.pop();
    processes.push({ ...parsed, argv: argv.slice(0, 1024) });
  }
  return processes.sort((a, b) => a.pid - b.pid);
}

/** Sends a signal (name or number) to one process; never to pid 1. */
export async function signalGuestProcess(agent: GuestAgentClient, pid: number, signal: string | number): Promise<void> {
  if (!Number.isInteger(pid) || pid <= 1) throw new AirlockError('INVALID_ARGUMENTS', `pid must be a whole number above 1 (pid 1 is the machine's agent); got ${pid}`);
  const number = signalNumber(signal);
  const out = await runToolboxScript(agent, SIGNAL, [String(number), String(pid)], { timeoutMs: TIMEOUT_MS });
  if (out.exitCode === NO_PROCESS) throw new AirlockError('NOT_FOUND', `no process ${pid} in the sandbox; list them first`, { details: { pid } });
  if (out.exitCode !== 0) throw new AirlockError('DRIVER_FAILED', `signalling process ${pid} failed: ${out.stderr || `exit ${out.exitCode}`}`, { details: { pid } });
}

/** Starts a detached command in the workload (its processes count and freeze with the session's). */
export async function startDetached(agent: GuestAgentClient, request: ExecRequest & { detach: { logPath?: string } }): Promise<ExecOutcome> {
  const started = performance.now();
  const stdout: Buffer[] = [];
  const outcome = await agent.exec({
    ...request,
    argv: [GUEST_BUSYBOX, 'sh', '-c', `bb() { "${GUEST_BUSYBOX}" "$@"; }\n${DETACH}`, 'airlock-detach', request.detach.logPath ?? '', ...request.argv],
    onStdout: (chunk) => stdout.push(chunk),
  });
  if (outcome.exitCode !== 0) return outcome;
  const pid = Number(Buffer.concat(stdout).toString('ascii').trim());
  if (!Number.isInteger(pid) || pid <= 1) throw new AirlockError('DRIVER_FAILED', 'the VM did not report the pid of the detached command');
  return { ...outcome, pid, durationMs: Math.round(performance.now() - started) };
}

/** Whether the agent runs a command within a few seconds. */
export async function probeGuest(agent: GuestAgentClient): Promise<SandboxHealth> {
  const started = performance.now();
  try {
    const outcome = await runToolboxScript(agent, 'exit 0', [], { timeoutMs: HEALTH_TIMEOUT_MS });
    if (outcome.exitCode === 0) return { answering: true, latencyMs: Math.round(performance.now() - started) };
    return { answering: false, reason: outcome.timedOut ? 'timeout' : `probe exited with ${outcome.exitCode}` };
  } catch (error) {
    return { answering: false, reason: `protocol: ${(error as Error).message}` };
  }
}

/** pid, parent, group, state and name from a /proc/PID/stat line (the name may hold spaces and parentheses). */
function parseStat(line: string): Omit<SandboxProcess, 'argv'> | undefined {
  const open = line.indexOf(' (');
  const close = line.lastIndexOf(') ');
  if (open < 0 || close < open) return undefined;
  const [state = '?', parent = '0', group = '0'] = line.slice(close + 2).split(' ');
  const pid = Number(line.slice(0, open));
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  return { pid, parentPid: Number(parent) || 0, group: Number(group) || 0, state: state.slice(0, 1), name: line.slice(open + 2, close).slice(0, 64) };
}
