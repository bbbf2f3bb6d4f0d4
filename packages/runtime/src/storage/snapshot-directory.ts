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
import type { ArtifactTransfer, SealedSnapshot, SnapshotArtifacts } from '../core/snapshot-artifacts.js';
import { sparseFileDigest } from './sparse-digest.js';

/** File name of the disk copy inside a snapshot directory. */
export const SNAPSHOT_DISK_FILE = 'disk.ext4';

const ID_PATTERN = /^[a-z]+_[0-9a-z]+$/;

/** Snapshot artifacts on local disk. */
export class SnapshotDirectory implements SnapshotArtifacts {
  constructor(private readonly root: string) {}

  /** The host directory that holds every snapshot. */
  get rootDir(): string {
    return this.root;
  }

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
      throw new AirlockError('SNAPSHOT_CORRUPT', `cannot read snapshot ${fromSnapshotId} on disk to derive ${toSnapshotId} from it`, {
        cause: error,
        details: { snapshotId: fromSnapshotId },
      });
    }
  }

  /** The live disk (`liveDiskOf`) stays where it is: without object storage nothing else needs it. */
  async seal(snapshotId: string, _options: { liveDiskOf?: string } = {}): Promise<SealedSnapshot> {
    const { checksum, sizeBytes } = await snapshotTreeDigest(this.pathFor(snapshotId));
    await this.writeSeal(snapshotId, { checksum, sizeBytes });
    return { checksum, sizeBytes };
  }

  /** Records a seal computed elsewhere (a snapshot fetched from object storage and verified). */
  async writeSeal(snapshotId: string, sealed: { checksum: string; sizeBytes: number }): Promise<void> {
    const sealPath = `${this.pathFor(snapshotId)}.seal.json`;
    await writeFile(`${sealPath}.tmp`, JSON.stringify({ checksum: sealed.checksum, sizeBytes: sealed.sizeBytes, sealedAt: new Date().toISOString() }));
    await rename(`${sealPath}.tmp`, sealPath);
  }

  async verify(snapshotId: string, checksum: string): Promise<ArtifactTransfer | null> {
    let actual: string;
    try {
      actual = (await snapshotTreeDigest(this.pathFor(snapshotId))).checksum;
    } catch (error) {
      throw new AirlockError('SNAPSHOT_CORRUPT', `snapshot ${snapshotId} is missing or unreadable on disk; it cannot be restored`, {
        cause: error,
        details: { snapshotId },
      });
    }
    if (actual !== checksum) {
      throw new AirlockError(
        'SNAPSHOT_CORRUPT',
        `snapshot ${snapshotId} does not match its checksum (altered or truncated on disk); it was not restored. Restore an earlier snapshot or terminate the session`,
        { details: { snapshotId, expected: checksum, actual } },
      );
    }
    return null;
  }

  async prepareDisk(): Promise<ArtifactTransfer | null> {
    // Without object storage the session's live disk is the only copy there is.
    return null;
  }

  async isOnHost(snapshotId: string): Promise<boolean> {
    return this.has(snapshotId);
  }

  /** True when the snapshot's directory exists on this host. */
  async has(snapshotId: string): Promise<boolean> {
    return stat(this.pathFor(snapshotId)).then(
      (info) => info.isDirectory(),
      () => false,
    );
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
 * sorted path order. A disk image (`*.ext4`) or a microVM RAM file (`*.raw`) is hashed chunk-wise without its
 * all-zero chunks (see sparse-digest.ts): a 2 GiB sparse disk then costs what
 * it holds, not 2 GiB of reads. The size reported is what the files take on
 * the host (allocated blocks), not their apparent size.
 */
export async function snapshotTreeDigest(dir: string): Promise<{ checksum: string; sizeBytes: number }> {
  const files = await listFiles(dir);
  if (files.length === 0) throw new Error(`${dir} holds no files`);
  const entries: { path: string; size: number; digest: string }[] = [];
  let sizeBytes = 0;
  for (const file of files) {
    const info = await stat(file);
    sizeBytes += Math.min(info.size, info.blocks * 512);
    let digest: string;
    if (file.endsWith('.ext4') || file.endsWith('.raw')) digest = await sparseFileDigest(file, info.size);
    else {
      const content = createHash('sha256');
      for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) content.update(chunk as Buffer);
      digest = content.digest('hex');
    }
    entries.push({ path: relative(dir, file), size: info.size, digest });
  }
  return { checksum: treeChecksum(entries), sizeBytes };
}

/**
 * The checksum of a tree from each file's path (relative), apparent size and
 * digest (hex sha256 of its content; the sparse digest for `*.ext4`), in
 * sorted path order: what `snapshotTreeDigest` computes by reading the files,
 * and what a fetch computes from the chunks it wrote.
 */
export function treeChecksum(files: { path: string; size: number; digest: string }[]): string {
  const tree = createHash('sha256');
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0))) tree.update(`${file.path}\0${file.size}\0${file.digest}\n`);
  return `sha256:${tree.digest('hex')}`;
}

/** Every file under `dir`, in sorted path order. */
export async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(full)));
    else if (entry.isFile()) out.push(full);
  }
  return out.sort();
}
