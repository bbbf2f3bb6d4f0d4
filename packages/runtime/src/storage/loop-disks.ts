/**
 * Session disks as sparse ext4 image files mounted through loop devices.
 * One disk a session: `<root>/<sessionId>/disk.ext4`, mounted at
 * `<root>/<sessionId>/mnt`. The image's size is the session's disk limit, so a
 * runaway writer fills its own disk (DISK_FULL) and never the host's.
 */
import { execFile } from 'node:child_process';
import { mkdir, readFile, readdir, rename, rm, stat, statfs, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../core/errors.js';
import type { DiskUsage, SessionDisks } from '../core/session-disks.js';
import type { DiskImages } from '../objects/disk-images.js';

/** Options of LoopDisks. */
export interface LoopDisksOptions {
  /** host directory that holds one folder per session disk */
  root: string;
}

const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;
const IMAGE = 'disk.ext4';
const MOUNT = 'mnt';
/** beside the image: the snapshot it was last saved into (object storage) */
const SAVED_IN = 'saved-in';
const SNAPSHOT_ID = /^[a-z]+_[0-9a-z]+$/;

/** SessionDisks on loop-mounted sparse ext4 images (needs root, mkfs.ext4, mount, losetup). */
export class LoopDisks implements SessionDisks, DiskImages {
  readonly root: string;

  constructor(options: LoopDisksOptions) {
    this.root = options.root;
  }

  async create(sessionId: string, sizeMb: number): Promise<string> {
    const dir = this.dirOf(sessionId);
    if (!Number.isInteger(sizeMb) || sizeMb < 16) {
      throw new AirlockError('INVALID_ARGUMENTS', `disk size must be a whole number of MB, at least 16 (got ${sizeMb})`);
    }
    if (await exists(join(dir, IMAGE))) {
      throw new AirlockError('INVALID_STATE', `session ${sessionId} already has a disk; destroy it first or call ensureMounted`);
    }
    try {
      await mkdir(join(dir, MOUNT), { recursive: true });
      // truncate makes the image sparse: it takes host space only as the session writes.
      await writeFile(join(dir, IMAGE), '');
      await truncate(join(dir, IMAGE), sizeMb * 1024 * 1024);
      // lazy init and no reserved blocks: creation stays fast and the session gets its whole quota.
      await run('mkfs.ext4', ['-q', '-F', '-m', '0', '-E', 'lazy_itable_init=1,lazy_journal_init=1,nodiscard', join(dir, IMAGE)]);
      await this.mount(sessionId);
    } catch (error) {
      await this.destroy(sessionId).catch(() => undefined);
      throw diskError(error, `creating the disk of session ${sessionId}`);
    }
    return join(dir, MOUNT);
  }

  async ensureMounted(sessionId: string): Promise<string> {
    const dir = this.dirOf(sessionId);
    if (!(await exists(join(dir, IMAGE)))) {
      throw new AirlockError('NOT_FOUND', `session ${sessionId} has no disk under ${this.root}; create it first`);
    }
    if (!(await isMountPoint(join(dir, MOUNT)))) await this.mount(sessionId);
    return join(dir, MOUNT);
  }

  async blockDevice(sessionId: string): Promise<string> {
    const dir = this.dirOf(sessionId);
    if (!(await exists(join(dir, IMAGE)))) {
      throw new AirlockError('NOT_FOUND', `session ${sessionId} has no disk under ${this.root}; create it first`);
    }
    // No lazy unmount here: a filesystem still mounted on the host while a guest mounts it is corruption.
    await this.unmount(sessionId, false);
    return join(dir, IMAGE);
  }

  async clone(fromSessionId: string, toSessionId: string): Promise<string> {
    const to = this.dirOf(toSessionId);
    if (await exists(join(to, IMAGE))) {
      throw new AirlockError('INVALID_STATE', `session ${toSessionId} already has a disk; pick a new session id`);
    }
    await mkdir(join(to, MOUNT), { recursive: true });
    try {
      await this.frozenCopy(fromSessionId, join(to, IMAGE));
      await this.mount(toSessionId);
    } catch (error) {
      await this.destroy(toSessionId).catch(() => undefined);
      throw diskError(error, `cloning the disk of session ${fromSessionId} to ${toSessionId}`);
    }
    return join(to, MOUNT);
  }

  async snapshot(sessionId: string, destPath: string): Promise<void> {
    if (await exists(destPath)) throw new AirlockError('INVALID_STATE', `${destPath} already exists; a snapshot's disk copy is written once`);
    try {
      await this.frozenCopy(sessionId, destPath);
    } catch (error) {
      await rm(destPath, { force: true });
      throw diskError(error, `copying the disk of session ${sessionId} into a snapshot`);
    }
  }

  async createFrom(sessionId: string, sourcePath: string): Promise<string> {
    const to = this.dirOf(sessionId);
    if (await exists(join(to, IMAGE))) {
      throw new AirlockError('INVALID_STATE', `session ${sessionId} already has a disk; pick a new session id`);
    }
    await mkdir(join(to, MOUNT), { recursive: true });
    try {
      // Two mounted copies of one ext4 image share a UUID; ext4 does not mind (XFS would).
      await run('cp', ['--reflink=auto', '--sparse=always', sourcePath, join(to, IMAGE)]);
      await this.mount(sessionId);
    } catch (error) {
      await this.destroy(sessionId).catch(() => undefined);
      throw diskError(error, `creating the disk of session ${sessionId} from the snapshot copy ${sourcePath}`);
    }
    return join(to, MOUNT);
  }

  async has(sessionId: string): Promise<boolean> {
    return exists(join(this.dirOf(sessionId), IMAGE));
  }

  async readImage<T>(sessionId: string, read: (imagePath: string, sizeBytes: number) => Promise<T>): Promise<T> {
    const source = await this.ensureMounted(sessionId);
    const image = join(this.dirOf(sessionId), IMAGE);
    // Frozen: the journal is flushed into the image and writers wait, so every byte read is of one instant.
    await run('fsfreeze', ['--freeze', source]).catch((error: unknown) => {
      throw diskError(error, `freezing the disk of session ${sessionId} to read it`);
    });
    try {
      return await read(image, (await stat(image)).size);
    } finally {
      await run('fsfreeze', ['--unfreeze', source]);
    }
  }

  async createFromImage(sessionId: string, write: (imagePath: string) => Promise<void>): Promise<string> {
    const dir = this.dirOf(sessionId);
    if (await exists(join(dir, IMAGE))) {
      throw new AirlockError('INVALID_STATE', `session ${sessionId} already has a disk; destroy it first`);
    }
    await mkdir(join(dir, MOUNT), { recursive: true });
    const partial = join(dir, `${IMAGE}.partial`);
    try {
      await rm(partial, { force: true });
      await write(partial);
      await rename(partial, join(dir, IMAGE));
      await this.mount(sessionId);
    } catch (error) {
      await this.destroy(sessionId).catch(() => undefined);
      throw diskError(error, `creating the disk of session ${sessionId} from object storage`);
    }
    return join(dir, MOUNT);
  }

  async savedIn(sessionId: string): Promise<string | undefined> {
    const text = await readFile(join(this.dirOf(sessionId), SAVED_IN), 'utf8').catch(() => '');
    return SNAPSHOT_ID.test(text.trim()) ? text.trim() : undefined;
  }

  async recordSavedIn(sessionId: string, snapshotId: string): Promise<void> {
    const path = join(this.dirOf(sessionId), SAVED_IN);
    await writeFile(`${path}.tmp`, snapshotId);
    await rename(`${path}.tmp`, path);
  }

  async transfer(fromId: string, toId: string): Promise<string> {
    const from = this.dirOf(fromId);
    const to = this.dirOf(toId);
    if (!(await exists(join(from, IMAGE)))) throw new AirlockError('NOT_FOUND', `${fromId} has no disk under ${this.root}; nothing to transfer`);
    if (await exists(to)) throw new AirlockError('INVALID_STATE', `session ${toId} already has a disk; pick a new session id`);
    // The mount (and its loop device) moves with its parent folder: a running sandbox keeps using it.
    await rename(from, to);
    return join(to, MOUNT);
  }

  async sync(sessionId: string): Promise<void> {
    const mountPoint = join(this.dirOf(sessionId), MOUNT);
    if (!(await isMountPoint(mountPoint))) return;
    await run('sync', ['-f', mountPoint]).catch((error: unknown) => {
      throw diskError(error, `syncing the disk of session ${sessionId}`);
    });
  }

  async thaw(sessionId: string): Promise<void> {
    const mountPoint = join(this.dirOf(sessionId), MOUNT);
    if (!(await isMountPoint(mountPoint))) return;
    // fsfreeze says "Invalid argument" for a filesystem that is not frozen: nothing to undo then.
    await run('fsfreeze', ['--unfreeze', mountPoint]).catch(() => undefined);
  }

  async destroy(sessionId: string): Promise<void> {
    const dir = this.dirOf(sessionId);
    await this.unmount(sessionId);
    // `mount -o loop` auto-detaches on umount, but not after a crash between attach and mount.
    if (await exists(join(dir, IMAGE))) {
      const attached = await run('losetup', ['-j', join(dir, IMAGE)]).catch(() => '');
      for (const line of attached.split('\n')) {
        const device = line.split(':')[0]?.trim();
        if (device) await run('losetup', ['-d', device]).catch(() => undefined);
      }
    }
    await rm(dir, { recursive: true, force: true });
  }

  async usage(sessionId: string): Promise<DiskUsage> {
    const dir = this.dirOf(sessionId);
    const mountPoint = join(dir, MOUNT);
    if (await isMountPoint(mountPoint)) {
      const stats = await statfs(mountPoint);
      return { sizeBytes: stats.blocks * stats.bsize, usedBytes: (stats.blocks - stats.bfree) * stats.bsize };
    }
    // Not mounted (attached to a microVM as a block device, which the host must not mount meanwhile):
    // the host blocks the sparse image holds are what the session wrote, give or take ext4's metadata.
    const image = await stat(join(dir, IMAGE)).catch(() => undefined);
    if (!image) throw new AirlockError('NOT_FOUND', `session ${sessionId} has no disk under ${this.root}; create it first`);
    return { sizeBytes: image.size, usedBytes: Math.min(image.size, image.blocks * 512) };
  }

  async list(): Promise<string[]> {
    const entries = await readdir(this.root, { withFileTypes: true }).catch(() => []);
    const ids: string[] = [];
    // A folder without its image is listed too: a crash between mkdir and mkfs leaves one, and only listing it gets it removed.
    for (const entry of entries) {
      if (entry.isDirectory() && SESSION_ID.test(entry.name)) ids.push(entry.name);
    }
    return ids.sort();
  }

  /**
   * Copies the session's image file to `dest` (copy-on-write where the host
   * filesystem allows, sparse otherwise). Freezing syncs the filesystem and
   * flushes its journal first, then blocks writers, so the copy is consistent
   * even while the session keeps running; it is thawed in every case. (No
   * separate `sync`: every process spawned here lengthens a snapshot's pause.)
   */
  private async frozenCopy(sessionId: string, dest: string): Promise<void> {
    const source = join(this.dirOf(sessionId), MOUNT);
    if (!(await isMountPoint(source))) {
      // Attached to a microVM (or idle): nothing on the host writes to it, and a VM's caller stopped it first.
      await run('cp', ['--reflink=auto', '--sparse=always', join(this.dirOf(sessionId), IMAGE), dest]);
      return;
    }
    await run('fsfreeze', ['--freeze', source]);
    try {
      await run('cp', ['--reflink=auto', '--sparse=always', join(this.dirOf(sessionId), IMAGE), dest]);
    } finally {
      await run('fsfreeze', ['--unfreeze', source]);
    }
  }

  /** Unmounts the disk wherever it is mounted (a crash may have stacked mounts); idempotent. */
  private async unmount(sessionId: string, lazyFallback = true): Promise<void> {
    const mountPoint = join(this.dirOf(sessionId), MOUNT);
    // A frozen filesystem (a crash during a copy) never finishes a lazy unmount: its loop device would stay forever.
    await this.thaw(sessionId);
    for (let attempt = 0; attempt < 5 && (await isMountPoint(mountPoint)); attempt++) {
      await run('umount', [mountPoint]).catch((error: unknown) => {
        if (lazyFallback) return run('umount', ['-l', mountPoint]);
        throw diskError(error, `unmounting the disk of session ${sessionId} from the host (something on the host still uses ${mountPoint})`);
      });
    }
  }

  private async mount(sessionId: string): Promise<void> {
    const dir = this.dirOf(sessionId);
    await mkdir(join(dir, MOUNT), { recursive: true });
    await run('mount', ['-o', 'loop,noatime', join(dir, IMAGE), join(dir, MOUNT)]);
  }

  private dirOf(sessionId: string): string {
    // The id becomes a path: refuse anything that could escape the root.
    if (!SESSION_ID.test(sessionId)) {
      throw new AirlockError('INVALID_ARGUMENTS', `invalid session id ${JSON.stringify(sessionId)}: use letters, digits, '.', '_' and '-'`);
    }
    return join(this.root, sessionId);
  }
}

/** True when `path` is a mount point according to the kernel's mount table. */
async function isMountPoint(path: string): Promise<boolean> {
  const table = await readFile('/proc/self/mountinfo', 'utf8');
  return table.split('\n').some((line) => unescapeMountPath(line.split(' ')[4] ?? '') === path);
}

function unescapeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** Runs a host tool without a shell (arguments never pass through a shell); resolves with stdout. */
function run(file: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 120_000, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        const message = `${file} ${args.join(' ')}: ${String(stderr).trim() || error.message}`;
        reject(Object.assign(new Error(message, { cause: error }), { stderr: String(stderr) }));
      } else resolve(String(stdout));
    });
  });
}

/** Maps host errors to AirlockErrors; out-of-space anywhere becomes DISK_FULL. */
function diskError(error: unknown, doing: string): AirlockError {
  if (error instanceof AirlockError) return error;
  const text = error instanceof Error ? `${error.message} ${(error as { code?: unknown }).code ?? ''}` : String(error);
  if (/ENOSPC|No space left|EDQUOT|quota exceeded/i.test(text)) {
    return new AirlockError('DISK_FULL', `${doing}: no space left on the host disk; free space under the disks root or lower disk sizes`, { cause: error });
  }
  return new AirlockError('DRIVER_FAILED', `${doing}: ${error instanceof Error ? error.message : text}`, { cause: error });
}
