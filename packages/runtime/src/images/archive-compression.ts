/**
 * Reading possibly-compressed tar blobs. Compression is told by magic bytes,
 * never by media type or file name: registries and tools disagree on those,
 * and the bytes cannot lie about what they are.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { errnoCode, imageProblem } from './image-errors.js';

/** How a blob is compressed. */
export type Compression = 'gzip' | 'zstd' | 'none';

/** Reads the first bytes of `file` to tell gzip, zstd and plain apart. */
export async function detectCompression(file: string): Promise<Compression> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await handle.read(head, 0, 4, 0);
    if (bytesRead >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
    return 'none';
  } finally {
    await handle.close();
  }
}

/**
 * The uncompressed bytes of `file` (gzip or plain); zstd and damaged gzip are
 * INVALID_IMAGE naming `label`. Stopping the iteration early closes the file.
 */
export async function* readDecompressed(file: string, label: string): AsyncGenerator<Buffer> {
  const compression = await detectCompression(file);
  if (compression === 'zstd') {
    throw imageProblem(`${label} is zstd-compressed, which this import cannot read yet (export with gzip or uncompressed layers)`);
  }
  const raw = createReadStream(file, { highWaterMark: 1 << 20 });
  // pipeline() also destroys the file stream when the gunzip side is destroyed
  const plain: Readable = compression === 'gzip' ? pipeline(raw, createGunzip(), () => undefined) : raw;
  try {
    for await (const chunk of plain) yield chunk as Buffer;
  } catch (error) {
    const code = errnoCode(error);
    if (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR') {
      throw imageProblem(`${label} is not valid gzip (${(error as Error).message})`);
    }
    throw error;
  }
}
