/**
 * One endpoint for many nodes: before a session call is parsed, it is
 * routed (cluster/session-routing.ts): answered here, or forwarded to the
 * node holding the session. Reads the shared store answers alike on every
 * node (a session's record, audit, contract, snapshots) stay here.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SessionRouting } from '../cluster/session-routing.js';
import { FORWARDED_BY_HEADER, forwardToNode } from './node-proxy.js';

/** Sub-paths of /v1/sessions/:id whose GET reads only the shared store. */
const STORE_READS = new Set(['', '/audit', '/audit/export', '/audit/verify', '/contract', '/snapshots']);

/** The session a request is about, when it must run where the session is; undefined otherwise. */
export function routedSessionOf(method: string, url: string): string | undefined {
  const path = url.split('?')[0] ?? '';
  const match = /^\/v1\/sessions\/([^/]+)(\/.*)?$/.exec(path);
  if (!match?.[1]) return undefined;
  if ((method === 'GET' || method === 'HEAD') && STORE_READS.has(match[2] ?? '')) return undefined;
  return decodeURIComponent(match[1]);
}

/** Installs the routing hook; call after authentication's hook, before routes. */
export function installClusterRouting(app: FastifyInstance, routing: SessionRouting): void {
  app.addHook('onRequest', async (request, reply) => {
    // Only a request that matched a route, and passed that route's access check, goes anywhere.
    if (reply.sent || request.is404) return;
    const forwarded = typeof request.headers[FORWARDED_BY_HEADER] === 'string';
    const route = await decide(routing, request, forwarded);
    if (route.kind === 'proxy') {
      forwardToNode(request, reply, route.node.address, { id: route.node.id, via: routing.nodeId });
      return reply;
    }
  });
}

async function decide(routing: SessionRouting, request: FastifyRequest, forwarded: boolean) {
  const path = request.url.split('?')[0] ?? '';
  if (request.method === 'POST' && path === '/v1/sessions') return routing.placeNew(forwarded);
  const sessionId = routedSessionOf(request.method, request.url);
  return sessionId ? routing.routeSession(sessionId, forwarded) : ({ kind: 'local' } as const);
}
