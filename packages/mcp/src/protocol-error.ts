/**
 * Protocol errors: JSON-RPC errors the SDK sends as they are. Not `McpError`,
 * whose message already carries "MCP error -32602:", which the client adds a
 * second time.
 */

/** JSON-RPC error code of MCP's "resource not found". */
export const RESOURCE_NOT_FOUND = -32002;
/** JSON-RPC server error: the request was understood and refused (policy, human, state). */
export const REQUEST_REFUSED = -32000;

/** An error the SDK answers with `{ code, message, data }`. */
export function protocolError(code: number, message: string, data: Record<string, unknown>): Error {
  return Object.assign(new Error(message), { code, data });
}
