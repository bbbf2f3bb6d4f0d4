/**
 * Exposed ports: `POST /v1/sessions/:id/ports {port}` exposes one and answers
 * with its URL; every request under `/v1/sessions/:id/ports/:port/` is then
 * proxied to that port on the session machine, authenticated like the rest
 * of the API (bearer token or console login).
 *
 * Nothing of the viewer crosses into the sandbox: Cookie, Authorization,
 * Proxy-Authorization and every `X-Airlock-*` header are dropped before
 * forwarding. Nothing the sandbox serves runs on the console's origin:
 * `Set-Cookie` is dropped from its answers, and every answer carries
 * `Content-Security-Policy: sandbox ...` without `allow-same-origin`, so a
 * page of the service runs its scripts in an opaque origin of its own (no
 * cookie, no storage, no same-origin call to the API). WebSocket upgrades
 * are refused rather than proxied.
 */
import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { AirlockError } from '../../core/errors.js';
import { parseBody } from '../parse-body.js';
import { needs } from '../access-rules.js';

/** Headers that describe one hop, never forwarded (RFC 9110 §7.6.1), plus our own credentials. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'authorization', 'host']);

/** The viewer's credentials: never sent to the service (`x-airlock-*` is dropped by prefix, the console's CSRF header included). */
const VIEWER_HEADERS = new Set(['cookie', 'cookie2']);

/** What a service may not set on the viewer's browser for the console's origin. */
const SERVICE_HEADERS_DROPPED = new Set(['set-cookie', 'set-cookie2', 'content-security-policy', 'content-security-policy-report-only', 'x-content-type-options']);

/**
 * The policy of every proxied answer: scripts, forms and popups work, but in
 * an opaque origin (no `allow-same-origin`), never the console's.
 */
export const PORT_CONTENT_SECURITY_POLICY = 'sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads';

const exposeBody = z.strictObject({ port: z.number().int().min(1).max(65535) });

interface PortParams {
  id: string;
  port: string;
  '*'?: string;
}

/** The path of an exposed port's proxy, relative to the server's URL. */
export function portPath(sessionId: string, port: number): string {
  return `/v1/sessions/${encodeURIComponent(sessionId)}/ports/${port}/`;
}

/** Registers /v1/sessions/:id/ports routes and the proxy. */
export function registerPortRoutes(app: FastifyInstance, services: AirlockServices): void {
  const view = (request: FastifyRequest, sessionId: string, port: number) => ({
    port,
    path: portPath(sessionId, port),
    url: `${request.protocol}://${request.host}${portPath(sessionId, port)}`,
  });

  app.get<{ Params: { id: string } }>('/v1/sessions/:id/ports', { config: { access: needs('session.read') } }, async (request) => ({
    sessionId: request.params.id,
    ports: (await services.ports.list(request.params.id)).map((port) => view(request, request.params.id, port)),
  }));

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/ports', { config: { access: needs('session.manage') } }, async (request, reply) => {
    const { port } = parseBody(exposeBody, request.body ?? {});
    await services.ports.expose(request.params.id, port);
    return reply.status(201).send(view(request, request.params.id, port));
  });

  app.delete<{ Params: PortParams }>('/v1/sessions/:id/ports/:port', { config: { access: needs('session.manage') } }, async (request) => {
    const port = portNumber(request.params.port);
    await services.ports.unexpose(request.params.id, port);
    return { port, exposed: false };
  });

  // The proxy gets the body as a raw stream: its own scope has no parsers but a pass-through.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, payload, done) => done(null, payload));
    scope.all<{ Params: PortParams }>('/v1/sessions/:id/ports/:port/*', { config: { access: needs('tool.call'), forwardsQuery: true } }, (request, reply) => proxy(services, request, reply));
  });
}

async function proxy(services: AirlockServices, request: FastifyRequest<{ Params: PortParams }>, reply: FastifyReply): Promise<FastifyReply> {
  const port = portNumber(request.params.port);
  if (request.headers.upgrade !== undefined) {
    throw new AirlockError(
      'NOT_AVAILABLE',
      `upgrades (${request.headers.upgrade}) are not proxied through an exposed port: the proxy carries plain HTTP requests; reach a WebSocket service from inside the session (exec) instead`,
      { details: { port } },
    );
  }
  const query = request.url.includes('?') ? request.url.slice(request.url.indexOf('?')) : '';
  const path = `/${request.params['*'] ?? ''}${query}`;
  const body = request.body as Readable | undefined;
  const headers: OutgoingHttpHeaders = { ...forwardableRequest(request.headers), host: `127.0.0.1:${port}`, connection: 'close' };
  // One exchange per connection: the service closes after its answer, which ends the in-sandbox stream.
  await services.ports.forward(request.params.id, port, (socket) => {
    return new Promise<void>((resolve, reject) => {
      // Node's HTTP client needs only the stream side of a socket; the in-sandbox stream is one.
      const upstream = httpRequest({ createConnection: () => socket as unknown as Socket, method: request.method, path, headers });
      const clientGone = () => upstream.destroy(new AirlockError('INVALID_REQUEST', 'the client went away'));
      reply.raw.once('close', clientGone);
      upstream.once('error', (error) => {
        reply.raw.off('close', clientGone);
        if (!reply.sent) {
          reject(
            error instanceof AirlockError
              ? error
              : new AirlockError('PORT_UNREACHABLE', `port ${port} of session ${request.params.id} did not answer: ${error.message}`, { cause: error, details: { port } }),
          );
        } else {
          reply.raw.destroy();
          resolve();
        }
      });
      upstream.once('response', (response: IncomingMessage) => {
        reply.hijack();
        reply.raw.writeHead(response.statusCode ?? 502, response.statusMessage ?? '', {
          ...forwardableResponse(response.headers),
          'content-security-policy': PORT_CONTENT_SECURITY_POLICY,
          'x-content-type-options': 'nosniff',
        });
        pipeline(response, reply.raw).then(
          () => {
            reply.raw.off('close', clientGone);
            resolve();
          },
          () => {
            reply.raw.destroy();
            resolve();
          },
        );
      });
      if (body && typeof body.pipe === 'function') pipeline(body, upstream).catch(() => upstream.destroy());
      else upstream.end();
    });
  });
  return reply;
}

/** The request's headers the service may see: no hop headers, nothing of the viewer's credentials. */
function forwardableRequest(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_HEADERS.has(lower) || VIEWER_HEADERS.has(lower) || lower.startsWith('x-airlock-')) continue;
    kept[name] = value;
  }
  return kept;
}

/** The service's headers the viewer may get: no hop headers, no cookies, none of the headers the proxy sets itself. */
function forwardableResponse(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const kept: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_HEADERS.has(lower) || SERVICE_HEADERS_DROPPED.has(lower)) continue;
    kept[name] = value;
  }
  return kept;
}

function portNumber(text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AirlockError('INVALID_ARGUMENTS', `port must be a whole number from 1 to 65535 (got ${JSON.stringify(text)})`, { details: { field: 'port' } });
  }
  return port;
}
