/**
 * The HTTP API: turns requests into calls on the services and their results
 * or errors into responses. Nothing here decides anything.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import type { Socket } from 'node:net';
import type { AirlockServices } from './airlock-services.js';
import { AirlockError } from '../core/errors.js';
import { errorBody, handleError } from './http-errors.js';
import { openApiDocument } from './openapi.js';
import { parseJsonBody } from './json-body.js';
import { registerSessionRoutes } from './routes/session-routes.js';
import { registerToolRoutes } from './routes/tool-routes.js';
import { registerApprovalRoutes } from './routes/approval-routes.js';
import { registerImageRoutes } from './routes/image-routes.js';
import { isMcpUrl, jsonRpcErrorBody, registerMcpRoutes } from './routes/mcp-routes.js';
import { OriginGuard } from './origin-guard.js';
import { registerEgressRoutes } from './routes/egress-routes.js';
import { registerSnapshotRoutes } from './routes/snapshot-routes.js';
import { registerMachineRoutes } from './routes/machine-routes.js';
import { registerPortRoutes } from './routes/port-routes.js';
import { registerDesktopRoutes } from './routes/desktop-routes.js';
import websocket from '@fastify/websocket';
import { registerLoginRoutes } from './routes/login-routes.js';
import { registerEventRoutes } from './routes/event-routes.js';
import { registerTerminalRoutes } from './routes/terminal-routes.js';
import { registerNodeRoutes } from './routes/node-routes.js';
import { installClusterRouting } from './cluster-routing.js';
import { attachIdentity, type Authentication, type Identity } from './authentication.js';
import { declarationProblem, isApiPath, needs, PUBLIC_ROUTE, roleMay, ROLE_PERMISSIONS, type Permission, type RouteAccess } from './access-rules.js';
import { checkRequestTarget } from './request-target.js';
import { TenantScope } from './tenant-scope.js';
import { registerTokenRoutes } from './routes/token-routes.js';
import { registerWebhookRoutes } from './routes/webhook-routes.js';
import { registerTenantRoutes } from './routes/tenant-routes.js';
import { registerAuditRoutes } from './routes/audit-routes.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ActivityFeed } from './activity-feed.js';
import { sendConsoleAsset, type ConsoleAssets } from './console-assets.js';
import type { AirlockMetrics } from '../telemetry/airlock-metrics.js';
import type { JsonLog } from '../telemetry/json-log.js';
import { installRequestLog, rememberFailure, requestIdOf } from './request-log.js';
import { registerE2bApi } from './e2b/e2b-api.js';
import { e2bErrorBody, isE2bUrl } from './e2b/e2b-sandboxes.js';
import { e2bTemplateLookup, registerTemplateRoutes } from './e2b/e2b-templates.js';

/** Largest request body accepted (file writes go in one body). */
export const BODY_LIMIT_BYTES = 32 * 1024 * 1024;

/** Past this many bytes an oversized body is no longer drained: the connection is cut. */
const MAX_DRAINED_BYTES = 256 * 1024 * 1024;

/** Consumes and discards a request body, up to `limit` bytes. */
function drain(stream: import('node:http').IncomingMessage, limit: number): Promise<void> {
  return new Promise((resolve) => {
    let seen = 0;
    stream.on('data', (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > limit) {
        stream.destroy();
        resolve();
      }
    });
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', resolve);
  });
}

/** Options of the HTTP server. */
export interface HttpServerOptions {
  token: string;
  version: string;
  logger?: boolean;
  /** who is calling: bearer tokens and console logins */
  authentication: Authentication;
  /** what happened, for GET /v1/events */
  activity: ActivityFeed;
  /** the server's log: one JSON line per request (none when absent) */
  log?: JsonLog;
  /** the server's Prometheus metrics, for GET /metrics */
  metrics?: AirlockMetrics;
  /** the web console served at / */
  console: ConsoleAssets;
  /** the address the server listens on; its names are the ones the Host header may carry (default 127.0.0.1) */
  listenHost?: string;
  /** origins whose pages may call the server besides its own (`--allowed-origin`) */
  allowedOrigins?: readonly string[];
  /** further names of the server for the Host header (`--allowed-host`) */
  allowedHosts?: readonly string[];
  /** the data dir, where the E2B API's templates are kept (absent: the E2B API is not served) */
  e2bDataDir?: string;
}

/** Refuses a caller whose role lacks the route's permission (403) or who names another tenant's ids (404). */
async function admit(identity: Identity, permission: Permission, request: FastifyRequest, scope: TenantScope): Promise<void> {
  if (!roleMay(identity.role, permission)) {
    const holders = (Object.keys(ROLE_PERMISSIONS) as (keyof typeof ROLE_PERMISSIONS)[]).filter((role) => roleMay(role, permission));
    throw new AirlockError(
      'ROLE_FORBIDDEN',
      `a token with role ${identity.role} may not ${permission} (${request.method} ${request.routeOptions.url ?? ''}); this needs a token with role ${holders.join(' or ')}`,
      {
        details: { role: identity.role, permission },
      },
    );
  }
  await scope.check(identity, request);
}

