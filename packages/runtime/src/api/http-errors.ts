/**
 * One error format for every response: `{ "error": { code, message, details } }`,
 * with the status from the error table. Framework errors (bad JSON, body too
 * large, wrong content type) are translated here, never at the route.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AirlockError, toAirlockError } from '../core/errors.js';

/** The JSON body of an error response. */
export function errorBody(error: AirlockError): { error: { code: string; message: string; details: Record<string, unknown> } } {
  return { error: { code: error.code, message: error.message, details: error.details } };
}

/** Maps anything thrown in a route to an AirlockError. */
export function translateError(error: unknown): AirlockError {
  if (error instanceof AirlockError) return error;
  const fastifyError = error as Partial<FastifyError>;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AirlockError('PAYLOAD_TOO_LARGE', 'the request body is too large; send files of at most 32 MiB per call', { cause: error });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AirlockError('INVALID_REQUEST', 'send the body as application/json', { cause: error });
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new AirlockError('INVALID_REQUEST', 'the JSON body is empty; send an object, e.g. {}', { cause: error });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new AirlockError('INVALID_REQUEST', `the body is not valid JSON: ${fastifyError.message ?? ''}`, { cause: error });
    default:
      break;
  }
  if (error instanceof SyntaxError || (fastifyError.statusCode === 400 && fastifyError.code === undefined)) {
    return new AirlockError('INVALID_REQUEST', `the body is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new AirlockError('INVALID_REQUEST', fastifyError.message ?? 'bad request', { cause: error });
  }
  return toAirlockError(error);
}

/** Fastify error handler: logs server faults, answers with the one error format. */
export function handleError(error: unknown, request: FastifyRequest, reply: FastifyReply): void {
  const translated = translateError(error);
  if (translated.status >= 500) request.log.error({ err: error }, translated.message);
  void reply.status(translated.status).send(errorBody(translated));
}
