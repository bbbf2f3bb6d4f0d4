/** Tenant settings (admin only): `PUT /v1/tenants/:tenant` changes some quotas or the images given, `GET` reads them. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { parseBody } from '../parse-body.js';
import { approverName, identityOf } from '../authentication.js';
import { needs } from '../access-rules.js';

const limit = z.number().int().min(0).nullable().optional();
const quotasBody = z.strictObject({
  maxSessions: limit,
  maxConcurrentCalls: limit,
  maxForkBranches: limit,
  maxForkDepth: limit,
  // The images its sessions may use (null: every image).
  images: z.array(z.string().min(1).max(200)).max(1000).nullable().optional(),
});

/** Registers /v1/tenants and /v1/tenants/:tenant. */
export function registerTenantRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.get('/v1/tenants', { config: { access: needs('tenant.manage') } }, async () => ({ tenants: await services.tenants.list() }));
  app.get<{ Params: { tenant: string } }>('/v1/tenants/:tenant', { config: { access: needs('tenant.manage') } }, async (request) =>
    services.tenants.get(request.params.tenant),
  );
  app.put<{ Params: { tenant: string } }>('/v1/tenants/:tenant', { config: { access: needs('tenant.manage') } }, async (request) => {
    const body = parseBody(quotasBody, request.body ?? {});
    const changes = Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined));
    return services.tenants.set(request.params.tenant, changes, approverName(identityOf(request)));
  });
}
