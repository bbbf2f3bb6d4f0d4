/**
 * MCP over streamable HTTP on the Airlock server: `/mcp` (the session comes
 * from `?session=ID` or the `X-Airlock-Session` header, else one is created
 * for the MCP session) and `/v1/sessions/:id/mcp`. The bearer token and the
 * Origin/Host checks are the server's onRequest hooks, like for any route.
 * The MCP server is a client of this same API over loopback, with the
 * caller's own token, so its calls take exactly the path of any other
 * client's (role, tenant, policy, approval, audit); the core never sees MCP. Bodies reach the MCP endpoint as text, so that bad
 * JSON is answered in JSON-RPC's shape (-32700), not the API's.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { AddressInfo } from 'node:net';
import type { McpHttpEndpoint } from '@airlock/mcp';
import type { AirlockError } from '../../core/errors.js';
import { translateError } from '../http-errors.js';
import type { IncomingMessage } from 'node:http';
import { identityOf, type Identity } from '../authentication.js';
import { EVERY_TENANT } from '../../core/tenancy.js';
import { needs } from '../access-rules.js';
import type { OpenByToken, OpenHandle } from '../open-by-token.js';

/** Options of the MCP routes. */
export interface McpRouteOptions {
  /** the installation's API token, which the MCP server presents for an admin's console login (bearer callers' own tokens are passed on) */
  token: string;
  /** what each token holds open: MCP sessions count there (capped per token) and end with their token */
  openByToken: OpenByToken;
}

/** True for the URLs of the MCP endpoints, whose errors take JSON-RPC's shape. */
export function isMcpUrl(url: string): boolean {
  const path = url.split('?', 1)[0] ?? '';
  return path === '/mcp' || /^\/v1\/sessions\/[^/]+\/mcp$/.test(path);
}

/**
 * An Airlock error as a JSON-RPC error response without an id (what the MCP
 * transport allows on an HTTP error status), keeping the stable code in `data`.
 */
export function jsonRpcErrorBody(error: AirlockError): { jsonrpc: '2.0'; id: null; error: { code: number; message: string; data: Record<string, unknown> } } {
  return { jsonrpc: '2.0', id: null, error: { code: error.status >= 500 ? -32603 : -32000, message: `${error.code}: ${error.message}`, data: { ...error.details, code: error.code } } };
}

/** Registers /mcp and /v1/sessions/:id/mcp (GET, POST, DELETE). */
export function registerMcpRoutes(app: FastifyInstance, options: McpRouteOptions): void {
  let endpoint: Promise<McpHttpEndpoint> | undefined;
  // Loaded on first use so that a server nobody reaches over MCP never loads the MCP SDK.
  const load = () =>
    (endpoint ??= import('@airlock/mcp').then(
      ({ McpHttpEndpoint, loopbackFetch }) =>
        new McpHttpEndpoint({
          connection: (request) => ({ url: loopbackUrl(app), token: callerToken(request, options.token), retries: 1, fetch: loopbackFetch }),
          sessionOpened: (request, end) => {
            const slot = slots.get(request);
            if (!slot) return () => undefined;
            slot.end = end;
            // Revoked while the session was being made: it ends as soon as it exists.
            if (slot.revoked) end();
            return () => slot.held.release();
          },
        }),
    ));

  const serve = async (request: FastifyRequest, reply: FastifyReply, sessionId: string | undefined) => {
    const mcp = await load();
    const identity = identityOf(request);
    callers.set(request.raw, identity);
    // A request without an MCP session id may open one: it takes one of its token's slots first (429 over the cap).
    let slot: Slot | undefined;
    if (request.method === 'POST' && request.headers['mcp-session-id'] === undefined) {
      const opened: Slot = {
        held: options.openByToken.open(identity.tokenId, 'mcp-session', () => {
          opened.revoked = true;
          opened.end();
        }),
        end: noSession,
        revoked: false,
      };
      slot = opened;
      slots.set(request.raw, slot);
    }
    // The SDK transport writes the response itself (JSON or an SSE stream).
    reply.hijack();
    try {
      await mcp.handle(request.raw, reply.raw, typeof request.body === 'string' ? request.body : undefined, sessionId);
    } finally {
      // No MCP session came of it (not an initialize, or refused): the slot is free again.
      if (slot && slots.get(request.raw) === slot && slot.end === noSession) slot.held.release();
      slots.delete(request.raw);
    }
  };

  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
    scope.setErrorHandler((error, request, reply) => {
      const translated = translateError(error);
      if (translated.status >= 500) request.log.error({ err: error }, translated.message);
      void reply.status(translated.status).send(jsonRpcErrorBody(translated));
    });
    scope.route<{ Querystring: { session?: string } }>({
      method: ['GET', 'POST', 'DELETE'],
      url: '/mcp',
      config: { access: needs('tool.call') },
      handler: async (request, reply) => {
        const header = request.headers['x-airlock-session'];
        const fromHeader = Array.isArray(header) ? header[0] : header;
        await serve(request, reply, request.query.session || fromHeader || undefined);
      },
    });
    scope.route<{ Params: { id: string } }>({
      method: ['GET', 'POST', 'DELETE'],
      url: '/v1/sessions/:id/mcp',
      config: { access: needs('tool.call') },
      handler: async (request, reply) => serve(request, reply, request.params.id),
    });
  });
  // preClose, not onClose: open MCP streams would otherwise keep the server from closing.
  app.addHook('preClose', async () => {
    if (endpoint) await (await endpoint).close({ keepSessions: true });
  });
}

/**
 * The token the MCP server presents for a caller: the caller's own bearer
 * token, so that its calls have the caller's tenant and role. A console
 * login (a cookie, no token) has none to pass on: only an admin's gets the
 * installation token, anyone else's MCP calls are refused.
 */
function callerToken(request: IncomingMessage, installationToken: string): string {
  const authorization = request.headers.authorization;
  if (authorization?.startsWith('Bearer ')) return authorization.slice(7);
  const identity = callers.get(request);
  return identity?.role === 'admin' && identity.tenant === EVERY_TENANT ? installationToken : '';
}

/** A token's slot for one MCP session, taken before the session exists. */
interface Slot {
  held: OpenHandle;
  /** ends the MCP session (set once it exists) */
  end: () => void;
  /** the token was revoked (perhaps before the session existed) */
  revoked: boolean;
}

const noSession = (): void => undefined;

/** The slots of requests that may open an MCP session. */
const slots = new WeakMap<IncomingMessage, Slot>();

/** The identity behind each raw request the MCP endpoint handles. */
const callers = new WeakMap<IncomingMessage, Identity>();

/** This server's own address, as a URL a local client can reach. */
function loopbackUrl(app: FastifyInstance): string {
  const address = app.server.address() as AddressInfo | string | null;
  if (address === null || typeof address === 'string') throw new Error('the MCP endpoint needs the server to listen on a TCP port');
  const host = address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}
