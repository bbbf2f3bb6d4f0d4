/**
 * The chunk collector: deletes chunks that no manifest names (left by
 * removed or expired snapshots, and by uploads that died before their
 * manifest), never one that a manifest names or that an upload in flight
 * may name (the protocol is in collection-protocol.ts).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { ObjectStore, StoredObject } from './object-store.js';
import {
  COLLECTOR_LOCK_KEY,
  DEFAULT_COLLECTION_TIMINGS,
  INTENT_PREFIX,
  StalenessWatch,
  decodeRecord,
  encodeRecord,
  delay,
  type CollectionTimings,
  type ProtocolRecord,
} from './collection-protocol.js';
import { CHUNK_PREFIX, MANIFEST_PREFIX, chunkOfKey, chunksOf, parseManifest } from './snapshot-manifest.js';

/** What one collection did. */
export interface CollectionReport {
  /** false when uploads kept the bucket busy past the collector's patience: nothing was deleted */
  completed: boolean;
  deletedChunks: number;
  deletedBytes: number;
  keptChunks: number;
  /** intents of uploads judged dead, removed */
  deadUploads: string[];
  /** manifests that could not be read: while there are any, nothing is deleted */
  unreadableManifests: string[];
}

/** Test hooks: where a collection may be held to race it against uploads. */
export interface ChunkCollectorHooks {
  /** after the lock was taken and confirmed, before manifests are listed */
  locked?: () => Promise<void>;
  /** after chunks were listed and the candidates chosen, before the first delete */
  beforeDelete?: (candidates: string[]) => Promise<void>;
}

const DELETE_CONCURRENCY = 8;

/** Collects unreferenced chunks of one bucket. */
export class ChunkCollector {
  private readonly timings: CollectionTimings;
  private readonly intentWatch = new StalenessWatch();
  /** manifests never change once written: their chunk lists are read once (by key and ETag) */
  private readonly manifestChunks = new Map<string, { etag: string; chunks: Set<string> }>();
  private running: Promise<CollectionReport> | undefined;

  constructor(
    private readonly objects: ObjectStore,
    private readonly owner: string,
    options: { timings?: Partial<CollectionTimings>; hooks?: ChunkCollectorHooks } = {},
  ) {
    this.timings = { ...DEFAULT_COLLECTION_TIMINGS, ...options.timings };
    this.hooks = options.hooks ?? {};
  }

  /** replaceable by tests */
  hooks: ChunkCollectorHooks;

