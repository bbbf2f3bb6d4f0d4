/**
 * The wire format between the driver and the microVM guest agent
 * (packages/runtime/guest/vm-guest-agent.c), over one virtio-serial port.
 *
 * A frame is `u32 length` (of what follows it), `u8 type`, `u32 stream`,
 * payload; little-endian. Each side opens a connection with the 16-byte
 * SYNC_MAGIC and the receiver skips everything before it: a port carries
 * bytes across a disconnect (a control-plane restart, a migration), and a
 * stale half frame must never be taken for a length. The host then sends
 * HELLO with a random nonce and trusts nothing until the guest echoes it.
 *
 * Requests (host → guest), `stream` chosen by the host:
 * - EXEC: u32 flags (1: stdin follows; 2: outside the workload cgroup, for
 *   the driver's own commands while the workload is frozen), u32 argc, u32 envc, then
 *   NUL-terminated cwd, argv, env ("K=V"). Answers: STARTED (u32 pid), STDOUT
 *   / STDERR data, EXITED (i32: exit code, or 128 + signal), or ERROR (text).
 * - STDIN data, STDIN_END; SIGNAL (u32: sent to the command's process group).
 * - IDENTITY: u32 n, hostname, u32 32, machine id, entropy (the rest, 32-512
 *   bytes, credited); a length of 0 keeps that item. Answer OK or ERROR.
 * - FREEZE / THAW (the cgroup of every command). Answer OK or ERROR.
 */

/** Opens every connection, in both directions: NUL then `AIRLOCK-SYNC-v1`. */
export const SYNC_MAGIC: Buffer = Buffer.concat([Buffer.from([0]), Buffer.from('AIRLOCK-SYNC-v1', 'ascii')]);
/** length (u32) + type (u8) + stream (u32). */
export const HEADER_BYTES = 9;
/** Largest frame either side accepts. */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Largest data payload the host sends in one frame. */
export const DATA_CHUNK_BYTES = 64 * 1024;

/** Frame types. */
export const FrameType = {
  hello: 1,
  exec: 2,
  stdin: 3,
  stdinEnd: 4,
  signal: 5,
  identity: 6,
  freeze: 7,
  thaw: 8,
  helloReply: 64,
  started: 65,
  stdout: 66,
  stderr: 67,
  exited: 68,
  ok: 69,
  error: 70,
} as const;

/** EXEC flag: the command gets a stdin pipe fed by STDIN frames. */
export const EXEC_WITH_STDIN = 1;
/** EXEC flag: the command stays out of the workload cgroup (the driver's own work: never frozen, not counted). */
export const EXEC_OUTSIDE_WORKLOAD = 2;

/** One decoded frame. */
export interface GuestFrame {
  type: number;
  stream: number;
  payload: Buffer;
}

/** Encodes one frame. */
export function encodeFrame(type: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  header.writeUInt32LE(payload.length + 5, 0);
  header.writeUInt8(type, 4);
  header.writeUInt32LE(stream, 5);
  return Buffer.concat([header, payload]);
}

/** The payload of an EXEC request. */
export function encodeExec(request: { argv: readonly string[]; cwd: string; env: Record<string, string>; stdin: boolean; outsideWorkload?: boolean | undefined }): Buffer {
  const counts = Buffer.alloc(12);
  counts.writeUInt32LE((request.stdin ? EXEC_WITH_STDIN : 0) | (request.outsideWorkload ? EXEC_OUTSIDE_WORKLOAD : 0), 0);
  counts.writeUInt32LE(request.argv.length, 4);
  const env = Object.entries(request.env).map(([name, value]) => `${name}=${value}`);
  counts.writeUInt32LE(env.length, 8);
  const strings = [request.cwd, ...request.argv, ...env].map((text) => Buffer.from(`${text}\0`, 'utf8'));
  return Buffer.concat([counts, ...strings]);
}

/** The payload of an IDENTITY request. */
export function encodeIdentity(identity: { hostname?: string | undefined; machineId?: string | undefined; entropy: Uint8Array }): Buffer {
  // An empty hostname or machine id leaves that item as it is in the guest.
  const hostname = Buffer.from(identity.hostname ?? '', 'ascii');
  const machineId = Buffer.from(identity.machineId ?? '', 'ascii');
  const lengths = (value: number): Buffer => {
    const buffer = Buffer.alloc(4);
    buffer.writeUInt32LE(value, 0);
    return buffer;
  };
  return Buffer.concat([lengths(hostname.length), hostname, lengths(machineId.length), machineId, Buffer.from(identity.entropy)]);
}

/**
 * Turns the byte stream of one connection into frames: skips to the sync
 * magic first, then cuts frames. A length out of range means the stream is
 * garbage; the reader then looks for the magic again.
 */
export class FrameReader {
  private buffered: Buffer = Buffer.alloc(0);
  private synced = false;

  /** Adds bytes and returns the complete frames they finish. */
  push(chunk: Buffer): GuestFrame[] {
    this.buffered = this.buffered.length === 0 ? chunk : Buffer.concat([this.buffered, chunk]);
    const frames: GuestFrame[] = [];
    for (;;) {
      if (!this.synced) {
        const at = this.buffered.indexOf(SYNC_MAGIC);
        if (at < 0) {
          // Keep a tail that may be the start of the magic.
          this.buffered = this.buffered.subarray(Math.max(0, this.buffered.length - SYNC_MAGIC.length + 1));
          return frames;
        }
        this.buffered = this.buffered.subarray(at + SYNC_MAGIC.length);
        this.synced = true;
      }
      if (this.buffered.length < HEADER_BYTES) return frames;
      const length = this.buffered.readUInt32LE(0);
      if (length < 5 || length > MAX_FRAME_BYTES) {
        this.synced = false;
        continue;
      }
      if (this.buffered.length < 4 + length) return frames;
      frames.push({ type: this.buffered.readUInt8(4), stream: this.buffered.readUInt32LE(5), payload: Buffer.from(this.buffered.subarray(HEADER_BYTES, 4 + length)) });
      this.buffered = this.buffered.subarray(4 + length);
    }
  }
}
