/** The live view's input filter: the RFB handshake passes, input passes only when allowed, anything unframeable ends the stream. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { RfbInputFilter, type RfbInput } from '../../../src/api/rfb-input-filter.js';

const HANDSHAKE = Buffer.concat([Buffer.from('RFB 003.008\n', 'latin1'), Buffer.from([1]), Buffer.from([1])]);
const pointer = (x: number, y: number, buttons: number) => {
  const message = Buffer.alloc(6);
  message[0] = 5;
  message[1] = buttons;
  message.writeUInt16BE(x, 2);
  message.writeUInt16BE(y, 4);
  return message;
};
const key = (keysym: number, down: boolean) => {
  const message = Buffer.alloc(8);
  message[0] = 4;
  message[1] = down ? 1 : 0;
  message.writeUInt32BE(keysym, 4);
  return message;
};
const updateRequest = Buffer.from([3, 1, 0, 0, 0, 0, 0, 10, 0, 10]);
const encodings = Buffer.from([2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1]);

describe('the live view input filter', () => {
  it('passes the handshake and screen requests, drops input of a view-only viewer', () => {
    const filter = new RfbInputFilter(() => false);
    const stream = Buffer.concat([HANDSHAKE, encodings, updateRequest, pointer(1, 2, 1), key(0x61, true), updateRequest]);
    assert.ok(filter.push(stream).equals(Buffer.concat([HANDSHAKE, encodings, updateRequest, updateRequest])));
  });

  it('passes and reports input while allowed, whatever the chunking', () => {
    const seen: RfbInput[] = [];
    let allowed = true;
    const filter = new RfbInputFilter(() => allowed, (input) => seen.push(input));
    const stream = Buffer.concat([HANDSHAKE, pointer(300, 400, 1), key(0xff0d, true)]);
    const forwarded: Buffer[] = [];
    for (let index = 0; index < stream.length; index += 5) forwarded.push(filter.push(stream.subarray(index, index + 5)));
    assert.ok(Buffer.concat(forwarded).equals(stream));
    assert.deepEqual(seen, [{ kind: 'pointer', buttons: 1, x: 300, y: 400 }, { kind: 'key', down: true, keysym: 0xff0d }]);
    allowed = false;
    assert.equal(filter.push(pointer(1, 1, 0)).length, 0, 'the takeover ended: input stops at once');
  });

  it("frames noVNC's other messages: extended clipboard (negative length), fences, continuous updates; drops power and resize when view-only", () => {
    const clipboard = Buffer.alloc(12);
    clipboard[0] = 6;
    clipboard.writeInt32BE(-4, 4);
    const fence = Buffer.from([248, 0, 0, 0, 0, 0, 0, 1, 2, 0xaa, 0xbb]);
    const continuous = Buffer.from([150, 1, 0, 0, 0, 0, 5, 0, 3, 32]);
    const power = Buffer.from([250, 0, 1, 2]);
    const filter = new RfbInputFilter(() => false);
    assert.ok(filter.push(Buffer.concat([HANDSHAKE, clipboard, fence, continuous, power, updateRequest])).equals(Buffer.concat([HANDSHAKE, fence, continuous, updateRequest])));
  });

  it('takes extended mouse buttons out of the encodings, so pointer events keep their size', () => {
    const offered = Buffer.from([2, 0, 0, 3, 0, 0, 0, 0, 0xff, 0xff, 0xfe, 0xc4, 0, 0, 0, 7]);
    const forwarded = new RfbInputFilter(() => true).push(Buffer.concat([HANDSHAKE, offered]));
    assert.ok(forwarded.subarray(HANDSHAKE.length).equals(Buffer.from([2, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7])));
  });

  it('ends the stream on what it cannot frame or does not offer', () => {
    assert.throws(() => new RfbInputFilter(() => true).push(Buffer.concat([HANDSHAKE, Buffer.from([149, 0, 0, 0])])), { code: 'INVALID_REQUEST' });
    assert.throws(() => new RfbInputFilter(() => true).push(Buffer.from('RFB 003.003\n', 'latin1')), /3\.7 and 3\.8/);
    assert.throws(() => new RfbInputFilter(() => true).push(Buffer.concat([Buffer.from('RFB 003.008\n', 'latin1'), Buffer.from([2])])), /only "None"/);
  });
});
