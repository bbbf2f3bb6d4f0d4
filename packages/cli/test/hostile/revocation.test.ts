/**
 * Hostile suite: what a token opened, and what crosses into a sandbox
 * (issue 22, items 2 and 3). On one real server on gVisor:
 *
 * - the port proxy carries none of the viewer's credentials (Cookie,
 *   Authorization, Proxy-Authorization, any X-Airlock-* header) to the
 *   service, passes none of the service's Set-Cookie back, marks every
 *   answer `Content-Security-Policy: sandbox` without allow-same-origin (and
 *   nosniff), and refuses a WebSocket upgrade;
 * - a revoked token loses at once what it holds open: an operator's takeover
 *   terminal closes and a command typed after the revoke never runs; an
 *   approver's /v1/events and /v1/approvals/events streams end; an agent's
 *   MCP session and its stream end; an approval long poll answers 401;
 *   and a revocation written to the store by another server ends a stream
 *   at the next sweep.
 *
 * The same attack in Chromium (the sandbox's page minting a token with the
 * admin's login): packages/console/test/e2e/port-proxy.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, waitFor, type Answer } from '../support/hostile-kit.js';
import { echoedRequests, startPortEchoService } from '../support/port-echo-service.js';

/** The API spoken with one token. */
class TokenApi extends HostileApi {
  constructor(
    installation: TestInstallation,
    readonly token: string,
  ) {
    super(installation);
  }

  override request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    return super.request(method, path, body, { authorization: `Bearer ${this.token}`, ...headers });
  }
}

/** Exec calls running tar wait for a human. */
const HOLDING_CONTRACT = {
  version: 1,
  idle: { keepAwake: true },
  policies: [
    'permit(principal, action, resource);',
    '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
  ],
};

const PORT = 8000;

/** A response body read to its end in the background. */
interface OpenStream {
  status: number;
  /** resolves when the server ends the body */
  ended: Promise<void>;
  text(): string;
}

