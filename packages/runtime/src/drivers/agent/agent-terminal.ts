/**
 * A command on a pseudo-terminal the agent opened (for an interactive
 * console): one Duplex carries keystrokes in and the terminal's output out,
 * `resize` changes its window, `exited` settles with how it ended.
 */
import type { ExecOutcome, SandboxTerminal, TerminalRequest } from '../../core/sandbox-driver.js';
import type { AgentConnection } from './agent-connection.js';
import { AgentDuplex } from './agent-duplex.js';
import { MessageType, Tag } from './agent-protocol.js';
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

/** Keystrokes in, terminal output out, granted as the consumer reads; closing it ends its command, as closing a terminal window does. */
class TerminalStream extends AgentDuplex {}
