/**
 * Reads what a VNC viewer sends (RFB 3.7/3.8, security "None", RFC 6143) on
 * its way to the session's VNC server, so that the live view is view-only
 * unless its viewer holds the takeover: key, pointer and clipboard messages
 * are dropped otherwise, and recorded when they pass. A message the filter
 * cannot frame ends the connection (fail closed) rather than pass unread.
 */
import { AirlockError } from '../core/errors.js';

/** One input message a viewer sent. */
export type RfbInput = { kind: 'pointer'; x: number; y: number; buttons: number } | { kind: 'key'; keysym: number; down: boolean };

/** Splits the viewer's byte stream into messages and forwards only the allowed ones. */
export class RfbInputFilter {
  private buffered: Buffer = Buffer.alloc(0);
  private phase: 'version' | 'security' | 'init' | 'messages' = 'version';
  /** the bytes to forward instead of the message just read, when it was rewritten */
  private forwardAs: Buffer | undefined;

  constructor(
    /** asked for every input message: true lets it through */
    private readonly inputAllowed: () => boolean,
    /** told about every input message that went through */
    private readonly onInput: (input: RfbInput) => void = () => undefined,
  ) {}

  /** Takes bytes from the viewer; returns those to forward to the server. Throws INVALID_REQUEST on a message it cannot read. */
  push(chunk: Buffer): Buffer {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const forward: Buffer[] = [];
    for (;;) {
      const length = this.nextLength();
      if (length === undefined || this.buffered.length < length) break;
      const message = this.buffered.subarray(0, length);
      this.buffered = this.buffered.subarray(length);
      this.forwardAs = undefined;
      if (this.keep(message)) forward.push(this.forwardAs ?? message);
    }
    return Buffer.concat(forward);
  }

  /** Bytes of the next message, or undefined until enough has arrived to know. */
  private nextLength(): number | undefined {
    const bytes = this.buffered;
    if (this.phase === 'version') return 12;
    // 3.7 and 3.8 viewers pick a security type (one byte); "None" needs nothing more.
    if (this.phase === 'security' || this.phase === 'init') return 1;
    if (bytes.length < 1) return undefined;
    switch (bytes[0]) {
      case 0: // SetPixelFormat
        return 20;
      case 2: // SetEncodings
        return bytes.length < 4 ? undefined : 4 + 4 * bytes.readUInt16BE(2);
      case 3: // FramebufferUpdateRequest
        return 10;
      case 4: // KeyEvent
        return 8;
      case 5: // PointerEvent
        return 6;
      case 6: // ClientCutText; a negative length announces an extended clipboard message of that many bytes
        return bytes.length < 8 ? undefined : 8 + Math.abs(bytes.readInt32BE(4));
      case 150: // EnableContinuousUpdates
        return 10;
      case 248: // ClientFence
        return bytes.length < 9 ? undefined : 9 + (bytes[8] as number);
      case 250: // xvp (shut down or reboot the machine)
        return 4;
      case 251: // SetDesktopSize
        return bytes.length < 7 ? undefined : 8 + 16 * (bytes[6] as number);
      case 255: // QEMU extended key event
        return 12;
      default:
        throw new AirlockError('INVALID_REQUEST', `the VNC viewer sent message type ${bytes[0]}, which the live view does not pass on; use a viewer that speaks plain RFB 3.8 (noVNC does)`);
    }
  }

  private keep(message: Buffer): boolean {
    if (this.phase === 'messages' && message[0] === 2) {
      this.forwardAs = withoutExtendedMouseButtons(message);
      return true;
    }
    switch (this.phase) {
      case 'version': {
        const version = message.toString('latin1');
        if (!/^RFB 003\.00[78]\n$/.test(version)) throw new AirlockError('INVALID_REQUEST', `the VNC viewer asked for ${JSON.stringify(version)}; the live view speaks RFB 3.7 and 3.8`);
        this.phase = 'security';
        return true;
      }
      case 'security':
        if (message[0] !== 1) throw new AirlockError('INVALID_REQUEST', `the VNC viewer chose security type ${message[0]}; the live view offers only "None" (the API already authenticated you)`);
        this.phase = 'init';
        return true;
      case 'init':
        this.phase = 'messages';
        return true;
      case 'messages':
        break;
    }
    const type = message[0] as number;
    if (!INPUT_TYPES.has(type)) return true;
    if (!this.inputAllowed()) return false;
    if (type === 4) this.onInput({ kind: 'key', down: message[1] !== 0, keysym: message.readUInt32BE(4) });
    if (type === 255) this.onInput({ kind: 'key', down: message.readUInt16BE(2) !== 0, keysym: message.readUInt32BE(4) });
    if (type === 5) this.onInput({ kind: 'pointer', buttons: message[1] as number, x: message.readUInt16BE(2), y: message.readUInt16BE(4) });
    return true;
  }
}

/** What a viewer sends to move or press anything: keys, pointer, clipboard, the screen's size, power. */
const INPUT_TYPES = new Set([4, 5, 6, 250, 251, 255]);

/**
 * Extended mouse buttons (pseudo-encoding -316) make pointer events one byte
 * longer once the server accepts them, which this filter, reading only the
 * viewer's side, could not frame: the viewer is never told the server has it.
 */
const EXTENDED_MOUSE_BUTTONS = -316;

/** SetEncodings without the encodings that would change how the viewer frames its messages. */
function withoutExtendedMouseButtons(message: Buffer): Buffer {
  const kept: number[] = [];
  for (let offset = 4; offset + 4 <= message.length; offset += 4) {
    const encoding = message.readInt32BE(offset);
    if (encoding !== EXTENDED_MOUSE_BUTTONS) kept.push(encoding);
  }
  const rewritten = Buffer.alloc(4 + 4 * kept.length);
  rewritten[0] = 2;
  rewritten.writeUInt16BE(kept.length, 2);
  kept.forEach((encoding, index) => rewritten.writeInt32BE(encoding, 4 + 4 * index));
  return rewritten;
}
