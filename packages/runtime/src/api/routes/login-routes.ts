/**
 * Login of the web console: a token presented once becomes an HttpOnly,
 * SameSite=Strict cookie holding a random login id, plus a CSRF token the
 * page sends back on every state-changing request.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { parseBody } from '../parse-body.js';
import { LOGIN_COOKIE, identityOf, type Authentication, type Identity } from '../authentication.js';
import type { ConsoleLogin } from '../console-logins.js';
import { needs, PUBLIC_ROUTE } from '../access-rules.js';

const loginBody = z.strictObject({ token: z.string().min(1, 'paste the API token printed by `airlock serve`').max(4096) });

/** What the console learns about its login. */
function loginView(identity: Identity, login: ConsoleLogin | undefined): Record<string, unknown> {
  return {
    identity,
    csrfToken: login?.csrfToken ?? null,
    expiresAt: login?.expiresAt.toISOString() ?? null,
  };
}

function loginCookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  // Secure only where the browser reached us over TLS: on plain http a Secure cookie would never come back.
  const secure = request.protocol === 'https' ? '; Secure' : '';
  return `${LOGIN_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

/** Registers POST /v1/login, POST /v1/logout and GET /v1/whoami. */
export function registerLoginRoutes(app: FastifyInstance, authentication: Authentication): void {
  app.post('/v1/login', { config: { access: PUBLIC_ROUTE } }, async (request, reply: FastifyReply) => {
    const body = parseBody(loginBody, request.body ?? {});
    const grant = await authentication.grantOf(body.token);
    const login = authentication.logins.create(grant);
    const maxAge = Math.max(1, Math.round((login.expiresAt.getTime() - Date.now()) / 1000));
    void reply.header('set-cookie', loginCookie(request, login.id, maxAge)).header('cache-control', 'no-store');
    return loginView({ kind: 'console', ...grant }, login);
  });

  app.post('/v1/logout', { config: { access: PUBLIC_ROUTE } }, async (request, reply) => {
    const login = authentication.loginOf(request);
    if (login) authentication.logins.end(login.id);
    void reply.header('set-cookie', loginCookie(request, '', 0)).header('cache-control', 'no-store');
    return { loggedOut: login !== undefined };
  });

  app.get('/v1/whoami', { config: { access: needs('identity.read') } }, async (request, reply) => {
    const identity = identityOf(request);
    void reply.header('cache-control', 'no-store');
    return loginView(identity, identity.kind === 'console' ? authentication.loginOf(request) : undefined);
  });
}
