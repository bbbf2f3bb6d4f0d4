/**
 * A `fetch` for the MCP endpoint's calls to its own server, on node:http
 * with one connection per request. Node's built-in fetch keeps a pool: after
 * an aborted request (a client that went away) it may open a spare
 * connection that sends nothing, and a server in the same process then
 * waits for that connection's header timeout (60 s) before it can close.
 */
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';

/** `fetch` over node:http without keep-alive; enough for the SDK's JSON requests. */
export const loopbackFetch: typeof fetch = (input, init = {}) =>
  new Promise<Response>((resolve, reject) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((value, name) => (headers[name] = value));
    const body = typeof init.body === 'string' ? init.body : undefined;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    const outgoing = httpRequest(url, { method: init.method ?? 'GET', headers, agent: false }, (incoming) => {
      const responseHeaders = new Headers();
      for (const [name, value] of Object.entries(incoming.headers)) {
        if (value !== undefined) responseHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
      }
      const nullBody = incoming.statusCode === 204 || incoming.statusCode === 304;
      if (nullBody) incoming.resume();
      const stream = nullBody ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>);
      resolve(new Response(stream, { status: incoming.statusCode ?? 500, headers: responseHeaders }));
    });
    const signal = init.signal;
    const abort = () => outgoing.destroy(Object.assign(new Error('This operation was aborted'), { name: 'AbortError' }));
    if (signal?.aborted) return abort();
    signal?.addEventListener('abort', abort, { once: true });
    outgoing.once('close', () => signal?.removeEventListener('abort', abort));
    outgoing.once('error', reject);
    outgoing.end(body);
  });
