/**
 * A command on a pseudo-terminal the agent opened (for an interactive
 * console): one Duplex carries keystrokes in and the terminal's output out,
 * `resize` changes its window, `exited` settles with how it ended.
 */
import { Duplex } from 'node:stream';
import type { ExecOutcome, SandboxTerminal, TerminalRequest } from '../../core/sandbox-driver.js';
import type { AgentConnection } from './agent-connection.js';
import type { AgentStream } from './agent-stream.js';
import { Channel, MessageType, Tag } from './agent-protocol.js';
import { execFields } from './agent-exec.js';
import { FieldWriter } from './frame-codec.js';

/** Starts `request` on a new terminal. */
export function openTerminal(connection: AgentConnection, request: TerminalRequest, processLimit: number): SandboxTerminal {
  const begun = performance.now();
  // eslint-disable-next-line prefer-const -- the stream's callbacks read it before it is assigned
  let duplex: TerminalStream | undefined;
  const stream = connection.request(
    MessageType.EXEC,
    execFields({ argv: request.argv, cwd: request.cwd, env: request.env, timeoutMs: 0 }, { processLimit, pty: { rows: request.rows, columns: request.columns } }),
    { operation: 'running' },
    { onData: (_channel, chunk) => duplex?.deliver(chunk) },
  );
  stream.autoGrant = false;
  duplex = new TerminalStream(stream);
  const exited: Promise<ExecOutcome> = stream.done.then(({ fields }) => {
    duplex?.deliver(null);
    return { exitCode: fields.int(Tag.EXIT_CODE), timedOut: false, aborted: false, durationMs: Math.round(performance.now() - begun) };
  });
  exited.catch(() => undefined);
  return {
    stream: duplex,
    exited,
    resize: (rows, columns) => stream.control(MessageType.RESIZE, new FieldWriter().int(Tag.ROWS, rows).int(Tag.COLUMNS, columns).finish()),
    kill: (signal = 9) => stream.control(MessageType.SIGNAL, new FieldWriter().int(Tag.SIGNAL, signal).finish()),
  };
}

/** Keystrokes in, terminal output out, granted as the consumer reads. */
class TerminalStream extends Duplex {
  private owed = 0;

  constructor(private readonly stream: AgentStream) {
    super();
  }

  /** @internal */
  deliver(chunk: Buffer | null): void {
    if (chunk === null) {
      this.push(null);
      return;
    }
    this.owed += chunk.length;
    if (this.push(chunk)) this.repay();
  }

  override _read(): void {
    this.repay();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.stream.write(chunk).then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Closing the terminal ends its command, as closing a terminal window does.
    this.stream.cancel();
    callback(error);
  }

  private repay(): void {
    if (this.owed === 0) return;
    this.stream.grant(Channel.OUTPUT, this.owed);
    this.owed = 0;
  }
}
