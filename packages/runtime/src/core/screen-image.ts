/**
 * Pixels of a session's screen: decoded from the X Window Dump that `xwd`
 * writes inside the machine, encoded as PNG on the host, and shrunk to the
 * thumbnails the audit keeps. Done here rather than by a converter inside the
 * sandbox because one raw dump gives both the screenshot and its thumbnail,
 * and a process inside gVisor costs more than the encoding (docs/desktop.md).
 */
import { promisify } from 'node:util';
import { deflate as deflateCallback, inflateSync } from 'node:zlib';
import { AirlockError } from './errors.js';

const deflate = promisify(deflateCallback);
const LITTLE_ENDIAN_HOST = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** A screen as 8-bit RGB, row after row, no padding. */
export interface ScreenPixels {
  width: number;
  height: number;
  rgb: Buffer;
}

/** Largest screen accepted from a dump (a bound on what a sandbox can make the host allocate). */
const MAX_PIXELS = 7680 * 4320;
const XWD_HEADER_BYTES = 100;
const XWD_COLOR_BYTES = 12;
const ZPIXMAP = 2;

/** Decodes an X Window Dump (xwd -root) of a TrueColor screen; INVALID_IMAGE when it is anything else. */
export function decodeXwd(dump: Buffer): ScreenPixels {
  if (dump.length < XWD_HEADER_BYTES) throw badDump(`it has ${dump.length} bytes, fewer than a header`);
  const field = (index: number) => dump.readUInt32BE(index * 4);
  const headerSize = field(0);
  const version = field(1);
  const format = field(2);
  const width = field(4);
  const height = field(5);
  const byteOrder = field(7);
  const bitsPerPixel = field(11);
  const bytesPerLine = field(12);
  const masks = { red: field(14), green: field(15), blue: field(16) };
  const colors = field(19);
  if (version !== 7 || format !== ZPIXMAP) throw badDump(`version ${version}, format ${format}; expected version 7, ZPixmap`);
  if (width === 0 || height === 0 || width * height > MAX_PIXELS) throw badDump(`${width}×${height} pixels`);
  if (bitsPerPixel !== 32 && bitsPerPixel !== 24 && bitsPerPixel !== 16) throw badDump(`${bitsPerPixel} bits per pixel`);
  const bytesPerPixel = bitsPerPixel / 8;
  if (bytesPerLine < width * bytesPerPixel) throw badDump(`${bytesPerLine} bytes per line for ${width} pixels`);
  const start = headerSize + colors * XWD_COLOR_BYTES;
  if (dump.length < start + bytesPerLine * height) throw badDump(`it ends after ${dump.length} bytes, before its ${height} lines`);
  const channel = (mask: number) => {
    // the mask's lowest set bit is its shift; its width sets the scale to 0..255
    const shift = mask === 0 ? 0 : 31 - Math.clz32(mask & -mask);
    const bits = mask === 0 ? 1 : 32 - Math.clz32(mask >>> shift);
    return { shift, scale: 255 / (2 ** bits - 1), mask };
  };
  const red = channel(masks.red);
  const green = channel(masks.green);
  const blue = channel(masks.blue);
  const rgb = Buffer.allocUnsafe(width * height * 3);
  const littleEndian = byteOrder === 0;
  if (bitsPerPixel === 32 && littleEndian && masks.red === 0xff0000 && masks.green === 0xff00 && masks.blue === 0xff) {
    copyBgrx(dump, start, bytesPerLine, width, height, rgb);
    return { width, height, rgb };
  }
  let out = 0;
  for (let row = 0; row < height; row++) {
    let offset = start + row * bytesPerLine;
    for (let column = 0; column < width; column++, offset += bytesPerPixel) {
      const pixel = readPixel(dump, offset, bytesPerPixel, littleEndian);
      rgb[out++] = Math.round(((pixel & red.mask) >>> red.shift) * red.scale);
      rgb[out++] = Math.round(((pixel & green.mask) >>> green.shift) * green.scale);
      rgb[out++] = Math.round(((pixel & blue.mask) >>> blue.shift) * blue.scale);
    }
  }
  return { width, height, rgb };
}

