/**
 * The host side of the microVM guest agent: one connection to the VM's
 * virtio-serial port (QEMU serves it as a Unix socket), many commands
 * multiplexed over it by stream id. Transport-agnostic past `open`: the
 * client works on any Duplex (see guest-protocol.ts for the frames).
 *
 * What the guest says is untrusted input: frames are bounded, unknown
 * streams are ignored, and nothing it sends can make the host do more than
 * finish a call of its own.
 */
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { AirlockError } from '../../core/errors.js';
import type { ExecOutcome, ExecRequest } from '../../core/sandbox-driver.js';
import { DATA_CHUNK_BYTES, encodeExec, encodeFrame, encodeIdentity, FrameReader, FrameType, SYNC_MAGIC, type GuestFrame } from './guest-protocol.js';

/** How long a killed command may take to report its end before the call gives up on it. */
const KILL_GRACE_MS = 15_000;
/** How often a hello is repeated while the agent has not answered (it may still be booting). */
const HELLO_INTERVAL_MS = 1_000;

/** Options of `GuestAgentClient.open`. */
export interface OpenOptions {
  /** give up after this long (a TCG boot under load takes seconds) */
  timeoutMs: number;
  /** asked while waiting: false (the VM process is gone) fails at once instead of at the deadline */
  isAlive?: () => Promise<boolean>;
}

/** A command to start with `spawn`. */
export interface SpawnRequest {
  argv: readonly string[];
  cwd: string;
  /** the whole environment of the command */
  env: Record<string, string>;
  /** true: stdin is a pipe fed by `write` until `end`; false: /dev/null */
  stdin: boolean;
  /** the driver's own command: outside the workload cgroup, so it runs while the workload is frozen */
  outsideWorkload?: boolean;
  onStdout?: ((chunk: Buffer) => void) | undefined;
  onStderr?: ((chunk: Buffer) => void) | undefined;
}

/** A command started by `spawn`. */
export interface GuestProcess {
  /** how it ended (exit code, or 128 + signal), or a rejection when the agent or the connection failed */
  exited: Promise<Omit<ExecOutcome, 'timedOut' | 'aborted'>>;
  write(chunk: Buffer): void;
  end(): void;
  /** SIGKILL to its process group */
  kill(): void;
}

/** A command in flight. */
interface PendingCommand {
  request: SpawnRequest;
  started: number;
  startMs?: number;
  resolve: (outcome: Omit<ExecOutcome, 'timedOut' | 'aborted'>) => void;
  reject: (error: Error) => void;
}

/** A request answered by OK or ERROR. */
interface PendingReply {
  what: string;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** One connection to a guest agent. */
export class GuestAgentClient {
  private readonly commands = new Map<number, PendingCommand>();
  private readonly replies = new Map<number, PendingReply>();
  private nextStream = 1;
  private closedError: Error | undefined;
  private readonly closeListeners: ((error: Error) => void)[] = [];
  /** the agent's version string, from its hello */
  agentVersion = '';

  /** `reader` is the handshake's: it has found the guest's sync magic already. */
  private constructor(
    private readonly channel: Duplex,
    private readonly reader: FrameReader,
  ) {
    channel.on('data', (chunk: Buffer) => {
      for (const frame of this.reader.push(chunk)) this.dispatch(frame);
    });
    channel.on('error', (error) => this.fail(error));
    channel.on('close', () => this.fail(new Error('the connection to the guest agent closed')));
  }

