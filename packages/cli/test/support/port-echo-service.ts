/**
 * A web service for tests of the port proxy, run inside a session: it logs
 * every request it receives (method, path, headers, body) as one JSON line
 * in a file of the session, answers with that record as JSON, serves
 * /workspace/page.html at /page.html (as an attacker would: no policy of its
 * own), and tries to set a cookie on every answer and its own
 * Content-Security-Policy on the others (the proxy must drop both).
 */
import assert from 'node:assert/strict';
import type { HostileApi } from './hostile-kit.js';

/** Where the service logs what reached it, inside the session. */
export const PORT_ECHO_LOG = '/workspace/port-echo-requests.jsonl';

/** One request as the service saw it. */
export interface EchoedRequest {
  method: string;
  path: string;
  headers: [string, string][];
  body: string;
}

const SERVICE = `
import http.server, json, os, sys
LOG = ${JSON.stringify(PORT_ECHO_LOG)}
class Handler(http.server.BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get('content-length') or 0)
        body = self.rfile.read(length).decode('utf-8', 'replace') if length else ''
        record = {'method': self.command, 'path': self.path, 'headers': [[k, v] for k, v in self.headers.items()], 'body': body}
        with open(LOG, 'a') as log:
            log.write(json.dumps(record) + '\\n')
        if self.path.startswith('/page.html') and os.path.exists('/workspace/page.html'):
            data, kind = open('/workspace/page.html', 'rb').read(), 'text/html; charset=utf-8'
        else:
            data, kind = json.dumps(record).encode(), 'application/json'
        self.send_response(200)
        self.send_header('content-type', kind)
        self.send_header('set-cookie', 'planted=from-the-sandbox; Path=/')
        if kind == 'application/json':
            self.send_header('content-security-policy', 'default-src *')
        self.send_header('content-length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    do_GET = do_POST = do_PUT = do_DELETE = answer
    def log_message(self, *args):
        pass
http.server.ThreadingHTTPServer(('0.0.0.0', int(sys.argv[1])), Handler).serve_forever()
`;

/** Starts the service on `port` of a session, exposes the port and waits until it answers through the proxy. */
export async function startPortEchoService(api: HostileApi, sessionId: string, port: number): Promise<void> {
  await api.write(sessionId, '/workspace/port-echo-service.py', SERVICE);
  const started = await api.tool(sessionId, 'exec', { argv: ['python3', '/workspace/port-echo-service.py', String(port)], detach: true });
  assert.equal(started.code, 'ok', started.message);
  const exposed = await api.request('POST', `/v1/sessions/${sessionId}/ports`, { port });
  assert.equal(exposed.status, 201, exposed.message);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const answer = await api.request('GET', `/v1/sessions/${sessionId}/ports/${port}/ready`);
    if (answer.status === 200) return;
    if (Date.now() > deadline) assert.fail(`the echo service did not answer through the proxy: ${answer.status} ${answer.code} ${answer.message}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** Every request the service logged so far. */
export async function echoedRequests(api: HostileApi, sessionId: string): Promise<EchoedRequest[]> {
  const text = await api.sh(sessionId, `cat ${PORT_ECHO_LOG} 2>/dev/null || true`);
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as EchoedRequest);
}
