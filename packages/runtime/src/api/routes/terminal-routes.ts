/**
 * The takeover terminal of a session (issue 15, item 6): a WebSocket to a
 * shell on a PTY inside the session's machine, speaking `airlock.terminal.v1`
 * (docs/console.md): binary frames carry terminal bytes both ways; text
 * frames carry JSON control messages, `{"type":"resize","cols","rows"}` from
 * the client and `{"type":"exit","code"}` / `{"type":"error","code","message"}`
 * from the server. Authenticated like every route (bearer token, or the
 * console's login cookie, which the Origin guard keeps to the console's own
 * pages); what stops a terminal (no session, no machine, a driver without
 * PTYs, someone else holding it) is answered before the upgrade, as HTTP.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { AirlockServices } from '../airlock-services.js';
import { AirlockError, toAirlockError } from '../../core/errors.js';
import { TERMINAL_SIZE_LIMITS, type OpenTerminal } from '../../core/terminal-takeovers.js';
import { approverName, identityOf, type Identity } from '../authentication.js';
import { needs } from '../access-rules.js';

/** The WebSocket subprotocol of the terminal. */
export const TERMINAL_PROTOCOL = 'airlock.terminal.v1';
/** Size of a terminal whose client sent none before its first keystroke. */
const DEFAULT_SIZE = { rows: 24, columns: 80 };
/** How long the server waits for the client's first message (its size) before opening at the default size. */
const FIRST_MESSAGE_WAIT_MS = 2000;
/** Between liveness pings; a client that answered none of the last one is gone, and the session is handed back. */
const PING_INTERVAL_MS = 30_000;
/** Output frames sent but not yet flushed past which the shell's output is paused. */
const MAX_UNFLUSHED_FRAMES = 64;
const CLIENT_LABEL = /^[A-Za-z0-9._:-]{1,40}$/;

type TerminalRequest = FastifyRequest<{ Params: { id: string }; Querystring: { client?: string } }>;

/** Registers GET /v1/sessions/:id/terminal (WebSocket and its plain-GET description) and the recordings (the WebSocket plugin must be registered first). */
export function registerTerminalRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.route<{ Params: { id: string }; Querystring: { client?: string } }>({
    method: 'GET',
    url: '/v1/sessions/:id/terminal',
    config: { access: needs('session.manage') },
    // Before the upgrade: a refusal is an HTTP answer with its code, not a socket that opens and dies.
    preValidation: async (request) => {
      await requireVisible(services, request.params.id, identityOf(request));
      const session = await services.terminals.checkAvailable(request.params.id);
      await services.terminals.settle(session.id);
      const holder = services.terminals.current(session.id);
      if (holder && request.ws) {
        throw new AirlockError(
          'INVALID_STATE',
          `session ${session.id} is already taken over by ${holder.by} (takeover ${holder.id}); wait until it is handed back`,
          {
            details: { sessionId: session.id, takeoverId: holder.id, by: holder.by },
          },
        );
      }
    },
    handler: async (request) => {
      const takeover = services.terminals.current(request.params.id) ?? null;
      return { sessionId: request.params.id, available: true, protocol: TERMINAL_PROTOCOL, takeover };
    },
    wsHandler: (socket, request) => {
      void serveTerminal(services, socket, request);
    },
  });

  app.get<{ Params: { id: string; takeoverId: string } }>(
    '/v1/sessions/:id/terminal/recordings/:takeoverId',
    { config: { access: needs('session.read') } },
    async (request, reply) => {
      await requireVisible(services, request.params.id, identityOf(request));
      const bytes = await services.terminals.recording(request.params.id, request.params.takeoverId);
      return reply
        .header('content-type', 'application/x-asciicast')
        .header('content-disposition', `attachment; filename="${request.params.takeoverId}.cast"`)
        .header('cache-control', 'private, no-store')
        .send(bytes);
    },
  );
}

