/** Routes of snapshots (create, list, get, remove) and of fork. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { parseBody } from '../parse-body.js';
import { sessionView } from '../session-view.js';
import { snapshotView } from '../../core/snapshot.js';
import { errorBody } from '../http-errors.js';
import { forkAcrossNodes } from '../fork-across-nodes.js';
import { identityOf } from '../authentication.js';
import type { TenantScope } from '../tenant-scope.js';
import type { Release } from '../../core/tenant-admission.js';
import { needs } from '../access-rules.js';

// Names end up in tables and logs: no control characters.
const createBody = z.strictObject({
  name: z
    .string()
    .min(1)
    .max(128)
    .regex(/^\P{Cc}+$/u, 'expected no control characters')
    .optional(),
});
// count is checked by the fork service (whole number, 1..max) so that its message names the limit.
// firstBranchIndex: set by a node asking another for its share of a fork spread over nodes.
const forkBody = z.strictObject({ count: z.number(), snapshotId: z.string().min(1).optional(), firstBranchIndex: z.number().int().min(0).optional() });

/** Registers /v1/snapshots and the snapshot and fork routes of a session. */
export function registerSnapshotRoutes(app: FastifyInstance, services: AirlockServices, scope: TenantScope): void {
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/snapshots', { config: { access: needs('snapshot.manage') } }, async (request, reply) => {
    const body = parseBody(createBody, request.body ?? {});
    const snapshot = await services.snapshots.capture(request.params.id, { name: body.name ?? null });
    return reply.status(201).send(snapshotView(snapshot));
  });

  app.get<{ Querystring: { sessionId?: string; all?: string } }>('/v1/snapshots', { config: { access: needs('snapshot.read') } }, async (request) => {
    const { sessionId, all } = request.query;
    if (sessionId !== undefined) await services.sessions.get(sessionId);
    const identity = identityOf(request);
    const snapshots = await services.snapshots.list({ ...(sessionId === undefined ? {} : { sessionId }), includeDeleted: all === 'true' || all === '1' });
    const visible = [];
    for (const snapshot of snapshots) if (await scope.sees(identity, snapshot.sessionId)) visible.push(snapshotView(snapshot));
    return { snapshots: visible };
  });

  app.get<{ Params: { id: string } }>('/v1/snapshots/:id', { config: { access: needs('snapshot.read') } }, async (request) => snapshotView(await services.snapshots.get(request.params.id)));

  app.delete<{ Params: { id: string } }>('/v1/snapshots/:id', { config: { access: needs('snapshot.manage') } }, async (request) => snapshotView(await services.snapshots.remove(request.params.id)));

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/fork', { config: { access: needs('snapshot.manage') } }, async (request, reply) => {
    const body = parseBody(forkBody, request.body ?? {});
    if (body.snapshotId !== undefined) await scope.requireSnapshot(identityOf(request), body.snapshotId);
    // The tenant's room is reserved for every branch here, also those other nodes make (each reserves its share too: never over the quota).
    const release = await admitFork(services, request.params.id, body.count);
    let result;
    try {
      // In a cluster, branches go where there is room: a share of them may be made by other nodes.
      if (body.firstBranchIndex === undefined && Number.isInteger(body.count) && body.count > 1 && body.count <= services.forks.maxBranches) {
        const spread = await forkAcrossNodes(services, request, request.params.id, {
          count: body.count,
          ...(body.snapshotId === undefined ? {} : { snapshotId: body.snapshotId }),
        });
        if (spread) return reply.status(201).send(spread);
      }
      result = await services.forks.fork(
        { sessionId: request.params.id, ...(body.snapshotId === undefined ? {} : { snapshotId: body.snapshotId }) },
        body.count,
        {
          ...(body.firstBranchIndex === undefined ? {} : { firstIndex: body.firstBranchIndex }),
        },
      );
    } finally {
      release();
    }
    const branches = result.branches.map((branch) =>
      branch.ok ? sessionView(branch.session) : { index: branch.index, sessionId: branch.sessionId, ...errorBody(branch.error) },
    );
    return reply.status(201).send({ snapshot: snapshotView(result.snapshot), branches });
  });
}

/**
 * Checks a fork against its tenant's quotas (branches, depth, sessions) and
 * reserves room for its branches. A count the fork service would refuse
 * anyway is left to it, so that its message names the server's limit.
 */
export async function admitFork(services: AirlockServices, sessionId: string, count: unknown): Promise<Release> {
  if (typeof count !== 'number' || !Number.isInteger(count) || count < 1) return () => undefined;
  const session = await services.sessions.get(sessionId);
  await services.admission.checkFork(session, count);
  return services.admission.reserveSessions(session.tenant, count);
}
