/**
 * Moving chunks between files and object storage, a bounded number at a
 * time: uploads store only chunks that are not there yet, downloads verify
 * every chunk against its name before writing it where it belongs, and the
 * bytes between chunks stay holes.
 */
import { open } from 'node:fs/promises';
import { AirlockError } from '../core/errors.js';
import type { ObjectStore } from './object-store.js';
import { chunkFile, sha256Of, type ChunkingMethod } from './content-chunker.js';
import { chunkKey, type ChunkReference } from './snapshot-manifest.js';
import { decodeChunk, encodeChunk, nonZeroRuns } from './chunk-encoding.js';

/** What an upload or a download moved. */
export interface TransferStats {
  /** bytes sent or received (chunks as stored: zero pages left out) */
  bytes: number;
  chunks: number;
  /** chunks an upload found already stored (not sent) */
  reusedChunks: number;
  reusedBytes: number;
}

/** Zeroed stats. */
export function emptyStats(): TransferStats {
  return { bytes: 0, chunks: 0, reusedChunks: 0, reusedBytes: 0 };
}

/** Runs tasks with at most `limit` in flight; the first failure stops new ones and is rethrown once the rest settle. */
class BoundedPool {
  private readonly running = new Set<Promise<void>>();
  private failure: { error: unknown } | undefined;

  constructor(private readonly limit: number) {}

  async add(task: () => Promise<void>): Promise<void> {
    while (this.running.size >= this.limit) await Promise.race(this.running);
    if (this.failure) return;
    const promise: Promise<void> = task()
      .catch((error: unknown) => {
        this.failure ??= { error };
      })
      .finally(() => this.running.delete(promise));
    this.running.add(promise);
  }

  get failed(): boolean {
    return this.failure !== undefined;
  }

  async drain(): Promise<void> {
    await Promise.all(this.running);
    if (this.failure) throw this.failure.error;
  }
}

/** One upload's worth of chunk writes: a chunk named twice in it is stored once. */
export class ChunkUpload {
  readonly stats = emptyStats();
  /** chunks already handled by this upload (a failure fails the whole upload, so no retry is tracked) */
  private readonly stored = new Set<string>();

  constructor(
    private readonly objects: ObjectStore,
    private readonly concurrency: number,
  ) {}

  /** Cuts the file into chunks, stores those not stored yet, and returns the file's chunk list. */
  async file(path: string, size: number, method: ChunkingMethod): Promise<ChunkReference[]> {
    const references: ChunkReference[] = [];
    const pool = new BoundedPool(this.concurrency);
    for await (const chunk of chunkFile(path, size, method)) {
      references.push({ offset: chunk.offset, length: chunk.length, sha256: chunk.sha256 });
      if (this.stored.has(chunk.sha256)) continue;
      this.stored.add(chunk.sha256);
      // The pool bounds how many chunk buffers are held at once: reading waits for a free slot.
      await pool.add(() => this.store(chunk.sha256, chunk.data));
      if (pool.failed) break;
    }
    await pool.drain();
    return references;
  }

  private async store(sha256: string, data: Buffer): Promise<void> {
    const key = chunkKey(sha256);
    if (await this.objects.head(key)) {
      this.stats.reusedChunks += 1;
      this.stats.reusedBytes += data.length;
      return;
    }
    const stored = encodeChunk(data);
    await this.objects.put(key, stored);
    this.stats.chunks += 1;
    this.stats.bytes += stored.length;
  }
}

/**
 * Writes a file of `size` bytes at `path` (which must not exist) from its
 * chunks, fetched `concurrency` at a time, each checked against its sha256.
 * A missing or altered chunk throws SNAPSHOT_CORRUPT naming it.
 */
export async function assembleFile(
  objects: ObjectStore,
  path: string,
  size: number,
  chunks: readonly ChunkReference[],
  options: { concurrency: number; what: string; stats: TransferStats },
): Promise<void> {
  const file = await open(path, 'wx');
  try {
    // Sized first and written only where chunks are: the zeros between them stay holes.
    await file.truncate(size);
    const pool = new BoundedPool(options.concurrency);
    for (const chunk of chunks) {
      await pool.add(async () => {
        const stored = await objects.get(chunkKey(chunk.sha256));
        if (!stored) {
          throw new AirlockError('SNAPSHOT_CORRUPT', `${options.what}: chunk ${chunk.sha256} (at byte ${chunk.offset}) is missing from object storage ${objects.description}; nothing was restored. Restore an earlier snapshot or terminate the session`, {
            details: { chunk: chunk.sha256, offset: chunk.offset },
          });
        }
        const data = decodeChunk(stored, chunk.length);
        if (!data || sha256Of(data) !== chunk.sha256) {
          throw new AirlockError('SNAPSHOT_CORRUPT', `${options.what}: chunk ${chunk.sha256} (at byte ${chunk.offset}) in object storage ${objects.description} does not match its hash (altered or truncated); nothing was restored`, {
            details: { chunk: chunk.sha256, offset: chunk.offset, storedBytes: stored.length },
          });
        }
        // Zero pages are not written: the file keeps its holes.
        for (const run of nonZeroRuns(data)) {
          for (let written = run.start; written < run.end; ) written += (await file.write(data, written, run.end - written, chunk.offset + written)).bytesWritten;
        }
        options.stats.bytes += stored.length;
        options.stats.chunks += 1;
      });
      if (pool.failed) break;
    }
    await pool.drain();
    await file.sync();
  } finally {
    await file.close();
  }
}
