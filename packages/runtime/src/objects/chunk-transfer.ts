/**
 * Moving chunks between files and object storage, a bounded number at a
 * time: uploads store only chunks that are not there yet, downloads verify
 * every chunk against its name before writing it where it belongs, and the
 * bytes between chunks stay holes.
 */
import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { AirlockError } from '../core/errors.js';
import type { ObjectStore } from './object-store.js';
import { chunkFile, sha256Of, type ChunkingMethod } from './content-chunker.js';
import { SPARSE_DIGEST_CHUNK_BYTES, sparseDigestOf } from '../storage/sparse-digest.js';
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
 * chunks: fetched `concurrency` at a time, each checked against its sha256,
 * then written and hashed in file order, so that the whole file's digest
 * comes out of the same pass (no second read). Returns that digest, in the
 * form the snapshot's checksum uses: the hex sha256 of the content, or for a
 * disk image (aligned chunks) its sparse digest. A missing or altered chunk
 * throws SNAPSHOT_CORRUPT naming it.
 */
export async function assembleFile(
  objects: ObjectStore,
  path: string,
  size: number,
  chunks: readonly ChunkReference[],
  options: { concurrency: number; what: string; stats: TransferStats; method: ChunkingMethod },
): Promise<string> {
  if (options.method === 'aligned') {
    const misplaced = chunks.find((chunk) => chunk.offset % SPARSE_DIGEST_CHUNK_BYTES !== 0 || chunk.length !== Math.min(SPARSE_DIGEST_CHUNK_BYTES, size - chunk.offset));
    if (misplaced) {
      throw new AirlockError('SNAPSHOT_CORRUPT', `${options.what}: chunk ${misplaced.sha256} is not on a 1 MiB boundary of the disk image; nothing was restored`, { details: { chunk: misplaced.sha256 } });
    }
  }
  const content = options.method === 'content-defined' ? createHash('sha256') : undefined;
  let hashed = 0;
  const fetches: (Promise<Buffer & { storedBytes: number }> | undefined)[] = [];
  const begin = (index: number): void => {
    const chunk = chunks[index];
    if (!chunk) return;
    const fetching = fetchChunk(objects, chunk, options.what);
    // Awaited in order below; a failure of one still in flight is reported by that await, not as unhandled.
    fetching.catch(() => undefined);
    fetches[index] = fetching;
  };
  const file = await open(path, 'wx');
  try {
    // Sized first and written only where data is: zeros between and inside chunks stay holes.
    await file.truncate(size);
    for (let index = 0; index < Math.min(options.concurrency, chunks.length); index++) begin(index);
    for (const [index, chunk] of chunks.entries()) {
      const data = await fetches[index]!;
      fetches[index] = undefined;
      begin(index + options.concurrency);
      for (const run of nonZeroRuns(data)) {
        for (let written = run.start; written < run.end; ) written += (await file.write(data, written, run.end - written, chunk.offset + written)).bytesWritten;
      }
      if (content) {
        hashZeros(content, chunk.offset - hashed);
        content.update(data);
        hashed = chunk.offset + chunk.length;
      }
      options.stats.bytes += data.storedBytes;
      options.stats.chunks += 1;
    }
    await file.sync();
  } finally {
    await file.close();
  }
  if (!content) return sparseDigestOf(chunks.map((chunk) => ({ index: chunk.offset / SPARSE_DIGEST_CHUNK_BYTES, sha256: chunk.sha256 })));
  hashZeros(content, size - hashed);
  return content.digest('hex');
}

/** One chunk from object storage, decoded and checked against its name. */
async function fetchChunk(objects: ObjectStore, chunk: ChunkReference, what: string): Promise<Buffer & { storedBytes: number }> {
  const stored = await objects.get(chunkKey(chunk.sha256));
  if (!stored) {
    throw new AirlockError('SNAPSHOT_CORRUPT', `${what}: chunk ${chunk.sha256} (at byte ${chunk.offset}) is missing from object storage ${objects.description}; nothing was restored. Restore an earlier snapshot or terminate the session`, {
      details: { chunk: chunk.sha256, offset: chunk.offset },
    });
  }
  const data = decodeChunk(stored, chunk.length);
  if (!data || sha256Of(data) !== chunk.sha256) {
    throw new AirlockError('SNAPSHOT_CORRUPT', `${what}: chunk ${chunk.sha256} (at byte ${chunk.offset}) in object storage ${objects.description} does not match its hash (altered or truncated); nothing was restored`, {
      details: { chunk: chunk.sha256, offset: chunk.offset, storedBytes: stored.length },
    });
  }
  return Object.assign(data, { storedBytes: stored.length });
}

const ZERO_BLOCK = Buffer.alloc(1024 * 1024);

function hashZeros(hash: Hash, count: number): void {
  for (let left = count; left > 0; left -= ZERO_BLOCK.length) hash.update(ZERO_BLOCK.subarray(0, Math.min(left, ZERO_BLOCK.length)));
}
