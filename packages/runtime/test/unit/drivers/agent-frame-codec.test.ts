/**
 * The agent protocol's frames and fields on the host side: round trips,
 * split reads, and every malformed input refused before it is trusted.
 * Also checks that the TypeScript numbers equal the C header's.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as protocol from '../../../src/drivers/agent/agent-protocol.js';
import { AgentProtocolError, encodeFrame, Fields, FieldWriter, FrameDecoder } from '../../../src/drivers/agent/frame-codec.js';

const HEADER = fileURLToPath(new URL(import.meta.url.includes('/dist/test/') ? '../../../../agent/src/protocol.h' : '../../../agent/src/protocol.h', import.meta.url));

describe('agent frame codec', () => {
  it('round-trips frames and typed fields, repeated tags in order', () => {
    const payload = new FieldWriter().string(protocol.Tag.ARG, 'sh').string(protocol.Tag.ARG, 'héllo wörld').int(protocol.Tag.OFFSET, 2 ** 40).int(protocol.Tag.SIGNAL, -3).bytes(protocol.Tag.ENTROPY, new Uint8Array([0, 255, 1])).finish();
    const frame = encodeFrame(protocol.MessageType.EXEC, 0, 0xfffffffe, payload);
    const [decoded] = new FrameDecoder().push(frame);
    assert.ok(decoded);
    assert.deepEqual({ type: decoded.type, flags: decoded.flags, stream: decoded.stream }, { type: protocol.MessageType.EXEC, flags: 0, stream: 0xfffffffe });
    const fields = new Fields(decoded.payload);
    assert.deepEqual(fields.strings(protocol.Tag.ARG), ['sh', 'héllo wörld']);
    assert.equal(fields.int(protocol.Tag.OFFSET), 2 ** 40);
    assert.equal(fields.int(protocol.Tag.SIGNAL), -3);
    assert.deepEqual([...(fields.bytes(protocol.Tag.ENTROPY) ?? [])], [0, 255, 1]);
    assert.equal(fields.int(protocol.Tag.LIMIT, 7), 7, 'an absent field takes the fallback');
    assert.throws(() => fields.int(protocol.Tag.LIMIT), AgentProtocolError, 'an absent required field');
  });

  it('reassembles frames fed one byte at a time, and several frames from one chunk', () => {
    const frames = [encodeFrame(protocol.MessageType.DATA, 1, 3, Buffer.from('abc')), encodeFrame(protocol.MessageType.END, 1, 3), encodeFrame(protocol.MessageType.OK, 0, 3, new FieldWriter().int(protocol.Tag.BYTES, 3).finish())];
    const all = Buffer.concat(frames);
    const decoder = new FrameDecoder();
    const seen = [];
    for (const byte of all) seen.push(...decoder.push(Buffer.from([byte])));
    assert.deepEqual(seen.map((frame) => frame.type), [protocol.MessageType.DATA, protocol.MessageType.END, protocol.MessageType.OK]);
    assert.equal(seen[0]?.payload.toString(), 'abc');
    assert.equal(decoder.buffered, 0);
    assert.equal(new FrameDecoder().push(all).length, 3);
  });

  it('refuses an oversize frame before buffering it, an undersize one, and set reserved bits', () => {
    const oversize = Buffer.alloc(12);
    oversize.writeUInt32LE(8 + protocol.FRAME_MAX_PAYLOAD + 1, 0);
    assert.throws(() => new FrameDecoder().push(oversize), /frame length/);
    const undersize = Buffer.alloc(12);
    undersize.writeUInt32LE(7, 0);
    assert.throws(() => new FrameDecoder().push(undersize), AgentProtocolError);
    const reserved = encodeFrame(protocol.MessageType.PONG, 0, 1);
    reserved.writeUInt16LE(1, 6);
    assert.throws(() => new FrameDecoder().push(reserved), /reserved/);
    assert.throws(() => encodeFrame(protocol.MessageType.DATA, 0, 1, Buffer.alloc(protocol.FRAME_MAX_PAYLOAD + 1)), RangeError);
    // The largest legal frame passes.
    assert.equal(new FrameDecoder().push(encodeFrame(protocol.MessageType.DATA, 1, 1, Buffer.alloc(protocol.FRAME_MAX_PAYLOAD))).length, 1);
  });

  it('holds a truncated frame back until it is complete', () => {
    const frame = encodeFrame(protocol.MessageType.DATA, 1, 9, Buffer.alloc(100, 1));
    const decoder = new FrameDecoder();
    assert.deepEqual(decoder.push(frame.subarray(0, 50)), []);
    assert.equal(decoder.buffered, 50);
    assert.equal(decoder.push(frame.subarray(50)).length, 1);
  });

  it('refuses fields that run past their frame, bad integer sizes, out-of-range integers and oversize text', () => {
    const header = Buffer.alloc(6);
    header.writeUInt16LE(protocol.Tag.PATH, 0);
    header.writeUInt32LE(100, 2);
    assert.throws(() => new Fields(Buffer.concat([header, Buffer.from('short')])), /runs past/);
    assert.throws(() => new Fields(Buffer.from([1, 0, 0])), /runs past/);
    const shortInt = new FieldWriter().bytes(protocol.Tag.SIZE, new Uint8Array(4)).finish();
    assert.throws(() => new Fields(shortInt).int(protocol.Tag.SIZE), /not 8/);
    const huge = new FieldWriter().int(protocol.Tag.SIZE, 2n ** 62n).finish();
    assert.throws(() => new Fields(huge).int(protocol.Tag.SIZE), /out of range/);
    const long = new FieldWriter().string(protocol.Tag.NAME, 'x'.repeat(300)).finish();
    assert.throws(() => new Fields(long).string(protocol.Tag.NAME, undefined, 255), /more than 255/);
  });

  it('uses the same numbers as the agent (protocol.h)', () => {
    const header = readFileSync(HEADER, 'utf8');
    const defines = new Map<string, number>();
    for (const match of header.matchAll(/^#define (\w+) (0x[0-9A-Fa-f]+|\d+)$/gm)) defines.set(match[1] as string, Number(match[2]));
    const expect = (name: string, value: number): void => assert.equal(defines.get(name), value, `${name} differs between protocol.h and agent-protocol.ts`);
    expect('PROTOCOL_MAJOR', protocol.PROTOCOL_MAJOR);
    expect('PROTOCOL_MINOR', protocol.PROTOCOL_MINOR);
    expect('FRAME_HEADER_BYTES', protocol.FRAME_HEADER_BYTES);
    expect('FRAME_MAX_PAYLOAD', protocol.FRAME_MAX_PAYLOAD);
    expect('FIELD_HEADER_BYTES', protocol.FIELD_HEADER_BYTES);
    expect('INITIAL_WINDOW', protocol.INITIAL_WINDOW);
    expect('DATA_CHUNK', protocol.DATA_CHUNK);
    expect('MAX_STREAMS', protocol.MAX_STREAMS);
    for (const [name, value] of Object.entries(protocol.MessageType)) expect(`MSG_${name}`, value);
    for (const [name, value] of Object.entries(protocol.Tag)) expect(`TAG_${name}`, value);
    for (const [name, value] of Object.entries(protocol.Channel)) expect(`CHANNEL_${name}`, value);
    for (const [name, value] of Object.entries(protocol.ExecFlag)) expect(`EXEC_${name}`, value);
    for (const [name, value] of Object.entries(protocol.Symlinks)) expect(`SYMLINKS_${name}`, value);
    for (const [name, value] of Object.entries(protocol.EntryType)) expect(`ENTRY_${name}`, value);
    expect('PATH_MAX_BYTES', protocol.PathLimit.MAX_BYTES);
    expect('NAME_MAX_BYTES', protocol.PathLimit.NAME_MAX_BYTES);
    expect('PATH_MAX_COMPONENTS', protocol.PathLimit.MAX_COMPONENTS);
    expect('SYMLINK_MAX_HOPS', protocol.PathLimit.SYMLINK_MAX_HOPS);
    expect('REMOVE_MAX_DEPTH', protocol.PathLimit.REMOVE_MAX_DEPTH);
    const messages = [...defines.keys()].filter((name) => name.startsWith('MSG_'));
    assert.equal(messages.length, Object.keys(protocol.MessageType).length, 'a message type exists on one side only');
    const tags = [...defines.keys()].filter((name) => name.startsWith('TAG_'));
    assert.equal(tags.length, Object.keys(protocol.Tag).length, 'a tag exists on one side only');
  });
});
