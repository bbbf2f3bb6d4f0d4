/**
 * The desktop of a session over HTTP: screenshots and actions (tool calls
 * through the airlock), the thumbnails the audit refers to, takeovers, and
 * the live view: a WebSocket carrying the display's VNC stream through the
 * server (no VNC port on the host), authenticated like every route and
 * view-only unless its viewer holds the takeover.
 */
import type { FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import { AirlockError, toAirlockError } from '../../core/errors.js';
import { desktopSize } from '../../core/desktop-size.js';
import { parseBody } from '../parse-body.js';
import { RfbInputFilter } from '../rfb-input-filter.js';
import { sendOutcome } from './tool-routes.js';
import { approverName, identityOf } from '../authentication.js';
import { needs } from '../access-rules.js';

const takeoverBody = z.strictObject({ by: z.string().min(1).max(200).optional() });
const WAIT_FIELD = 'approvalWaitSeconds';

/** Registers /v1/sessions/:id/desktop routes (the WebSocket plugin must be registered first). */
export function registerDesktopRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.post<{ Params: { id: string } }>('/v1/sessions/:id/desktop/screenshot', { config: { access: needs('tool.call') } }, async (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const { [WAIT_FIELD]: wait, ...args } = body;
    const outcome = await services.pipeline.submit(request.params.id, 'desktop.screenshot', args, { approvalWaitMs: waitMs(wait) });
    if (outcome.status !== 'completed') return sendOutcome(reply, outcome);
    const result = outcome.result;
    return reply
      .status(200)
      .header('content-type', 'image/png')
      .header('cache-control', 'no-store')
      .header('x-airlock-call-id', outcome.callId)
      .header('x-airlock-screen', `${String(result['width'])}x${String(result['height'])}`)
      .send(Buffer.from(String(result['png']), 'base64'));
  });

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/desktop/actions', { config: { access: needs('tool.call') } }, async (request, reply) => {
    const body = request.body;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new AirlockError('INVALID_REQUEST', 'the body is one action as a JSON object, e.g. {"action":"click","x":100,"y":200}', { details: { field: '(body)' } });
    }
    const { [WAIT_FIELD]: wait, ...action } = body as Record<string, unknown>;
    const outcome = await services.pipeline.submit(request.params.id, 'desktop.act', action, { approvalWaitMs: waitMs(wait) });
    return sendOutcome(reply, outcome);
  });

  app.get<{ Params: { id: string } }>('/v1/sessions/:id/desktop', { config: { access: needs('session.info') } }, async (request) => {
    const session = await services.sessions.get(request.params.id);
    const takeover = services.desktop.takeovers.current(session.id);
    const image = await services.images.get(session.imageName).catch(() => undefined);
    return {
      sessionId: session.id,
      // a display that lasts: a desktop image, on a session machine
      available: image?.desktop === true && session.mode === 'machine',
      ...desktopSize(session),
      takeover: takeover ? summary(takeover) : null,
      liveView: `/v1/sessions/${encodeURIComponent(session.id)}/desktop/vnc`,
    };
  });

  app.get<{ Params: { id: string; name: string } }>('/v1/sessions/:id/desktop/thumbnails/:name', { config: { access: needs('session.read') } }, async (request, reply) => {
    const session = await services.sessions.get(request.params.id);
    const png = await services.thumbnails.get(session.id, request.params.name);
    if (!png) {
      throw new AirlockError('NOT_FOUND', `no thumbnail ${request.params.name} for session ${session.id}: it was never taken or has been pruned (the audit record still holds its sha256)`, {
        details: { name: request.params.name },
      });
    }
    return reply.header('content-type', 'image/png').header('cache-control', 'private, max-age=3600').send(png);
  });

  app.post<{ Params: { id: string } }>('/v1/sessions/:id/desktop/takeover', { config: { access: needs('session.manage') } }, async (request, reply) => {
    const session = await services.sessions.get(request.params.id);
    parseBody(takeoverBody, request.body ?? {});
    // The caller is recorded as who authenticated, whatever the body's `by` says (as approvals are).
    const identity = identityOf(request);
    const takeover = await services.desktop.takeovers.begin(session.id, approverName(identity));
    // A revoked token's takeover is handed back; the entry leaves when this takeover is no longer the session's.
    const held = services.openByToken.open(identity.tokenId, 'desktop-takeover', () => {
      void services.desktop.takeovers.end(session.id, takeover.id).catch(() => undefined);
    });
    void services.desktop.takeovers
      .waitForHandBack(session.id)
      .catch(() => undefined)
      .finally(() => held.release());
    return reply.status(201).send(summary(takeover));
  });

  app.delete<{ Params: { id: string } }>('/v1/sessions/:id/desktop/takeover', { config: { access: needs('session.manage') } }, async (request) => {
    const session = await services.sessions.get(request.params.id);
    return summary(await services.desktop.takeovers.end(session.id));
  });

  app.get<{ Params: { id: string; takeoverId: string } }>('/v1/sessions/:id/desktop/takeovers/:takeoverId', { config: { access: needs('session.read') } }, async (request) => {
    const session = await services.sessions.get(request.params.id);
    const takeover = services.desktop.takeovers.get(session.id, request.params.takeoverId);
    return {
      ...summary(takeover),
      frames: takeover.frames.map((frame) => ({ ...frame, url: `/v1/sessions/${encodeURIComponent(session.id)}/desktop/thumbnails/${frame.name}` })),
      inputEvents: takeover.inputEvents,
    };
  });

  app.route<{ Params: { id: string }; Querystring: { takeover?: string } }>({
    method: 'GET',
    url: '/v1/sessions/:id/desktop/vnc',
    config: { access: needs('session.read') },
    // A plain GET (no upgrade) is told what the route is, instead of an empty 404.
    handler: async (request) => {
      await services.sessions.get(request.params.id);
      throw new AirlockError('INVALID_REQUEST', 'the live view is a WebSocket carrying VNC (RFB 3.8): connect with a WebSocket client such as noVNC, with the same authentication', {
        details: { field: 'upgrade' },
      });
    },
    wsHandler: (socket, request) => {
      // A revoked token's live view closes at once.
      const held = services.openByToken.open(identityOf(request).tokenId, 'live-view', () => socket.terminate());
      socket.once('close', () => held.release());
      void relayLiveView(services, socket, request.params.id, request.query.takeover);
    },
  });
}

