/**
 * The metrics listener (`--metrics-listen`): a second, plain HTTP listener that
 * answers `GET /metrics` and nothing else, without a token, so that a Prometheus
 * on the host or the cluster network scrapes without holding an API token. It
 * serves counts and durations only (no ids); keep it on loopback or a private
 * network.
 */
import { createServer, type Server } from 'node:http';
import type { AirlockMetrics } from './airlock-metrics.js';

/** A running metrics listener. */
export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

/** Starts the metrics listener on host:port (port 0: any free port). */
export async function listenForMetrics(metrics: AirlockMetrics, address: { host: string; port: number }): Promise<MetricsListener> {
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('this listener serves GET /metrics only\n');
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('use GET /metrics\n');
      return;
    }
    metrics.exposition().then(
      ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(request.method === 'HEAD' ? undefined : body),
      (error: unknown) =>
        response
          .writeHead(503, { 'content-type': 'text/plain; charset=utf-8' })
          .end(`metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`),
    );
  });
  // A scrape is one short request: idle connections go quickly, and close() does not wait on a keep-alive.
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  const port = typeof bound === 'object' && bound ? bound.port : address.port;
  return {
    url: `http://${address.host.includes(':') ? `[${address.host}]` : address.host}:${port}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
