/**
 * The error for a sandbox found dead, with its cause: the memory cgroup's
 * OOM killer (which kills the whole gVisor sandbox, pitfall 8b), or its
 * first process ending (e.g. a command killed pid 1, the agent).
 */
import { AirlockError } from '../../core/errors.js';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import { wasOomKilled } from './cgroups.js';
import { logTail } from './sandbox-files.js';

/** SANDBOX_DIED for `handle`, found in `status`, with the tails of its panic log and its log, and whether it was OOM-killed. */
export async function sandboxDeath(handle: SandboxHandle, status: string, panicLogPath: string, logPath?: string): Promise<AirlockError> {
  const panic = await logTail(panicLogPath);
  // The sandbox's own log ends with what its agent said last, if anything.
  const log = logPath ? await logTail(logPath, 4) : '';
  const oomKilled = await wasOomKilled(handle.sandboxId);
  const cause =
    oomKilled === true
      ? 'it ran out of memory and the kernel killed it'
      : oomKilled === false
        ? 'its init process ended, e.g. a command killed pid 1'
        : 'it ran out of memory, or its init process ended';
  const remedy = oomKilled === false ? '' : ', with more memory (resources.memoryMb) if it ran out';
  return new AirlockError(
    'SANDBOX_DIED',
    `sandbox ${handle.sandboxId} is ${status === 'missing' ? 'gone' : 'dead'}: ${cause}; its processes and memory are lost, ` +
      `its disk is kept until the session is terminated. Fork a snapshot taken earlier to go on${remedy}`,
    {
      details: {
        sandboxId: handle.sandboxId,
        sessionId: handle.sessionId,
        status,
        ...(oomKilled === undefined ? {} : { oomKilled }),
        ...(panic ? { panic } : {}),
        ...(log ? { log } : {}),
      },
    },
  );
}
