import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, openSync, writeSync, closeSync, ftruncateSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chunkFile, MAX_CHUNK_BYTES, type ChunkingMethod, type FileChunk } from '../../../src/objects/content-chunker.js';
import { SPARSE_DIGEST_CHUNK_BYTES, sparseDigestOf, sparseFileDigest } from '../../../src/storage/sparse-digest.js';
import { seededBytes } from '../../support/seeded-bytes.js';

const MiB = 1024 * 1024;

async function chunksOf(path: string, size: number, method: ChunkingMethod): Promise<FileChunk[]> {
  const chunks: FileChunk[] = [];
  for await (const chunk of chunkFile(path, size, method)) chunks.push(chunk);
  return chunks;
}

describe('content chunker', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync('/tmp/airlock-chunker-');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('cuts memory by content: after pages move by a few positions, most chunks are found again', async () => {
    // Seeded: where content-defined boundaries fall depends on the bytes, and a test gives one answer.
    const pages = seededBytes('memory', 48 * MiB);
    const first = join(dir, 'pages-1.img');
    writeFileSync(first, pages);
    // What a checkpoint after a restore looks like: the same pages, a few inserted near the start,
    // and 10% of them rewritten in one place.
    const second = join(dir, 'pages-2.img');
    const changed = Buffer.concat([pages.subarray(0, 12 * 4096), seededBytes('inserted', 3 * 4096), pages.subarray(12 * 4096)]);
    seededBytes('rewritten', Math.round(4.8 * MiB)).copy(changed, 20 * MiB);
    writeFileSync(second, changed);

    const before = await chunksOf(first, pages.length, 'content-defined');
    const afterChunks = await chunksOf(second, changed.length, 'content-defined');
    const known = new Set(before.map((chunk) => chunk.sha256));
    const newBytes = afterChunks.filter((chunk) => !known.has(chunk.sha256)).reduce((sum, chunk) => sum + chunk.length, 0);
    // Each place that changed costs about one chunk around it: 10% rewritten in one run plus one shift.
    assert.ok(newBytes < 0.25 * changed.length, `${newBytes} of ${changed.length} bytes are in new chunks; at most a quarter expected for 10% changed`);
    const fixed = await chunksOf(second, changed.length, 'aligned');
    const knownFixed = new Set((await chunksOf(first, pages.length, 'aligned')).map((chunk) => chunk.sha256));
    assert.ok(fixed.every((chunk) => !knownFixed.has(chunk.sha256)), 'fixed boundaries lose every chunk after the shift (why memory is cut by content)');
  });

  it('makes chunks between 512 KiB and 4 MiB that put together give the file back', async () => {
    const data = randomBytes(40 * MiB);
    const path = join(dir, 'whole.img');
    writeFileSync(path, data);
    const chunks = await chunksOf(path, data.length, 'content-defined');
    let offset = 0;
    for (const [index, chunk] of chunks.entries()) {
      assert.equal(chunk.offset, offset);
      assert.ok(chunk.length <= MAX_CHUNK_BYTES);
      if (index < chunks.length - 1) assert.ok(chunk.length >= 512 * 1024);
      assert.ok(chunk.data.equals(data.subarray(chunk.offset, chunk.offset + chunk.length)));
      offset += chunk.length;
    }
    assert.equal(offset, data.length);
  });

  it('cuts disk images at 1 MiB boundaries, reads only where data is, and leaves zero chunks out', async () => {
    const path = join(dir, 'disk.ext4');
    const fd = openSync(path, 'w');
    ftruncateSync(fd, 64 * MiB);
    const written = [randomBytes(4096), randomBytes(3 * MiB), Buffer.alloc(MiB)];
    writeSync(fd, written[0]!, 0, 4096, 5 * MiB + 100);
    writeSync(fd, written[1]!, 0, 3 * MiB, 40 * MiB);
    // a written run of zeros is a zero chunk like a hole
    writeSync(fd, written[2]!, 0, MiB, 50 * MiB);
    closeSync(fd);
    const chunks = await chunksOf(path, 64 * MiB, 'aligned');
    assert.deepEqual(chunks.map((chunk) => chunk.offset / MiB), [5, 40, 41, 42]);
    assert.ok(chunks.every((chunk) => chunk.length === MiB));
    const content = readFileSync(path);
    for (const chunk of chunks) assert.ok(chunk.data.equals(content.subarray(chunk.offset, chunk.offset + MiB)));
    // Its chunk hashes are what the disk's sparse digest is made of.
    assert.equal(sparseDigestOf(chunks.map((chunk) => ({ index: chunk.offset / SPARSE_DIGEST_CHUNK_BYTES, sha256: chunk.sha256 }))), await sparseFileDigest(path, 64 * MiB));
  });

  it('leaves out a content-defined chunk that is all zeros', async () => {
    const path = join(dir, 'zeros.img');
    writeFileSync(path, Buffer.concat([Buffer.alloc(9 * MiB), randomBytes(MiB)]));
    const chunks = await chunksOf(path, 10 * MiB, 'content-defined');
    assert.ok(chunks.every((chunk) => chunk.data.some((byte) => byte !== 0)));
    assert.ok(chunks.length >= 1);
  });
});
