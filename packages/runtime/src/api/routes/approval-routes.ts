/** Routes of human approval, including a server-sent event stream of new requests. */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AirlockServices } from '../airlock-services.js';
import type { ApprovalRecord } from '../../core/approval.js';
import { parseBody } from '../parse-body.js';
import { approverName, identityOf } from '../authentication.js';
import type { TenantScope } from '../tenant-scope.js';
import { needs } from '../access-rules.js';
import { AirlockError } from '../../core/errors.js';

// `by` is accepted from older clients and ignored: the approver is who authenticated (docs/security.md).
const decisionBody = z.strictObject({ reason: z.string().max(4000).optional(), by: z.string().max(200).optional() });

/** Registers /v1/approvals routes. */
export function registerApprovalRoutes(app: FastifyInstance, services: AirlockServices, scope: TenantScope): void {
  app.get<{ Querystring: { sessionId?: string; state?: string } }>('/v1/approvals', { config: { access: needs('approval.read') } }, async (request) => {
    const identity = identityOf(request);
    const approvals = await services.approvals.list({
      ...(request.query.sessionId === undefined ? {} : { sessionId: request.query.sessionId }),
      pendingOnly: request.query.state === 'pending',
    });
    const visible: ApprovalRecord[] = [];
    for (const approval of approvals) if (await scope.sees(identity, approval.sessionId)) visible.push(approval);
    return { approvals: visible };
  });

  // Open streams end before the server closes: otherwise close() waits for them forever.
  const open = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const stop of open) stop();
  });
  app.get('/v1/approvals/events', { config: { access: needs('approval.read') } }, async (request, reply) => {
    const identity = identityOf(request);
    // Per token (429 over the cap), and ended with the token when it is revoked.
    let end = (): void => undefined;
    const held = services.openByToken.open(identity.tokenId, 'approval-stream', () => end());
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    reply.raw.write(': airlock approval events\n\n');
    // Only the caller's tenant's approvals; the check is asynchronous, the order of one approval's events is kept by chaining.
    let sent = Promise.resolve();
    const send = (event: string) => (approval: ApprovalRecord) => {
      sent = sent
        .then(async () => {
          if (!(await scope.sees(identity, approval.sessionId)) || reply.raw.writableEnded) return;
          reply.raw.write(`event: approval.${event}\nid: ${approval.id}\ndata: ${JSON.stringify(approval)}\n\n`);
        })
        .catch(() => undefined);
    };
    const onRequested = send('requested');
    const onDecided = send('decided');
    services.approvals.events.on('requested', onRequested);
    services.approvals.events.on('decided', onDecided);
    const keepAlive = setInterval(() => reply.raw.write(': keep-alive\n\n'), 15_000);
    const stop = () => {
      open.delete(stop);
      held.release();
      clearInterval(keepAlive);
      services.approvals.events.off('requested', onRequested);
      services.approvals.events.off('decided', onDecided);
      if (!reply.raw.writableEnded) reply.raw.end();
    };
    end = stop;
    open.add(stop);
    request.raw.on('close', stop);
  });

  app.get<{ Params: { id: string }; Querystring: { waitSeconds?: string } }>('/v1/approvals/:id', { config: { access: needs('approval.await') } }, async (request) => {
    const waitSeconds = Math.min(Math.max(Number.parseFloat(request.query.waitSeconds ?? '0') || 0, 0), 600);
    if (waitSeconds > 0) {
      // A wait of the caller's token ends with it: a revoked token gets its 401 now, not at the end of the wait.
      const stop = new AbortController();
      const held = services.openByToken.open(identityOf(request).tokenId, 'approval-wait', () => stop.abort());
      try {
        await services.approvals.waitForOutcome(request.params.id, waitSeconds * 1000, stop.signal);
      } finally {
        held.release();
      }
      if (stop.signal.aborted) throw new AirlockError('UNAUTHORIZED', 'the token of this request was revoked while it waited; use a live token');
    }
    return services.approvals.get(request.params.id);
  });

  for (const verdict of ['approve', 'deny'] as const) {
    app.post<{ Params: { id: string } }>(`/v1/approvals/:id/${verdict}`, { config: { access: needs('approval.decide') } }, async (request) => {
      const body = parseBody(decisionBody, request.body ?? {});
      // The approver is who authenticated; no caller can name someone else.
      return services.approvals.decide(request.params.id, verdict, approverName(identityOf(request)), body.reason ?? null);
    });
  }
}
