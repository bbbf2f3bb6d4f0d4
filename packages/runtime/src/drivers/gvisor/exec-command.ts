/**
 * One command in a long-lived sandbox: `runsc exec` of the relay script (see
 * in-sandbox-scripts.ts) under the host-side supervisor, and the kill path
 * for timeouts and aborts.
 */
import { randomBytes } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { ExecRequest } from '../../core/sandbox-driver.js';
import { commandScript, KILL_SCRIPT, TOOLBOX_PATH } from './in-sandbox-scripts.js';
import { relayScriptFor } from './relay-protocol.js';
import type { Runsc } from './runsc.js';
import { validateEnv } from './sandbox-files.js';
import { superviseCommand, type SupervisedOutcome } from './supervised-command.js';

/** Runs `request` in the container; `stateDir` holds the transient pid file. */
export async function execCommand(runsc: Runsc, containerId: string, stateDir: string, request: ExecRequest): Promise<SupervisedOutcome> {
  if (request.argv.length === 0 || request.argv.some((arg) => arg.includes('\0')) || request.cwd.includes('\0')) {
    throw new AirlockError('INVALID_ARGUMENTS', 'argv must have at least one element and no argument may contain NUL');
  }
  validateEnv(request.env);
  // `--cwd`/`--env` of runsc exec would apply to the relay only; the command gets them from its script.
  const pidFile = join(stateDir, `exec-${randomBytes(8).toString('hex')}.pid`);
  const hasStdin = request.stdin !== undefined && request.stdin.length > 0;
  // A transient command (the control plane's file operations) runs as a plain `runsc exec`: several
  // times faster, and safe because it ends before any checkpoint can start (the session lock waits for it).
  const args = request.transient
    ? ['exec', `--internal-pid-file=${pidFile}`, `--cwd=${request.cwd}`, ...Object.entries(request.env).map(([k, v]) => `--env=${k}=${v}`), containerId, ...request.argv]
    : ['exec', `--internal-pid-file=${pidFile}`, containerId, TOOLBOX_PATH, 'sh', '-c', await relayScriptFor(stateDir), 'airlock-exec', commandScript(request.argv, request.cwd, request.env), hasStdin ? '1' : '0'];
  const child = runsc.spawn(args, { stdio: 'pipe' });
  const killInSandbox = async (): Promise<void> => {
    // runsc writes the relay's in-sandbox pid once the relay exists; wait briefly for it.
    let relayPid = '';
    for (let attempt = 0; attempt < 20 && !/^\d+$/.test(relayPid); attempt++) {
      relayPid = (await readFile(pidFile, 'utf8').catch(() => '')).trim();
      if (!/^\d+$/.test(relayPid)) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (!/^\d+$/.test(relayPid)) return;
    const killed = await runsc.run(['exec', containerId, TOOLBOX_PATH, 'sh', '-c', KILL_SCRIPT, 'airlock-kill', relayPid], { timeoutMs: 5_000 });
    if (killed.code !== 0) await runsc.run(['kill', `--pid=${relayPid}`, containerId, 'KILL'], { timeoutMs: 5_000 });
  };
  try {
    return await superviseCommand(child, { request, killInSandbox });
  } finally {
    await rm(pidFile, { force: true });
  }
}
