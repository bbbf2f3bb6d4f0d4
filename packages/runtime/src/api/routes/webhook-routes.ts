/**
 * Lifecycle webhook endpoints (admin only, see access-rules.ts): `POST
 * /v1/webhooks` answers the signing secret once; lists never show it;
 * `DELETE /v1/webhooks/:id` removes an endpoint and its pending deliveries;
 * `POST /v1/webhooks/:id/test` sends a signed `webhook.test` event at once.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { parseBody } from '../parse-body.js';
import { approverName, identityOf } from '../authentication.js';
import { TENANT_NAME_PATTERN } from '../../core/tenancy.js';
import { AirlockError } from '../../core/errors.js';
import { needs } from '../access-rules.js';
import { withoutSecret, type WebhookEndpoints } from '../../telemetry/webhook-endpoints.js';

const createBody = z.strictObject({
  url: z.string().min(1).max(2000),
  events: z
    .array(
      z
        .string()
        .min(1)
        .max(100)
        .regex(/^[a-z*][a-z.*_-]*$/, 'expected an event name or pattern such as session.* or approval.requested'),
    )
    .min(1)
    .max(50),
  tenant: z.string().regex(TENANT_NAME_PATTERN, 'expected a tenant name: 1-128 letters, digits or . _ : @ - (as in a contract identity.tenant)').optional(),
});

/** Registers /v1/webhooks. */
export function registerWebhookRoutes(app: FastifyInstance, services: AirlockServices): void {
  const endpoints = (): WebhookEndpoints => {
    if (!services.webhooks) throw new AirlockError('INVALID_STATE', 'this server sends no webhooks');
    return services.webhooks;
  };

  app.post('/v1/webhooks', { config: { access: needs('token.manage') } }, async (request, reply) => {
    const body = parseBody(createBody, request.body ?? {});
    const endpoint = await endpoints().add(
      { url: body.url, events: body.events, ...(body.tenant === undefined ? {} : { tenant: body.tenant }) },
      approverName(identityOf(request)),
    );
    return reply
      .status(201)
      .header('cache-control', 'no-store')
      .send({ ...withoutSecret(endpoint), secret: endpoint.secret });
  });

  app.get('/v1/webhooks', { config: { access: needs('token.manage') } }, async () => ({ webhooks: await endpoints().list() }));

  app.delete<{ Params: { id: string } }>('/v1/webhooks/:id', { config: { access: needs('token.manage') } }, async (request) =>
    endpoints().remove(request.params.id, approverName(identityOf(request))),
  );

  app.post<{ Params: { id: string } }>('/v1/webhooks/:id/test', { config: { access: needs('token.manage') } }, async (request) =>
    endpoints().test(request.params.id),
  );
}