/** One takeover over one socket: opens the shell at the client's size, relays both ways, hands back when the socket closes. */
async function serveTerminal(services: AirlockServices, socket: WebSocket, request: TerminalRequest): Promise<void> {
  const identity = identityOf(request);
  const client =
    request.query.client !== undefined && CLIENT_LABEL.test(request.query.client) ? request.query.client : identity.kind === 'console' ? 'console' : 'api';
  const pending: Buffer[] = [];
  let terminal: OpenTerminal | undefined;
  let closed = false;
  let firstSize: (size: { rows: number; columns: number }) => void = () => undefined;
  const sized = new Promise<{ rows: number; columns: number }>((resolve) => {
    const fallback = setTimeout(() => resolve(DEFAULT_SIZE), FIRST_MESSAGE_WAIT_MS);
    firstSize = (size) => {
      clearTimeout(fallback);
      resolve(size);
    };
  });
  const refuse = (error: AirlockError) => {
    if (socket.readyState !== socket.OPEN) return;
    socket.send(JSON.stringify({ type: 'error', code: error.code, message: error.message }));
  };
  socket.on('message', (data: Buffer | ArrayBuffer | Buffer[], isBinary: boolean) => {
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (closed) return;
    if (isBinary) {
      firstSize(DEFAULT_SIZE);
      if (terminal) terminal.write(bytes);
      else pending.push(bytes);
      return;
    }
    let size: { rows: number; columns: number };
    try {
      size = parseResize(bytes.toString('utf8'));
    } catch (error) {
      refuse(toAirlockError(error));
      return;
    }
    firstSize(size);
    terminal?.resize(size.rows, size.columns);
  });
  // A revoked token's terminal stops at once: no keystroke after the revoke reaches the shell.
  const held = services.openByToken.open(identity.tokenId, 'terminal', () => {
    closed = true;
    pending.length = 0;
    socket.terminate();
    void terminal?.handBack();
  });
  let answeredPing = true;
  const pinger = setInterval(() => {
    if (!answeredPing) return socket.terminate();
    answeredPing = false;
    socket.ping();
  }, PING_INTERVAL_MS);
  socket.on('pong', () => (answeredPing = true));
  socket.once('close', () => {
    closed = true;
    held.release();
    clearInterval(pinger);
    firstSize(DEFAULT_SIZE);
    void terminal?.handBack();
  });

  try {
    const size = await sized;
    if (closed) return;
    terminal = await services.terminals.open(request.params.id, { by: approverName(identity), client, ...size });
  } catch (error) {
    const failure = toAirlockError(error);
    refuse(failure);
    // 4000 + the HTTP status, as the live view does: a client can tell "no terminal" (4501) from "busy" (4409).
    if (socket.readyState === socket.OPEN) socket.close(4000 + failure.status, `${failure.code}: ${failure.message}`.slice(0, 120));
    return;
  }
  const open = terminal;
  if (closed) {
    await open.handBack();
    return;
  }
  for (const bytes of pending.splice(0)) open.write(bytes);
  let unflushed = 0;
  open.onOutput((chunk) => {
    if (socket.readyState !== socket.OPEN) return;
    unflushed += 1;
    if (unflushed === MAX_UNFLUSHED_FRAMES) open.pause();
    socket.send(chunk, { binary: true }, () => {
      unflushed -= 1;
      if (unflushed === MAX_UNFLUSHED_FRAMES / 2) open.resume();
    });
  });
  const end = await open.ended;
  if (socket.readyState !== socket.OPEN) return;
  if (end.reason === 'exited') socket.send(JSON.stringify({ type: 'exit', code: end.exitCode ?? -1 }));
  else if (end.reason === 'failed' && end.error) refuse(end.error);
  else refuse(new AirlockError('INVALID_STATE', endMessage(end.reason)));
  socket.close(1000, end.reason);
}

/** Another tenant's session answers as if it did not exist (issue 12), as the event stream does. */
async function requireVisible(services: AirlockServices, sessionId: string, identity: Identity): Promise<void> {
  const session = await services.sessions.get(sessionId);
  if (identity.tenant !== '*' && session.tenant !== identity.tenant) {
    throw new AirlockError('SESSION_NOT_FOUND', `session ${sessionId} does not exist; list sessions with \`airlock sessions ls\``, { details: { sessionId } });
  }
}

/** A resize message, checked. */
function parseResize(text: string): { rows: number; columns: number } {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    throw new AirlockError('INVALID_REQUEST', 'a text frame is a JSON control message, {"type":"resize","cols":N,"rows":N}; send keystrokes as binary frames');
  }
  const { type, cols, rows } = (typeof message === 'object' && message !== null ? message : {}) as Record<string, unknown>;
  if (type !== 'resize')
    throw new AirlockError('INVALID_REQUEST', `unknown control message ${JSON.stringify(type)}; the client sends only {"type":"resize","cols":N,"rows":N}`, {
      details: { field: 'type' },
    });
  const { min, maxColumns, maxRows } = TERMINAL_SIZE_LIMITS;
  if (
    !Number.isInteger(cols) ||
    !Number.isInteger(rows) ||
    (cols as number) < min ||
    (rows as number) < min ||
    (cols as number) > maxColumns ||
    (rows as number) > maxRows
  ) {
    throw new AirlockError('INVALID_REQUEST', `cols must be a whole number from ${min} to ${maxColumns} and rows from ${min} to ${maxRows}`, {
      details: { field: 'cols' },
    });
  }
  return { rows: rows as number, columns: cols as number };
}

function endMessage(reason: string): string {
  if (reason === 'machine-stopped')
    return 'the takeover ended: the machine was suspended, paused, snapshotted, forked or terminated; open the terminal again to wake it';
  if (reason === 'server-stopped') return 'the takeover ended: the server is stopping';
  return `the takeover ended (${reason})`;
}
