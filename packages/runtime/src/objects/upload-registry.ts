/**
 * The upload side of the collection protocol (collection-protocol.ts): an
 * upload is registered before its first chunk and until its manifest is
 * written, so that no collector deletes a chunk it is about to name.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { AirlockError } from '../core/errors.js';
import type { ObjectStore } from './object-store.js';
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

/** An upload in flight: its intent is kept alive until `end()`. */
export interface RegisteredUpload {
  readonly key: string;
  /** Throws OBJECT_STORAGE_UNAVAILABLE when the intent is gone (a collector judged this upload dead); call before writing the manifest. */
  confirm(): Promise<void>;
  /** Stops the heartbeat and deletes the intent; idempotent. */
  end(): Promise<void>;
}

/** Test hooks: where an upload may be held to race it against a collector. */
export interface UploadRegistryHooks {
  /** after the intent was written and no collector lock was found */
  registered?: (upload: RegisteredUpload) => Promise<void>;
}

/** Registers uploads of one node. */
export class UploadRegistry {
  private readonly timings: CollectionTimings;
  private readonly live = new Set<RegisteredUpload>();

  constructor(
    private readonly objects: ObjectStore,
    private readonly owner: string,
    options: { timings?: Partial<CollectionTimings>; hooks?: UploadRegistryHooks } = {},
  ) {
    this.timings = { ...DEFAULT_COLLECTION_TIMINGS, ...options.timings };
    this.hooks = options.hooks ?? {};
  }

  /** replaceable by tests */
  hooks: UploadRegistryHooks;

  /** Registers an upload of `purpose` (a snapshot id); waits while a collector is deleting. */
  async begin(purpose: string): Promise<RegisteredUpload> {
    const record: ProtocolRecord = { owner: this.owner, purpose, startedAt: new Date().toISOString(), beat: 0 };
    const lockWatch = new StalenessWatch();
    const started = performance.now();
    let key: string;
    for (;;) {
      // A new key each time: a collector that saw the last one unchanged must not take this one for it.
      key = `${INTENT_PREFIX}${Date.now().toString(36)}-${randomBytes(6).toString('hex')}.json`;
      await this.objects.put(key, encodeRecord(record));
      const lock = await this.objects.head(COLLECTOR_LOCK_KEY);
      if (!lock) break;
      // A collector is at work: step back so that it can finish, then register again.
      await this.objects.delete(key);
      if (lockWatch.isStale(lock, this.timings.lockStaleMs)) {
        // Its collector died holding it; a live one rewrites it every lockHeartbeatMs.
        await this.objects.delete(COLLECTOR_LOCK_KEY);
        continue;
      }
      if (performance.now() - started > this.timings.uploadPatienceMs) {
        throw new AirlockError('OBJECT_STORAGE_UNAVAILABLE', `object storage ${this.objects.description}: a chunk collection has held the bucket for over ${Math.round(this.timings.uploadPatienceMs / 1000)} s; nothing was uploaded, retry later`, {
          details: { objects: this.objects.description },
        });
      }
      await delay(this.timings.pollMs);
    }
    const upload = this.track(key, record);
    await this.hooks.registered?.(upload);
    return upload;
  }

  /** Ends every upload still registered (the node is shutting down). */
  async endAll(): Promise<void> {
    await Promise.all([...this.live].map((upload) => upload.end().catch(() => undefined)));
  }

  /** Deletes intents this node left in an earlier life (a crash mid-upload): they will never end. */
  async sweepOwn(): Promise<string[]> {
    const removed: string[] = [];
    for (const intent of await this.objects.list(INTENT_PREFIX)) {
      if (decodeRecord(await this.objects.get(intent.key))?.owner !== this.owner) continue;
      if ([...this.live].some((upload) => upload.key === intent.key)) continue;
      await this.objects.delete(intent.key);
      removed.push(intent.key);
    }
    return removed;
  }

  private track(key: string, record: ProtocolRecord): RegisteredUpload {
    let beating: Promise<void> = Promise.resolve();
    let ended = false;
    const timer = setInterval(() => {
      // Heartbeats in order; a failed one is noticed by confirm() or by the upload's own requests.
      beating = beating.then(() => (ended ? undefined : this.objects.put(key, encodeRecord({ ...record, beat: ++record.beat })))).catch(() => undefined);
    }, this.timings.heartbeatMs);
    timer.unref();
    const upload: RegisteredUpload = {
      key,
      confirm: async () => {
        // After any heartbeat in flight: one request at a time on the intent.
        await beating;
        if (!(await this.objects.head(key))) {
          throw new AirlockError('OBJECT_STORAGE_UNAVAILABLE', `object storage ${this.objects.description}: this upload was judged dead by a chunk collector (no heartbeat for ${this.timings.intentStaleMs} ms), so its chunks may be gone; nothing was recorded, retry`, {
            details: { objects: this.objects.description, intent: key },
          });
        }
      },
      end: async () => {
        if (ended) return;
        ended = true;
        clearInterval(timer);
        this.live.delete(upload);
        await beating;
        await this.objects.delete(key);
      },
    };
    this.live.add(upload);
    return upload;
  }
}