/** Xvfb's usual layout (32 bits, little-endian, 8 bits a channel): bytes B, G, R, unused. */
function copyBgrx(dump: Buffer, start: number, bytesPerLine: number, width: number, height: number, rgb: Buffer): void {
  let out = 0;
  if ((dump.byteOffset + start) % 4 === 0 && bytesPerLine % 4 === 0 && LITTLE_ENDIAN_HOST) {
    // One read a pixel instead of three: half the time for a 1280×800 screen.
    const words = new Uint32Array(dump.buffer, dump.byteOffset + start, (bytesPerLine * height) / 4);
    const wordsPerLine = bytesPerLine / 4;
    for (let row = 0; row < height; row++) {
      for (let word = row * wordsPerLine, end = word + width; word < end; word++) {
        const pixel = words[word] as number;
        rgb[out] = (pixel >>> 16) & 0xff;
        rgb[out + 1] = (pixel >>> 8) & 0xff;
        rgb[out + 2] = pixel & 0xff;
        out += 3;
      }
    }
    return;
  }
  for (let row = 0; row < height; row++) {
    const end = start + row * bytesPerLine + width * 4;
    for (let offset = start + row * bytesPerLine; offset < end; offset += 4) {
      rgb[out] = dump[offset + 2] as number;
      rgb[out + 1] = dump[offset + 1] as number;
      rgb[out + 2] = dump[offset] as number;
      out += 3;
    }
  }
}

function readPixel(dump: Buffer, offset: number, bytes: number, littleEndian: boolean): number {
  if (bytes === 4) return littleEndian ? dump.readUInt32LE(offset) : dump.readUInt32BE(offset);
  if (bytes === 2) return littleEndian ? dump.readUInt16LE(offset) : dump.readUInt16BE(offset);
  return littleEndian ? dump.readUIntLE(offset, 3) : dump.readUIntBE(offset, 3);
}

function badDump(why: string): AirlockError {
  return new AirlockError('INVALID_IMAGE', `the screen dump from the session's display is not one Airlock reads (${why}); the display may not be a 24-bit TrueColor Xvfb`, { details: { why } });
}

/** Encodes pixels as an 8-bit RGB PNG. */
export async function encodePng(screen: ScreenPixels): Promise<Buffer> {
  const { width, height, rgb } = screen;
  const stride = width * 3;
  // Each row starts with its filter byte: 0 (none) keeps encoding cheap, and flat UI colours deflate well anyway.
  const filtered = Buffer.alloc((stride + 1) * height);
  for (let row = 0; row < height; row++) rgb.copy(filtered, row * (stride + 1) + 1, row * stride, (row + 1) * stride);
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // colour type: RGB
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', await deflate(filtered, { level: 3 })), chunk('IEND', Buffer.alloc(0))]);
}

/** Decodes an 8-bit RGB or RGBA, non-interlaced PNG (what `encodePng` writes, and what browsers and tests make). */
export function decodePng(png: Buffer): ScreenPixels {
  if (png.length < 8 || !png.subarray(0, 8).equals(PNG_SIGNATURE)) throw new AirlockError('INVALID_IMAGE', 'not a PNG image');
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 3;
  const data: Buffer[] = [];
  while (offset + 8 <= png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const body = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      if (body[8] !== 8 || (body[9] !== 2 && body[9] !== 6) || body[12] !== 0) throw new AirlockError('INVALID_IMAGE', 'only 8-bit RGB or RGBA, non-interlaced PNGs are read');
      channels = body[9] === 6 ? 4 : 3;
    } else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  if (width * height === 0 || width * height > MAX_PIXELS) throw new AirlockError('INVALID_IMAGE', `a PNG of ${width}×${height} pixels is not read`);
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let row = 0; row < height; row++) {
    const filter = raw[row * (stride + 1)];
    const line = raw.subarray(row * (stride + 1) + 1, (row + 1) * (stride + 1));
    const previous = row > 0 ? pixels.subarray((row - 1) * stride, row * stride) : Buffer.alloc(stride);
    const current = pixels.subarray(row * stride, (row + 1) * stride);
    for (let index = 0; index < stride; index++) {
      const left = index >= channels ? (current[index - channels] as number) : 0;
      const up = previous[index] as number;
      const upLeft = index >= channels ? (previous[index - channels] as number) : 0;
      const value = line[index] as number;
      current[index] = (value + unfilter(filter ?? 0, left, up, upLeft)) & 0xff;
    }
  }
  if (channels === 3) return { width, height, rgb: pixels };
  const rgb = Buffer.alloc(width * height * 3);
  for (let pixel = 0; pixel < width * height; pixel++) pixels.copy(rgb, pixel * 3, pixel * 4, pixel * 4 + 3);
  return { width, height, rgb };
}