  /** One collection; calls made while one runs share it. */
  collect(): Promise<CollectionReport> {
    this.running ??= this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Deletes the lock this node left in an earlier life (a crash mid-collection). */
  async sweepOwn(): Promise<boolean> {
    if (this.running) return false;
    const record = decodeRecord(await this.objects.get(COLLECTOR_LOCK_KEY));
    if (record?.owner !== this.owner) return false;
    await this.objects.delete(COLLECTOR_LOCK_KEY);
    return true;
  }

  private async run(): Promise<CollectionReport> {
    const report: CollectionReport = { completed: false, deletedChunks: 0, deletedBytes: 0, keptChunks: 0, deadUploads: [], unreadableManifests: [] };
    const started = performance.now();
    const record: ProtocolRecord = { owner: this.owner, purpose: `collection-${randomBytes(6).toString('hex')}`, startedAt: new Date().toISOString(), beat: 0 };
    while (performance.now() - started <= this.timings.collectorPatienceMs) {
      if ((await this.liveIntents(report)) > 0) {
        await delay(this.timings.pollMs);
        continue;
      }
      await this.objects.put(COLLECTOR_LOCK_KEY, encodeRecord(record));
      try {
        // Written before this look: an upload that registered after it will see the lock and step back.
        if ((await this.liveIntents(report)) > 0) continue;
        await this.hooks.locked?.();
        await this.sweep(report, record);
        report.completed = report.unreadableManifests.length === 0;
        return report;
      } finally {
        await this.releaseLock(record);
      }
    }
    return report;
  }

  /** Counts intents of uploads that are alive; removes those that died. */
  private async liveIntents(report: CollectionReport): Promise<number> {
    const intents = await this.objects.list(INTENT_PREFIX);
    this.intentWatch.retain(intents.map((intent) => intent.key));
    let live = 0;
    for (const intent of intents) {
      if (!this.intentWatch.isStale(intent, this.timings.intentStaleMs)) {
        live += 1;
        continue;
      }
      await this.objects.delete(intent.key);
      report.deadUploads.push(intent.key);
    }
    return live;
  }

  private async sweep(report: CollectionReport, record: ProtocolRecord): Promise<void> {
    const referenced = new Set<string>();
    const manifests = await this.objects.list(MANIFEST_PREFIX);
    for (const manifest of manifests) {
      const chunks = await this.chunksNamedBy(manifest);
      if (!chunks) report.unreadableManifests.push(manifest.key);
      else for (const chunk of chunks) referenced.add(chunk);
    }
    const present = new Set(manifests.map((manifest) => manifest.key));
    for (const key of this.manifestChunks.keys()) if (!present.has(key)) this.manifestChunks.delete(key);
    // A manifest that cannot be read may name any chunk: delete nothing until it is fixed or removed.
    if (report.unreadableManifests.length > 0) return;
    const candidates: StoredObject[] = [];
    for (const chunk of await this.objects.list(CHUNK_PREFIX)) {
      const name = chunkOfKey(chunk.key);
      if (name !== undefined && referenced.has(name)) report.keptChunks += 1;
      else candidates.push(chunk);
    }
    await this.hooks.beforeDelete?.(candidates.map((chunk) => chunk.key));
    let lastBeat = performance.now();
    for (let at = 0; at < candidates.length; at += DELETE_CONCURRENCY) {
      if (performance.now() - lastBeat >= this.timings.lockHeartbeatMs) {
        // Judged dead by an uploader (this process was stopped too long): uploads may be in flight now.
        if (decodeRecord(await this.objects.get(COLLECTOR_LOCK_KEY))?.purpose !== record.purpose) {
          throw new Error('the collector lost its lock while deleting; the rest is left for the next collection');
        }
        await this.objects.put(COLLECTOR_LOCK_KEY, encodeRecord({ ...record, beat: ++record.beat }));
        lastBeat = performance.now();
      }
      const batch = candidates.slice(at, at + DELETE_CONCURRENCY);
      await Promise.all(batch.map((chunk) => this.objects.delete(chunk.key)));
      report.deletedChunks += batch.length;
      report.deletedBytes += batch.reduce((sum, chunk) => sum + chunk.sizeBytes, 0);
    }
  }

  private async chunksNamedBy(manifest: StoredObject): Promise<Set<string> | undefined> {
    const cached = this.manifestChunks.get(manifest.key);
    if (cached && cached.etag === manifest.etag) return cached.chunks;
    const snapshotId = /^snapshots\/(.+)\.json$/.exec(manifest.key)?.[1] ?? '';
    const bytes = await this.objects.get(manifest.key);
    // Deleted since the listing: it names nothing any more.
    if (!bytes) return new Set();
    try {
      const chunks = chunksOf(parseManifest(bytes, snapshotId));
      this.manifestChunks.set(manifest.key, { etag: manifest.etag, chunks });
      return chunks;
    } catch {
      return undefined;
    }
  }

  private async releaseLock(record: ProtocolRecord): Promise<void> {
    // Only our own lock: an uploader may have judged us dead and another collector taken over.
    const current = decodeRecord(await this.objects.get(COLLECTOR_LOCK_KEY).catch(() => undefined));
    if (current?.purpose === record.purpose) await this.objects.delete(COLLECTOR_LOCK_KEY).catch(() => undefined);
  }
}
