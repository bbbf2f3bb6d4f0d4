/**
 * Checks of the audit that reach past one session (issue 22 item 7): the
 * system chain (token, tenant and secret records) and every chain at once,
 * including those the database lost but the head file outside it still
 * names. Admin only: each declares `token.manage`, like
 * the token routes whose records the system chain holds.
 */
import type { FastifyInstance } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';
import { SYSTEM_CHAIN } from '../../audit/audit-log.js';
import { needs } from '../access-rules.js';

const ADMIN_ONLY = { config: { access: needs('token.manage') } };

/** Registers /v1/audit/*. */
export function registerAuditRoutes(app: FastifyInstance, services: AirlockServices): void {
  // The system chain, as `GET /v1/sessions/:id/audit/verify` answers for a session (sessionId '').
  app.get('/v1/audit/system/verify', ADMIN_ONLY, async () => ({ sessionId: SYSTEM_CHAIN, ...(await services.audit.verifySystem(services.store)) }));

  // JSON lines like a session's export: every record, then the head signed with the audit key.
  app.get('/v1/audit/system/export', ADMIN_ONLY, async (_request, reply) => {
    const lines = await services.audit.exportChain(services.store, SYSTEM_CHAIN);
    return reply.type('application/x-ndjson').send(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
  });

  // Every chain: ok only when each verifies; `missing` names the chains only the head file still knows.
  app.get('/v1/audit/verify', ADMIN_ONLY, async () => services.audit.verifyAll(services.store));
}
