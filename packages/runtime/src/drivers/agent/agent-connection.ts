/**
 * One connection to an agent, over any Duplex (a host Unix socket for
 * gVisor, vsock for a microVM, a socketpair in tests): the hello, then
 * multiplexed request streams with flow control both ways.
 *
 * The agent is inside the sandbox, so everything it sends is untrusted: a
 * frame it may not send, a stream id it was never given, more data than the
 * window it was granted, or a malformed field drops the connection at once
 * and every call on it fails with SANDBOX_NOT_ANSWERING. Nothing it says is
 * used as a host path.
 */
import type { Duplex } from 'node:stream';
import { AirlockError } from '../../core/errors.js';
import { AGENT_MESSAGES, MessageType, PROTOCOL_MAJOR, Tag } from './agent-protocol.js';
import type { ErrorContext } from './agent-errors.js';
import { AgentStream, type StreamHandlers } from './agent-stream.js';
import { AgentProtocolError, encodeFrame, Fields, FrameDecoder, type Frame } from './frame-codec.js';
import { withTimeout } from './with-timeout.js';

/** What the agent said about itself when it connected. */
export interface AgentHello {
  major: number;
  minor: number;
  version: string;
  /** its pid where it runs (1 in a sandbox) */
  pid: number;
  /** how many times it connected since it started; 1 = a fresh start */
  connects: number;
  /** "sandbox", or "host" for an agent run as a plain process (tests) */
  mode: string;
}

/** A ping's answer. */
export interface AgentPong {
  children: number;
  uptimeMs: number;
  latencyMs: number;
}

/** A live connection to one agent. */
export class AgentConnection {
  /** set once the hello was accepted */
  hello!: AgentHello;
  /** settles once, when the connection ends, with why */
  readonly ended: Promise<AirlockError>;
  private endedWith: AirlockError | undefined;
  private resolveEnded!: (reason: AirlockError) => void;
  private readonly decoder = new FrameDecoder();
  private readonly streams = new Map<number, AgentStream>();
  private nextId = 1;
  private parking = false;

  private constructor(
    private readonly socket: Duplex,
    /** names the sandbox in messages */
    readonly label: string,
  ) {
    this.ended = new Promise((resolve) => (this.resolveEnded = resolve));
  }

  /** Waits for the agent's hello on `socket`; refuses an unknown major version or a silent agent. */
  static open(socket: Duplex, options: { label: string; helloTimeoutMs?: number }): Promise<AgentConnection> {
    const connection = new AgentConnection(socket, options.label);
    return connection.handshake(options.helloTimeoutMs ?? 10_000);
  }

  /** Whether the connection still carries calls. */
  get open(): boolean {
    return this.endedWith === undefined;
  }

  /** Opens a request stream; `payload` holds its fields. */
  request(type: number, payload: Buffer, context: ErrorContext, handlers: StreamHandlers = {}): AgentStream {
    if (this.endedWith) throw this.endedWith;
    const id = this.nextId++;
    const stream = new AgentStream(this, id, context, handlers);
    this.streams.set(id, stream);
    this.send(type, 0, id, payload);
    return stream;
  }

