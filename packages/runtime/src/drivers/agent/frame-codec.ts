/**
 * Frames and fields of the agent protocol, both ways. Everything the agent
 * sends is untrusted: the decoder bounds every length before it allocates
 * and throws AgentProtocolError on anything malformed, and the connection
 * drops an agent that sends one.
 */
import { FIELD_HEADER_BYTES, FRAME_HEADER_BYTES, FRAME_MAX_PAYLOAD } from './agent-protocol.js';

/** A malformed frame or field: the peer is broken or hostile, and the connection is dropped. */
export class AgentProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AgentProtocolError';
  }
}

/** One decoded frame. */
export interface Frame {
  type: number;
  flags: number;
  stream: number;
  payload: Buffer;
}

/** Encodes one frame. */
export function encodeFrame(type: number, flags: number, stream: number, payload: Buffer = EMPTY): Buffer {
  if (payload.length > FRAME_MAX_PAYLOAD) throw new RangeError(`frame payload of ${payload.length} bytes exceeds ${FRAME_MAX_PAYLOAD}`);
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  frame.writeUInt32LE(FRAME_HEADER_BYTES - 4 + payload.length, 0);
  frame.writeUInt8(type, 4);
  frame.writeUInt8(flags, 5);
  frame.writeUInt16LE(0, 6);
  frame.writeUInt32LE(stream >>> 0, 8);
  payload.copy(frame, FRAME_HEADER_BYTES);
  return frame;
}

const EMPTY = Buffer.alloc(0);

/** Splits a byte stream into frames; keeps at most one frame's bytes buffered. */
export class FrameDecoder {
  private pending: Buffer = EMPTY;

  /** Feeds bytes; returns the frames they complete. Throws AgentProtocolError on a malformed header. */
  push(chunk: Buffer): Frame[] {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const frames: Frame[] = [];
    let offset = 0;
    while (this.pending.length - offset >= 4) {
      const length = this.pending.readUInt32LE(offset);
      if (length < FRAME_HEADER_BYTES - 4 || length > FRAME_HEADER_BYTES - 4 + FRAME_MAX_PAYLOAD) {
        throw new AgentProtocolError(`frame length ${length} is outside ${FRAME_HEADER_BYTES - 4}..${FRAME_HEADER_BYTES - 4 + FRAME_MAX_PAYLOAD}`);
      }
      if (this.pending.length - offset < 4 + length) break;
      const reserved = this.pending.readUInt16LE(offset + 6);
      if (reserved !== 0) throw new AgentProtocolError(`reserved header bits are ${reserved}, not 0`);
      frames.push({
        type: this.pending.readUInt8(offset + 4),
        flags: this.pending.readUInt8(offset + 5),
        stream: this.pending.readUInt32LE(offset + 8),
        // a copy, so a retained payload never pins the whole read buffer
        payload: Buffer.from(this.pending.subarray(offset + FRAME_HEADER_BYTES, offset + 4 + length)),
      });
      offset += 4 + length;
    }
    this.pending = offset === 0 ? this.pending : Buffer.from(this.pending.subarray(offset));
    return frames;
  }

  /** Bytes of an incomplete frame held back. */
  get buffered(): number {
    return this.pending.length;
  }
}

/** Builds a payload of fields. */
export class FieldWriter {
  private readonly parts: Buffer[] = [];
  private size = 0;

  /** An integer field (8 bytes, little-endian, signed). */
  int(tag: number, value: number | bigint): this {
    const bytes = Buffer.allocUnsafe(8);
    bytes.writeBigInt64LE(BigInt(value));
    return this.bytes(tag, bytes);
  }

  /** A UTF-8 text field. */
  string(tag: number, value: string): this {
    return this.bytes(tag, Buffer.from(value, 'utf8'));
  }

  /** A raw bytes field. */
  bytes(tag: number, value: Uint8Array): this {
    const header = Buffer.allocUnsafe(FIELD_HEADER_BYTES);
    header.writeUInt16LE(tag, 0);
    header.writeUInt32LE(value.length, 2);
    this.parts.push(header, Buffer.from(value.buffer, value.byteOffset, value.length));
    this.size += FIELD_HEADER_BYTES + value.length;
    return this;
  }

  /** The payload so far. */
  finish(): Buffer {
    return Buffer.concat(this.parts, this.size);
  }
}

/** The fields of a payload, by tag; repeated tags keep their order. */
export class Fields {
  private readonly byTag = new Map<number, Buffer[]>();

  /** Decodes a payload; throws AgentProtocolError when a field runs past its end. */
  constructor(payload: Buffer) {
    let offset = 0;
    while (offset < payload.length) {
      if (payload.length - offset < FIELD_HEADER_BYTES) throw new AgentProtocolError('a field header runs past the end of its frame');
      const tag = payload.readUInt16LE(offset);
      const length = payload.readUInt32LE(offset + 2);
      if (length > payload.length - offset - FIELD_HEADER_BYTES) throw new AgentProtocolError(`field ${tag} of ${length} bytes runs past the end of its frame`);
      const value = payload.subarray(offset + FIELD_HEADER_BYTES, offset + FIELD_HEADER_BYTES + length);
      const list = this.byTag.get(tag);
      if (list) list.push(value);
      else this.byTag.set(tag, [value]);
      offset += FIELD_HEADER_BYTES + length;
    }
  }

  /** Whether the tag is present. */
  has(tag: number): boolean {
    return this.byTag.has(tag);
  }

  /** An integer field as a number (safe range enforced), or `fallback` when absent. */
  int(tag: number, fallback?: number): number {
    const value = this.byTag.get(tag)?.[0];
    if (value === undefined) {
      if (fallback === undefined) throw new AgentProtocolError(`field ${tag} is missing`);
      return fallback;
    }
    if (value.length !== 8) throw new AgentProtocolError(`integer field ${tag} is ${value.length} bytes, not 8`);
    const big = value.readBigInt64LE();
    if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < BigInt(Number.MIN_SAFE_INTEGER)) throw new AgentProtocolError(`integer field ${tag} is out of range`);
    return Number(big);
  }

  /** A text field (at most `maxBytes`), or `fallback` when absent. */
  string(tag: number, fallback?: string, maxBytes = 65_536): string {
    const value = this.byTag.get(tag)?.[0];
    if (value === undefined) {
      if (fallback === undefined) throw new AgentProtocolError(`field ${tag} is missing`);
      return fallback;
    }
    if (value.length > maxBytes) throw new AgentProtocolError(`text field ${tag} is ${value.length} bytes, more than ${maxBytes}`);
    return value.toString('utf8');
  }

  /** Every value of a repeated text field. */
  strings(tag: number): string[] {
    return (this.byTag.get(tag) ?? []).map((value) => value.toString('utf8'));
  }

  /** A raw bytes field, or undefined. */
  bytes(tag: number): Buffer | undefined {
    return this.byTag.get(tag)?.[0];
  }
}
