/**
 * The takeover terminal of a session (issue 15, item 6): a WebSocket to a PTY
 * inside the session's machine. The PTY is being added to the sandbox driver;
 * until a driver offers it, the route says so with NOT_AVAILABLE (501), so the
 * console and any client can tell "not yet" from "not allowed".
 */
import type { FastifyInstance } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';
import { AirlockError } from '../../core/errors.js';

/** Registers GET /v1/sessions/:id/terminal. */
export function registerTerminalRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.get<{ Params: { id: string } }>('/v1/sessions/:id/terminal', async (request) => {
    const session = await services.sessions.get(request.params.id);
    // Capability check: no driver offers a PTY yet. When one does, this upgrades to a WebSocket here.
    throw new AirlockError('NOT_AVAILABLE', `the takeover terminal needs a PTY inside the sandbox, which this server's driver does not offer yet; use \`airlock exec ${session.id} -- COMMAND\` meanwhile`, {
      details: { sessionId: session.id, capability: 'pty' },
    });
  });
}
