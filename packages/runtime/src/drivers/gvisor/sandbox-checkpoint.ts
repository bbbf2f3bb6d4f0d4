/**
 * A checkpoint of a gVisor sandbox whose first process is the agent: the
 * agent parks first (a connected host socket makes runsc's checkpoint panic
 * and kills the sandbox, measured), then runsc checkpoints a paused sandbox
 * and leaves it running, so that nothing is lost before the image is whole.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { CheckpointResult, SandboxHandle, SandboxListing } from '../../core/sandbox-driver.js';
import { runscFailure, type Runsc } from './runsc.js';
import type { SandboxAgents } from './sandbox-agents.js';
import { isProcessAlive } from './sandbox-files.js';
import { markCheckpointImage } from './sandbox-markers.js';

/** What a checkpoint needs of the driver. */
export interface CheckpointHost {
  runsc: Runsc;
  agents: SandboxAgents;
  /** the driver's own pause and wake (a frozen sandbox is thawed by them, not by `runsc resume`) */
  pause(handle: SandboxHandle): Promise<void>;
  unpause(handle: SandboxHandle): Promise<void>;
  status(handle: SandboxHandle): Promise<SandboxListing['status'] | 'missing'>;
  died(handle: SandboxHandle, status: string): Promise<AirlockError>;
  destroy(handle: SandboxHandle): Promise<void>;
  stateDirOf(handle: SandboxHandle): string;
}

/**
 * Parks the agent (it closes its host socket: a connected one makes runsc's
 * checkpoint panic), then checkpoints with the sandbox paused and left
 * running, and destroys it only once the image is complete under its final
 * name. A plain `checkpoint` kills the sandbox first and keeps "running" in
 * `state` for a moment (pitfall 4), so a failure (ENOSPC, a runsc error)
 * would lose the session. After a checkpoint that leaves the sandbox
 * running, or one that failed, the agent is woken to reconnect.
 */
export async function checkpointSandbox(
  host: CheckpointHost,
  handle: SandboxHandle,
  containerId: string,
  imageDir: string,
  options: { leaveRunning: boolean },
): Promise<CheckpointResult> {
  const started = performance.now();
  const status = await host.status(handle);
  if (status !== 'running' && status !== 'paused') throw await host.died(handle, status);
  if (await exists(imageDir)) throw new AirlockError('INVALID_STATE', `checkpoint image ${imageDir} already exists; choose a new directory`);
  const wasPaused = status === 'paused';
  // A paused agent cannot park: thaw it for that moment.
  if (wasPaused) await host.unpause(handle);
  try {
    await host.agents.park(handle);
  } catch (error) {
    if (wasPaused) await host.pause(handle).catch(() => undefined);
    throw error;
  }
  const partial = `${imageDir}.partial-${randomBytes(4).toString('hex')}`;
  try {
    await mkdir(partial, { recursive: true });
    await host.runsc.check(['pause', containerId], `pausing ${handle.sandboxId} for a checkpoint`);
    const result = await host.runsc.run(['checkpoint', `--image-path=${partial}`, '--compression=none', '--leave-running', containerId], {
      timeoutMs: 600_000,
    });
    if (result.code !== 0) {
      const error = runscFailure(`checkpoint of ${handle.sandboxId} failed; the sandbox is still running`, result);
      if (!(await isProcessAlive((await host.runsc.state(containerId))?.pid ?? 0))) throw await host.died(handle, 'stopped');
      throw error;
    }
    await markCheckpointImage(host.stateDirOf(handle), partial);
    await rename(partial, imageDir);
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    await host.runsc.run(['resume', containerId]).catch(() => undefined);
    await host.agents.unpark(handle).catch(() => undefined);
    if (wasPaused) await host.pause(handle).catch(() => undefined);
    throw error;
  }
  if (options.leaveRunning) {
    await host.runsc.check(['resume', containerId], `resuming ${handle.sandboxId} after its checkpoint`);
    await host.agents.unpark(handle);
    if (wasPaused) await host.pause(handle);
  } else {
    await host.destroy(handle);
  }
  return { imageDir, bytes: await diskUsage(imageDir), durationMs: Math.round(performance.now() - started) };
}

/** Bytes the image takes on disk (like `du`). */
async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await diskUsage(path);
    else total += (await stat(path)).blocks * 512;
  }
  return total;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}
