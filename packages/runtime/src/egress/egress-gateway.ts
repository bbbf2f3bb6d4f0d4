/**
 * The egress gateway: for each networked session, listeners on the
 * session's gateway address (the only address its sandboxes can reach):
 *
 *   :3128/tcp  HTTP forward proxy (HTTP_PROXY / HTTPS_PROXY; CONNECT for TLS)
 *   :80/tcp    plain HTTP from programs that ignore the proxy (routed by Host)
 *   :443/tcp   TLS from programs that ignore the proxy (routed by SNI)
 *   :53/udp    DNS, answered here (names the session may reach → this address)
 *
 * Admission is in connection-admission.ts; the byte-level handling in
 * gateway-streams.ts. Sessions are told apart by the address a connection
 * arrived on; the host firewall pins each sandbox to its own session's address.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import { AirlockError } from '../core/errors.js';
import { admitConnection, type EgressGatewayDeps, type EgressVia } from './connection-admission.js';
import { decideDestination } from './destination-policy.js';
import { dnsAnswer, dnsRefused, parseDnsQuery } from './dns-responder.js';
import { forwardHttpRequest, handleTunnel, peekTls, type GatewayConnection, type StreamContext } from './gateway-streams.js';
import { LeafCertificates } from './session-ca.js';

/** Ports the gateway listens on, on each session's address. */
export const GATEWAY_PORTS = { proxy: 3128, http: 80, https: 443, dns: 53 } as const;

interface SessionGateway {
  address: string;
  servers: (HttpServer | NetServer)[];
  dns: UdpSocket;
  connections: Set<GatewayConnection>;
  leafs: LeafCertificates | undefined;
}

/** All sessions' gateways in this process. */
export class EgressGateway {
  private readonly sessions = new Map<string, SessionGateway>();
  // Parsing the system roots costs tens of milliseconds: once per gateway, not once per request.
  private readonly upstreamTls: SecureContext;

  constructor(private readonly deps: EgressGatewayDeps) {
    this.upstreamTls = createSecureContext({ ca: [...rootCertificates, ...(deps.upstreamCa ?? [])] });
  }

  /** True when the session's listeners are up. */
  isOpen(sessionId: string): boolean {
    return this.sessions.has(sessionId);
  }

