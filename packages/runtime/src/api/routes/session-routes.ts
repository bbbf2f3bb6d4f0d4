/** Routes of the session lifecycle. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { sessionView } from '../session-view.js';
import { parseBody } from '../parse-body.js';
import { approverName, identityOf, type Identity } from '../authentication.js';
import { imageNotFound, reaches } from '../tenant-scope.js';
import { DEFAULT_IMAGE } from '../../core/session-service.js';
import { EVERY_TENANT } from '../../core/tenancy.js';
import { AirlockError } from '../../core/errors.js';
import type { SessionContract } from '../../core/session-contract.js';
import { needs } from '../access-rules.js';

const createBody = z.strictObject({
  image: z.string().min(1).optional(),
  contract: z.unknown().optional(),
  mode: z.enum(['machine', 'per-call']).optional(),
  sandbox: z.string().regex(/^[a-z][a-z0-9-]{0,31}$/, 'expected a sandbox driver name such as gvisor or microvm').optional(),
  idleTimeoutSeconds: z.number().int().positive().optional(),
});

/** Registers /v1/sessions routes. */
export function registerSessionRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.post('/v1/sessions', { config: { access: needs('session.manage') } }, async (request, reply) => {
    const body = parseBody(createBody, request.body ?? {});
    const identity = identityOf(request);
    // A token of one tenant makes sessions of that tenant: a contract naming none gets the token's.
    const own = identity.tenant === EVERY_TENANT ? {} : { tenant: identity.tenant };
    let contract = services.parseContract(body.contract ?? services.defaultContract(), own);
    if (body.idleTimeoutSeconds !== undefined) {
      contract = services.parseContract({ ...contract, idle: { ...(contract.idle ?? {}), suspendAfterSeconds: body.idleTimeoutSeconds } }, own);
    }
    requireOwnTenant(identity, contract);
    // Only the images given to the session's tenant; another answers as a missing image.
    const imageName = body.image ?? DEFAULT_IMAGE;
    if (!(await services.tenants.imageGiven(contract.identity.tenant, imageName))) throw imageNotFound(imageName);
    const release = await services.admission.reserveSessions(contract.identity.tenant, 1);
    try {
      const session = await services.sessions.create({
        contract,
        ...(body.image === undefined ? {} : { imageName: body.image }),
        ...(body.mode === undefined ? {} : { mode: body.mode }),
        ...(body.sandbox === undefined ? {} : { sandbox: body.sandbox }),
        by: approverName(identity),
      });
      return reply.status(201).send(sessionView(session));
    } finally {
      release();
    }
  });

  app.get('/v1/sessions', { config: { access: needs('session.read') } }, async (request) => {
    const identity = identityOf(request);
    return { sessions: (await services.sessions.list()).filter((session) => reaches(identity, session.tenant)).map((session) => sessionView(session)) };
  });

  app.get<{ Params: { id: string } }>('/v1/sessions/:id', { config: { access: needs('session.info') } }, async (request) => sessionView(await services.sessions.get(request.params.id)));

  app.get<{ Params: { id: string } }>('/v1/sessions/:id/contract', { config: { access: needs('session.read') } }, async (request) => {
    const session = await services.sessions.get(request.params.id);
    return { sessionId: session.id, version: session.contractVersion, contract: session.contract };
  });

  // Another tenant's name answers 404 before this runs (TenantScope).
  app.get<{ Params: { tenant: string } }>('/v1/tenants/:tenant/usage', { config: { access: needs('session.read') } }, async (request) => {
    const views = (await services.sessions.list()).filter((session) => session.tenant === request.params.tenant).map((session) => sessionView(session));
    const totals: Record<string, number> = {};
    for (const view of views) {
      for (const [key, value] of Object.entries(view['meters'] as Record<string, number>)) {
        if (key === 'idleFractionUnpaid' || key === 'timeWeightedMemoryBytes') continue;
        totals[key] = key === 'peakMemoryBytes' ? Math.max(totals[key] ?? 0, value) : (totals[key] ?? 0) + value;
      }
    }
    return { tenant: request.params.tenant, sessions: views.length, live: views.filter((v) => v['state'] !== 'terminated').length, meters: totals };
  });

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/suspend', { config: { access: needs('session.manage') } }, async (request) => sessionView(await services.sessions.suspend(request.params.id, 'manual', approverName(identityOf(request)))));
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/resume', { config: { access: needs('session.manage') } }, async (request) => sessionView(await services.sessions.resume(request.params.id)));
  // Who restarted is who authenticated (recorded in the audit), never a field of the request.
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/restart', { config: { access: needs('session.manage') } }, async (request) =>
    sessionView(await services.sessions.restart(request.params.id, approverName(identityOf(request)))),
  );
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/pause', { config: { access: needs('session.manage') } }, async (request) => sessionView(await services.sessions.pause(request.params.id, 'manual', approverName(identityOf(request)))));
  app.delete<{ Params: { id: string } }>('/v1/sessions/:id', { config: { access: needs('session.manage') } }, async (request) => sessionView(await services.sessions.terminate(request.params.id, approverName(identityOf(request)))));

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/guard/reset', { config: { access: needs('session.manage') } }, async (request) => {
    const session = await services.sessions.resetGuard(request.params.id, 'api');
    return sessionView(session);
  });

  app.get<{ Params: { id: string }; Querystring: { afterSeq?: string; limit?: string; tail?: string } }>('/v1/sessions/:id/audit', { config: { access: needs('session.read') } }, async (request) => {
    const session = await services.sessions.get(request.params.id);
    // tail=N: the last N records (what the console shows beside a held call), without reading the whole chain.
    const tail = Number.parseInt(request.query.tail ?? '', 10);
    const afterSeq = tail > 0 ? Math.max(0, (await services.store.auditHead(session.id)).seq - tail) : Number.parseInt(request.query.afterSeq ?? '0', 10) || 0;
    const limit = Math.min(Number.parseInt(request.query.limit ?? '10000', 10) || 10000, 100000);
    return { sessionId: session.id, records: await services.store.listAudit(session.id, { afterSeq, limit }) };
  });

  app.get<{ Params: { id: string } }>('/v1/sessions/:id/audit/verify', { config: { access: needs('session.read') } }, async (request) => {
    const session = await services.sessions.get(request.params.id);
    const result = await services.audit.verify(services.store, session.id, { mustHaveRecords: true });
    return { sessionId: session.id, ...result };
  });

  // JSON lines: every record, then the head signed with the audit key (`airlock audit export ID`).
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/audit/export', { config: { access: needs('session.read') } }, async (request, reply) => {
    const session = await services.sessions.get(request.params.id);
    const lines = await services.audit.exportChain(services.store, session.id);
    return reply.type('application/x-ndjson').send(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  });
}

/** Refuses a contract that names a tenant other than the token's (the admin role makes sessions of any tenant). */
function requireOwnTenant(identity: Identity, contract: SessionContract): void {
  if (identity.tenant === EVERY_TENANT || contract.identity.tenant === identity.tenant) return;
  throw new AirlockError('ROLE_FORBIDDEN', `the contract names tenant ${contract.identity.tenant}, but your token belongs to tenant ${identity.tenant}; leave identity.tenant out or set it to ${identity.tenant}`, {
    details: { field: 'contract.identity.tenant', tenant: identity.tenant },
  });
}
