/** X Window Dumps made in tests, laid out as Xvfb's xwd writes them (32 bits, little-endian pixels, big-endian header). */

/** A 24-bit TrueColor dump whose pixel at (x, y) is `colour(x, y)`; `pad` extra bytes end each line. */
export function xwdDump(width: number, height: number, colour: (x: number, y: number) => readonly number[], pad = 0): Buffer {
  const header = Buffer.alloc(100 + 8); // + window name "screen\0\0"
  const fields = [108, 7, 2, 24, width, height, 0, 0, 32, 0, 32, 32, width * 4 + pad, 4, 0xff0000, 0xff00, 0xff, 8, 256, 0, width, height, 0, 0, 0];
  fields.forEach((value, index) => header.writeUInt32BE(value, index * 4));
  header.write('screen', 100, 'latin1');
  const lines = Buffer.alloc((width * 4 + pad) * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = colour(x, y);
      const offset = y * (width * 4 + pad) + x * 4;
      lines[offset] = b ?? 0;
      lines[offset + 1] = g ?? 0;
      lines[offset + 2] = r ?? 0;
    }
  }
  return Buffer.concat([header, lines]);
}
