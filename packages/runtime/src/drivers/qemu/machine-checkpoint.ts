/**
 * Checkpoint of a microVM into a memory image (memory-image.ts), through
 * QEMU's migration to a file:
 *
 * 1. the agent freezes the workload (every command's process), so whatever
 *    is restored from the image runs nothing until it was reseeded;
 * 2. QEMU stops and migrates to `device-state.bin`. A VM whose RAM is a
 *    shared file skips the RAM (`x-ignore-shared`, ~50 KB of device state);
 *    a fork branch's private RAM goes into the stream;
 * 3. the RAM file becomes the image's `memory.raw`: moved when the VM goes
 *    away (no copy), copied when it keeps running;
 * 4. digests and the manifest are written, the directory renamed into
 *    place. Only then is the VM quit (or thawed and continued), so a failed
 *    checkpoint never costs the machine: everything is undone and it runs on.
 */
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { CheckpointResult, SandboxHandle } from '../../core/sandbox-driver.js';
import { machineFiles, shellQuote, waitForMigration } from './machine-launcher.js';
import { DEVICE_STATE_FILE, INITRAMFS_FILE, MEMORY_FILE, writeManifest } from './memory-image.js';
import type { MicrovmHost } from './microvm-host.js';

/** Takes the image; with `leaveRunning` false the caller destroys the VM afterwards. */
export async function checkpointMachine(host: MicrovmHost, handle: SandboxHandle, imageDir: string, leaveRunning: boolean): Promise<CheckpointResult> {
  const started = performance.now();
  const entry = await host.entry(handle.sandboxId);
  const status = await host.status(handle.sandboxId);
  if (status !== 'running' && status !== 'paused') {
    throw new AirlockError('SANDBOX_DIED', `microVM ${handle.sandboxId} is ${status}; there is nothing to checkpoint`, { details: { sandboxId: handle.sandboxId, status } });
  }
  if (await exists(imageDir)) throw new AirlockError('INVALID_STATE', `checkpoint image ${imageDir} already exists; choose a new directory`);
  if (imageDir.includes("'") || imageDir.includes('\n')) throw new AirlockError('INVALID_ARGUMENTS', `image path ${JSON.stringify(imageDir)} may not contain quotes or line breaks`);
  const monitor = await host.monitor(handle.sandboxId);
  const wasPaused = status === 'paused';
  // The agent runs inside the guest: a paused VM runs again for the few milliseconds of the freeze.
  if (wasPaused) await monitor.execute('cont');
  const agent = await host.agent(handle.sandboxId);
  if (agent.busy) {
    if (wasPaused) await monitor.execute('stop');
    throw new AirlockError('SESSION_BUSY', `microVM ${handle.sandboxId} is running a command; wait for it to finish (or abort it) before a checkpoint`);
  }
  const partial = `${imageDir}.partial-${randomBytes(4).toString('hex')}`;
  const files = machineFiles(entry.stateDir);
  let frozen = false;
  let memoryMoved = false;
  try {
    await mkdir(partial, { recursive: true });
    await agent.freeze();
    frozen = true;
    await monitor.execute('stop');
    const memory = entry.memory.kind === 'shared-file' ? entry.memory : undefined;
    await monitor.execute('migrate-set-capabilities', { capabilities: [{ capability: 'x-ignore-shared', state: memory !== undefined }] });
    // QEMU's default bandwidth cap (32 MiB/s) would make a private-RAM stream take seconds.
    await monitor.execute('migrate-set-parameters', { 'max-bandwidth': 64 * 1024 * 1024 * 1024 });
    await monitor.execute('migrate', { uri: `exec:cat > ${shellQuote(join(partial, DEVICE_STATE_FILE))}` });
    await waitForMigration(monitor, `checkpointing ${handle.sandboxId}`);
    await copyFile(files.initramfs, join(partial, INITRAMFS_FILE));
    if (memory) {
      if (leaveRunning) await run('cp', ['--reflink=auto', '--sparse=always', memory.path, join(partial, MEMORY_FILE)]);
      else {
        // QEMU is stopped and keeps its mapping: the file can move under it, and back if anything fails.
        await moveFile(memory.path, join(partial, MEMORY_FILE));
        memoryMoved = true;
      }
    }
    await writeManifest(partial, {
      kind: memory ? 'shared-memory' : 'stream',
      cpus: entry.cpus,
      memoryMb: entry.memoryMb,
      networked: entry.network !== undefined,
      kernelDigest: entry.kernelDigest,
      kernelRelease: entry.kernelRelease,
      accelerator: entry.accelerator,
    });
    await rename(partial, imageDir);
  } catch (error) {
    if (memoryMoved && entry.memory.kind === 'shared-file') await moveFile(join(partial, MEMORY_FILE), entry.memory.path).catch(() => undefined);
    await rm(partial, { recursive: true, force: true });
    await monitor.execute('cont').catch(() => undefined);
    if (frozen) await agent.thaw().catch(() => undefined);
    if (wasPaused) await monitor.execute('stop').catch(() => undefined);
    if ((await host.processesOf(handle.sandboxId)).length === 0) {
      throw new AirlockError('SANDBOX_DIED', `microVM ${handle.sandboxId} died during its checkpoint: ${(error as Error).message}`, { cause: error });
    }
    throw error;
  }
  if (leaveRunning) {
    await monitor.execute('cont');
    await agent.thaw();
    if (wasPaused) await monitor.execute('stop');
  } else {
    await host.disconnect(handle.sandboxId);
    const quitting = await host.monitor(handle.sandboxId).catch(() => undefined);
    await quitting?.quit();
  }
  return { imageDir, bytes: await diskUsage(imageDir), durationMs: Math.round(performance.now() - started) };
}

/** Renames, or copies and removes across filesystems. */
async function moveFile(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EXDEV') throw error;
    await run('cp', ['--sparse=always', from, to]);
    await rm(from, { force: true });
  }
}

async function diskUsage(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const info = await stat(join(dir, entry.name));
    total += info.blocks * 512;
  }
  return total;
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 600_000 }, (error, _stdout, stderr) => {
      if (error) reject(new AirlockError(/No space/.test(String(stderr)) ? 'DISK_FULL' : 'DRIVER_FAILED', `${file} ${args.join(' ')}: ${String(stderr).trim() || error.message}`, { cause: error }));
      else resolve();
    });
  });
}
