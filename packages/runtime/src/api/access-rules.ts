/**
 * Who may call which route: every route of the API names one permission, and
 * every role holds a set of them (the matrix of docs/security.md, "Roles").
 * A route missing from the table is admin-only, so a new route is closed
 * until someone decides who may use it.
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
  | 'metrics.read';

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

/** `METHOD url-pattern` (Fastify's route url) → permission. HEAD is read as GET. */
export const ROUTE_PERMISSIONS: Readonly<Record<string, Permission>> = {
  'GET /v1/whoami': 'identity.read',
  'GET /metrics': 'metrics.read',
  'GET /v1/sessions': 'session.read',
  'POST /v1/sessions': 'session.manage',
  'GET /v1/sessions/:id': 'session.info',
  'DELETE /v1/sessions/:id': 'session.manage',
  'GET /v1/sessions/:id/contract': 'session.read',
  'PATCH /v1/sessions/:id/contract': 'session.manage',
  'GET /v1/sessions/:id/audit': 'session.read',
  'GET /v1/sessions/:id/audit/verify': 'session.read',
  'GET /v1/sessions/:id/audit/export': 'session.read',
  // The system chain and every chain at once (routes/audit-routes.ts): admin only.
  'GET /v1/audit/system/verify': 'token.manage',
  'GET /v1/audit/system/export': 'token.manage',
  'GET /v1/audit/verify': 'token.manage',
  'POST /v1/sessions/:id/suspend': 'session.manage',
  'POST /v1/sessions/:id/resume': 'session.manage',
  'POST /v1/sessions/:id/pause': 'session.manage',
  'POST /v1/sessions/:id/guard/reset': 'session.manage',
  'POST /v1/sessions/:id/resize': 'session.manage',
  'POST /v1/sessions/:id/keep-awake': 'session.manage',
  'GET /v1/sessions/:id/ports': 'session.read',
  'POST /v1/sessions/:id/ports': 'session.manage',
  'DELETE /v1/sessions/:id/ports/:port': 'session.manage',
  'GET /v1/sessions/:id/terminal': 'session.manage',
  'GET /v1/sessions/:id/terminal/recordings/:takeoverId': 'session.read',
  'POST /v1/sessions/:id/restart': 'session.manage',
  'GET /v1/sessions/:id/desktop': 'session.info',
  'GET /v1/sessions/:id/desktop/vnc': 'session.read',
  'GET /v1/sessions/:id/desktop/thumbnails/:name': 'session.read',
  'GET /v1/sessions/:id/desktop/takeovers/:takeoverId': 'session.read',
  'POST /v1/sessions/:id/desktop/takeover': 'session.manage',
  'DELETE /v1/sessions/:id/desktop/takeover': 'session.manage',
  'POST /v1/sessions/:id/desktop/screenshot': 'tool.call',
  'POST /v1/sessions/:id/desktop/actions': 'tool.call',
  'POST /v1/sessions/:id/tools/:tool': 'tool.call',
  'POST /v1/sessions/:id/exec': 'tool.call',
  'GET /mcp': 'tool.call',
  'POST /mcp': 'tool.call',
  'DELETE /mcp': 'tool.call',
  'GET /v1/sessions/:id/mcp': 'tool.call',
  'POST /v1/sessions/:id/mcp': 'tool.call',
  'DELETE /v1/sessions/:id/mcp': 'tool.call',
  '* /v1/sessions/:id/ports/:port/*': 'tool.call',
  'POST /v1/sessions/:id/snapshots': 'snapshot.manage',
  'POST /v1/sessions/:id/fork': 'snapshot.manage',
  'GET /v1/snapshots': 'snapshot.read',
  'GET /v1/snapshots/:id': 'snapshot.read',
  'DELETE /v1/snapshots/:id': 'snapshot.manage',
  'GET /v1/approvals': 'approval.read',
  'GET /v1/approvals/events': 'approval.read',
  'GET /v1/approvals/:id': 'approval.await',
  'POST /v1/approvals/:id/approve': 'approval.decide',
  'POST /v1/approvals/:id/deny': 'approval.decide',
  'GET /v1/events': 'session.read',
  'GET /v1/tenants/:tenant/usage': 'session.read',
  'GET /v1/images': 'image.read',
  'GET /v1/images/:name': 'image.read',
  'GET /v1/secrets': 'secret.manage',
  'PUT /v1/secrets/:name': 'secret.manage',
  'DELETE /v1/secrets/:name': 'secret.manage',
  'GET /v1/tokens': 'token.manage',
  'POST /v1/tokens': 'token.manage',
  'DELETE /v1/tokens/:id': 'token.manage',
  'GET /v1/tenants': 'tenant.manage',
  'GET /v1/tenants/:tenant': 'tenant.manage',
  'PUT /v1/tenants/:tenant': 'tenant.manage',
};

/** The permission a route needs; a route missing from the table needs token management (admin only). */
export function permissionOf(method: string, routeUrl: string): Permission {
  const verb = method.toUpperCase() === 'HEAD' ? 'GET' : method.toUpperCase();
  return ROUTE_PERMISSIONS[`${verb} ${routeUrl}`] ?? ROUTE_PERMISSIONS[`* ${routeUrl}`] ?? 'token.manage';
}

/** True when `role` holds `permission`. */
export function roleMay(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role].includes(permission);
}
