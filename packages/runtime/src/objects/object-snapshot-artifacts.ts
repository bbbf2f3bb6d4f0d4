/**
 * Snapshot artifacts in object storage, with the host directory as a cache.
 *
 * Sealing a snapshot uploads it: each file (and, for a suspend, the
 * session's disk) as content-addressed chunks that are stored only if
 * absent, then the manifest, last. Verifying a snapshot whose files are not
 * on this host fetches them chunk by chunk, each checked against its hash,
 * and checks the assembled whole against the sealed checksum before any
 * restore. Removing a snapshot deletes its manifest; the chunk collector
 * deletes the chunks no manifest names any more.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { AirlockError } from '../core/errors.js';
import type { ArtifactTransfer, SealedSnapshot, SnapshotArtifacts } from '../core/snapshot-artifacts.js';
import { listFiles, treeChecksum, type SnapshotDirectory } from '../storage/snapshot-directory.js';
import { SPARSE_DIGEST_CHUNK_BYTES, sparseDigestOf } from '../storage/sparse-digest.js';
import { ChunkCollector, type ChunkCollectorHooks, type CollectionReport } from './chunk-collector.js';
import { assembleFile, ChunkUpload, emptyStats } from './chunk-transfer.js';
import type { CollectionTimings } from './collection-protocol.js';
import { chunkingMethodFor } from './content-chunker.js';
import type { DiskImages } from './disk-images.js';
import type { ObjectStore } from './object-store.js';
import { buildManifest, encodeManifest, manifestKey, parseManifest, type ManifestDisk, type SnapshotManifest } from './snapshot-manifest.js';
import { UploadRegistry, type UploadRegistryHooks } from './upload-registry.js';

/**
 * In a suspend snapshot's directory: the sparse digest of the session disk saved with it. Being a
 * file of the snapshot, it is covered by the sealed checksum the store holds, so a disk fetched
 * from object storage is checked against the store, not only against the manifest.
 */
export const SESSION_DISK_DIGEST_FILE = 'session-disk.digest';
const PENDING_DELETIONS = '.pending-deletions';

/** Options of ObjectSnapshotArtifacts. */
export interface ObjectSnapshotArtifactsOptions {
  /** the host directory, kept as a cache */
  local: SnapshotDirectory;
  objects: ObjectStore;
  disks: DiskImages;
  /** this node's identity, written into its upload intents */
  owner: string;
  /** chunks moved at the same time by one upload or download; default 8 */
  concurrency?: number;
  timings?: Partial<CollectionTimings>;
  /** told about background failures (a collection, a deferred deletion) */
  onError?: (error: unknown) => void;
  uploadHooks?: UploadRegistryHooks;
  collectorHooks?: ChunkCollectorHooks;
}

/** Snapshot artifacts uploaded to, and fetched from, object storage. */
export class ObjectSnapshotArtifacts implements SnapshotArtifacts {
  readonly uploads: UploadRegistry;
  readonly collector: ChunkCollector;
  private readonly local: SnapshotDirectory;
  private readonly objects: ObjectStore;
  private readonly disks: DiskImages;
  private readonly concurrency: number;
  private readonly onError: (error: unknown) => void;
  private collectionTimer: NodeJS.Timeout | undefined;
  private collectSoon: NodeJS.Timeout | undefined;
  private background: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(options: ObjectSnapshotArtifactsOptions) {
    this.local = options.local;
    this.objects = options.objects;
    this.disks = options.disks;
    this.concurrency = Math.max(1, options.concurrency ?? 8);
    this.onError = options.onError ?? (() => undefined);
    this.uploads = new UploadRegistry(options.objects, options.owner, {
      ...(options.timings ? { timings: options.timings } : {}),
      ...(options.uploadHooks ? { hooks: options.uploadHooks } : {}),
    });
    this.collector = new ChunkCollector(options.objects, options.owner, {
      ...(options.timings ? { timings: options.timings } : {}),
      ...(options.collectorHooks ? { hooks: options.collectorHooks } : {}),
    });
  }

