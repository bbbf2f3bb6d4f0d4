/**
 * API tokens (admin only, see access-rules.ts): `POST /v1/tokens` answers the
 * secret once; lists never show it; `DELETE /v1/tokens/:id` revokes, and the
 * token answers 401 from that moment.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { parseBody } from '../parse-body.js';
import { approverName, identityOf, type Authentication } from '../authentication.js';
import { ROLES, TENANT_NAME_PATTERN, type Role } from '../../core/tenancy.js';
import { needs } from '../access-rules.js';

const createBody = z.strictObject({
  tenant: z.string().regex(TENANT_NAME_PATTERN, 'expected a tenant name: 1-128 letters, digits or . _ : @ - (as in a contract identity.tenant)'),
  role: z.enum(ROLES as [Role, ...Role[]]).optional(),
  name: z
    .string()
    .min(1)
    .max(200)
    .regex(/^\P{Cc}+$/u, 'expected no control characters')
    .optional(),
  /** make it an E2B API key (`e2b_` + 40 hex digits): the same token, in the form E2B's clients send */
  e2b: z.boolean().optional(),
});

/** Registers /v1/tokens. */
export function registerTokenRoutes(app: FastifyInstance, services: AirlockServices, authentication: Authentication): void {
  app.post('/v1/tokens', { config: { access: needs('token.manage') } }, async (request, reply) => {
    const body = parseBody(createBody, request.body ?? {});
    const { token, secret } = await services.tokens.create(
      {
        tenant: body.tenant,
        ...(body.role === undefined ? {} : { role: body.role }),
        ...(body.name === undefined ? {} : { name: body.name }),
        ...(body.e2b === true ? { e2b: true } : {}),
      },
      approverName(identityOf(request)),
    );
    return reply
      .status(201)
      .header('cache-control', 'no-store')
      .send({ id: token.id, token: secret, tenant: token.tenant, role: token.role, name: token.name, createdAt: token.createdAt });
  });

  app.get('/v1/tokens', { config: { access: needs('token.manage') } }, async () => ({ tokens: await services.tokens.list() }));

  app.delete<{ Params: { id: string } }>('/v1/tokens/:id', { config: { access: needs('token.manage') } }, async (request) => {
    const revoked = await services.tokens.revoke(request.params.id, approverName(identityOf(request)));
    // What the token holds open on this server ends now: sockets, streams, MCP sessions, long polls, console logins.
    // Other servers sharing the store end theirs at their next sweep (about a second).
    services.openByToken.endToken(revoked.id);
    authentication.logins.endAllOf(revoked.id);
    return revoked;
  });
}
