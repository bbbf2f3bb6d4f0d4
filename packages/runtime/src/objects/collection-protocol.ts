/**
 * How uploads and the chunk collector stay out of each other's way in one
 * bucket, across nodes, with nothing but objects (docs/decisions/0012).
 *
 * The hazard: an upload finds chunk X already stored and skips it (or stores
 * it), and names it in a manifest a moment later; a collector that listed
 * the manifests before that one existed sees X unreferenced and deletes it.
 * The rule: no chunk is deleted while any upload is in flight.
 *
 * - An upload first writes an intent (`uploads/<id>.json`), then looks for
 *   the collector's lock (`collector.json`). If the lock is there it removes
 *   its intent, waits for the lock to go, and starts over. While it runs it
 *   rewrites its intent now and then (a heartbeat); it deletes it after its
 *   manifest is written.
 * - The collector waits until it sees no live intent, writes its lock, and
 *   then lists the intents again: any intent means an upload got in first,
 *   so it removes its lock and waits again. Only then does it list manifests
 *   and chunks and delete what no manifest names.
 *
 * Each side writes its own object before it reads the other's, so with a
 * store that is strongly consistent (S3 has been since 2020; MinIO, Ceph and
 * R2 are) at least one of them sees the other: they never both proceed.
 *
 * Liveness is judged without comparing clocks: an intent or a lock whose
 * ETag has not changed for longer than its staleness limit, measured on the
 * observer's own monotonic clock, belongs to a process that died (or was
 * stopped that long), and is removed. A node that restarts removes its own
 * intents at once.
 */
import { performance } from 'node:perf_hooks';
import type { StoredObject } from './object-store.js';

/** Key prefix of upload intents. */
export const INTENT_PREFIX = 'uploads/';
/** Key of the collector's lock. */
export const COLLECTOR_LOCK_KEY = 'collector.json';

/** Timings of the protocol; tests shorten them. */
export interface CollectionTimings {
  /** how often an upload rewrites its intent */
  heartbeatMs: number;
  /** an intent unchanged for this long belongs to a dead upload */
  intentStaleMs: number;
  /** how often the collector rewrites its lock while it works */
  lockHeartbeatMs: number;
  /** a lock unchanged for this long belongs to a dead collector */
  lockStaleMs: number;
  /** how often a waiting side looks again */
  pollMs: number;
  /** how long the collector waits for a moment with no upload before giving up until its next run */
  collectorPatienceMs: number;
  /** how long an upload waits for a collector that is still alive before it fails */
  uploadPatienceMs: number;
}

/** The timings used unless a test says otherwise. */
export const DEFAULT_COLLECTION_TIMINGS: CollectionTimings = {
  heartbeatMs: 10_000,
  intentStaleMs: 60_000,
  lockHeartbeatMs: 5_000,
  lockStaleMs: 30_000,
  pollMs: 250,
  collectorPatienceMs: 60_000,
  uploadPatienceMs: 300_000,
};

/** The body of an intent or a lock. */
export interface ProtocolRecord {
  /** the node (data dir) that wrote it */
  owner: string;
  /** what it is for: the snapshot an upload writes, or the collector's run */
  purpose: string;
  startedAt: string;
  /** rewritten with every heartbeat, so that the ETag changes */
  beat: number;
}

/** Encodes a record. */
export function encodeRecord(record: ProtocolRecord): Buffer {
  return Buffer.from(JSON.stringify(record));
}

/** Decodes a record; undefined when the bytes are not one. */
export function decodeRecord(bytes: Buffer | undefined): ProtocolRecord | undefined {
  if (!bytes) return undefined;
  try {
    const value = JSON.parse(bytes.toString('utf8')) as Partial<ProtocolRecord>;
    if (typeof value.owner !== 'string' || typeof value.purpose !== 'string') return undefined;
    return { owner: value.owner, purpose: value.purpose, startedAt: String(value.startedAt ?? ''), beat: Number(value.beat ?? 0) };
  } catch {
    return undefined;
  }
}

/**
 * Tells live objects from dead ones by watching whether they change: an
 * object is stale once its ETag has stayed the same for `staleMs` on this
 * process's monotonic clock. An object seen for the first time is live.
 */
export class StalenessWatch {
  private readonly seen = new Map<string, { etag: string; since: number }>();

  constructor(private readonly now: () => number = () => performance.now()) {}

  /** True when `object` has not changed for `staleMs` since this watch first saw it as it is. */
  isStale(object: StoredObject, staleMs: number): boolean {
    const known = this.seen.get(object.key);
    const now = this.now();
    if (!known || known.etag !== object.etag) {
      this.seen.set(object.key, { etag: object.etag, since: now });
      return false;
    }
    return now - known.since >= staleMs;
  }

  /** Forgets objects that are gone, so the map does not grow. */
  retain(present: Iterable<string>): void {
    const keep = new Set(present);
    for (const key of this.seen.keys()) if (!keep.has(key)) this.seen.delete(key);
  }
}

/** Resolves after `ms` (an unref'd timer: a wait never keeps the process alive). */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
