/**
 * The read-only root a sandbox is started on: a host overlayfs of a small
 * skeleton (the mount points Airlock adds) over the image rootfs.
 *
 * Why: runsc's gofer creates a missing bind-mount destination (`/workspace`,
 * `/.airlock/bin/airlock-agent`) inside the rootfs on the host, even with the
 * rootfs overlay on (measured with 20240729), which would write into the shared
 * image. With the skeleton on top every mount point exists, and the view is
 * mounted read-only, so nothing a sandbox or runsc does can change the image.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import { AGENT_HOST_DIR, AGENT_PATH } from './agent-endpoint.js';
import { WORKSPACE_PATH } from './oci-spec.js';

/** Creates (idempotently) the skeleton holding every mount point the driver adds. */
export async function ensureSkeleton(skeletonDir: string): Promise<void> {
  for (const dir of [WORKSPACE_PATH, AGENT_HOST_DIR, join(AGENT_PATH, '..')]) {
    await mkdir(join(skeletonDir, dir), { recursive: true });
  }
  const agent = join(skeletonDir, AGENT_PATH);
  if (!(await exists(agent))) await writeFile(agent, '');
}

/**
 * Mounts the read-only view of skeleton over rootfs at `target`; `mountPointsDir`, when given, is a
 * topmost layer of the sandbox's own with the mount points its filesystem rules need (image-mount-points.ts).
 */
export async function mountRootfsView(options: { skeletonDir: string; rootfsDir: string; target: string; mountPointsDir?: string }): Promise<void> {
  await mkdir(options.target, { recursive: true });
  if (await isMountPoint(options.target)) return;
  const layers = [...(options.mountPointsDir === undefined ? [] : [options.mountPointsDir]), options.skeletonDir, options.rootfsDir];
  for (const dir of layers) {
    if (dir.includes(':') || dir.includes(',')) {
      throw new AirlockError('INVALID_ARGUMENTS', `path ${dir} contains ':' or ',' which overlayfs options cannot carry; move it`);
    }
  }
  // No upperdir: a lower-only overlay is read-only by construction.
  await run('mount', ['-t', 'overlay', 'airlock-rootfs', '-o', `ro,lowerdir=${layers.join(':')}`, options.target]);
}

/** Unmounts the view (lazily when busy) and removes its mount point; idempotent. */
export async function unmountRootfsView(target: string): Promise<void> {
  for (let attempt = 0; attempt < 5 && (await isMountPoint(target)); attempt++) {
    await run('umount', [target]).catch(() => run('umount', ['-l', target]).catch(() => undefined));
  }
  await rmdir(target).catch(() => undefined);
}

/** True when `path` is a mount point according to the kernel's mount table. */
export async function isMountPoint(path: string): Promise<boolean> {
  const table = await readFile('/proc/self/mountinfo', 'utf8');
  return table.split('\n').some((line) => decodeMountPath(line.split(' ')[4] ?? '') === path);
}

/** Mount points at or below `prefix`, for leak checks. */
export async function mountsUnder(prefix: string): Promise<string[]> {
  const table = await readFile('/proc/self/mountinfo', 'utf8');
  return table
    .split('\n')
    .map((line) => decodeMountPath(line.split(' ')[4] ?? ''))
    .filter((path) => path === prefix || path.startsWith(`${prefix}/`));
}

function decodeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 30_000 }, (error, _stdout, stderr) => {
      if (error) reject(new AirlockError('DRIVER_FAILED', `${file} ${args.join(' ')}: ${String(stderr).trim() || error.message}`, { cause: error }));
      else resolve();
    });
  });
}
