/**
 * How a chunk is stored: its bytes, except that the 4 KiB pages that are all
 * zeros are left out when there are enough of them. A disk image's 1 MiB
 * chunk often holds a few KiB of ext4 metadata and zeros around it (a fresh
 * 2 GiB disk has 9 such chunks for 1.4 MB of data), so this halves what an
 * idle session uploads, without the CPU a compressor would spend on memory
 * pages that do not compress. The chunk's name stays the sha256 of its
 * decoded bytes, checked after decoding.
 *
 * Format: one tag byte, then
 * - `R`: the bytes as they are;
 * - `S`: a 4-byte page count, a bitmap of the pages that are stored (bit i of
 *   byte i>>3, least significant first), and those pages in order; the last
 *   page may be shorter than 4 KiB.
 */
import { isAllZero } from './content-chunker.js';

const PAGE_BYTES = 4096;
const RAW = 0x52;
const SPARSE = 0x53;

/** The stored form of a chunk. */
export function encodeChunk(data: Buffer): Buffer {
  const pageCount = Math.ceil(data.length / PAGE_BYTES);
  const bitmap = Buffer.alloc(Math.ceil(pageCount / 8));
  const kept: Buffer[] = [];
  for (let page = 0; page < pageCount; page++) {
    const bytes = data.subarray(page * PAGE_BYTES, Math.min((page + 1) * PAGE_BYTES, data.length));
    if (isAllZero(bytes)) continue;
    bitmap[page >> 3]! |= 1 << (page & 7);
    kept.push(bytes);
  }
  // Worth it only when it saves more than the bitmap costs, by a margin.
  if (pageCount - kept.length < Math.max(1, pageCount / 8)) return Buffer.concat([Buffer.from([RAW]), data]);
  const header = Buffer.alloc(5);
  header[0] = SPARSE;
  header.writeUInt32LE(pageCount, 1);
  return Buffer.concat([header, bitmap, ...kept]);
}

/** The chunk's bytes from its stored form; undefined when the stored form is malformed for a chunk of `length` bytes. */
export function decodeChunk(stored: Buffer, length: number): Buffer | undefined {
  if (stored[0] === RAW) return stored.length === length + 1 ? stored.subarray(1) : undefined;
  if (stored[0] !== SPARSE || stored.length < 5) return undefined;
  const pageCount = stored.readUInt32LE(1);
  if (pageCount !== Math.ceil(length / PAGE_BYTES)) return undefined;
  const bitmapBytes = Math.ceil(pageCount / 8);
  const data = Buffer.alloc(length);
  let at = 5 + bitmapBytes;
  for (let page = 0; page < pageCount; page++) {
    if (((stored[5 + (page >> 3)] ?? 0) & (1 << (page & 7))) === 0) continue;
    const size = Math.min(PAGE_BYTES, length - page * PAGE_BYTES);
    if (at + size > stored.length) return undefined;
    stored.copy(data, page * PAGE_BYTES, at, at + size);
    at += size;
  }
  return at === stored.length ? data : undefined;
}

/** Byte ranges of `data` that are not whole zero pages: what a sparse file needs written. */
export function nonZeroRuns(data: Buffer): { start: number; end: number }[] {
  const runs: { start: number; end: number }[] = [];
  for (let start = 0; start < data.length; start += PAGE_BYTES) {
    const end = Math.min(start + PAGE_BYTES, data.length);
    if (isAllZero(data.subarray(start, end))) continue;
    const last = runs.at(-1);
    if (last && last.end === start) last.end = end;
    else runs.push({ start, end });
  }
  return runs;
}