/** Every route registered on a server, as `{ methods, url, access }` (for tests and the route listing). */
export interface RegisteredRoute {
  methods: string[];
  url: string;
  access: RouteAccess;
}

const REGISTERED = new WeakMap<FastifyInstance, RegisteredRoute[]>();

/** The routes registered on a server built by `buildHttpServer`, read from the router's own registrations. */
export function routesOf(app: FastifyInstance): readonly RegisteredRoute[] {
  return REGISTERED.get(app) ?? [];
}

/** Refuses, at registration, a route that does not say who may call it: the server does not start. */
function requireAccessDeclarations(app: FastifyInstance): void {
  const routes: RegisteredRoute[] = [];
  REGISTERED.set(app, routes);
  app.addHook('onRoute', (route) => {
    const methods = (Array.isArray(route.method) ? route.method : [route.method]).map((method) => String(method).toUpperCase());
    const access = route.config?.access;
    const problem = declarationProblem(methods, route.url, access);
    if (problem !== undefined || access === undefined) throw new AirlockError('INTERNAL', problem ?? 'unreachable');
    routes.push({ methods, url: route.url, access });
  });
}

/** Routes that run a tool call: each holds one of its tenant's call slots until its response ends. */
const CALL_ROUTES = new Set([
  '/v1/sessions/:id/tools/:tool',
  '/v1/sessions/:id/exec',
  '/v1/sessions/:id/desktop/screenshot',
  '/v1/sessions/:id/desktop/actions',
  // The E2B API's commands and file operations (the sandbox is named in the E2b-Sandbox-Id header).
  '/e2b/process.Process/Start',
  '/e2b/filesystem.Filesystem/Stat',
  '/e2b/filesystem.Filesystem/MakeDir',
  '/e2b/filesystem.Filesystem/Move',
  '/e2b/filesystem.Filesystem/ListDir',
  '/e2b/filesystem.Filesystem/Remove',
  '/e2b/files',
]);

/** Refuses a call over its tenant's maxConcurrentCalls (429), before its body is read. */
async function takeCallSlot(request: FastifyRequest, reply: FastifyReply, services: AirlockServices, scope: TenantScope): Promise<void> {
  const route = request.routeOptions.url ?? '';
  if ((request.method !== 'POST' && route !== '/e2b/files') || !CALL_ROUTES.has(route)) return;
  const header = request.headers['e2b-sandbox-id'];
  const sessionId = route.startsWith('/e2b/') ? (typeof header === 'string' ? header : undefined) : (request.params as { id?: string }).id;
  const tenant = sessionId === undefined ? undefined : await scope.tenantOf(sessionId);
  // No such session: the route answers 404 and holds nothing.
  if (tenant === undefined) return;
  const release = await services.admission.enterCall(tenant);
  reply.raw.once('close', release);
}

/** How long open requests (streams, long polls, calls) get to end by themselves once the server is closing. */
export const CLOSE_GRACE_MS = 2_000;

/**
 * Once closing starts, every socket still open after the grace period is
 * destroyed: a long poll, a stream whose client reads nothing, headers that
 * never end, a client gone half-way (CLOSE-WAIT) or an upgraded WebSocket
 * would each keep close() waiting for minutes.
 */
function closeEverySocketOnClose(app: FastifyInstance): void {
  const sockets = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  let timer: NodeJS.Timeout | undefined;
  app.addHook('preClose', async () => {
    timer ??= setTimeout(() => {
      app.server.closeAllConnections();
      for (const socket of sockets) socket.destroy();
    }, CLOSE_GRACE_MS);
    // A process that has nothing else to do need not wait for it.
    timer.unref();
  });
  app.addHook('onClose', async () => clearTimeout(timer));
}

