/**
 * One request stream of an agent connection: its answers in frame order,
 * its input with flow control (it waits for the agent's window), and the
 * window it grants back for the output it received. What the agent sends on
 * it is checked here: DATA only on output channels and within the granted
 * window, WINDOW only for the input channel and of a sane size.
 */
import { AirlockError } from '../../core/errors.js';
import type { AgentConnection } from './agent-connection.js';
import { Channel, DATA_CHUNK, INITIAL_WINDOW, MessageType, Tag } from './agent-protocol.js';
import { agentError, type ErrorContext } from './agent-errors.js';
import { AgentProtocolError, Fields, FieldWriter, type Frame } from './frame-codec.js';

/** Callbacks of one stream, called in frame order. */
export interface StreamHandlers {
  onData?: (channel: number, chunk: Buffer) => void;
  onEnd?: (channel: number) => void;
  /** STARTED, ENTRY, PROCESS and CONNECTED frames */
  onMessage?: (type: number, fields: Fields) => void;
}

/** How a stream ended well: OK, EXITED, PONG or PARKED, with its fields. */
export interface StreamResult {
  type: number;
  fields: Fields;
}

/** Frames that end a stream well. */
const FINAL = new Set<number>([MessageType.OK, MessageType.EXITED, MessageType.PONG, MessageType.PARKED]);

/** One request in flight: its answers, its input with flow control, its end. */
export class AgentStream {
  /** resolves with the final frame, rejects with the agent's error or the connection's end */
  readonly done: Promise<StreamResult>;
  /** grant window back as soon as a DATA frame was handled (false: the caller grants) */
  autoGrant = true;
  private resolveDone!: (result: StreamResult) => void;
  private rejectDone!: (error: AirlockError) => void;
  private settled = false;
  private sendAllowance = INITIAL_WINDOW;
  private readonly receiveAllowance = [0, INITIAL_WINDOW, INITIAL_WINDOW];
  private readonly ungranted = [0, 0, 0];
  private windowWaiters: (() => void)[] = [];

  constructor(
    private readonly connection: AgentConnection,
    readonly id: number,
    private readonly context: ErrorContext,
    private readonly handlers: StreamHandlers,
  ) {
    this.done = new Promise((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
    // A caller that only cares about side effects must not see an unhandled rejection.
    this.done.catch(() => undefined);
  }

  /** Whether the stream ended (answered, failed or forgotten). */
  get finished(): boolean {
    return this.settled;
  }

  /** Sends input bytes on channel 0, waiting for window as needed; resolves once all were sent. */
  async write(bytes: Uint8Array): Promise<void> {
    let offset = 0;
    while (offset < bytes.length) {
      if (this.settled) return;
      if (this.sendAllowance <= 0) {
        await new Promise<void>((resolve) => this.windowWaiters.push(resolve));
        continue;
      }
      const size = Math.min(this.sendAllowance, DATA_CHUNK, bytes.length - offset);
      this.connection.send(MessageType.DATA, Channel.INPUT, this.id, Buffer.from(bytes.buffer, bytes.byteOffset + offset, size));
      this.sendAllowance -= size;
      offset += size;
    }
  }

  /** No more input (stdin EOF, end of file content, half-close of a port). */
  endInput(): void {
    if (!this.settled) this.connection.send(MessageType.END, Channel.INPUT, this.id);
  }

  /** Sends a control message about this stream (SIGNAL, RESIZE). */
  control(type: number, payload: Buffer): void {
    if (!this.settled) this.connection.send(type, 0, this.id, payload);
  }

  /** Lets the agent send `bytes` more on `channel` (when autoGrant is off). */
  grant(channel: number, bytes: number): void {
    if (this.settled || bytes <= 0) return;
    this.receiveAllowance[channel] = (this.receiveAllowance[channel] ?? 0) + bytes;
    this.connection.send(MessageType.WINDOW, channel, this.id, new FieldWriter().int(Tag.BYTES, bytes).finish());
  }

  /** Abandons the stream: the agent kills its command or closes its file or socket. */
  cancel(): void {
    if (this.settled) return;
    this.connection.send(MessageType.CANCEL, 0, this.id);
    this.forget();
  }

  /** Stops listening without telling the agent (its late frames are ignored). */
  forget(): void {
    this.fail(new AirlockError('SANDBOX_NOT_ANSWERING', 'the stream was abandoned', { details: { reason: 'abandoned' } }));
  }

  /** @internal */
  receive(frame: Frame): void {
    if (this.settled) return;
    switch (frame.type) {
      case MessageType.DATA: {
        const channel = frame.flags;
        if (channel !== Channel.OUTPUT && channel !== Channel.ERROR) throw new AgentProtocolError(`DATA on channel ${channel}`);
        const allowance = this.receiveAllowance[channel] ?? 0;
        if (frame.payload.length > allowance) throw new AgentProtocolError(`DATA of ${frame.payload.length} bytes past a window of ${allowance}`);
        this.receiveAllowance[channel] = allowance - frame.payload.length;
        this.handlers.onData?.(channel, frame.payload);
        if (this.autoGrant) this.grantLater(channel, frame.payload.length);
        return;
      }
      case MessageType.END:
        if (frame.flags !== Channel.OUTPUT && frame.flags !== Channel.ERROR) throw new AgentProtocolError(`END on channel ${frame.flags}`);
        this.handlers.onEnd?.(frame.flags);
        return;
      case MessageType.WINDOW: {
        if (frame.flags !== Channel.INPUT) throw new AgentProtocolError(`WINDOW for channel ${frame.flags}`);
        const bytes = new Fields(frame.payload).int(Tag.BYTES);
        if (bytes <= 0 || bytes > INITIAL_WINDOW * 4) throw new AgentProtocolError(`a WINDOW of ${bytes} bytes`);
        this.sendAllowance += bytes;
        const waiters = this.windowWaiters;
        this.windowWaiters = [];
        for (const wake of waiters) wake();
        return;
      }
      case MessageType.ERROR: {
        this.settle();
        this.rejectDone(agentError(new Fields(frame.payload), this.context));
        return;
      }
      default:
        break;
    }
    const fields = new Fields(frame.payload);
    if (FINAL.has(frame.type)) {
      this.settle();
      this.resolveDone({ type: frame.type, fields });
      return;
    }
    this.handlers.onMessage?.(frame.type, fields);
  }

  /** @internal the connection ended, or the caller gave up */
  fail(reason: AirlockError): void {
    if (this.settled) return;
    this.settle();
    this.rejectDone(reason);
  }

  private grantLater(channel: number, bytes: number): void {
    this.ungranted[channel] = (this.ungranted[channel] ?? 0) + bytes;
    if ((this.ungranted[channel] ?? 0) >= INITIAL_WINDOW / 2) {
      const amount = this.ungranted[channel] ?? 0;
      this.ungranted[channel] = 0;
      this.grant(channel, amount);
    }
  }

  private settle(): void {
    this.settled = true;
    this.connection.forget(this.id);
    const waiters = this.windowWaiters;
    this.windowWaiters = [];
    for (const wake of waiters) wake();
  }
}