/** Resolves with `promise`, or fails naming `what` after a generous bound. */
async function within<T>(promise: Promise<T>, what: string, ms = 15_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe('hostile: a revoked token loses what it opened; no credential crosses into a sandbox', { timeout: 900_000 }, () => {
  let installation: TestInstallation;
  let admin: HostileApi;
  let operator: TokenApi;
  let sessionId = '';
  const aborts: AbortController[] = [];
  const sockets: WebSocket[] = [];

  const createToken = async (role: string): Promise<{ id: string; token: string }> => {
    const answer = await admin.request('POST', '/v1/tokens', { tenant: 'acme', role });
    assert.equal(answer.status, 201, answer.message);
    return { id: String(answer.body['id']), token: String(answer.body['token']) };
  };
  const revoke = async (tokenId: string) => {
    const answer = await admin.request('DELETE', `/v1/tokens/${tokenId}`);
    assert.equal(answer.status, 200, answer.message);
  };

  const openStream = async (path: string, headers: Record<string, string>): Promise<OpenStream> => {
    const controller = new AbortController();
    aborts.push(controller);
    const response = await fetch(`${installation.url}${path}`, { headers, signal: controller.signal });
    let text = '';
    const ended = (async () => {
      if (!response.body) return;
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) return;
          text += decoder.decode(value, { stream: true });
        }
      } catch {
        // aborted by the test at the end
      }
    })();
    return { status: response.status, ended, text: () => text };
  };

  before(async () => {
    installation = await TestInstallation.start();
    admin = new HostileApi(installation);
    operator = new TokenApi(installation, (await createToken('operator')).token);
    sessionId = await operator.createSession(HOLDING_CONTRACT);
    await startPortEchoService(admin, sessionId, PORT);
  });

  after(async () => {
    for (const controller of aborts) controller.abort();
    for (const socket of sockets) socket.terminate();
    await installation?.destroy();
  });

  describe('the port proxy', () => {
    it('sends the service none of the viewer’s credentials: Cookie, Authorization, Proxy-Authorization, X-Airlock-*', async () => {
      const answer = await fetch(`${installation.url}/v1/sessions/${sessionId}/ports/${PORT}/probe-headers?x=1`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${installation.token}`,
          cookie: 'airlock_login=stolen-login-id; other=1',
          'proxy-authorization': 'Basic c2VjcmV0OnNlY3JldA==',
          'x-airlock-csrf': 'stolen-csrf-token',
          'x-airlock-session': sessionId,
          'x-probe': 'kept',
          'content-type': 'text/plain',
        },
        body: 'hello',
      });
      assert.equal(answer.status, 200);
      const echoed = (await answer.json()) as { headers: [string, string][]; path: string; body: string };
      const names = echoed.headers.map(([name]) => name.toLowerCase());
      assert.equal(echoed.path, '/probe-headers?x=1');
      assert.equal(echoed.body, 'hello');
      assert.ok(names.includes('x-probe'), 'an ordinary header is carried (the echo works)');
      for (const name of ['cookie', 'authorization', 'proxy-authorization']) assert.ok(!names.includes(name), `${name} reached the sandbox`);
      assert.deepEqual(
        names.filter((name) => name.startsWith('x-airlock-')),
        [],
        'no X-Airlock-* header reaches the sandbox',
      );
      const logged = (await echoedRequests(admin, sessionId)).filter((request) => request.path.startsWith('/probe-headers'));
      assert.equal(logged.length, 1);
      assert.ok(!JSON.stringify(logged).includes(installation.token), 'the token is nowhere in what the service saw');
      assert.ok(!JSON.stringify(logged).includes('stolen'), 'the cookie and CSRF values are nowhere in what the service saw');
    });

    it('passes back no Set-Cookie, and sandboxes every answer with its own CSP and nosniff', async () => {
      const answer = await fetch(`${installation.url}/v1/sessions/${sessionId}/ports/${PORT}/probe-answer`, {
        headers: { authorization: `Bearer ${installation.token}` },
      });
      assert.equal(answer.status, 200);
      await answer.arrayBuffer();
      assert.equal(answer.headers.get('set-cookie'), null, 'the service set a cookie on the console’s origin');
      const policy = answer.headers.get('content-security-policy') ?? '';
      assert.match(policy, /^sandbox\b/, 'the service’s own policy is replaced by a sandbox');
      assert.doesNotMatch(policy, /allow-same-origin/);
      assert.doesNotMatch(policy, /default-src \*/);
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    });

    it('refuses a WebSocket upgrade instead of carrying it to the service', async () => {
      const socket = new WebSocket(`${installation.url.replace('http', 'ws')}/v1/sessions/${sessionId}/ports/${PORT}/probe-upgrade`, {
        headers: { authorization: `Bearer ${installation.token}`, cookie: 'airlock_login=stolen-login-id' },
      });
      sockets.push(socket);
      const outcome = await within(
        new Promise<string>((resolve) => {
          socket.once('open', () => resolve('opened'));
          socket.once('unexpected-response', (_request, response) => resolve(`refused ${response.statusCode}`));
          socket.once('error', (error) => resolve(`error ${error.message}`));
        }),
        'the upgrade is answered',
      );
      assert.equal(outcome, 'refused 501', 'the upgrade is answered NOT_AVAILABLE, as HTTP');
      const logged = (await echoedRequests(admin, sessionId)).filter((request) => request.path.startsWith('/probe-upgrade'));
      assert.deepEqual(logged, [], 'the upgrade reached the service');
    });
  });

  describe('revocation', () => {
    it('closes an open takeover terminal: a command typed after the revoke never runs', async () => {
      const token = await createToken('operator');
      const socket = new WebSocket(`${installation.url.replace('http', 'ws')}/v1/sessions/${sessionId}/terminal`, 'airlock.terminal.v1', {
        headers: { authorization: `Bearer ${token.token}` },
      });
      sockets.push(socket);
      let output = '';
      socket.on('message', (data: Buffer, isBinary: boolean) => {
        if (isBinary) output += data.toString('utf8');
      });
      const closed = new Promise<number>((resolve) => socket.once('close', (code) => resolve(code)));
      await within(
        new Promise<void>((resolve, reject) => {
          socket.once('open', () => resolve());
          socket.once('error', reject);
        }),
        'the terminal opens',
      );
      socket.send(JSON.stringify({ type: 'resize', cols: 100, rows: 30 }));
      socket.send(Buffer.from('echo BEFORE-REVOKE-$((6*7))\n'));
      await waitFor(() => (output.includes('BEFORE-REVOKE-42') ? true : undefined), 'the terminal runs commands before the revoke', 60_000);
      await revoke(token.id);
      // Typed at once after the revoke answered, while the client may still think the socket open.
      if (socket.readyState === socket.OPEN) socket.send(Buffer.from('echo AFTER-REVOKE-42 > /workspace/after-revoke\n'));
      await within(closed, 'the terminal closes after the revoke');
      // The takeover is handed back: the agent's calls run again, and the command typed after the revoke left nothing.
      const listing = await waitFor(async () => {
        const answer = await operator.tool(sessionId, 'exec', { command: 'ls /workspace', timeoutMs: 30_000 });
        return answer.code === 'ok' ? String(answer.result['stdout']) : undefined;
      }, 'the session answers after the hand-back');
      assert.doesNotMatch(listing, /after-revoke/, 'a command typed after the revoke ran');
      assert.doesNotMatch(output, /AFTER-REVOKE-42/);
    });

    it('ends an approver’s open /v1/events and /v1/approvals/events streams', async () => {
      const token = await createToken('approver');
      const headers = { authorization: `Bearer ${token.token}` };
      const events = await openStream('/v1/events', headers);
      const approvals = await openStream('/v1/approvals/events', headers);
      assert.equal(events.status, 200);
      assert.equal(approvals.status, 200);
      await waitFor(() => (events.text().includes('stream.ready') ? true : undefined), 'the event stream is ready');
      await revoke(token.id);
      await within(events.ended, '/v1/events ends after the revoke');
      await within(approvals.ended, '/v1/approvals/events ends after the revoke');
      // A new approval after the revoke reaches neither.
      const held = await operator.tool(sessionId, 'exec', { command: 'tar --version >/dev/null' });
      assert.equal(held.status, 202, `${held.code} ${held.message}`);
      assert.doesNotMatch(events.text() + approvals.text(), new RegExp(String(held.body['approvalId'])));
    });

    it('ends an agent’s MCP session and its stream; its next request is refused', async () => {
      const token = await createToken('agent');
      const headers = { authorization: `Bearer ${token.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const initialized = await fetch(`${installation.url}/mcp?session=${sessionId}`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'hostile', version: '1' } },
        }),
      });
      assert.equal(initialized.status, 200, await initialized.clone().text());
      await initialized.text();
      const mcpSessionId = initialized.headers.get('mcp-session-id');
      assert.ok(mcpSessionId, 'an MCP session id');
      const notified = await fetch(`${installation.url}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': mcpSessionId },
        body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
      });
      assert.equal(notified.status, 202);
      const stream = await openStream('/mcp', { authorization: headers.authorization, accept: 'text/event-stream', 'mcp-session-id': mcpSessionId });
      assert.equal(stream.status, 200);
      await revoke(token.id);
      await within(stream.ended, 'the MCP stream ends after the revoke');
      const next = await fetch(`${installation.url}/mcp`, {
        method: 'POST',
        headers: { ...headers, 'mcp-session-id': mcpSessionId },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
      });
      assert.equal(next.status, 401);
    });

    it('answers an approval long poll of the revoked token at once, with 401', async () => {
      const token = await createToken('approver');
      const held = await operator.tool(sessionId, 'exec', { command: 'tar --version >/dev/null' });
      assert.equal(held.status, 202, `${held.code} ${held.message}`);
      const controller = new AbortController();
      aborts.push(controller);
      const waiting = fetch(`${installation.url}/v1/approvals/${String(held.body['approvalId'])}?waitSeconds=600`, {
        headers: { authorization: `Bearer ${token.token}` },
        signal: controller.signal,
      });
      let settled = false;
      void waiting.finally(() => (settled = true)).catch(() => undefined);
      // The poll is registered before it waits; give it a moment to be in flight (the answer is checked, not the time).
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal(settled, false, 'the long poll answered before the revoke');
      await revoke(token.id);
      const answer = await within(waiting, 'the long poll answers after the revoke');
      assert.equal(answer.status, 401);
      assert.equal(((await answer.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    });

    it('ends a stream when another server revoked the token in the shared store (the sweep)', async () => {
      const token = await createToken('approver');
      const stream = await openStream('/v1/approvals/events', { authorization: `Bearer ${token.token}` });
      assert.equal(stream.status, 200);
      const changed = await installation.writeStore(
        {
          sqlite: "UPDATE api_tokens SET record = json_set(record, '$.revokedAt', ?) WHERE id = ?",
          postgres: "UPDATE api_tokens SET record = jsonb_set(record::jsonb, '{revokedAt}', to_jsonb($1::text))::json WHERE id = $2",
        },
        [new Date().toISOString(), token.id],
      );
      assert.equal(changed, 1);
      await within(stream.ended, 'the stream ends at the sweep after a revocation written by another server');
    });
  });
});