  /** Where the snapshots go, for messages. */
  get description(): string {
    return this.objects.description;
  }

  pathFor(snapshotId: string): string {
    return this.local.pathFor(snapshotId);
  }

  diskPathFor(snapshotId: string): string {
    return this.local.diskPathFor(snapshotId);
  }

  derive(fromSnapshotId: string, toSnapshotId: string): Promise<void> {
    return this.local.derive(fromSnapshotId, toSnapshotId);
  }

  async seal(snapshotId: string, options: { liveDiskOf?: string } = {}): Promise<SealedSnapshot> {
    const dir = this.local.pathFor(snapshotId);
    const upload = await this.uploads.begin(snapshotId);
    try {
      const transfer = new ChunkUpload(this.objects, this.concurrency);
      let disk: ManifestDisk | null = null;
      if (options.liveDiskOf !== undefined) {
        const sessionId = options.liveDiskOf;
        disk = await this.disks.readImage(sessionId, async (imagePath, sizeBytes) => {
          const chunks = await transfer.file(imagePath, sizeBytes, 'aligned');
          const digest = sparseDigestOf(chunks.map((chunk) => ({ index: chunk.offset / SPARSE_DIGEST_CHUNK_BYTES, sha256: chunk.sha256 })));
          return { sessionId, sizeBytes, digest, chunks };
        });
        await writeFile(join(dir, SESSION_DISK_DIGEST_FILE), disk.digest);
      }
      const sealed = await this.local.seal(snapshotId);
      const files: SnapshotManifest['files'] = [];
      for (const path of await listFiles(dir)) {
        const name = relative(dir, path);
        const sizeBytes = (await stat(path)).size;
        files.push({ path: name, sizeBytes, method: chunkingMethodFor(name), chunks: await transfer.file(path, sizeBytes, chunkingMethodFor(name)) });
      }
      const manifest = buildManifest({ snapshotId, checksum: sealed.checksum, files, disk, createdAt: new Date().toISOString() });
      // Written last, and only while this upload is still registered: the manifest is what makes the snapshot exist.
      await upload.confirm();
      await this.objects.put(manifestKey(snapshotId), encodeManifest(manifest));
      if (disk) await this.disks.recordSavedIn(disk.sessionId, snapshotId);
      return { ...sealed, uploaded: { ...transfer.stats } };
    } finally {
      await upload.end().catch(() => undefined);
    }
  }

