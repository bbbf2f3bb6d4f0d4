/** Routes of secrets (values go in, never out) and of a running session's network policy. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { AirlockError } from '../../core/errors.js';
import { parseBody } from '../parse-body.js';
import { sessionView } from '../session-view.js';
import { TENANT_NAME_PATTERN } from '../../core/tenancy.js';
import { needs } from '../access-rules.js';

const secretBody = z.strictObject({
  value: z.string().min(1),
  // The tenants whose sessions may use it (null: every tenant); left out, a replaced secret keeps its tenants.
  tenants: z.array(z.string().regex(TENANT_NAME_PATTERN, 'expected tenant names')).max(1000).nullable().optional(),
});
const contractPatch = z.strictObject({ network: z.unknown().optional(), filesystem: z.unknown().optional() });

/** Registers /v1/secrets and PATCH /v1/sessions/:id/contract. */
export function registerEgressRoutes(app: FastifyInstance, services: AirlockServices): void {
  const secrets = () => {
    if (!services.secrets) throw new AirlockError('INTERNAL', 'this server has no secret store');
    return services.secrets;
  };
  app.get('/v1/secrets', { config: { access: needs('secret.manage') } }, async () => ({ secrets: secrets().list() }));
  app.put<{ Params: { name: string } }>('/v1/secrets/:name', { config: { access: needs('secret.manage') } }, async (request) => {
    const body = parseBody(secretBody, request.body ?? {});
    const info = secrets().set(request.params.name, body.value, body.tenants);
    await services.audit.appendNow(services.store, { sessionId: '', type: 'secret.set', data: { name: info.name, bytes: info.bytes, tenants: info.tenants } });
    return info;
  });
  app.delete<{ Params: { name: string } }>('/v1/secrets/:name', { config: { access: needs('secret.manage') } }, async (request) => {
    if (!secrets().remove(request.params.name)) {
      throw new AirlockError('SECRET_NOT_FOUND', `no secret named ${request.params.name}; list them with \`airlock secrets ls\``, { details: { name: request.params.name } });
    }
    await services.audit.appendNow(services.store, { sessionId: '', type: 'secret.deleted', data: { name: request.params.name } });
    return { name: request.params.name, deleted: true };
  });
  app.patch<{ Params: { id: string } }>('/v1/sessions/:id/contract', { config: { access: needs('session.manage') } }, async (request) => {
    const body = parseBody(contractPatch, request.body ?? {});
    if (!services.contracts) throw new AirlockError('INTERNAL', 'this server cannot update contracts');
    return sessionView(await services.contracts.update(request.params.id, { ...(body.network === undefined ? {} : { network: body.network }), ...(body.filesystem === undefined ? {} : { filesystem: body.filesystem }) }));
  });
}
