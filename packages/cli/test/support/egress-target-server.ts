/**
 * HTTP and HTTPS servers that stand in for the internet in egress tests and
 * benchmarks. Run inside a test network namespace (see egress-fixture.ts):
 *
 *   node egress-target-server.js <address> <certFile> <keyFile>
 *
 * Every answer is JSON echoing what arrived: method, path, host and headers,
 * so a test can see exactly what the gateway forwarded. GET /bytes/<n>
 * answers n bytes (for throughput), POST /sink swallows the body.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttp, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttps } from 'node:https';

const [address = '127.0.0.1', certFile = '', keyFile = ''] = process.argv.slice(2);

function handle(scheme: string) {
  return (request: IncomingMessage, response: ServerResponse) => {
    const bytes = /^\/bytes\/(\d+)$/.exec(request.url ?? '');
    if (bytes) {
      const size = Number(bytes[1]);
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': size });
      const chunk = Buffer.alloc(64 * 1024, 120);
      let left = size;
      const pump = (): void => {
        while (left > 0) {
          const part = left >= chunk.length ? chunk : chunk.subarray(0, left);
          left -= part.length;
          if (!response.write(part)) return void response.once('drain', pump);
        }
        response.end();
      };
      pump();
      return;
    }
    let received = 0;
    request.on('data', (chunk: Buffer) => (received += chunk.length));
    request.on('end', () => {
      // Credentials are echoed as a hash: the test proves the real token arrived without sending it back into the sandbox.
      const headers = { ...request.headers };
      if (headers.authorization) headers.authorization = `sha256:${createHash('sha256').update(headers.authorization).digest('hex')}`;
      const body = JSON.stringify({ scheme, address, method: request.method, path: request.url, host: request.headers.host, headers, received });
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      response.end(body);
    });
  };
}

const http = createHttp(handle('http'));
const https = createHttps({ cert: readFileSync(certFile), key: readFileSync(keyFile) }, handle('https'));
http.listen(80, address, () => {
  https.listen(443, address, () => process.stdout.write(`ready ${address}\n`));
});
process.on('SIGTERM', () => process.exit(0));
