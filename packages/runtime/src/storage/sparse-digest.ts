/**
 * A content digest of a large sparse file (a session disk image) that reads
 * only where the file holds data. The digest is defined by content alone:
 * sha256 over (index, sha256) of every 1 MiB chunk that is not all zeros, so a
 * hole and a written run of zeros hash alike, and a dense copy of the same
 * bytes gives the same digest. The extent map (`filefrag`, from e2fsprogs like
 * mkfs.ext4) only tells which chunks can be skipped unread; without it every
 * chunk is read, with the same result.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';

const CHUNK = 1024 * 1024;
/** The chunk size the digest is defined over; object storage cuts disk images at the same boundaries. */
export const SPARSE_DIGEST_CHUNK_BYTES = CHUNK;

/** The digest from the sha256 of each non-zero chunk, by chunk index (what `sparseFileDigest` computes from the file). */
export function sparseDigestOf(chunks: Iterable<{ index: number; sha256: string }>): string {
  const tree = createHash('sha256');
  for (const chunk of [...chunks].sort((a, b) => a.index - b.index)) tree.update(`${chunk.index}\0${chunk.sha256}\n`);
  return `sparse:${tree.digest('hex')}`;
}

/** `sparse:<hex>` over the non-zero 1 MiB chunks of `path` (of `size` bytes). */
export async function sparseFileDigest(path: string, size: number): Promise<string> {
  const ranges = (await dataRanges(path)) ?? [{ start: 0, end: size }];
  const chunks = new Set<number>();
  for (const range of ranges) {
    const last = Math.floor((Math.min(range.end, size) - 1) / CHUNK);
    for (let index = Math.floor(range.start / CHUNK); index <= last; index++) chunks.add(index);
  }
  const digests: { index: number; sha256: string }[] = [];
  const buffer = Buffer.alloc(CHUNK);
  const zeros = Buffer.alloc(CHUNK);
  const file = await open(path, 'r');
  try {
    for (const index of [...chunks].sort((a, b) => a - b)) {
      const length = Math.min(CHUNK, size - index * CHUNK);
      let filled = 0;
      while (filled < length) {
        const { bytesRead } = await file.read(buffer, filled, length - filled, index * CHUNK + filled);
        if (bytesRead === 0) throw new Error(`${path} ended at ${index * CHUNK + filled} bytes, before its size ${size}`);
        filled += bytesRead;
      }
      const chunk = buffer.subarray(0, length);
      if (chunk.equals(zeros.subarray(0, length))) continue;
      digests.push({ index, sha256: createHash('sha256').update(chunk).digest('hex') });
    }
  } finally {
    await file.close();
  }
  return sparseDigestOf(digests);
}

/** Byte ranges of `path` that hold data, from its extent map; undefined when the map is unavailable. */
export async function dataRanges(path: string): Promise<{ start: number; end: number }[] | undefined> {
  const output = await new Promise<string | undefined>((resolve) => {
    // -s syncs the file first, so delayed allocations show up as extents.
    execFile('filefrag', ['-s', '-v', path], { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => resolve(error ? undefined : String(stdout)));
  });
  const blockSize = Number(/blocks of (\d+) bytes/.exec(output ?? '')?.[1]);
  if (!output || !(blockSize > 0)) return undefined;
  const ranges: { start: number; end: number }[] = [];
  for (const line of output.split('\n')) {
    const match = /^\s*\d+:\s+(\d+)\.\.\s*(\d+):/.exec(line);
    if (match) ranges.push({ start: Number(match[1]) * blockSize, end: (Number(match[2]) + 1) * blockSize });
  }
  // No extents at all would make every chunk skipped: trust that only when reading confirms it.
  return ranges.length > 0 ? ranges : undefined;
}
