/**
 * Snapshot artifacts in a host directory: `<root>/<snapshotId>/` holds what
 * the driver checkpointed (and `disk.ext4`, the copy of the session disk, for
 * snapshots that carry one), and `<root>/<snapshotId>.seal.json` its
 * checksum, kept outside the directory it covers.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { link, mkdir, readdir, readFile, rm, stat, writeFile, rename } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { AirlockError } from '../core/errors.js';
import type { SnapshotArtifacts } from '../core/snapshot-artifacts.js';
import { sparseFileDigest } from './sparse-digest.js';

/** File name of the disk copy inside a snapshot directory. */
export const SNAPSHOT_DISK_FILE = 'disk.ext4';

const ID_PATTERN = /^[a-z]+_[0-9a-z]+$/;

/** Snapshot artifacts on local disk. */
export class SnapshotDirectory implements SnapshotArtifacts {
  constructor(private readonly root: string) {}

  pathFor(snapshotId: string): string {
    if (!ID_PATTERN.test(snapshotId)) throw new AirlockError('INVALID_ARGUMENTS', `bad snapshot id ${JSON.stringify(snapshotId)}`);
    return join(this.root, snapshotId);
  }

  diskPathFor(snapshotId: string): string {
    return join(this.pathFor(snapshotId), SNAPSHOT_DISK_FILE);
  }

  async derive(fromSnapshotId: string, toSnapshotId: string): Promise<void> {
    const from = this.pathFor(fromSnapshotId);
    const to = this.pathFor(toSnapshotId);
    await mkdir(to, { recursive: false });
    try {
      // Checkpoint files are never written after the seal, so sharing their inodes is safe.
      for (const file of await listFiles(from)) {
        const target = join(to, relative(from, file));
        await mkdir(join(target, '..'), { recursive: true });
        await link(file, target);
      }
    } catch (error) {
      await rm(to, { recursive: true, force: true });
      throw new AirlockError('SNAPSHOT_CORRUPT', `cannot read snapshot ${fromSnapshotId} on disk to derive ${toSnapshotId} from it`, { cause: error, details: { snapshotId: fromSnapshotId } });
    }
  }

  async seal(snapshotId: string): Promise<{ checksum: string; sizeBytes: number }> {
    const { checksum, sizeBytes } = await digestTree(this.pathFor(snapshotId));
    const sealPath = `${this.pathFor(snapshotId)}.seal.json`;
    await writeFile(`${sealPath}.tmp`, JSON.stringify({ checksum, sizeBytes, sealedAt: new Date().toISOString() }));
    await rename(`${sealPath}.tmp`, sealPath);
    return { checksum, sizeBytes };
  }

  async verify(snapshotId: string, checksum: string): Promise<void> {
    let actual: string;
    try {
      actual = (await digestTree(this.pathFor(snapshotId))).checksum;
    } catch (error) {
      throw new AirlockError('SNAPSHOT_CORRUPT', `snapshot ${snapshotId} is missing or unreadable on disk; it cannot be restored`, { cause: error, details: { snapshotId } });
    }
    if (actual !== checksum) {
      throw new AirlockError(
        'SNAPSHOT_CORRUPT',
        `snapshot ${snapshotId} does not match its checksum (altered or truncated on disk); it was not restored. Restore an earlier snapshot or terminate the session`,
        { details: { snapshotId, expected: checksum, actual } },
      );
    }
  }

  async remove(snapshotId: string): Promise<void> {
    await rm(this.pathFor(snapshotId), { recursive: true, force: true });
    await rm(`${this.pathFor(snapshotId)}.seal.json`, { force: true });
  }

  async list(): Promise<string[]> {
    await mkdir(this.root, { recursive: true });
    const entries = await readdir(this.root, { withFileTypes: true });
    return entries.filter((entry) => entry.isDirectory() && ID_PATTERN.test(entry.name)).map((entry) => entry.name);
  }

  async sweepIncomplete(): Promise<string[]> {
    await mkdir(this.root, { recursive: true });
    const entries = await readdir(this.root);
    const snapshots = new Set(entries.filter((name) => ID_PATTERN.test(name)));
    const removed: string[] = [];
    for (const name of entries) {
      const sealOf = /^(.+)\.seal\.json$/.exec(name)?.[1];
      // A checkpoint in progress writes `<id>.partial-<random>` and renames it when complete; seals go through `.tmp`.
      const incomplete = /\.partial-[0-9a-f]+$/.test(name) || name.endsWith('.tmp') || (sealOf !== undefined && !snapshots.has(sealOf));
      if (!incomplete) continue;
      await rm(join(this.root, name), { recursive: true, force: true });
      removed.push(name);
    }
    return removed;
  }

  /** The seal recorded beside a snapshot, if any. */
  async readSeal(snapshotId: string): Promise<{ checksum: string; sizeBytes: number } | undefined> {
    try {
      return JSON.parse(await readFile(`${this.pathFor(snapshotId)}.seal.json`, 'utf8')) as { checksum: string; sizeBytes: number };
    } catch {
      return undefined;
    }
  }
}

/**
 * sha256 over every file of a tree: relative path, size and content, in
 * sorted path order. A disk image (`*.ext4`) is hashed chunk-wise without its
 * all-zero chunks (see sparse-digest.ts): a 2 GiB sparse disk then costs what
 * it holds, not 2 GiB of reads. The size reported is what the files take on
 * the host (allocated blocks), not their apparent size.
 */
async function digestTree(dir: string): Promise<{ checksum: string; sizeBytes: number }> {
  const files = await listFiles(dir);
  if (files.length === 0) throw new Error(`${dir} holds no files`);
  const tree = createHash('sha256');
  let sizeBytes = 0;
  for (const file of files) {
    const info = await stat(file);
    sizeBytes += Math.min(info.size, info.blocks * 512);
    let digest: string;
    if (file.endsWith('.ext4')) digest = await sparseFileDigest(file, info.size);
    else {
      const content = createHash('sha256');
      for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) content.update(chunk as Buffer);
      digest = content.digest('hex');
    }
    tree.update(`${relative(dir, file)}\0${info.size}\0${digest}\n`);
  }
  return { checksum: `sha256:${tree.digest('hex')}`, sizeBytes };
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out.sort();
}
