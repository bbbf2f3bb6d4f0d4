/**
 * `airlock mcp` over stdio: one session for the life of the process. The
 * run ends when the client closes stdin or signals us; then the calls in
 * flight are aborted (their commands are killed by the server) and a session
 * created for the run is terminated. stdout carries only the protocol;
 * messages for people go to stderr.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { ConnectionOptions } from '@airlock/sdk';
import { AirlockMcpServer } from './airlock-mcp-server.js';
import { leaseSession, type SessionChoice } from './session-lease.js';

/** Options of the stdio server. */
export interface StdioServerOptions extends SessionChoice {
  connection: ConnectionOptions;
  /** when the client cannot confirm, how long a held call waits before returning pending (ms) */
  approvalWaitMs?: number;
  /** where to write messages for people (default: stderr) */
  log?: (line: string) => void;
}

/** Serves MCP on stdin/stdout until the client goes away; resolves after cleanup. */
export async function runStdioServer(options: StdioServerOptions): Promise<void> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const lease = await leaseSession(options.connection, options);
  const fate = lease.created ? (options.keep ? 'created for this run; kept at exit' : 'created for this run; terminated at exit') : 'existing; left running at exit';
  log(`airlock mcp: serving session ${lease.sessionId} (${fate})`);
  const mcp = new AirlockMcpServer({ calls: lease.calls, ...(options.approvalWaitMs === undefined ? {} : { approvalWaitMs: options.approvalWaitMs }) });
  const transport = new StdioServerTransport();

  let finish: (why: string) => void = () => undefined;
  const ended = new Promise<string>((resolve) => (finish = resolve));
  // Stays installed through cleanup: a client escalates to SIGTERM while we terminate the session.
  const onSignal = (signal: NodeJS.Signals) => finish(signal);
  const onStdinEnd = () => finish('stdin closed');
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
  // The SDK's stdio transport does not watch for end of input; a client that exits only closes our stdin.
  process.stdin.once('end', onStdinEnd);
  process.stdin.once('close', onStdinEnd);
  mcp.server.onclose = () => finish('transport closed');

  try {
    await mcp.server.connect(transport);
    const why = await ended;
    log(`airlock mcp: stopping (${why})`);
  } finally {
    process.stdin.off('end', onStdinEnd);
    process.stdin.off('close', onStdinEnd);
    // Send the termination first: the client may kill us soon after closing stdin, and the server finishes a DELETE it received.
    const released = lease.release();
    await mcp.close().catch(() => undefined);
    await released.then(
      () => lease.created && !options.keep && log(`airlock mcp: terminated session ${lease.sessionId}`),
      (error: unknown) => log(`airlock mcp: could not terminate session ${lease.sessionId}: ${error instanceof Error ? error.message : String(error)}`),
    );
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.off(signal, onSignal);
  }
}
