/**
 * The byte-level work of the gateway once a connection is admitted: plain
 * HTTP forwarding, TLS tunnels (with the SNI checked against the admitted
 * name), and, for hosts with a credential binding, TLS terminated with the
 * session CA so the secret can be added to each request and sent on over a
 * fresh, verified TLS connection. Every admitted connection is audited as
 * `network.connected` when it reaches upstream and `network.closed` (bytes,
 * duration) when it ends.
 */
import { request as httpRequest, createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, isIP, type Socket } from 'node:net';
import { Duplex } from 'node:stream';
import { TLSSocket, type SecureContext } from 'node:tls';
import type { Admission, EgressGatewayDeps, EgressVia } from './connection-admission.js';
import { normalizeHost } from './destination-policy.js';
import { peekClientHello } from './tls-client-hello.js';

/** What the stream handlers need of the gateway. */
export interface StreamContext {
  sessionId: string;
  deps: EgressGatewayDeps;
  /** registers a live connection; returns its removal */
  track(connection: GatewayConnection): () => void;
  /** TLS server context for a bound host, signed by the session CA */
  leafFor(host: string): Promise<SecureContext>;
  /** client context for re-encrypting to bound hosts (system CAs plus configured ones), built once */
  upstreamTls: SecureContext;
}

/** A live connection the gateway may have to cut. */
export interface GatewayConnection {
  host: string;
  port: number;
  reset(why: string): void;
}

type Admitted = Extract<Admission, { ok: true }>;

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

/** Forwards one plain HTTP request to the admitted upstream and the answer back (`connection: close`). */
export async function forwardHttpRequest(context: StreamContext, admission: Admitted, request: IncomingMessage, response: ServerResponse, path: string, via: EgressVia): Promise<void> {
  const started = Date.now();
  const headers = forwardHeaders(request.headers);
  headers['host'] = admission.port === 80 ? admission.host : `${admission.host}:${admission.port}`;
  const upstream = httpRequest({ host: admission.address, port: admission.port, method: request.method ?? 'GET', path, headers, agent: false, setHost: false });
  const untrack = context.track({ host: admission.host, port: admission.port, reset: () => (upstream.destroy(), response.socket?.resetAndDestroy()) });
  upstream.on('socket', (socket: Socket) => {
    socket.once('connect', () => auditConnected(context, admission, via, { method: request.method, path: path.slice(0, 200) }));
    socket.once('close', () => {
      untrack();
      auditClosed(context, admission, via, socket.bytesWritten, socket.bytesRead, started);
    });
  });
  upstream.on('response', (answer) => {
    response.writeHead(answer.statusCode ?? 502, { ...forwardHeaders(answer.headers), connection: 'close' });
    answer.pipe(response);
  });
  upstream.on('error', (error) => {
    if (!response.headersSent) {
      const body = `airlock egress gateway: ${admission.host}:${admission.port} failed: ${error.message}\n`;
      response.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' });
      response.end(body);
    } else {
      response.destroy();
    }
  });
  request.pipe(upstream);
}

/** Carries an admitted TLS (or other) stream: spliced to upstream, or terminated and re-encrypted for a bound host. */
export async function handleTunnel(context: StreamContext, admission: Admitted, client: Socket, head: Buffer, via: EgressVia): Promise<void> {
  const peek = await peekTls(client, head, 1_000);
  if (peek.serverName !== undefined && !isIP(admission.host) && normalizeHost(peek.serverName) !== admission.host) {
    context.deps.audit(context.sessionId, 'network.denied', { host: admission.host, port: admission.port, via, reason: `TLS server name ${peek.serverName} does not match ${admission.host}` });
    client.resetAndDestroy();
    return;
  }
  if (admission.credential && peek.tls) return interceptTls(context, admission, client, peek.bytes, via);
  const started = Date.now();
  const upstream = connect({ host: admission.address, port: admission.port, allowHalfOpen: true });
  const untrack = context.track({ host: admission.host, port: admission.port, reset: () => (upstream.destroy(), client.resetAndDestroy()) });
  let sent = 0;
  let received = 0;
  upstream.once('connect', () => {
    auditConnected(context, admission, via, {});
    if (peek.bytes.length > 0) upstream.write(peek.bytes);
    sent += peek.bytes.length;
    client.on('data', (chunk: Buffer) => (sent += chunk.length));
    upstream.on('data', (chunk: Buffer) => (received += chunk.length));
    client.pipe(upstream);
    upstream.pipe(client);
  });
  // Upstream finished first: the gateway sends the FIN, so the sandbox never holds TIME_WAIT (see resetOnClientEnd).
  upstream.once('end', () => client.end());
  upstream.once('error', () => client.resetAndDestroy());
  client.once('close', () => upstream.destroy());
  upstream.once('close', () => {
    untrack();
    auditClosed(context, admission, via, sent, received, started);
  });
}