  async verify(snapshotId: string, checksum: string): Promise<ArtifactTransfer | null> {
    if (await this.local.has(snapshotId)) {
      try {
        return await this.local.verify(snapshotId, checksum);
      } catch (error) {
        // Damaged here: the copy in object storage (if any) replaces it.
        if (!(await this.objects.head(manifestKey(snapshotId)))) throw error;
        await this.local.remove(snapshotId);
      }
    }
    const manifest = await this.manifest(snapshotId);
    if (manifest.checksum !== checksum) {
      throw new AirlockError(
        'SNAPSHOT_CORRUPT',
        `snapshot ${snapshotId} in object storage was sealed with checksum ${manifest.checksum}, not the ${checksum} recorded for it; it was not restored`,
        {
          details: { snapshotId, expected: checksum, actual: manifest.checksum },
        },
      );
    }
    const stats = emptyStats();
    const partial = `${this.local.pathFor(snapshotId)}.partial-${randomBytes(4).toString('hex')}`;
    try {
      await mkdir(partial, { recursive: true });
      const digests: { path: string; size: number; digest: string }[] = [];
      for (const file of manifest.files) {
        if (file.method !== chunkingMethodFor(file.path)) {
          throw new AirlockError(
            'SNAPSHOT_CORRUPT',
            `the manifest of snapshot ${snapshotId} cuts ${file.path} the wrong way (${file.method}); it was not restored`,
            { details: { snapshotId } },
          );
        }
        const target = join(partial, file.path);
        await mkdir(dirname(target), { recursive: true });
        const digest = await assembleFile(this.objects, target, file.sizeBytes, file.chunks, {
          concurrency: this.concurrency,
          what: `snapshot ${snapshotId}, file ${file.path}`,
          stats,
          method: file.method,
        });
        digests.push({ path: file.path, size: file.sizeBytes, digest });
      }
      // The whole, as written, against the checksum the store holds.
      const whole = treeChecksum(digests);
      if (whole !== checksum) {
        throw new AirlockError(
          'SNAPSHOT_CORRUPT',
          `snapshot ${snapshotId} fetched from object storage does not match its checksum as a whole (${whole}); it was not restored`,
          {
            details: { snapshotId, expected: checksum, actual: whole },
          },
        );
      }
      let sizeBytes = 0;
      for (const file of await listFiles(partial)) {
        const info = await stat(file);
        sizeBytes += Math.min(info.size, info.blocks * 512);
      }
      await rename(partial, this.local.pathFor(snapshotId)).catch(async (error: unknown) => {
        // Fetched meanwhile by another call: keep that copy.
        if (!(await this.local.has(snapshotId))) throw error;
      });
      await this.local.writeSeal(snapshotId, { checksum, sizeBytes });
    } finally {
      await rm(partial, { recursive: true, force: true });
    }
    return stats;
  }

  async prepareDisk(snapshotId: string, sessionId: string): Promise<ArtifactTransfer | null> {
    const hasLocal = await this.disks.has(sessionId);
    if (hasLocal) {
      const savedIn = await this.disks.savedIn(sessionId);
      // Never saved anywhere: the local disk is the only one. Saved in this very snapshot: it is this one, or newer.
      if (savedIn === undefined || savedIn === snapshotId) return null;
    }
    const manifest = await this.manifest(snapshotId);
    const disk = manifest.disk;
    if (!disk || disk.sessionId !== sessionId) {
      if (hasLocal) return null;
      throw new AirlockError(
        'SNAPSHOT_CORRUPT',
        `snapshot ${snapshotId} in object storage holds no disk of session ${sessionId}, and the session has none on this host; it cannot be resumed here`,
        {
          details: { snapshotId, sessionId },
        },
      );
    }
    // The digest the store vouches for (through the snapshot's checksum), when the snapshot's files are here.
    const sealedDigest = await readFile(join(this.local.pathFor(snapshotId), SESSION_DISK_DIGEST_FILE), 'utf8').catch(() => undefined);
    if (sealedDigest !== undefined && sealedDigest !== disk.digest) {
      throw new AirlockError(
        'SNAPSHOT_CORRUPT',
        `snapshot ${snapshotId}: the disk its manifest names (${disk.digest}) is not the one it was sealed with (${sealedDigest}); nothing was restored`,
        {
          details: { snapshotId, sessionId },
        },
      );
    }
    // This node's disk is older than the snapshot (the session ran elsewhere since): replaced.
    if (hasLocal) await this.disks.destroy(sessionId);
    const stats = emptyStats();
    await this.disks.createFromImage(sessionId, async (imagePath) => {
      const what = `the disk of session ${sessionId} in snapshot ${snapshotId}`;
      const whole = await assembleFile(this.objects, imagePath, disk.sizeBytes, disk.chunks, { concurrency: this.concurrency, what, stats, method: 'aligned' });
      if (whole !== disk.digest) {
        throw new AirlockError(
          'SNAPSHOT_CORRUPT',
          `the disk of session ${sessionId} fetched from snapshot ${snapshotId} does not match its digest as a whole; nothing was restored`,
          {
            details: { snapshotId, sessionId, expected: disk.digest, actual: whole },
          },
        );
      }
    });
    await this.disks.recordSavedIn(sessionId, snapshotId);
    return stats;
  }