  /**
   * Starts the session's listeners on `address` (which must be local); `caDir` holds its CA when it
   * has credentials; `acceptFrom` says which peer addresses are sandboxes (others are dropped: the
   * address is a host address, and nothing but sandboxes may use the session's policy and secrets).
   */
  async open(sessionId: string, address: string, caDir: string | undefined, acceptFrom: (peer: string) => boolean = () => true): Promise<void> {
    if (this.sessions.has(sessionId)) return;
    const gateway: SessionGateway = { address, servers: [], dns: createSocket('udp4'), connections: new Set(), leafs: caDir ? new LeafCertificates(caDir) : undefined };
    const context = this.contextOf(sessionId, gateway);
    try {
      const proxy = createHttpServer((request, response) => void this.onRequest(context, request, response, 'http-proxy'));
      proxy.on('connect', (request: IncomingMessage, socket: Duplex, head: Buffer) =>
        // Whatever fails past the admission ends the connection, never the process.
        void this.onConnect(context, request, socket as Socket, head).catch(() => socket.destroy()),
      );
      const http = createHttpServer((request, response) => void this.onRequest(context, request, response, 'transparent-http'));
      const https = createNetServer({ allowHalfOpen: true }, (socket) => (acceptFrom(socket.remoteAddress ?? '') ? void this.onTransparentTls(context, socket).catch(() => socket.destroy()) : socket.destroy()));
      for (const server of [proxy, http]) {
        server.on('connection', (socket: Socket) => (acceptFrom(socket.remoteAddress ?? '') ? resetOnClientEnd(socket) : socket.destroy()));
      }
      await listen(proxy, address, GATEWAY_PORTS.proxy);
      gateway.servers.push(proxy);
      await listen(http, address, GATEWAY_PORTS.http);
      gateway.servers.push(http);
      await listen(https, address, GATEWAY_PORTS.https);
      gateway.servers.push(https);
      gateway.dns.on('message', (message, remote) => acceptFrom(remote.address) && void this.onDns(sessionId, gateway, message, remote).catch(() => undefined));
      await new Promise<void>((resolve, reject) => {
        gateway.dns.once('error', reject);
        gateway.dns.bind(GATEWAY_PORTS.dns, address, () => resolve());
      });
      gateway.dns.on('error', () => undefined);
      this.sessions.set(sessionId, gateway);
    } catch (error) {
      await closeGateway(gateway);
      throw new AirlockError('INTERNAL', `cannot open the egress gateway of session ${sessionId} on ${address}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Stops the session's listeners and cuts its connections (idempotent). */
  async close(sessionId: string): Promise<void> {
    const gateway = this.sessions.get(sessionId);
    if (!gateway) return;
    this.sessions.delete(sessionId);
    await closeGateway(gateway);
  }

  /** Resets every connection of the session, so none is open when its sandbox is checkpointed. */
  quiesce(sessionId: string): void {
    for (const connection of this.sessions.get(sessionId)?.connections ?? []) connection.reset('the session is being suspended');
  }

  /** Cuts connections the session's current policy no longer allows (after a contract update). */
  async policyChanged(sessionId: string): Promise<void> {
    const gateway = this.sessions.get(sessionId);
    const policy = await this.deps.policyOf(sessionId);
    for (const connection of gateway?.connections ?? []) {
      if (!policy || !decideDestination(policy.network, connection.host, connection.port).allowed) connection.reset('the session\'s network policy changed');
    }
  }

  /** Stops every gateway (server shutdown). */
  async closeAll(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.close(id)));
  }

  private contextOf(sessionId: string, gateway: SessionGateway): StreamContext {
    return {
      sessionId,
      deps: this.deps,
      track: (connection) => {
        gateway.connections.add(connection);
        return () => gateway.connections.delete(connection);
      },
      upstreamTls: this.upstreamTls,
      leafFor: (host) => {
        if (!gateway.leafs) throw new AirlockError('INTERNAL', 'this session has no CA: it has no credential bindings');
        return gateway.leafs.contextFor(host);
      },
    };
  }

  private async onRequest(context: StreamContext, request: IncomingMessage, response: ServerResponse, via: EgressVia): Promise<void> {
    try {
      let host: string;
      let port: number;
      let path: string;
      if (via === 'http-proxy') {
        const url = parseAbsoluteUrl(request.url ?? '');
        if (!url) return refuseHttp(response, 400, 'airlock egress gateway: send an absolute http:// URL to the proxy (HTTPS goes through CONNECT)');
        host = url.hostname;
        port = url.port ? Number(url.port) : 80;
        path = `${url.pathname}${url.search}`;
      } else {
        const hostHeader = request.headers.host ?? '';
        host = hostHeader.replace(/:\d+$/, '');
        port = GATEWAY_PORTS.http;
        path = request.url ?? '/';
        if (!host) return refuseHttp(response, 400, 'airlock egress gateway: the request has no Host header');
      }
      const admission = await admitConnection(this.deps, context.sessionId, host, port, via);
      if (!admission.ok) return refuseHttp(response, admission.status, admission.message);
      if (admission.credential) {
        const message = `airlock egress gateway: ${admission.host} has a credential binding (${admission.credential.secret}); use https:// so the credential never travels in clear`;
        this.deps.audit(context.sessionId, 'network.denied', { host: admission.host, port, via, reason: 'credential binding needs TLS' });
        return refuseHttp(response, 403, message);
      }
      await forwardHttpRequest(context, admission, request, response, path, via);
    } catch (error) {
      if (!response.headersSent) refuseHttp(response, 502, `airlock egress gateway: ${(error as Error).message}`);
      else response.destroy();
    }
  }

