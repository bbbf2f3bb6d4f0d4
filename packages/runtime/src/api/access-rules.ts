/**
 * Who may call which route: every route declares, where it is registered,
 * one permission (or that it is public, or a console page), and every role
 * holds a set of permissions (the matrix of docs/security.md, "Tenants,
 * roles and tokens"). A route that declares nothing is refused when it is
 * registered: the server does not start.
 */
import type { Role } from '../core/tenancy.js';

/** What a route does, at the grain roles are granted. */
export type Permission =
  /** one session's record and desktop state (what an MCP server or SDK needs to act on a session it was given) */
  | 'session.info'
  /** list sessions; their contract, audit, desktop view, ports, events; tenant usage */
  | 'session.read'
  /** create, suspend, resume, pause, terminate, resize, keep-awake, network change, ports, takeover, guard reset */
  | 'session.manage'
  /** tool calls: exec, files, desktop actions, MCP, the port proxy */
  | 'tool.call'
  /** list and read snapshots */
  | 'snapshot.read'
  /** take, remove and fork snapshots */
  | 'snapshot.manage'
  /** list approvals and their event stream */
  | 'approval.read'
  /** read one approval (what a caller whose call is held waits on) */
  | 'approval.await'
  /** approve or deny */
  | 'approval.decide'
  /** list and read images */
  | 'image.read'
  /** secrets of the egress gateway */
  | 'secret.manage'
  /** API tokens */
  | 'token.manage'
  /** tenant settings (quotas) */
  | 'tenant.manage'
  /** who am I */
  | 'identity.read'
  /** the installation's Prometheus metrics (counts and durations, no ids) */
  | 'metrics.read'
  /** the nodes sharing the store (list, drain) and this node's warm pools */
  | 'node.manage';

/** The permissions of each role. Admin holds every permission, in every tenant. */
export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  admin: [
    'session.info',
    'session.read',
    'session.manage',
    'tool.call',
    'snapshot.read',
    'snapshot.manage',
    'approval.read',
    'approval.await',
    'approval.decide',
    'image.read',
    'secret.manage',
    'token.manage',
    'tenant.manage',
    'identity.read',
    'metrics.read',
    'node.manage',
  ],
  operator: [
    'session.info',
    'session.read',
    'session.manage',
    'tool.call',
    'snapshot.read',
    'snapshot.manage',
    'approval.await',
    'image.read',
    'identity.read',
  ],
  approver: ['session.info', 'session.read', 'snapshot.read', 'approval.read', 'approval.await', 'approval.decide', 'image.read', 'identity.read'],
  agent: ['session.info', 'tool.call', 'approval.await', 'identity.read'],
  metrics: ['metrics.read', 'identity.read'],
};

/** Who may call a route, declared where the route is registered (its `config.access`). */
export type RouteAccess =
  /** anyone, with no credential (health, the API description, login and logout) */
  | { readonly kind: 'public' }
  /** the web console's files: anyone, GET and HEAD only, never under an API path */
  | { readonly kind: 'console-page' }
  /** a caller whose role holds this permission */
  | { readonly kind: 'permission'; readonly permission: Permission };

/** A route anyone may call without a credential. */
export const PUBLIC_ROUTE: RouteAccess = Object.freeze({ kind: 'public' });

/** A file of the web console (GET and HEAD only). */
export const CONSOLE_PAGE: RouteAccess = Object.freeze({ kind: 'console-page' });

/** A route for callers whose role holds `permission`. */
export function needs(permission: Permission): RouteAccess {
  return Object.freeze({ kind: 'permission', permission });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** who may call the route; a route without it is refused at registration */
    access?: RouteAccess;
    /** the query string goes on to another server as it is (the port proxy): repeated names are not refused */
    forwardsQuery?: boolean;
  }
}

/** Paths of the API (case-insensitive: never served as a console page, whatever the spelling). */
export function isApiPath(path: string): boolean {
  const lower = path.toLowerCase();
  return ['/v1', '/mcp', '/healthz', '/openapi.json', '/metrics', '/e2b'].some((prefix) => lower === prefix || lower.startsWith(`${prefix}/`));
}

/** Why a route's declaration is not acceptable, or undefined when it is. */
export function declarationProblem(methods: readonly string[], url: string, access: RouteAccess | undefined): string | undefined {
  const route = `${methods.join(',')} ${url}`;
  if (access === undefined) {
    return `route ${route} declares no access: add config: { access: needs('PERMISSION') | PUBLIC_ROUTE | CONSOLE_PAGE } to its registration (api/access-rules.ts)`;
  }
  if (access.kind === 'console-page' && (methods.some((method) => method !== 'GET' && method !== 'HEAD') || isApiPath(url))) {
    return `route ${route} is declared CONSOLE_PAGE, which is only for GET and HEAD outside the API paths`;
  }
  if (access.kind === 'permission' && !ROLE_PERMISSIONS.admin.includes(access.permission)) {
    return `route ${route} needs an unknown permission ${String(access.permission)}; permissions are listed in api/access-rules.ts`;
  }
  return undefined;
}

/** True when `role` holds `permission`. */
export function roleMay(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].includes(permission);
}
