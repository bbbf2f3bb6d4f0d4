/**
 * Bounded collection of a command's output, and the checks a result passes
 * before it is returned: at most `limit` bytes kept per stream (flagged
 * truncated past it), and text only when it is valid UTF-8.
 */

/** Default bytes kept per stream in a collected result. */
export const DEFAULT_OUTPUT_LIMIT = 1024 * 1024;

/** Keeps the first `limit` bytes of a stream and counts the rest. */
export class OutputCollector {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  total = 0;

  constructor(private readonly limit: number = DEFAULT_OUTPUT_LIMIT) {}

  /** Adds a chunk. */
  push(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.kept >= this.limit) return;
    const room = this.limit - this.kept;
    const part = chunk.length > room ? chunk.subarray(0, room) : chunk;
    this.chunks.push(part);
    this.kept += part.length;
  }

  /** The kept bytes. */
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }

  /** True when bytes were dropped. */
  get truncated(): boolean {
    return this.total > this.kept;
  }
}

/** Output encoded for JSON: UTF-8 text when valid, base64 otherwise. */
export interface EncodedOutput {
  data: string;
  encoding: 'utf8' | 'base64';
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** Encodes bytes as text when they are valid UTF-8 (a cut multi-byte tail is dropped), else base64. */
export function encodeOutput(bytes: Buffer, truncated: boolean): EncodedOutput {
  const view = truncated ? withoutPartialTail(bytes) : bytes;
  try {
    return { data: strictUtf8.decode(view), encoding: 'utf8' };
  } catch {
    return { data: bytes.toString('base64'), encoding: 'base64' };
  }
}

/** Drops a multi-byte character cut in half at the end of `bytes`. */
function withoutPartialTail(bytes: Buffer): Buffer {
  let start = bytes.length - 1;
  while (start > 0 && bytes.length - start < 4 && ((bytes[start] ?? 0) & 0xc0) === 0x80) start -= 1;
  const lead = bytes[start] ?? 0;
  const expected = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return bytes.length - start < expected ? bytes.subarray(0, start) : bytes;
}