function unfilter(filter: number, left: number, up: number, upLeft: number): number {
  switch (filter) {
    case 1:
      return left;
    case 2:
      return up;
    case 3:
      return (left + up) >> 1;
    case 4: {
      const estimate = left + up - upLeft;
      const [a, b, c] = [Math.abs(estimate - left), Math.abs(estimate - up), Math.abs(estimate - upLeft)];
      return a <= b && a <= c ? left : b <= c ? up : upLeft;
    }
    default:
      return 0;
  }
}

/** Shrinks a screen to fit within `maxWidth`×`maxHeight` (never enlarges), averaging the pixels each one covers. */
export function shrink(screen: ScreenPixels, maxWidth: number, maxHeight: number): ScreenPixels {
  const scale = Math.min(1, maxWidth / screen.width, maxHeight / screen.height);
  const width = Math.max(1, Math.round(screen.width * scale));
  const height = Math.max(1, Math.round(screen.height * scale));
  if (width === screen.width && height === screen.height) return screen;
  const factor = screen.width / width;
  if (Number.isInteger(factor) && screen.height === height * factor) return shrinkByWholeFactor(screen, factor, width, height);
  const rgb = Buffer.alloc(width * height * 3);
  for (let y = 0; y < height; y++) {
    const top = Math.floor((y * screen.height) / height);
    const bottom = Math.max(top + 1, Math.floor(((y + 1) * screen.height) / height));
    for (let x = 0; x < width; x++) {
      const left = Math.floor((x * screen.width) / width);
      const right = Math.max(left + 1, Math.floor(((x + 1) * screen.width) / width));
      let r = 0;
      let g = 0;
      let b = 0;
      for (let sy = top; sy < bottom; sy++) {
        let index = (sy * screen.width + left) * 3;
        for (let sx = left; sx < right; sx++, index += 3) {
          r += screen.rgb[index] as number;
          g += screen.rgb[index + 1] as number;
          b += screen.rgb[index + 2] as number;
        }
      }
      const count = (bottom - top) * (right - left);
      const out = (y * width + x) * 3;
      rgb[out] = Math.round(r / count);
      rgb[out + 1] = Math.round(g / count);
      rgb[out + 2] = Math.round(b / count);
    }
  }
  return { width, height, rgb };
}

/** `shrink` when each pixel covers exactly factor × factor: the same averages, summed row by row (a quarter of the time). */
function shrinkByWholeFactor(screen: ScreenPixels, factor: number, width: number, height: number): ScreenPixels {
  const rgb = Buffer.alloc(width * height * 3);
  const sums = new Uint32Array(width * 3);
  const count = factor * factor;
  for (let y = 0; y < height; y++) {
    sums.fill(0);
    for (let sy = y * factor; sy < (y + 1) * factor; sy++) {
      let index = sy * screen.width * 3;
      for (let x = 0; x < width; x++) {
        let [r, g, b] = [0, 0, 0];
        for (let step = 0; step < factor; step++, index += 3) {
          r += screen.rgb[index] as number;
          g += screen.rgb[index + 1] as number;
          b += screen.rgb[index + 2] as number;
        }
        sums[x * 3] = (sums[x * 3] as number) + r;
        sums[x * 3 + 1] = (sums[x * 3 + 1] as number) + g;
        sums[x * 3 + 2] = (sums[x * 3 + 2] as number) + b;
      }
    }
    const out = y * width * 3;
    for (let channel = 0; channel < width * 3; channel++) rgb[out + channel] = Math.round((sums[channel] as number) / count);
  }
  return { width, height, rgb };
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

function chunk(type: string, body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0);
  return Buffer.concat([head, body, crc]);
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes: Buffer): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (CRC_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
