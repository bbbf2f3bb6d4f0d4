/**
 * One log line per request (method, matched route, status, duration, request
 * id, the caller's token name and id, the session id), and a 5xx with its
 * cause. A line is built from what the router matched and what authentication
 * decided, never from the raw URL, a header or a body: a token, a secret or an
 * environment value sent in a request cannot reach the log.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Identity } from './authentication.js';
import { loggedError, type JsonLog } from '../telemetry/json-log.js';

/** What an incoming X-Request-Id may be to be kept (else the server makes one). */
const REQUEST_ID_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** The request id of a request: the caller's X-Request-Id when it is plain, else a fresh one. */
export function requestIdOf(request: { headers: Record<string, string | string[] | undefined> }): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
}

const failures = new WeakMap<FastifyRequest, unknown>();

/** Keeps the error a request failed with, for its log line (called by the error handler). */
export function rememberFailure(request: FastifyRequest, error: unknown): void {
  failures.set(request, error);
}

/** Logs every response of the app. */
export function installRequestLog(app: FastifyInstance, log: JsonLog): void {
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  app.addHook('onResponse', async (request, reply) => {
    const status = reply.statusCode;
    const level = status >= 500 ? 'error' : 'info';
    if (!log.enabled(level)) return;
    const identity = (request as FastifyRequest & { identity?: Identity }).identity;
    const route = request.routeOptions.url;
    const params = request.params as Record<string, unknown> | undefined;
    const sessionId = route?.startsWith('/v1/sessions/:id') && typeof params?.['id'] === 'string' ? params['id'] : undefined;
    const failure = failures.get(request);
    log.write(level, 'http.request', {
      requestId: request.id,
      method: request.method,
      // The pattern the router matched; an unmatched request is logged without its path (it may carry anything).
      route: route ?? '(no route)',
      status,
      durationMs: Math.round(reply.elapsedTime * 10) / 10,
      ...(identity ? { token: identity.name, tokenId: identity.tokenId, role: identity.role, via: identity.kind } : {}),
      ...(sessionId !== undefined && /^[A-Za-z0-9_-]{1,80}$/.test(sessionId) ? { sessionId } : {}),
      ...(status >= 500 && failure !== undefined ? { error: loggedError(failure) } : {}),
    });
  });
}