  /** A round trip; rejects with SANDBOX_NOT_ANSWERING after `timeoutMs`. */
  async ping(timeoutMs: number): Promise<AgentPong> {
    const started = performance.now();
    const stream = this.request(MessageType.PING, Buffer.alloc(0), { operation: 'ping' });
    const { fields } = await withTimeout(stream.done, timeoutMs, () => {
      stream.forget();
      return new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${this.label} did not answer a ping within ${timeoutMs} ms`, { details: { reason: 'ping-timeout' } });
    });
    return { children: fields.int(Tag.CHILDREN, 0), uptimeMs: fields.int(Tag.UPTIME_MS, 0), latencyMs: performance.now() - started };
  }

  /**
   * Asks the agent to close its end and wait (before a checkpoint: a
   * connected host socket would make it fail). Resolves once the connection
   * is closed; SESSION_BUSY when streams are still open.
   */
  async park(timeoutMs: number): Promise<void> {
    const stream = this.request(MessageType.PARK, Buffer.alloc(0), { operation: 'parking' });
    this.parking = true;
    try {
      await withTimeout(stream.done, timeoutMs, () => new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${this.label} did not park within ${timeoutMs} ms`, { details: { reason: 'park-timeout' } }));
    } catch (error) {
      this.parking = false;
      throw error;
    }
    await withTimeout(this.ended, timeoutMs, () => new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${this.label} parked but kept its connection open`, { details: { reason: 'park-timeout' } }));
  }

  /**
   * Ends a throw-away machine: the agent kills everything it started and
   * exits, so the sandbox stops by itself. Resolves once the agent said OK
   * or the connection ended; false when it did neither within `timeoutMs`.
   */
  async shutdown(timeoutMs: number): Promise<boolean> {
    if (this.endedWith) return false;
    const stream = this.request(MessageType.SHUTDOWN, Buffer.alloc(0), { operation: 'shutting down' });
    return withTimeout(
      Promise.race([stream.done.then(() => true, () => true), this.ended.then(() => true)]),
      timeoutMs,
      () => new AirlockError('SANDBOX_NOT_ANSWERING', 'no answer to shutdown'),
    ).catch(() => false);
  }

  /** Closes the connection; calls in flight fail. */
  close(reason = 'the connection was closed by the host'): void {
    this.end(new AirlockError('SANDBOX_NOT_ANSWERING', `${reason} (${this.label})`, { details: { reason: 'closed' } }));
  }

  /** @internal */
  send(type: number, flags: number, stream: number, payload?: Buffer): void {
    if (this.endedWith) return;
    this.socket.write(encodeFrame(type, flags, stream, payload));
  }

  /** @internal a stream reached its end */
  forget(id: number): void {
    this.streams.delete(id);
  }

  private handshake(timeoutMs: number): Promise<AgentConnection> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.end(new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${this.label} connected but said nothing for ${timeoutMs} ms`, { details: { reason: 'hello-timeout' } }));
      }, timeoutMs);
      const onHello = (frame: Frame): void => {
        clearTimeout(timer);
        this.hello = parseHello(frame, this.label);
        resolve(this);
      };
      this.ended.then((reason) => {
        clearTimeout(timer);
        reject(reason);
      });
      let greeted = false;
      this.socket.on('data', (chunk: Buffer) => {
        try {
          for (const frame of this.decoder.push(chunk)) {
            if (!greeted) {
              if (frame.type !== MessageType.HELLO || frame.stream !== 0) throw new AgentProtocolError(`the first frame is type ${frame.type}, not HELLO`);
              greeted = true;
              onHello(frame);
              continue;
            }
            this.dispatch(frame);
          }
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          this.end(
            new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${this.label} broke the protocol (${message}); the connection was dropped`, {
              details: { reason: 'protocol', violation: message },
            }),
          );
        }
      });
      this.socket.on('error', () => undefined);
      this.socket.on('close', () => {
        this.end(
          this.parking
            ? new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${this.label} is parked`, { details: { reason: 'parked' } })
            : new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${this.label} closed its connection (the sandbox stopped, or its agent was stopped or killed)`, {
                details: { reason: 'connection-lost' },
              }),
        );
      });
    });
  }

  private dispatch(frame: Frame): void {
    if (!AGENT_MESSAGES.has(frame.type) || frame.type === MessageType.HELLO) throw new AgentProtocolError(`the agent may not send message type ${frame.type}`);
    const stream = this.streams.get(frame.stream);
    if (!stream) {
      // Frames of a stream the host gave up (cancel, timeout) may still be on the way; others are forged.
      if (frame.stream >= 1 && frame.stream < this.nextId) return;
      throw new AgentProtocolError(`frame type ${frame.type} for stream ${frame.stream}, which the host never opened`);
    }
    stream.receive(frame);
  }

  private end(reason: AirlockError): void {
    if (this.endedWith) return;
    this.endedWith = reason;
    this.socket.destroy();
    for (const stream of this.streams.values()) stream.fail(reason);
    this.streams.clear();
    this.resolveEnded(reason);
  }
}

function parseHello(frame: Frame, label: string): AgentHello {
  const fields = new Fields(frame.payload);
  const hello: AgentHello = {
    major: fields.int(Tag.PROTOCOL_MAJOR),
    minor: fields.int(Tag.PROTOCOL_MINOR, 0),
    version: fields.string(Tag.AGENT_VERSION, '', 64),
    pid: fields.int(Tag.PID, 0),
    connects: fields.int(Tag.CONNECTS, 0),
    mode: fields.string(Tag.MODE, '', 16),
  };
  if (hello.major !== PROTOCOL_MAJOR) {
    throw new AgentProtocolError(`the agent in ${label} speaks protocol ${hello.major}.${hello.minor}; this host speaks ${PROTOCOL_MAJOR}.x`);
  }
  return hello;
}
