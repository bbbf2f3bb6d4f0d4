/**
 * The driver's own short commands inside a microVM: a script of the toolbox
 * busybox (`/.airlock/bin/busybox`, which the initramfs installs outside any
 * disk, so it works on every image), run by the guest agent outside the
 * workload cgroup (never frozen, never counted against the session's process
 * limit), its output collected in memory. What it prints is the guest's and
 * is parsed as untrusted input by the callers.
 *
 * Interim: the shared agent's own file, process and signal messages replace
 * these scripts once it serves microVMs (docs/decisions/0016-microvm-driver.md).
 */
import type { ExecOutcome } from '../../core/sandbox-driver.js';
import type { GuestAgentClient } from './guest-agent-client.js';
import { GUEST_TOOLBOX_DIR } from './guest-init-script.js';

/** The toolbox busybox inside every microVM. */
export const GUEST_BUSYBOX = `${GUEST_TOOLBOX_DIR}/busybox`;

/** Output of a toolbox script. */
export interface ToolboxOutput extends ExecOutcome {
  stdout: Buffer;
  stderr: string;
}

/** Largest output a toolbox script may return (a 64 MiB read, hex-encoded listings). */
const OUTPUT_LIMIT = 160 * 1024 * 1024;
/** Stderr kept for error messages. */
const STDERR_LIMIT = 4096;

/** Runs `script` under the toolbox shell with `args` as $1…; `bb` in the script is the toolbox busybox. */
export async function runToolboxScript(
  agent: GuestAgentClient,
  script: string,
  args: readonly string[],
  options: { stdin?: Uint8Array; timeoutMs: number; workload?: boolean },
): Promise<ToolboxOutput> {
  const stdout: Buffer[] = [];
  let stdoutBytes = 0;
  let stderr = '';
  const outcome = await agent.exec(
    {
      argv: [GUEST_BUSYBOX, 'sh', '-c', `bb() { "${GUEST_BUSYBOX}" "$@"; }\n${script}`, 'airlock-toolbox', ...args],
      cwd: '/',
      env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
      timeoutMs: options.timeoutMs,
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
      onStdout: (chunk) => {
        stdoutBytes += chunk.length;
        if (stdoutBytes <= OUTPUT_LIMIT) stdout.push(chunk);
      },
      onStderr: (chunk) => {
        if (stderr.length < STDERR_LIMIT) stderr += chunk.toString('utf8');
      },
    },
    { outsideWorkload: options.workload !== true },
  );
  return { ...outcome, stdout: Buffer.concat(stdout), stderr: stderr.slice(0, STDERR_LIMIT).trim() };
}

/** Decodes `od -An -tx1` output (hex bytes, any spacing) back to bytes. */
export function fromHex(text: string): Buffer {
  return Buffer.from(text.replace(/[^0-9a-f]/gi, ''), 'hex');
}
