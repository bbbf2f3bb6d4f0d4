/** Screen pixels: X Window Dumps in, PNG out (and back), thumbnails by averaging. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodePng, decodeXwd, encodePng, shrink } from '../../../src/core/screen-image.js';
import { xwdDump } from './screen-fixtures.js';

describe('screen images', () => {
  it('decodes an Xvfb dump, line padding included, and round-trips it through PNG', async () => {
    const dump = xwdDump(7, 3, (x, y) => [x * 30, y * 80, 200], 4);
    const screen = decodeXwd(dump);
    assert.deepEqual([screen.width, screen.height], [7, 3]);
    assert.deepEqual([...screen.rgb.subarray((2 * 7 + 6) * 3, (2 * 7 + 7) * 3)], [180, 160, 200]);
    const png = await encodePng(screen);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    const back = decodePng(png);
    assert.deepEqual([back.width, back.height], [7, 3]);
    assert.ok(back.rgb.equals(screen.rgb));
  });

  it('decodes other TrueColor layouts by their masks (16-bit 565)', () => {
    const header = Buffer.alloc(100);
    [100, 7, 2, 16, 2, 1, 0, 0, 16, 0, 16, 16, 4, 4, 0xf800, 0x07e0, 0x001f, 6, 0, 0, 2, 1, 0, 0, 0].forEach((value, index) => header.writeUInt32BE(value, index * 4));
    const pixels = Buffer.alloc(4);
    pixels.writeUInt16LE(0xf800, 0); // pure red
    pixels.writeUInt16LE(0x07e0, 2); // pure green
    const screen = decodeXwd(Buffer.concat([header, pixels]));
    assert.deepEqual([...screen.rgb], [255, 0, 0, 0, 255, 0]);
  });

  it('refuses dumps it cannot read, with the reason', () => {
    assert.throws(() => decodeXwd(Buffer.alloc(10)), { code: 'INVALID_IMAGE' });
    const truncated = xwdDump(10, 10, () => [0, 0, 0]).subarray(0, 300);
    assert.throws(() => decodeXwd(truncated), /before its 10 lines/);
    const huge = xwdDump(1, 1, () => [0, 0, 0]);
    huge.writeUInt32BE(100_000, 16);
    huge.writeUInt32BE(100_000, 20);
    assert.throws(() => decodeXwd(huge), { code: 'INVALID_IMAGE' });
    assert.throws(() => decodePng(Buffer.from('not a png')), { code: 'INVALID_IMAGE' });
  });

  it('shrinks to fit by averaging, keeping the aspect, never enlarging', () => {
    const screen = decodeXwd(xwdDump(4, 2, (x) => (x % 2 === 0 ? [0, 0, 0] : [200, 100, 50])));
    const half = shrink(screen, 2, 2);
    assert.deepEqual([half.width, half.height], [2, 1]);
    assert.deepEqual([...half.rgb], [100, 50, 25, 100, 50, 25]);
    assert.equal(shrink(screen, 100, 100), screen);
  });

  it('decodes a dump the same wherever it lies in memory (the word-at-a-time path needs 4-byte alignment)', () => {
    const dump = xwdDump(13, 5, (x, y) => [x * 19, y * 50, (x * y) % 256], 4);
    const aligned = decodeXwd(dump);
    const shifted = Buffer.concat([Buffer.alloc(1), dump]).subarray(1);
    assert.equal((shifted.byteOffset + 108) % 4, 1, 'the test really shifts the pixels off alignment');
    assert.ok(decodeXwd(shifted).rgb.equals(aligned.rgb));
    assert.deepEqual([...aligned.rgb.subarray((4 * 13 + 12) * 3, (4 * 13 + 13) * 3)], [228, 200, 48]);
  });

  it('shrinks by a whole factor to the average of each block, as by any other factor', () => {
    const width = 12;
    const height = 8;
    const rgb = Buffer.alloc(width * height * 3);
    for (let index = 0; index < rgb.length; index++) rgb[index] = (index * 37) % 251;
    const small = shrink({ width, height, rgb }, 3, 3);
    assert.deepEqual([small.width, small.height], [3, 2]);
    for (let y = 0; y < 2; y++) {
      for (let x = 0; x < 3; x++) {
        for (let channel = 0; channel < 3; channel++) {
          let sum = 0;
          for (let sy = y * 4; sy < y * 4 + 4; sy++) for (let sx = x * 4; sx < x * 4 + 4; sx++) sum += rgb[(sy * width + sx) * 3 + channel] as number;
          assert.equal(small.rgb[(y * 3 + x) * 3 + channel], Math.round(sum / 16), `pixel ${x},${y} channel ${channel}`);
        }
      }
    }
  });
});
