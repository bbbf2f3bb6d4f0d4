/**
 * A Duplex over one agent stream whose output is granted back to the agent
 * only as the consumer reads it (the stream's `autoGrant` is off): a slow
 * reader slows the sandbox's side, not the host's memory. Writes wait for the
 * agent's window; destroying the Duplex cancels the stream. The port relay and
 * the terminal are this, plus what their ends mean.
 */
import { Duplex } from 'node:stream';
import type { AgentStream } from './agent-stream.js';
import { Channel } from './agent-protocol.js';

/** A flow-controlled Duplex over one agent stream. */
export class AgentDuplex extends Duplex {
  /** bytes pushed to the consumer and not yet granted back to the agent */
  private owed = 0;

  constructor(protected readonly stream: AgentStream) {
    super();
  }

  /** @internal bytes (or the end) from the agent */
  deliver(chunk: Buffer | null): void {
    if (chunk === null) {
      this.push(null);
      return;
    }
    this.owed += chunk.length;
    // Granted only once the consumer wants more.
    if (this.push(chunk)) this.repay();
  }

  override _read(): void {
    this.repay();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.stream.write(chunk).then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.stream.cancel();
    callback(error);
  }

  private repay(): void {
    if (this.owed === 0) return;
    this.stream.grant(Channel.OUTPUT, this.owed);
    this.owed = 0;
  }
}