  private async onConnect(context: StreamContext, request: IncomingMessage, socket: Socket, head: Buffer): Promise<void> {
    resetOnClientEnd(socket);
    socket.on('error', () => undefined);
    const target = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(request.url ?? '');
    if (!target?.[1] || !target[2]) {
      socket.end('HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\nairlock egress gateway: CONNECT needs host:port\n');
      return;
    }
    const admission = await admitConnection(this.deps, context.sessionId, target[1], Number(target[2]), 'connect');
    if (!admission.ok) {
      const body = `${admission.message}\n`;
      socket.end(`HTTP/1.1 ${admission.status} ${admission.status === 403 ? 'Forbidden' : 'Bad Gateway'}\r\nContent-Type: text/plain\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Airlock-Denied: ${admission.message.replace(/[^\x20-\x7e]/g, '?')}\r\nConnection: close\r\n\r\n${body}`);
      return;
    }
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    await handleTunnel(context, admission, socket, head, 'connect');
  }

  private async onTransparentTls(context: StreamContext, socket: Socket): Promise<void> {
    resetOnClientEnd(socket);
    socket.on('error', () => undefined);
    const peek = await peekTls(socket, Buffer.alloc(0), 10_000);
    if (peek.serverName === undefined) {
      this.deps.audit(context.sessionId, 'network.denied', { host: '', port: GATEWAY_PORTS.https, via: 'transparent-tls', reason: 'TLS without a server name (SNI); use HTTPS_PROXY' });
      socket.resetAndDestroy();
      return;
    }
    const admission = await admitConnection(this.deps, context.sessionId, peek.serverName, GATEWAY_PORTS.https, 'transparent-tls');
    if (!admission.ok) {
      socket.resetAndDestroy();
      return;
    }
    await handleTunnel(context, admission, socket, peek.bytes, 'transparent-tls');
  }

  private async onDns(sessionId: string, gateway: SessionGateway, message: Buffer, remote: { address: string; port: number }): Promise<void> {
    const query = parseDnsQuery(message);
    const policy = await this.deps.policyOf(sessionId).catch(() => undefined);
    let answer: Buffer | undefined;
    if (!query || !policy) {
      answer = dnsRefused(message);
    } else {
      // A name is answered when some port of it is allowed; the connection itself is checked again.
      const allowed = [80, 443, ...portsIn(policy.network.allowedDomains)].some((port) => decideDestination(policy.network, query.name, port).allowed);
      answer = dnsAnswer(query, allowed ? gateway.address : undefined);
    }
    if (answer) gateway.dns.send(answer, remote.port, remote.address);
  }
}

/**
 * When the sandbox closes its side first, answer with a reset instead of a
 * FIN: the sandbox's TCP endpoint then closes at once instead of sitting in
 * TIME_WAIT for a minute, and gVisor cannot checkpoint a sandbox holding one.
 * Runs before Node's own 'end' handling (which would send the FIN).
 */
function resetOnClientEnd(socket: Socket): void {
  socket.prependListener('end', () => socket.resetAndDestroy());
}

function refuseHttp(response: ServerResponse, status: number, message: string): void {
  const body = `${message}\n`;
  response.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-airlock-denied': message.replace(/[^\x20-\x7e]/g, '?'),
    connection: 'close',
  });
  response.end(body);
}

function parseAbsoluteUrl(text: string): URL | undefined {
  try {
    const url = new URL(text);
    return url.protocol === 'http:' ? url : undefined;
  } catch {
    return undefined;
  }
}

function portsIn(patterns: readonly string[] | undefined): number[] {
  return (patterns ?? []).flatMap((text) => {
    const port = /:(\d+)$/.exec(text)?.[1];
    return port ? [Number(port)] : [];
  });
}

function listen(server: HttpServer | NetServer, address: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: address, port, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

async function closeGateway(gateway: SessionGateway): Promise<void> {
  for (const connection of gateway.connections) connection.reset('the session\'s gateway closed');
  const closed = Promise.all(gateway.servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))));
  for (const server of gateway.servers) if ('closeAllConnections' in server) server.closeAllConnections();
  await closed;
  await new Promise<void>((resolve) => {
    try {
      gateway.dns.close(() => resolve());
    } catch {
      resolve();
    }
  });
}