/** Carries the display's VNC stream over one WebSocket until either side closes. */
async function relayLiveView(services: AirlockServices, socket: WebSocket, sessionId: string, takeoverId: string | undefined): Promise<void> {
  const takeovers = services.desktop.takeovers;
  // Input passes only while this viewer's takeover is the session's current one.
  const inputAllowed = () => takeoverId !== undefined && takeovers.current(sessionId)?.id === takeoverId;
  const filter = new RfbInputFilter(inputAllowed, (input) => takeovers.recordInput(sessionId, input));
  const pending: Buffer[] = [];
  let toServer: ((bytes: Buffer) => void) | undefined;
  socket.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
    const bytes = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    let forward: Buffer;
    try {
      forward = filter.push(bytes);
    } catch (error) {
      socket.close(1008, toAirlockError(error).message.slice(0, 120));
      return;
    }
    if (forward.length === 0) return;
    if (toServer) toServer(forward);
    else pending.push(forward);
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  try {
    await services.desktop.withDisplayStream(sessionId, async (stream) => {
      toServer = (bytes) => stream.write(bytes);
      for (const bytes of pending.splice(0)) stream.write(bytes);
      stream.on('data', (chunk: Buffer) => socket.send(chunk));
      const ended = new Promise<void>((resolve) => {
        stream.once('end', resolve);
        stream.once('close', resolve);
        stream.once('error', () => resolve());
      });
      await Promise.race([closed, ended]);
    });
    // The stream ends when the machine goes away (suspend, snapshot, terminate) or x11vnc closes it.
    if (socket.readyState === socket.OPEN) socket.close(1000, 'the machine was suspended or stopped; reconnect to watch again');
  } catch (error) {
    const failure = toAirlockError(error);
    // 4000 + the HTTP status: a viewer can tell "no desktop" (4409) from "no session" (4404).
    if (socket.readyState === socket.OPEN) socket.close(4000 + failure.status, `${failure.code}: ${failure.message}`.slice(0, 120));
  }
}

function summary(takeover: { id: string; sessionId: string; by: string; startedAt: string; endedAt: string | null; frames: unknown[]; inputEvents: unknown[]; truncated: boolean }) {
  return {
    id: takeover.id,
    sessionId: takeover.sessionId,
    by: takeover.by,
    startedAt: takeover.startedAt,
    endedAt: takeover.endedAt,
    frames: takeover.frames.length,
    inputEvents: takeover.inputEvents.length,
    truncated: takeover.truncated,
    recording: `/v1/sessions/${encodeURIComponent(takeover.sessionId)}/desktop/takeovers/${takeover.id}`,
  };
}

function waitMs(value: unknown): number {
  if (value === undefined) return 0;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 3600) {
    throw new AirlockError('INVALID_REQUEST', `${WAIT_FIELD} must be a number of seconds between 0 and 3600`, { details: { field: WAIT_FIELD } });
  }
  return value * 1000;
}
