/**
 * Forwards an API request, as it arrived, to the node that holds its
 * session: body, response and streams (exec output, MCP, exposed ports)
 * are piped both ways without being read, and WebSocket upgrades (terminal,
 * desktop) are spliced at the socket. The forwarded request is marked, so
 * that the receiving node answers it itself instead of forwarding again.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AirlockError } from '../core/errors.js';
import { errorBody } from './http-errors.js';

/** The header a forwarded request carries: the node that forwarded it. */
export const FORWARDED_BY_HEADER = 'x-airlock-forwarded-by';

/** Hop-by-hop headers are the connection's own, never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer']);

/** Forwards the request to `address` (http://HOST:PORT of the node) and answers with its response. */
export function forwardToNode(request: FastifyRequest, reply: FastifyReply, address: string, target: { id: string; via: string }): void {
  void reply.hijack();
  const url = new URL(request.raw.url ?? '/', address);
  const upgrade = typeof request.headers.upgrade === 'string';
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined || (HOP_BY_HOP.has(name) && !upgrade)) continue;
    headers[name] = value;
  }
  headers['host'] = url.host;
  headers[FORWARDED_BY_HEADER] = target.via;
  const upstream = httpRequest(url, { method: request.method, headers });
  const unreachable = (error: Error) => {
    const raw = reply.raw;
    if (upgrade) {
      request.raw.socket.destroy();
      return;
    }
    if (raw.headersSent) {
      raw.destroy();
      return;
    }
    const failure = new AirlockError(
      'NODE_UNREACHABLE',
      `node ${target.id} (${address}) holds this session but cannot be reached (${error.message}); retry: once its lease runs out, another node takes the session over`,
      {
        details: { node: target.id, address },
      },
    );
    raw.writeHead(failure.status, { 'content-type': 'application/json; charset=utf-8' });
    raw.end(JSON.stringify(errorBody(failure)));
  };
  upstream.on('error', unreachable);
  upstream.on('response', (response: IncomingMessage) => {
    const out: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(response.headers)) if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
    reply.raw.writeHead(response.statusCode ?? 502, out);
    response.pipe(reply.raw);
  });
  upstream.on('upgrade', (response: IncomingMessage, socket: Duplex, head: Buffer) => splice(request.raw.socket, response, socket, head));
  // The client went away: so does the forwarded request (a streamed exec stops being read).
  reply.raw.on('close', () => {
    if (!upgrade && !reply.raw.writableFinished) upstream.destroy();
  });
  if (upgrade) upstream.end();
  else request.raw.pipe(upstream);
}

/** Joins the client's socket to the upstream one after a WebSocket handshake, writing the upstream's 101 first. */
function splice(client: Duplex, response: IncomingMessage, upstream: Duplex, head: Buffer): void {
  const lines = [`HTTP/1.1 ${response.statusCode ?? 101} ${response.statusMessage ?? 'Switching Protocols'}`];
  for (let index = 0; index < response.rawHeaders.length; index += 2) lines.push(`${response.rawHeaders[index]}: ${response.rawHeaders[index + 1]}`);
  client.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (head.length > 0) client.write(head);
  upstream.pipe(client);
  client.pipe(upstream);
  const close = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on('error', close);
  upstream.on('error', close);
  client.on('close', close);
  upstream.on('close', close);
}
