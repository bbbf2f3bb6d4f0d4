/**
 * Tool calls over HTTP. `POST /v1/sessions/:id/tools/:tool` answers with the
 * outcome as JSON; `POST /v1/sessions/:id/exec` can also stream output as
 * NDJSON lines. A refused call answers with its error code and status; a held
 * call answers 202 with its approval id.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AirlockServices } from '../airlock-services.js';
import { AirlockError, ERROR_STATUS, type ErrorCode } from '../../core/errors.js';
import type { ToolCallOutcome } from '../../core/tool-pipeline.js';
import { translateError, errorBody } from '../http-errors.js';
import { parseTraceparent } from '../../core/tracer.js';
import { admitFork } from './snapshot-routes.js';
import { needs } from '../access-rules.js';

interface ToolQuery {
  approvalWaitSeconds?: string;
}

/** Sends a non-streamed outcome: 200 completed, 202 pending, 4xx refused. */
export function sendOutcome(reply: FastifyReply, outcome: ToolCallOutcome): FastifyReply {
  if (outcome.status === 'completed') return reply.status(200).send(outcome);
  if (outcome.status === 'pending-approval') return reply.status(202).send(outcome);
  const status = ERROR_STATUS[outcome.error.code as ErrorCode] ?? 403;
  return reply.status(status).send({ error: { ...outcome.error, details: { ...outcome.error.details, callId: outcome.callId, decision: outcome.decision } } });
}

function approvalWaitMs(query: ToolQuery, body: Record<string, unknown>): number {
  const fromBody = body['approvalWaitSeconds'];
  const seconds = typeof fromBody === 'number' ? fromBody : Number.parseFloat(query.approvalWaitSeconds ?? '0');
  if (!Number.isFinite(seconds) || seconds < 0 || seconds > 3600) {
    throw new AirlockError('INVALID_REQUEST', 'approvalWaitSeconds must be between 0 and 3600', { details: { field: 'approvalWaitSeconds' } });
  }
  return seconds * 1000;
}

function withoutTransportFields(body: Record<string, unknown>): Record<string, unknown> {
  const { approvalWaitSeconds: _wait, stream: _stream, ...args } = body;
  return args;
}

/** Registers tool-call routes. */
export function registerToolRoutes(app: FastifyInstance, services: AirlockServices): void {
  app.post<{ Params: { id: string; tool: string }; Querystring: ToolQuery }>('/v1/sessions/:id/tools/:tool', { config: { access: needs('tool.call') } }, async (request, reply) => {
    const body = objectBody(request.body);
    const abort = abortOnDisconnect(request.raw, reply.raw);
    const trace = parseTraceparent(request.headers.traceparent as string | undefined);
    // An agent's own fork meets its tenant's fork quotas like the fork route (checked when the call arrives).
    const release = request.params.tool === 'fork' ? await admitFork(services, request.params.id, body['count']) : () => undefined;
    try {
      const outcome = await services.pipeline.submit(request.params.id, request.params.tool, withoutTransportFields(body), {
        approvalWaitMs: approvalWaitMs(request.query, body),
        signal: abort.signal,
        ...(trace ? { trace } : {}),
      });
      return sendOutcome(reply, outcome);
    } finally {
      release();
    }
  });

  app.post<{ Params: { id: string }; Querystring: ToolQuery & { stream?: string } }>('/v1/sessions/:id/exec', { config: { access: needs('tool.call') } }, async (request, reply) => {
    const body = objectBody(request.body);
    const stream = body['stream'] === true || request.query.stream === 'true' || request.query.stream === '1';
    const abort = abortOnDisconnect(request.raw, reply.raw);
    const trace = parseTraceparent(request.headers.traceparent as string | undefined);
    if (!stream) {
      const outcome = await services.pipeline.submit(request.params.id, 'exec', withoutTransportFields(body), { approvalWaitMs: approvalWaitMs(request.query, body), signal: abort.signal, ...(trace ? { trace } : {}) });
      return sendOutcome(reply, outcome);
    }
    // Stream: headers go out with the first output; a refusal before that is a normal error response.
    let started = false;
    const start = () => {
      if (started) return;
      started = true;
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    };
    const line = (value: unknown) => {
      start();
      if (reply.raw.destroyed) return;
      reply.raw.write(`${JSON.stringify(value)}\n`);
      // A client that stops reading must not make the server hold the command's output: past the
      // bound the connection is cut, which (like any disconnect of a streamed exec) stops the command.
      if (reply.raw.writableLength > MAX_UNSENT_STREAM_BYTES) {
        abort.abort();
        reply.raw.destroy();
      }
    };
    try {
      const outcome = await services.pipeline.submit(request.params.id, 'exec', withoutTransportFields(body), {
        approvalWaitMs: approvalWaitMs(request.query, body),
        signal: abort.signal,
        ...(trace ? { trace } : {}),
        onStdout: (chunk) => line({ type: 'stdout', data: chunk.toString('base64') }),
        onStderr: (chunk) => line({ type: 'stderr', data: chunk.toString('base64') }),
      });
      if (!started && outcome.status !== 'completed') return sendOutcome(reply, outcome);
      line({ type: 'outcome', outcome });
      reply.raw.end();
      return reply;
    } catch (error) {
      if (!started) throw error;
      const translated = translateError(error);
      reply.raw.end(`${JSON.stringify({ type: 'error', ...errorBody(translated) })}\n`);
      return reply;
    }
  });
}

/** Output a streamed exec may have waiting for a slow client before the connection is cut. */
const MAX_UNSENT_STREAM_BYTES = 16 * 1024 * 1024;

function objectBody(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new AirlockError('INVALID_REQUEST', 'the body must be a JSON object of tool arguments', { details: { field: '(body)' } });
  }
  return body as Record<string, unknown>;
}

/** An AbortSignal that fires when the client goes away before the response ends. */
function abortOnDisconnect(request: import('node:http').IncomingMessage, response: import('node:http').ServerResponse): AbortController {
  const controller = new AbortController();
  response.on('close', () => {
    if (!response.writableFinished) controller.abort();
  });
  request.on('aborted', () => controller.abort());
  return controller;
}
