/**
 * The JSON body parser of the API. Fastify's default parser accepts any
 * depth, and a body nested thousands deep overflows the stack of whatever
 * walks it later (the audit's canonical form did: a 503 for bad input). So
 * depth is checked on the text before it is parsed, and every problem is a
 * 400 that says what to send instead.
 */
import { AirlockError } from '../core/errors.js';

/** Deepest nesting of objects and arrays a request body may have. */
export const MAX_JSON_DEPTH = 64;

/** Parses a request body, or throws INVALID_REQUEST naming the problem. */
export function parseJsonBody(text: string): unknown {
  if (text.trim() === '') throw new AirlockError('INVALID_REQUEST', 'the JSON body is empty; send an object, e.g. {}');
  const depth = nestingDepth(text);
  if (depth > MAX_JSON_DEPTH) {
    throw new AirlockError('INVALID_REQUEST', `the JSON body nests objects or arrays ${depth} deep, above the limit of ${MAX_JSON_DEPTH}; flatten it`, {
      details: { limit: MAX_JSON_DEPTH },
    });
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new AirlockError('INVALID_REQUEST', `the body is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  // A `__proto__` key would become the prototype of objects built from the body later.
  if (/"__proto__"\s*:/.test(text)) throw new AirlockError('INVALID_REQUEST', 'the body must not contain a "__proto__" key');
  return parsed;
}

/** Deepest `{`/`[` nesting outside string literals. */
function nestingDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (inString) {
      if (code === 0x5c) index += 1;
      else if (code === 0x22) inString = false;
    } else if (code === 0x22) inString = true;
    else if (code === 0x7b || code === 0x5b) deepest = Math.max(deepest, ++depth);
    else if (code === 0x7d || code === 0x5d) depth -= 1;
  }
  return deepest;
}