  /** Connects to the agent behind `socketPath` and waits for its hello. */
  static async open(socketPath: string, options: OpenOptions): Promise<GuestAgentClient> {
    const deadline = Date.now() + options.timeoutMs;
    for (;;) {
      const socket = await connectOnce(socketPath).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== 'ENOENT' && error.code !== 'ECONNREFUSED') throw error;
        return undefined;
      });
      if (socket) return GuestAgentClient.handshake(socket, deadline, options);
      if (Date.now() > deadline) throw notAnswering(socketPath, options.timeoutMs, 'its socket never accepted a connection');
      if (options.isAlive && !(await options.isAlive())) throw new AirlockError('SANDBOX_DIED', `the VM behind ${socketPath} exited before its agent answered`);
      await delay(50);
    }
  }

  /** Sends hellos until the agent echoes one of their nonces. */
  private static async handshake(socket: Duplex, deadline: number, options: OpenOptions): Promise<GuestAgentClient> {
    const nonces = new Set<string>();
    const reader = new FrameReader();
    return new Promise<GuestAgentClient>((resolve, reject) => {
      let settled = false;
      const finish = (error: Error | undefined): void => {
        if (settled) return;
        settled = true;
        clearInterval(timer);
        socket.off('data', onData);
        socket.off('close', onClose);
        socket.off('error', onClose);
        if (error) {
          socket.destroy();
          reject(error);
          return;
        }
        resolve(new GuestAgentClient(socket, reader));
      };
      const sendHello = (): void => {
        const nonce = randomBytes(8);
        nonces.add(nonce.toString('hex'));
        socket.write(Buffer.concat([SYNC_MAGIC, encodeFrame(FrameType.hello, 0, nonce)]));
      };
      const onData = (chunk: Buffer): void => {
        for (const frame of reader.push(chunk)) {
          if (frame.type !== FrameType.helloReply || frame.payload.length < 8) continue;
          if (!nonces.has(frame.payload.subarray(0, 8).toString('hex'))) continue;
          // Nothing follows a hello reply until a request is sent: no frame is lost in the hand-over.
          finish(undefined);
          return;
        }
      };
      const onClose = (): void => finish(new AirlockError('DRIVER_FAILED', 'the VM closed the agent connection during the handshake'));
      const timer = setInterval(() => {
        void (async () => {
          if (Date.now() > deadline) return finish(notAnswering('the VM', options.timeoutMs, 'no hello came back'));
          if (options.isAlive && !(await options.isAlive())) return finish(new AirlockError('SANDBOX_DIED', 'the VM exited before its agent answered'));
          sendHello();
        })();
      }, HELLO_INTERVAL_MS);
      socket.on('data', onData);
      socket.on('close', onClose);
      socket.on('error', onClose);
      sendHello();
    });
  }

  /** True while commands or requests are in flight. */
  get busy(): boolean {
    return this.commands.size > 0 || this.replies.size > 0;
  }

  /** True once the connection is gone. */
  get closed(): boolean {
    return this.closedError !== undefined;
  }

  /** Calls `listener` once when the connection ends (at once if it has). */
  onClose(listener: (error: Error) => void): void {
    if (this.closedError) listener(this.closedError);
    else this.closeListeners.push(listener);
  }

  /** Runs a command; resolves with how it ended. `env` is the whole environment of the command. */
  exec(request: ExecRequest, options: { outsideWorkload?: boolean } = {}): Promise<ExecOutcome> {
    const hasStdin = request.stdin !== undefined && request.stdin.length > 0;
    let process: GuestProcess;
    try {
      process = this.spawn({ argv: request.argv, cwd: request.cwd, env: request.env, stdin: hasStdin, onStdout: request.onStdout, onStderr: request.onStderr, outsideWorkload: options.outsideWorkload === true });
    } catch (error) {
      return Promise.reject(error);
    }
    if (hasStdin && request.stdin) process.write(Buffer.from(request.stdin));
    if (hasStdin) process.end();
    let why: 'timedOut' | 'aborted' | undefined;
    const kill = (reason: 'timedOut' | 'aborted'): void => {
      if (why) return;
      why = reason;
      process.kill();
    };
    const timer = setTimeout(() => kill('timedOut'), request.timeoutMs);
    const onAbort = (): void => kill('aborted');
    if (request.signal?.aborted) onAbort();
    else request.signal?.addEventListener('abort', onAbort, { once: true });
    return process.exited
      .then((ended) => ({ ...ended, timedOut: why === 'timedOut', aborted: why === 'aborted' }))
      .finally(() => {
        clearTimeout(timer);
        request.signal?.removeEventListener('abort', onAbort);
      });
  }

  /** Starts a command whose stdin the caller streams (`write`, `end`); `exited` says how it ended. */
  spawn(request: SpawnRequest): GuestProcess {
    if (this.closedError) throw this.closedError;
    const stream = this.allocateStream();
    const started = performance.now();
    let killTimer: NodeJS.Timeout | undefined;
    const exited = new Promise<Omit<ExecOutcome, 'timedOut' | 'aborted'>>((resolve, reject) => {
      const pending: PendingCommand = {
        request,
        started,
        resolve: (outcome) => {
          if (killTimer) clearTimeout(killTimer);
          resolve(outcome);
        },
        reject: (error) => {
          if (killTimer) clearTimeout(killTimer);
          reject(error);
        },
      };
      this.commands.set(stream, pending);
    });
    this.send(FrameType.exec, stream, encodeExec({ argv: request.argv, cwd: request.cwd, env: request.env, stdin: request.stdin, outsideWorkload: request.outsideWorkload }));
    return {
      exited,
      write: (chunk: Buffer) => {
        for (let offset = 0; offset < chunk.length; offset += DATA_CHUNK_BYTES) this.send(FrameType.stdin, stream, chunk.subarray(offset, offset + DATA_CHUNK_BYTES));
      },
      end: () => this.send(FrameType.stdinEnd, stream),
      kill: () => {
        if (!this.commands.has(stream) || killTimer) return;
        this.send(FrameType.signal, stream, uint32(9));
        killTimer = setTimeout(() => {
          const pending = this.commands.get(stream);
          this.commands.delete(stream);
          pending?.reject(new AirlockError('DRIVER_FAILED', `the guest agent did not report the end of a killed command within ${KILL_GRACE_MS / 1000} s`));
        }, KILL_GRACE_MS);
      },
    };
  }

  /** Credited entropy and a CRNG reseed, hostname and machine id, inside the guest. */
  identity(identity: { hostname?: string | undefined; machineId?: string | undefined; entropy: Uint8Array }): Promise<void> {
    return this.request(FrameType.identity, encodeIdentity(identity), 'giving the VM its identity');
  }

  /** Stops every command process (their cgroup), so a snapshot's clone runs nothing before `thaw`. */
  freeze(): Promise<void> {
    return this.request(FrameType.freeze, Buffer.alloc(0), 'freezing the VM workload');
  }

  /** Lets the command processes run again. */
  thaw(): Promise<void> {
    return this.request(FrameType.thaw, Buffer.alloc(0), 'thawing the VM workload');
  }

  /** Ends the connection; commands in flight fail (their processes run on in the guest). */
  close(): void {
    this.channel.destroy();
  }

  private request(type: number, payload: Buffer, what: string): Promise<void> {
    if (this.closedError) return Promise.reject(this.closedError);
    const stream = this.allocateStream();
    return new Promise<void>((resolve, reject) => {
      this.replies.set(stream, { what, resolve, reject });
      this.send(type, stream, payload);
    });
  }

  private dispatch(frame: GuestFrame): void {
    const command = this.commands.get(frame.stream);
    if (command) {
      switch (frame.type) {
        case FrameType.started:
          command.startMs = Math.round(performance.now() - command.started);
          return;
        case FrameType.stdout:
          command.request.onStdout?.(frame.payload);
          return;
        case FrameType.stderr:
          command.request.onStderr?.(frame.payload);
          return;
        case FrameType.exited: {
          this.commands.delete(frame.stream);
          const exitCode = frame.payload.length >= 4 ? frame.payload.readInt32LE(0) : -1;
          command.resolve({
            exitCode,
            durationMs: Math.round(performance.now() - command.started),
            ...(command.startMs === undefined ? {} : { startMs: command.startMs }),
          });
          return;
        }
        case FrameType.error:
          this.commands.delete(frame.stream);
          command.reject(new AirlockError('DRIVER_FAILED', `the guest agent could not run ${JSON.stringify(command.request.argv[0] ?? '')}: ${text(frame.payload)}`));
          return;
        default:
          return;
      }
    }
    const reply = this.replies.get(frame.stream);
    if (!reply) return;
    this.replies.delete(frame.stream);
    if (frame.type === FrameType.ok) reply.resolve();
    else reply.reject(new AirlockError('DRIVER_FAILED', `${reply.what} failed in the guest: ${text(frame.payload)}`));
  }

  private send(type: number, stream: number, payload?: Buffer): void {
    if (!this.closedError) this.channel.write(encodeFrame(type, stream, payload));
  }

  private allocateStream(): number {
    const stream = this.nextStream;
    this.nextStream = this.nextStream >= 0x7fffffff ? 1 : this.nextStream + 1;
    return stream;
  }

  private fail(cause: Error): void {
    if (this.closedError) return;
    const error = new AirlockError('DRIVER_FAILED', `lost the connection to the guest agent: ${cause.message}`, { cause });
    this.closedError = error;
    for (const command of this.commands.values()) command.reject(error);
    for (const reply of this.replies.values()) reply.reject(error);
    this.commands.clear();
    this.replies.clear();
    for (const listener of this.closeListeners.splice(0)) listener(error);
    this.channel.destroy();
  }
}

function connectOnce(path: string): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

function notAnswering(where: string, timeoutMs: number, why: string): AirlockError {
  return new AirlockError(
    'DRIVER_FAILED',
    `the guest agent of ${where} did not answer within ${Math.round(timeoutMs / 1000)} s (${why}): the guest kernel may not have booted. ` +
      'Read the VM console log in its state dir; under software emulation on a busy host raise AIRLOCK_MICROVM_BOOT_TIMEOUT_MS',
  );
}

function uint32(value: number): Buffer {
  const buffer = Buffer.alloc(4);
  buffer.writeUInt32LE(value, 0);
  return buffer;
}

/** A guest-sent message, bounded and stripped of control characters before it reaches an error message. */
function text(payload: Buffer): string {
  return payload.subarray(0, 500).toString('utf8').replace(/[\u0000-\u001f\u007f]/g, ' ').trim();
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