  async isOnHost(snapshotId: string): Promise<boolean> {
    return this.local.has(snapshotId);
  }

  async has(snapshotId: string): Promise<boolean> {
    return (await this.local.has(snapshotId)) || (await this.objects.head(manifestKey(snapshotId))) !== undefined;
  }

  async remove(snapshotId: string): Promise<void> {
    await this.local.remove(snapshotId);
    try {
      await this.objects.delete(manifestKey(snapshotId));
    } catch {
      // Object storage is down: the deletion is remembered and retried, so removing never fails for it.
      await mkdir(join(this.local.rootDir, PENDING_DELETIONS), { recursive: true });
      await writeFile(join(this.local.rootDir, PENDING_DELETIONS, snapshotId), '');
      return;
    }
    this.scheduleCollection();
  }

  list(): Promise<string[]> {
    return this.local.list();
  }

  async sweepIncomplete(): Promise<string[]> {
    const removed = await this.local.sweepIncomplete();
    for (const intent of await this.uploads.sweepOwn()) removed.push(`object:${intent}`);
    if (await this.collector.sweepOwn()) removed.push('object:collector.json');
    removed.push(...(await this.retryDeletions()).map((id) => `object:${manifestKey(id)}`));
    return removed;
  }

  /** Runs a collection now (also what the timer and removals do). */
  collect(): Promise<CollectionReport> {
    return this.collector.collect();
  }

  /** Starts a collection without waiting for it (failures go to `onError`). */
  collectInBackground(): void {
    this.runInBackground(() => this.collector.collect());
  }

  /** Collects every `intervalMs` (and retries deferred deletions); the timer never keeps the process alive. */
  startCollector(intervalMs: number): void {
    if (this.collectionTimer || this.closed) return;
    this.collectionTimer = setInterval(
      () =>
        this.runInBackground(async () => {
          await this.retryDeletions();
          await this.collector.collect();
        }),
      intervalMs,
    );
    this.collectionTimer.unref();
  }

  /** Stops the timers, waits for background work and uploads, and releases connections. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.collectionTimer) clearInterval(this.collectionTimer);
    if (this.collectSoon) clearTimeout(this.collectSoon);
    await this.background;
    await this.uploads.endAll();
    this.objects.close();
  }

  private scheduleCollection(): void {
    if (this.closed || this.collectSoon) return;
    // A burst of removals (a terminate drops every snapshot of a session) gives one collection.
    this.collectSoon = setTimeout(() => {
      this.collectSoon = undefined;
      this.runInBackground(() => this.collector.collect());
    }, 1_000);
    this.collectSoon.unref();
  }

  private runInBackground(work: () => Promise<unknown>): void {
    if (this.closed) return;
    this.background = this.background.then(work).catch(this.onError);
  }

  /** Deletes manifests whose removal failed earlier; returns the snapshots done. */
  private async retryDeletions(): Promise<string[]> {
    const dir = join(this.local.rootDir, PENDING_DELETIONS);
    const done: string[] = [];
    for (const snapshotId of await readdir(dir).catch(() => [] as string[])) {
      if (!/^[a-z]+_[0-9a-z]+$/.test(snapshotId)) continue;
      await this.objects.delete(manifestKey(snapshotId));
      await rm(join(dir, snapshotId), { force: true });
      done.push(snapshotId);
    }
    if (done.length > 0) this.scheduleCollection();
    return done;
  }

  private async manifest(snapshotId: string): Promise<SnapshotManifest> {
    const bytes = await this.objects.get(manifestKey(snapshotId));
    if (!bytes) {
      throw new AirlockError(
        'SNAPSHOT_CORRUPT',
        `snapshot ${snapshotId} is neither on this host nor in object storage ${this.objects.description}; it cannot be restored. Restore an earlier snapshot or terminate the session`,
        {
          details: { snapshotId },
        },
      );
    }
    return parseManifest(bytes, snapshotId);
  }
}
