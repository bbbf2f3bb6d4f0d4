/** Validation of request bodies that are not tool arguments. */
import type { z } from 'zod';
import { AirlockError } from '../core/errors.js';

/** Parses a body with a schema; INVALID_REQUEST names every bad field. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.output<T> {
  const result = schema.safeParse(body);
  if (result.success) return result.data;
  const errors = result.error.issues.map((issue) => ({ field: issue.path.join('.') || '(body)', message: issue.message }));
  throw new AirlockError('INVALID_REQUEST', `invalid request: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`, {
    details: { errors, field: errors[0]?.field },
  });
}