/** The first bytes of a stream, and what they say about TLS; waits at most `waitMs` for them. */
export async function peekTls(socket: Socket, head: Buffer, waitMs: number): Promise<{ bytes: Buffer; tls: boolean; serverName: string | undefined }> {
  let bytes = head;
  const deadline = Date.now() + waitMs;
  for (;;) {
    const peek = peekClientHello(bytes);
    if (peek.kind === 'tls') return { bytes, tls: true, serverName: peek.serverName };
    if (peek.kind === 'not-tls') return { bytes, tls: false, serverName: undefined };
    const left = deadline - Date.now();
    if (left <= 0 || socket.destroyed) return { bytes, tls: false, serverName: undefined };
    const chunk = await new Promise<Buffer | undefined>((resolve) => {
      const timer = setTimeout(() => finish(undefined), left);
      const onData = (data: Buffer) => finish(data);
      const onEnd = () => finish(undefined);
      function finish(value: Buffer | undefined): void {
        clearTimeout(timer);
        socket.off('data', onData);
        socket.off('end', onEnd);
        socket.off('close', onEnd);
        socket.pause();
        resolve(value);
      }
      socket.on('data', onData);
      socket.once('end', onEnd);
      socket.once('close', onEnd);
      socket.resume();
    });
    if (!chunk) return { bytes, tls: false, serverName: undefined };
    bytes = Buffer.concat([bytes, chunk]);
  }
}

/** Terminates TLS with the session CA, adds the bound secret to each request, and re-encrypts to the real host. */
async function interceptTls(context: StreamContext, admission: Admitted, client: Socket, head: Buffer, via: EgressVia): Promise<void> {
  const credential = admission.credential;
  if (!credential) return;
  const started = Date.now();
  let sent = 0;
  let received = 0;
  const tlsSocket = new TLSSocket(withPrefix(client, head), { isServer: true, secureContext: await context.leafFor(admission.host) });
  tlsSocket.on('error', () => client.resetAndDestroy());
  const untrack = context.track({ host: admission.host, port: admission.port, reset: () => client.resetAndDestroy() });
  auditConnected(context, admission, via, { intercepted: true, credential: credential.secret });
  const inner = createHttpServer((request: IncomingMessage, response: ServerResponse) => {
    const secret = context.deps.secretValue(credential.secret);
    if (secret === undefined) {
      const message = `airlock egress gateway: the secret ${credential.secret} bound to ${admission.host} was deleted; ask the operator to run \`airlock secrets set ${credential.secret}\``;
      context.deps.audit(context.sessionId, 'network.denied', { host: admission.host, port: admission.port, via, reason: `secret ${credential.secret} no longer exists` });
      response.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', 'x-airlock-denied': message, connection: 'close' });
      response.end(`${message}\n`);
      return;
    }
    const headers = forwardHeaders(request.headers);
    headers['host'] = admission.port === 443 ? admission.host : `${admission.host}:${admission.port}`;
    headers[credential.header.toLowerCase()] = credential.format.split('{secret}').join(secret);
    const upstreamTlsOptions: { secureContext: SecureContext } = { secureContext: context.upstreamTls };
    const upstream = httpsRequest({
      host: admission.address,
      port: admission.port,
      servername: isIP(admission.host) ? '' : admission.host,
      method: request.method ?? 'GET',
      path: request.url ?? '/',
      headers,
      agent: false,
      setHost: false,
      // tls.connect takes a ready secure context; https' option types omit it, so it rides in a spread.
      ...upstreamTlsOptions,
    });
    upstream.on('socket', (socket: Socket) => {
      socket.once('close', () => {
        sent += socket.bytesWritten;
        received += socket.bytesRead;
      });
    });
    upstream.on('response', (answer) => {
      response.writeHead(answer.statusCode ?? 502, forwardHeaders(answer.headers));
      answer.pipe(response);
    });
    upstream.on('error', (error) => {
      // The message never echoes request headers, so the secret cannot leak through it.
      const body = `airlock egress gateway: ${admission.host}:${admission.port} failed: ${error.message}\n`;
      if (!response.headersSent) response.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
    request.pipe(upstream);
  });
  inner.emit('connection', tlsSocket);
  client.once('close', () => {
    untrack();
    auditClosed(context, admission, via, sent, received, started);
  });
}

/**
 * The socket as a JS stream that first yields the bytes already read from it.
 * A TLSSocket over a plain net.Socket reads its native handle directly and
 * would never see bytes consumed by the SNI peek.
 */
function withPrefix(socket: Socket, prefix: Buffer): Duplex {
  const stream: Duplex = new Duplex({
    read: () => void socket.resume(),
    write: (chunk: Buffer, _encoding, callback) => void socket.write(chunk, callback),
    final: (callback) => {
      socket.end();
      callback();
    },
    destroy: (error, callback) => {
      socket.destroy();
      callback(error);
    },
  });
  if (prefix.length > 0) stream.push(prefix);
  socket.on('data', (chunk: Buffer) => {
    if (!stream.push(chunk)) socket.pause();
  });
  socket.once('end', () => stream.push(null));
  socket.once('close', () => stream.destroy());
  return stream;
}

function forwardHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const named = new Set(String(headers['connection'] ?? '').toLowerCase().split(',').map((name) => name.trim()));
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || named.has(name)) continue;
    out[name] = value;
  }
  return out;
}

function auditConnected(context: StreamContext, admission: Admitted, via: EgressVia, extra: Record<string, unknown>): void {
  context.deps.audit(context.sessionId, 'network.connected', {
    host: admission.host,
    port: admission.port,
    address: admission.address,
    via,
    contractVersion: admission.contractVersion,
    ...extra,
  });
}

function auditClosed(context: StreamContext, admission: Admitted, via: EgressVia, bytesSent: number, bytesReceived: number, started: number): void {
  context.deps.audit(context.sessionId, 'network.closed', { host: admission.host, port: admission.port, via, bytesSent, bytesReceived, durationMs: Date.now() - started });
}
