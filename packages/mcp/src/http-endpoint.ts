/**
 * MCP over streamable HTTP, for any Node HTTP server (the Airlock server
 * mounts it at /mcp). Each MCP session (the `mcp-session-id` the SDK
 * transport hands out) is bound to one Airlock session, chosen by the caller
 * at initialize or created for it; a created one is terminated when the MCP
 * session ends (DELETE, idle expiry, shutdown).
 *
 * Streams are resumable: every SSE event has an id, each stream opens with a
 * priming event carrying `retry`, and the session's events are kept (bounded,
 * see bounded-event-store.ts) so that a client whose connection dropped
 * reconnects with `Last-Event-ID` and gets the rest, result included. A
 * dropped connection is therefore not a cancellation: the call runs on; only
 * `notifications/cancelled` or the end of the MCP session stops it.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { AirlockApiError, type ConnectionOptions } from '@airlock/sdk';
import { AirlockMcpServer } from './airlock-mcp-server.js';
import { leaseSession, type SessionLease } from './session-lease.js';
import { BoundedEventStore, DEFAULT_EVENT_RETENTION, type EventRetention } from './bounded-event-store.js';
import { parseJsonRpcBody } from './json-rpc-body.js';

/** How long a client waits before it reconnects to a dropped stream (the priming event's `retry`). */
export const RECONNECT_AFTER_MS = 1000;

/** Options of the HTTP endpoint. */
export interface McpHttpEndpointOptions {
  /**
   * How the endpoint's MCP servers reach the Airlock API on behalf of the
   * caller of `request` (asked at each new MCP session, with its credentials).
   * Later requests of that MCP session must present the same token.
   */
  connection: (request: IncomingMessage) => ConnectionOptions;
  /** when the client cannot confirm, how long a held call waits before returning pending (ms) */
  approvalWaitMs?: number;
  /** MCP sessions with no request and no call in flight for this long are closed (default 1 h) */
  idleTimeoutMs?: number;
  /** how much of each MCP session's stream events is kept for clients that reconnect */
  eventRetention?: EventRetention;
  /**
   * Hears of each MCP session opened by `request`, with a function that ends
   * it (e.g. when the caller's token is revoked); what it answers is called
   * when the MCP session ends, however it ends.
   */
  sessionOpened?: (request: IncomingMessage, end: () => void) => () => void;
}

interface McpSession {
  lease: SessionLease;
  /** the token the MCP session was opened with: its calls are that caller's */
  caller: string | undefined;
  mcp: AirlockMcpServer;
  transport: StreamableHTTPServerTransport;
  openRequests: number;
  lastUsed: number;
  ended: boolean;
  /** tells the `sessionOpened` listener that the session ended */
  untrack?: (() => void) | undefined;
}

