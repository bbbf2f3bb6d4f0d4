/** `GET /v1/events`: a server-sent event stream of session changes, approvals and (for one session) its audit records. */
import type { FastifyInstance } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';
import type { ActivityFeed } from '../activity-feed.js';
import { EventStream } from '../event-stream.js';
import { identityOf } from '../authentication.js';
import { AirlockError } from '../../core/errors.js';
import { needs } from '../access-rules.js';

/** Open streams beyond this are refused: each holds a socket and two timers. */
const MAX_STREAMS = 256;

/** Registers the event stream; `heartbeatMs` is shortened by tests that watch heartbeats. */
export function registerEventRoutes(app: FastifyInstance, services: AirlockServices, feed: ActivityFeed, options: { heartbeatMs?: number } = {}): void {
  const open = new Set<EventStream>();
  // Before the server stops accepting: an open stream would otherwise keep close() waiting forever.
  app.addHook('preClose', async () => {
    for (const stream of open) stream.close();
  });
  app.get<{ Querystring: { sessionId?: string } }>('/v1/events', { config: { access: needs('session.read') } }, async (request, reply) => {
    const identity = identityOf(request);
    const sessionId = request.query.sessionId;
    if (sessionId !== undefined) {
      const session = await services.sessions.get(sessionId);
      // Another tenant's session answers as if it did not exist (issue 12).
      if (identity.tenant !== '*' && session.tenant !== identity.tenant) {
        throw new AirlockError('SESSION_NOT_FOUND', `session ${sessionId} does not exist; list sessions with \`airlock sessions ls\``, { details: { sessionId } });
      }
    }
    if (open.size >= MAX_STREAMS) {
      throw new AirlockError('SESSION_BUSY', `${MAX_STREAMS} event streams are open already; close a console tab and retry`);
    }
    // Per token (429 over the cap), and ended with the token when it is revoked.
    let end = (): void => undefined;
    const held = services.openByToken.open(identity.tokenId, 'event-stream', () => end());
    reply.hijack();
    const stream = new EventStream(reply.raw, services, feed, {
      identity,
      ...(sessionId === undefined ? {} : { sessionId }),
      ...(options.heartbeatMs === undefined ? {} : { heartbeatMs: options.heartbeatMs }),
    });
    end = () => stream.close();
    open.add(stream);
    reply.raw.on('close', () => {
      open.delete(stream);
      held.release();
    });
  });
}
