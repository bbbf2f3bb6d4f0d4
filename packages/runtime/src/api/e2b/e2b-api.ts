/**
 * The E2B-compatible API on Airlock's listener (issue 23): `E2B_API_URL` and
 * `E2B_SANDBOX_URL` are both `<server>/e2b`. Errors take E2B's shape
 * (`{ code, message }`, the HTTP status as code).
 */
import type { FastifyInstance } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';
import { translateError } from '../http-errors.js';
import { rememberFailure } from '../request-log.js';
import { E2bSandboxes, registerE2bControlRoutes, type TemplateLookup } from './e2b-control-routes.js';
import { registerE2bSandboxRoutes } from './e2b-sandbox-routes.js';
import { e2bErrorBody } from './e2b-sandboxes.js';

/** Registers the E2B API; the returned sandboxes end their timers on close. */
export function registerE2bApi(app: FastifyInstance, services: AirlockServices, templates: TemplateLookup): E2bSandboxes {
  const sandboxes = new E2bSandboxes(services);
  app.addHook('onClose', async () => sandboxes.close());
  void app.register(async (scope) => {
    scope.setErrorHandler((error, request, reply) => {
      rememberFailure(request, error);
      const translated = translateError(error);
      void reply.status(translated.status).send(e2bErrorBody(translated.status, `${translated.code}: ${translated.message}`));
    });
    registerE2bControlRoutes(scope, services, sandboxes, templates);
    registerE2bSandboxRoutes(scope, services, sandboxes);
  });
  return sandboxes;
}
