/**
 * What a token of one tenant may see: its tenant's sessions and what hangs
 * off them (snapshots, approvals, audit). An id of another tenant answers
 * exactly as an id that does not exist (404, same code and message), so a
 * caller cannot even learn that it exists. Admin tokens (tenant '*') see
 * every tenant.
 */
import type { FastifyRequest } from 'fastify';
import { AirlockError } from '../core/errors.js';
import type { StoreReader } from '../core/store.js';
import { EVERY_TENANT } from '../core/tenancy.js';
import type { Identity } from './authentication.js';

/** The 404 of a session that does not exist (the words of the session records). */
export function sessionNotFound(id: string): AirlockError {
  return new AirlockError('SESSION_NOT_FOUND', `session ${id} does not exist; list sessions with \`airlock sessions ls\``, { details: { sessionId: id } });
}

/** The 404 of a snapshot that does not exist (the words of the snapshot service). */
export function snapshotNotFound(id: string): AirlockError {
  return new AirlockError('SNAPSHOT_NOT_FOUND', `snapshot ${id} does not exist; list snapshots with \`airlock snapshots ls\``, { details: { snapshotId: id } });
}

/** The 404 of an approval that does not exist (the words of the approval service). */
export function approvalNotFound(id: string): AirlockError {
  return new AirlockError('APPROVAL_NOT_FOUND', `approval ${id} does not exist; list them with \`airlock approvals ls\``, { details: { approvalId: id } });
}

/** The 404 of an image that does not exist (the words of the image catalog, whose test compares them). */
export function imageNotFound(name: string): AirlockError {
  const build =
    name === 'debian-bookworm-desktop' ? 'Build the desktop image with `airlock images build --desktop`' : 'Build the Debian image with `airlock images build`';
  return new AirlockError('IMAGE_NOT_FOUND', `Image "${name}" not found. ${build} or import one with \`airlock images import ${name} FILE\`.`, {
    details: { name },
  });
}

/** True when the identity reaches sessions of `tenant`. */
export function reaches(identity: Pick<Identity, 'tenant'>, tenant: string): boolean {
  return identity.tenant === EVERY_TENANT || identity.tenant === tenant;
}

/** Checks the ids a request names against the caller's tenant, before the route runs. */
export class TenantScope {
  /** Sessions never change tenant: remembered once seen. */
  private readonly tenants = new Map<string, string>();

  constructor(private readonly store: StoreReader) {}

  /** The tenant of a session, or undefined when it does not exist. */
  async tenantOf(sessionId: string): Promise<string | undefined> {
    const known = this.tenants.get(sessionId);
    if (known !== undefined) return known;
    const session = await this.store.getSession(sessionId);
    if (!session) return undefined;
    if (this.tenants.size > 100_000) this.tenants.clear();
    this.tenants.set(sessionId, session.tenant);
    return session.tenant;
  }

  /**
   * Throws SESSION_NOT_FOUND unless the session is of the caller's tenant. A
   * missing session gets the same answer here, before the route, so that a
   * list filtered by a session id cannot tell "missing" from "not yours".
   */
  async requireSession(identity: Identity, sessionId: string): Promise<void> {
    if (!(await this.sees(identity, sessionId))) throw sessionNotFound(sessionId);
  }

  /** Throws SNAPSHOT_NOT_FOUND unless the snapshot is of a session of the caller's tenant. */
  async requireSnapshot(identity: Identity, snapshotId: string): Promise<void> {
    if (identity.tenant === EVERY_TENANT) return;
    const snapshot = await this.store.getSnapshot(snapshotId);
    if (!snapshot || !(await this.sees(identity, snapshot.sessionId))) throw snapshotNotFound(snapshotId);
  }

  /** Throws APPROVAL_NOT_FOUND unless the approval is of a session of the caller's tenant. */
  async requireApproval(identity: Identity, approvalId: string): Promise<void> {
    if (identity.tenant === EVERY_TENANT) return;
    const approval = await this.store.getApproval(approvalId);
    if (!approval || !(await this.sees(identity, approval.sessionId))) throw approvalNotFound(approvalId);
  }

  /** True when the caller reaches the session (a missing session is not reached). */
  async sees(identity: Identity, sessionId: string): Promise<boolean> {
    if (identity.tenant === EVERY_TENANT) return true;
    return (await this.tenantOf(sessionId)) === identity.tenant;
  }

  /** Checks every id a request names, from its route pattern, path and query. */
  async check(identity: Identity, request: FastifyRequest): Promise<void> {
    if (identity.tenant === EVERY_TENANT) return;
    const route = request.routeOptions.url ?? '';
    const params = (request.params ?? {}) as Record<string, string | undefined>;
    const query = (request.query ?? {}) as Record<string, unknown>;
    const id = params['id'];
    if (id !== undefined && route.startsWith('/v1/sessions/:id')) await this.requireSession(identity, id);
    if (id !== undefined && route.startsWith('/v1/snapshots/:id')) await this.requireSnapshot(identity, id);
    if (id !== undefined && route.startsWith('/v1/approvals/:id')) await this.requireApproval(identity, id);
    const tenant = params['tenant'];
    if (tenant !== undefined && route.startsWith('/v1/tenants/:tenant') && tenant !== identity.tenant) {
      throw new AirlockError('NOT_FOUND', `no tenant ${tenant} here; your token belongs to tenant ${identity.tenant}`, { details: { tenant } });
    }
    if (typeof query['sessionId'] === 'string') await this.requireSession(identity, query['sessionId']);
    if (route === '/mcp') {
      const header = request.headers['x-airlock-session'];
      const named = typeof query['session'] === 'string' && query['session'] ? query['session'] : Array.isArray(header) ? header[0] : header;
      if (named) await this.requireSession(identity, named);
    }
  }
}
