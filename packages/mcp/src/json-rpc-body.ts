/**
 * The body of a POST to the MCP endpoint, checked before the SDK transport
 * sees it, so that each kind of bad input gets the JSON-RPC error the
 * specification names: not JSON → -32700 (parse error); JSON that is not a
 * JSON-RPC message → -32600 (invalid request). The transport itself would
 * answer both with -32700.
 */
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** A JSON-RPC error response without an id, with the HTTP status to send it with. */
export interface JsonRpcBodyError {
  status: number;
  body: { jsonrpc: '2.0'; id: null; error: { code: number; message: string; data?: Record<string, unknown> } };
}

/** The parsed messages, or the error to answer with. */
export type ParsedBody = { ok: true; messages: JSONRPCMessage | JSONRPCMessage[] } | { ok: false; error: JsonRpcBodyError };

/** JSON-RPC's parse error: the body is not JSON. */
export const PARSE_ERROR = -32700;
/** JSON-RPC's invalid request: JSON, but not a JSON-RPC message. */
export const INVALID_REQUEST = -32600;
/** Deepest nesting of objects and arrays a message may have (the API's bodies allow 64; MCP adds a few levels). */
export const MAX_MESSAGE_DEPTH = 72;

/** Parses and checks a POST body (text as received). */
export function parseJsonRpcBody(contentType: string | undefined, text: string | undefined): ParsedBody {
  const mediaType = (contentType ?? '').split(';', 1)[0]?.trim().toLowerCase();
  if (mediaType !== 'application/json') {
    return failure(415, -32000, `send the JSON-RPC message with Content-Type: application/json (got ${contentType === undefined ? 'none' : JSON.stringify(contentType)})`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text ?? '');
  } catch (error) {
    return failure(400, PARSE_ERROR, `Parse error: the body is not valid JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  // Whatever walks a message thousands deep later (a JSON.stringify) would overflow the stack.
  const depth = nestingDepth(value);
  if (depth > MAX_MESSAGE_DEPTH) return failure(400, INVALID_REQUEST, `Invalid Request: the message nests objects or arrays more than ${MAX_MESSAGE_DEPTH} deep; flatten it`);
  const batch = Array.isArray(value);
  const items: unknown[] = batch ? (value as unknown[]) : [value];
  if (items.length === 0) return failure(400, INVALID_REQUEST, 'Invalid Request: an empty batch; send one JSON-RPC message');
  const messages: JSONRPCMessage[] = [];
  for (const [index, item] of items.entries()) {
    const parsed = JSONRPCMessageSchema.safeParse(item);
    if (!parsed.success) {
      const where = batch ? ` (batch item ${index})` : '';
      return failure(400, INVALID_REQUEST, `Invalid Request${where}: not a JSON-RPC 2.0 message; send {"jsonrpc":"2.0","id":...,"method":"...","params":{...}} or a notification without id`);
    }
    messages.push(parsed.data);
  }
  return { ok: true, messages: batch ? messages : (messages[0] as JSONRPCMessage) };
}

/** Nesting depth of a parsed value, counted without recursion and given up past the limit. */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const pending: [unknown, number][] = [[value, 1]];
  while (pending.length > 0) {
    const [item, depth] = pending.pop() as [unknown, number];
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_MESSAGE_DEPTH) break;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return deepest;
}

function failure(status: number, code: number, message: string): ParsedBody {
  return { ok: false, error: { status, body: { jsonrpc: '2.0', id: null, error: { code, message } } } };
}