/** Serves MCP sessions over streamable HTTP. */
export class McpHttpEndpoint {
  private readonly sessions = new Map<string, McpSession>();
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly options: McpHttpEndpointOptions) {
    const idleMs = options.idleTimeoutMs ?? 3600_000;
    this.sweeper = setInterval(() => this.closeIdle(idleMs), Math.min(60_000, idleMs)).unref();
  }

  /**
   * Handles one HTTP request to the endpoint. `airlockSessionId` is the
   * session the caller asked for (path, query or header); without it, a new
   * session is created at initialize.
   */
  async handle(request: IncomingMessage, response: ServerResponse, text: string | undefined, airlockSessionId: string | undefined): Promise<void> {
    let body: unknown;
    if (request.method === 'POST') {
      const parsed = parseJsonRpcBody(request.headers['content-type'], text);
      if (!parsed.ok) return sendJson(response, parsed.error.status, parsed.error.body);
      body = parsed.messages;
    }
    const header = request.headers['mcp-session-id'];
    const mcpSessionId = Array.isArray(header) ? header[0] : header;
    let session: McpSession | undefined;
    if (mcpSessionId !== undefined) {
      session = this.sessions.get(mcpSessionId);
      // Another caller's MCP session answers as one that does not exist.
      if (session && session.caller !== this.options.connection(request).token) session = undefined;
      if (!session) return sendError(response, 404, -32001, `MCP session ${mcpSessionId} not found (it ended or the server restarted); initialize a new one`);
      if (airlockSessionId !== undefined && airlockSessionId !== session.lease.sessionId) {
        return sendError(response, 400, -32600, `this MCP session serves Airlock session ${session.lease.sessionId}, not ${airlockSessionId}`);
      }
    } else {
      if (request.method !== 'POST' || !isInitializeRequest(body)) {
        return sendError(response, 400, -32600, 'no mcp-session-id header: start with an initialize request');
      }
      if (this.closed) return sendError(response, 503, -32000, 'the server is shutting down');
      try {
        session = await this.open(request, airlockSessionId);
      } catch (error) {
        const status = error instanceof AirlockApiError ? error.status : 502;
        const code = error instanceof AirlockApiError ? error.code : 'INTERNAL';
        return sendError(response, status, -32000, `${code}: ${error instanceof Error ? error.message : String(error)}`, { code });
      }
    }
    const current = session;
    current.openRequests += 1;
    current.lastUsed = Date.now();
    // A dropped connection cancels nothing: the calls run on and their events wait in the store.
    response.once('close', () => {
      current.openRequests -= 1;
      current.lastUsed = Date.now();
    });
    await current.transport.handleRequest(request, response, body);
    // An initialize the transport refused leaves a session nobody can reach.
    if (mcpSessionId === undefined && current.transport.sessionId === undefined) await this.end(current);
  }

  /**
   * Closes every MCP session and aborts its calls in flight. Airlock sessions
   * created for them are terminated unless `keepSessions` (a server shutting
   * down keeps them: it can no longer take the API calls, and a restart must
   * not destroy the agents' machines).
   */
  async close(options: { keepSessions?: boolean } = {}): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
    await Promise.allSettled([...this.sessions.values()].map((session) => this.end(session, !options.keepSessions)));
  }

  private async open(request: IncomingMessage, airlockSessionId: string | undefined): Promise<McpSession> {
    const connection = this.options.connection(request);
    const lease = await leaseSession(connection, airlockSessionId === undefined ? {} : { sessionId: airlockSessionId });
    const mcp = new AirlockMcpServer({ calls: lease.calls, ...(this.options.approvalWaitMs === undefined ? {} : { approvalWaitMs: this.options.approvalWaitMs }) });
    const session: McpSession = {
      lease,
      caller: connection.token,
      mcp,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        eventStore: new BoundedEventStore(this.options.eventRetention ?? DEFAULT_EVENT_RETENTION),
        retryInterval: RECONNECT_AFTER_MS,
        onsessioninitialized: (id) => {
          this.sessions.set(id, session);
          session.untrack = this.options.sessionOpened?.(request, () => void this.end(session));
        },
      }),
      openRequests: 0,
      lastUsed: Date.now(),
      ended: false,
    };
    // Set before connect: the SDK chains its own close handling after ours.
    session.transport.onclose = () => {
      void this.end(session);
    };
    await mcp.server.connect(session.transport);
    return session;
  }

  private async end(session: McpSession, release = true): Promise<void> {
    // Closing the server closes the transport, whose onclose calls end again.
    if (session.ended) return;
    session.ended = true;
    session.untrack?.();
    const id = session.transport.sessionId;
    if (id !== undefined) this.sessions.delete(id);
    await session.mcp.close().catch(() => undefined);
    if (release) await session.lease.release().catch(() => undefined);
  }

  private closeIdle(idleMs: number): void {
    const now = Date.now();
    for (const session of this.sessions.values()) {
      if (session.openRequests === 0 && !session.mcp.busy && now - session.lastUsed > idleMs) void this.end(session);
    }
  }
}

function sendError(response: ServerResponse, status: number, code: number, message: string, data?: Record<string, unknown>): void {
  sendJson(response, status, { jsonrpc: '2.0', id: null, error: { code, message, ...(data ? { data } : {}) } });
}

function sendJson(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}
