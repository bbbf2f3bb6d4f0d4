import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { decodeChunk, encodeChunk, nonZeroRuns } from '../../../src/objects/chunk-encoding.js';

const KiB = 1024;

describe('chunk encoding', () => {
  it('leaves zero pages out of a chunk that has many, and gives the same bytes back', () => {
    // a 1 MiB disk chunk: 8 KiB of metadata, zeros, 4 KiB more at the end (the last page short)
    const data = Buffer.alloc(1024 * KiB - 100);
    randomBytes(8 * KiB).copy(data, 0);
    randomBytes(3 * KiB).copy(data, data.length - 3 * KiB);
    const stored = encodeChunk(data);
    assert.equal(String.fromCharCode(stored[0]!), 'S');
    assert.ok(stored.length < 16 * KiB, `stored ${stored.length} bytes`);
    assert.ok(decodeChunk(stored, data.length)?.equals(data));
  });

  it('stores dense chunks as they are, with a tag byte', () => {
    const data = randomBytes(700 * KiB);
    const stored = encodeChunk(data);
    assert.equal(String.fromCharCode(stored[0]!), 'R');
    assert.equal(stored.length, data.length + 1);
    assert.ok(decodeChunk(stored, data.length)?.equals(data));
  });

  it('refuses stored forms that do not fit the expected length', () => {
    const sparse = encodeChunk(Buffer.concat([randomBytes(4 * KiB), Buffer.alloc(60 * KiB)]));
    assert.equal(decodeChunk(sparse, 64 * KiB + 1), undefined, 'page count of another length');
    assert.equal(decodeChunk(sparse.subarray(0, sparse.length - 1), 64 * KiB), undefined, 'truncated');
    assert.equal(decodeChunk(Buffer.concat([sparse, Buffer.from([1])]), 64 * KiB), undefined, 'trailing bytes');
    assert.equal(decodeChunk(Buffer.from('Xabc'), 3), undefined, 'unknown tag');
    assert.equal(decodeChunk(Buffer.from('Rab'), 3), undefined, 'raw too short');
  });

  it('finds the non-zero page runs a sparse file needs written', () => {
    const data = Buffer.alloc(20 * KiB);
    data[1] = 1;
    data[4 * KiB + 5] = 1;
    data[16 * KiB + 3] = 1;
    assert.deepEqual(nonZeroRuns(data), [
      { start: 0, end: 8 * KiB },
      { start: 16 * KiB, end: 20 * KiB },
    ]);
  });
});