/** Builds the Fastify app (not yet listening). */
export function buildHttpServer(services: AirlockServices, options: HttpServerOptions): FastifyInstance {
  const app = Fastify({
    logger: options.logger ?? false,
    bodyLimit: BODY_LIMIT_BYTES,
    return503OnClosing: true,
    genReqId: (request) => requestIdOf(request),
  });
  app.setErrorHandler((error, request, reply) => {
    rememberFailure(request, error);
    handleError(error, request, reply);
  });
  requireAccessDeclarations(app);
  closeEverySocketOnClose(app);
  // First of all hooks: a request refused by any later one is logged too.
  if (options.log) installRequestLog(app, options.log);
  // No route matched: nothing runs but this. Outside the API paths (in any letter case), a GET is
  // the web console's (a file, or index.html for a client route); the console's files are public.
  app.setNotFoundHandler((request, reply) => {
    if (
      !isApiPath(request.url.split('?')[0] ?? '') &&
      (request.method === 'GET' || request.method === 'HEAD') &&
      sendConsoleAsset(options.console, request, reply)
    )
      return;
    void reply.status(404).send(errorBody(new AirlockError('NOT_FOUND', `no route ${request.method} ${request.url}; see /openapi.json`)));
  });
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(String(body)));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  const scope = new TenantScope(services.store);
  const guard = new OriginGuard({
    listenHost: options.listenHost ?? '127.0.0.1',
    allowedOrigins: options.allowedOrigins ?? [],
    allowedHosts: options.allowedHosts ?? [],
  });
  // First of all hooks, on every request: a target whose path decodes to something other than
  // what it says is refused before anything (the Origin guard, authentication, the router's match) acts on it.
  app.addHook('onRequest', async (request, reply) => {
    try {
      checkRequestTarget(request.raw.url ?? '', { refuseRepeated: request.routeOptions.config.forwardsQuery !== true });
    } catch (error) {
      const refused = error as AirlockError;
      return reply.status(refused.status).send(isMcpUrl(request.url) ? jsonRpcErrorBody(refused) : errorBody(refused));
    }
  });
  // Then, on every route: a request a browser was tricked into sending gets nothing else.
  app.addHook('onRequest', async (request, reply) => {
    const address = app.server.address();
    const refusal = guard.check(request.headers, typeof address === 'object' && address ? address.port : 0);
    if (refusal) return reply.status(refusal.status).send(isMcpUrl(request.url) ? jsonRpcErrorBody(refusal) : errorBody(refusal));
  });
  app.addHook('onRequest', async (request, reply) => {
    // Authentication first: a stranger learns nothing (not even the body limit) and costs no body read.
    // Decided on the route the router matched, by what it declared; a request that matched none gets
    // the not-found handler, which runs no route.
    const access: RouteAccess | undefined = request.is404 ? PUBLIC_ROUTE : request.routeOptions.config.access;
    if (access?.kind !== 'public' && access?.kind !== 'console-page') {
      try {
        // Unreachable (a route without a declaration is refused at registration), and closed all the same.
        if (access === undefined) throw new AirlockError('INTERNAL', `route ${request.method} ${request.routeOptions.url ?? ''} declares no access`);
        const identity = await options.authentication.identify(request);
        attachIdentity(request, identity);
        // The role, then the tenant of every id the request names: a refused caller costs no body read either.
        await admit(identity, access.permission, request, scope);
        await takeCallSlot(request, reply, services, scope);
      } catch (error) {
        // Tokens live in the store: a store that does not answer is the server's fault, not the caller's (and says nothing of the token).
        const refused =
          error instanceof AirlockError
            ? error
            : new AirlockError('INTERNAL', "could not check the caller's token: the store did not answer; retry shortly", { cause: error });
        return reply
          .status(refused.status)
          .header('connection', 'close')
          .send(isE2bUrl(request.url) ? e2bErrorBody(refused.status, `${refused.code}: ${refused.message}`) : errorBody(refused));
      }
    }
    const declared = Number(request.headers['content-length'] ?? 0);
    if (declared > BODY_LIMIT_BYTES) {
      // Read and drop the body before answering: a client that writes its whole body
      // before reading (most do) would otherwise see a reset instead of the 413.
      await drain(request.raw, MAX_DRAINED_BYTES);
      return reply
        .status(413)
        .header('connection', 'close')
        .send(
          errorBody(
            new AirlockError(
              'PAYLOAD_TOO_LARGE',
              `the request body is ${declared} bytes, above the limit of ${BODY_LIMIT_BYTES}; send files of at most 32 MiB per call`,
            ),
          ),
        );
    }
  });
  // After authentication: a forwarded call carries the caller's own credentials to the node that answers it.
  if (services.cluster) installClusterRouting(app, services.cluster.routing);
  app.get('/healthz', { config: { access: PUBLIC_ROUTE } }, async () => ({ ok: true, version: options.version }));
  const document = openApiDocument(options.version);
  app.get('/openapi.json', { config: { access: PUBLIC_ROUTE } }, async () => document);
  const metrics = options.metrics;
  if (metrics) {
    app.get('/metrics', { config: { access: needs('metrics.read') } }, async (_request, reply) => {
      const { contentType, body } = await metrics.exposition();
      return reply.type(contentType).send(body);
    });
  }
  registerSessionRoutes(app, services);
  registerAuditRoutes(app, services);
  registerToolRoutes(app, services);
  registerApprovalRoutes(app, services, scope);
  registerImageRoutes(app, services);
  registerMachineRoutes(app, services);
  registerPortRoutes(app, services);
  // WebSocket routes go in a scope registered after the plugin, so that the plugin sees them.
  void app.register(websocket, { options: { maxPayload: 1024 * 1024 } });
  void app.register(async (scope) => registerDesktopRoutes(scope, services));
  void app.register(async (scope) => registerTerminalRoutes(scope, services));
  registerSnapshotRoutes(app, services, scope);
  registerTokenRoutes(app, services, options.authentication);
  registerWebhookRoutes(app, services);
  registerTenantRoutes(app, services);
  registerEgressRoutes(app, services);
  registerMcpRoutes(app, { token: options.token, openByToken: services.openByToken });
  registerLoginRoutes(app, options.authentication);
  registerEventRoutes(app, services, options.activity);
  registerNodeRoutes(app, services);
  if (options.e2bDataDir !== undefined) {
    registerTemplateRoutes(app, services, options.e2bDataDir);
    registerE2bApi(app, services, e2bTemplateLookup(options.e2bDataDir));
  }
  return app;
}
