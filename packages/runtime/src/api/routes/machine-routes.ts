/** Routes that change a running session machine: live resize and the keep-awake opt-out of idle sleep. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { sessionView } from '../session-view.js';
import { parseBody } from '../parse-body.js';
import { setKeepAwake } from '../../core/idle-sleeper.js';
import { needs } from '../access-rules.js';

// Numbers only here: the resizer checks ranges and the ceiling, and says which was wrong.
const resizeBody = z.strictObject({ cpus: z.number().optional(), memoryMb: z.number().optional() });
const keepAwakeBody = z.strictObject({ keepAwake: z.boolean() });

/** Registers /v1/sessions/:id/resize and /v1/sessions/:id/keep-awake. */
export function registerMachineRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/resize', { config: { access: needs('session.manage') } }, async (request) => {
    const body = parseBody(resizeBody, request.body ?? {});
    const session = await services.resizer.resize(request.params.id, {
      ...(body.cpus === undefined ? {} : { cpus: body.cpus }),
      ...(body.memoryMb === undefined ? {} : { memoryMb: body.memoryMb }),
    });
    return sessionView(session);
  });

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/keep-awake', { config: { access: needs('session.manage') } }, async (request) => {
    const { keepAwake } = parseBody(keepAwakeBody, request.body ?? {});
    return sessionView(await setKeepAwake(services.sessions, request.params.id, keepAwake));
  });
}
