/**
 * What a token holds open, over a real listening server (fake driver, real
 * SQLite): a revocation written straight to the store, as another server
 * sharing it would write it, ends the token's open event stream at the next
 * sweep; the per-token caps of event streams (32), approval event streams
 * (32) and MCP sessions (64) answer 429 QUOTA_EXCEEDED saying which cap, and
 * one token at its cap takes nothing from another; a revoked token's desktop
 * takeover is handed back; console logins are capped
 * per token (32, a token's new login ends its own oldest) so that one token's
 * logins never end another's. The same on gVisor, through the revoke route:
 * packages/cli/test/hostile/revocation.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../../src/server.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';
import { ConsoleLogins, MAX_LOGINS_PER_TOKEN } from '../../../src/api/console-logins.js';
import { OpenByToken, OPEN_CAPS } from '../../../src/api/open-by-token.js';
import { DirectoryDisks, StaticImages } from '../../support/core-fixture.js';

const TOKEN = 'token-revocation-test-token-0123456789';

interface Stream {
  response: Response;
  /** resolves when the server ended the stream */
  ended: Promise<void>;
  abort(): void;
}

describe('what a token holds open (fake driver, real server)', () => {
  let root: string;
  let server: RunningServer;
  const aborts: AbortController[] = [];

  const call = async (method: string, path: string, token: string, body?: unknown, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${server.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  const createToken = async (role: string): Promise<{ id: string; token: string }> => {
    const response = await call('POST', '/v1/tokens', TOKEN, { tenant: 'acme', role });
    assert.equal(response.status, 201);
    return (await response.json()) as { id: string; token: string };
  };

  /** Opens a server-sent event stream and reads it until the server ends it. */
  const openStream = async (path: string, token: string): Promise<Stream> => {
    const controller = new AbortController();
    aborts.push(controller);
    const response = await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
    const ended =
      response.status === 200 && response.body
        ? (async () => {
            const reader = response.body!.getReader();
            try {
              for (;;) if ((await reader.read()).done) return;
            } catch {
              // Aborted by the test.
            }
          })()
        : Promise.resolve();
    return { response, ended, abort: () => controller.abort() };
  };

  const within = async (promise: Promise<void>, what: string, ms = 15_000): Promise<void> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_resolve, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
    try {
      await Promise.race([promise, late]);
    } finally {
      clearTimeout(timer);
    }
  };

  before(async () => {
    root = mkdtempSync('/tmp/airlock-token-revocation-');
    const consoleDir = join(root, 'console');
    mkdirSync(consoleDir, { recursive: true });
    writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>');
    server = await startServer({
      dataDir: join(root, 'data'),
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      driver: new FakeDriver(),
      disks: new DirectoryDisks(join(root, 'disks')),
      images: new StaticImages(),
      consoleDir,
    });
  });

  after(async () => {
    for (const controller of aborts) controller.abort();
    await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('ends an open event stream when the revocation is written to the store by someone else (the sweep)', async () => {
    const approver = await createToken('approver');
    const stream = await openStream('/v1/events', approver.token);
    assert.equal(stream.response.status, 200);
    const kept = await openStream('/v1/events', TOKEN);
    assert.equal(kept.response.status, 200);
    // As another server sharing the store would: no route of this server is involved.
    await server.services.store.transaction(async (tx) => {
      const record = await tx.getToken(approver.id);
      assert.ok(record);
      await tx.updateToken({ ...record, revokedAt: new Date().toISOString() });
    });
    await within(stream.ended, 'the revoked token’s stream ends');
    // Another token's stream is not touched.
    assert.equal(server.services.openByToken.count('admin', 'event-stream'), 1);
    kept.abort();
  });

  for (const [kind, path] of [
    ['event-stream', '/v1/events'],
    ['approval-stream', '/v1/approvals/events'],
  ] as const) {
    it(`caps ${path} per token at ${OPEN_CAPS[kind]?.cap} with 429 QUOTA_EXCEEDED, and one token’s cap takes nothing from another`, async () => {
      const greedy = await createToken('approver');
      const other = await createToken('approver');
      const cap = OPEN_CAPS[kind]!.cap;
      const streams: Stream[] = [];
      for (let index = 0; index < cap; index += 1) {
        const stream = await openStream(path, greedy.token);
        assert.equal(stream.response.status, 200, `stream ${index + 1}`);
        streams.push(stream);
      }
      const refused = await openStream(path, greedy.token);
      assert.equal(refused.response.status, 429);
      const { error } = (await refused.response.json()) as { error: { code: string; message: string } };
      assert.equal(error.code, 'QUOTA_EXCEEDED');
      assert.match(error.message, new RegExp(`${cap} .*${path.replace(/\//g, '\\/')}`));
      const allowed = await openStream(path, other.token);
      assert.equal(allowed.response.status, 200, 'another token still opens one');
      // Closing one frees its slot.
      streams[0]!.abort();
      await waitUntil(() => server.services.openByToken.count(greedy.id, kind) < cap, 'the closed stream leaves');
      const again = await openStream(path, greedy.token);
      assert.equal(again.response.status, 200);
      for (const stream of [...streams, allowed, again]) stream.abort();
    });
  }

  it('caps MCP sessions per token at 64 with 429 QUOTA_EXCEEDED (in JSON-RPC’s shape), and ends them with a revoked token', async () => {
    const agent = await createToken('operator');
    const other = await createToken('operator');
    const created = await call('POST', '/v1/sessions', TOKEN, { contract: { version: 1, identity: { tenant: 'acme' } } });
    assert.equal(created.status, 201, await created.clone().text());
    const sessionId = ((await created.json()) as { id: string }).id;
    const initialize = (token: string) =>
      call(
        'POST',
        `/v1/sessions/${sessionId}/mcp`,
        token,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'cap-test', version: '1' } },
        },
        { accept: 'application/json, text/event-stream' },
      );
    const cap = OPEN_CAPS['mcp-session']!.cap;
    for (let index = 0; index < cap; index += 1) {
      const response = await initialize(agent.token);
      assert.equal(response.status, 200, `MCP session ${index + 1}: ${await response.clone().text()}`);
      await response.body?.cancel();
    }
    const refused = await initialize(agent.token);
    assert.equal(refused.status, 429);
    const body = (await refused.json()) as { error: { message: string; data: { code: string } } };
    assert.equal(body.error.data.code, 'QUOTA_EXCEEDED');
    assert.match(body.error.message, /64 MCP sessions/);
    const allowed = await initialize(other.token);
    assert.equal(allowed.status, 200, 'another token still opens one');
    await allowed.body?.cancel();
    // A request that opens no MCP session gives its slot back.
    const notInitialize = await call(
      'POST',
      '/mcp',
      other.token,
      { jsonrpc: '2.0', id: 2, method: 'tools/list' },
      { accept: 'application/json, text/event-stream' },
    );
    assert.equal(notInitialize.status, 400);
    assert.equal(server.services.openByToken.count(other.id, 'mcp-session'), 1);
    // The revoke route ends every MCP session of the token at once.
    assert.equal((await call('DELETE', `/v1/tokens/${agent.id}`, TOKEN)).status, 200);
    assert.equal(server.services.openByToken.count(agent.id), 0);
  });

  it('hands back a desktop takeover of a revoked token, and only that one', async () => {
    const operator = await createToken('operator');
    const created = await call('POST', '/v1/sessions', TOKEN, { contract: { version: 1, identity: { tenant: 'acme' } } });
    assert.equal(created.status, 201, await created.clone().text());
    const sessionId = ((await created.json()) as { id: string }).id;
    const begun = await call('POST', `/v1/sessions/${sessionId}/desktop/takeover`, operator.token, {});
    assert.equal(begun.status, 201, await begun.clone().text());
    const takeoverId = ((await begun.json()) as { id: string }).id;
    const holder = async () => ((await (await call('GET', `/v1/sessions/${sessionId}/desktop`, TOKEN)).json()) as { takeover: { id: string } | null }).takeover;
    assert.equal((await holder())?.id, takeoverId);
    assert.equal((await call('DELETE', `/v1/tokens/${operator.id}`, TOKEN)).status, 200);
    await waitUntilAsync(async () => (await holder()) === null, 'the takeover is handed back');
    assert.equal(server.services.openByToken.count(operator.id), 0);
  });

  it('caps console logins per token: a token’s new login ends its own oldest, never another token’s', async () => {
    const agent = await createToken('agent');
    const login = async (token: string) => {
      const response = await fetch(`${server.url}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token }),
      });
      assert.equal(response.status, 200);
      return (response.headers.get('set-cookie') ?? '').split(';')[0]!;
    };
    const whoami = async (cookie: string) => (await fetch(`${server.url}/v1/whoami`, { headers: { cookie } })).status;
    const admin = await login(TOKEN);
    const first = await login(agent.token);
    for (let index = 0; index < 1020; index += 1) await login(agent.token);
    assert.equal(await whoami(admin), 200, 'the admin’s login outlives 1,020 logins of another token');
    assert.equal(await whoami(first), 401, 'the agent token’s oldest login was ended by its own newer ones');
  });
});

describe('the registry of what tokens hold open', () => {
  it('refuses past the cap, counts per token and per kind, and frees a slot on release', () => {
    const registry = new OpenByToken({ isLive: async () => true, sweepMs: 0 });
    const cap = OPEN_CAPS['approval-stream']!.cap;
    const handles = Array.from({ length: cap }, () => registry.open('tok_a', 'approval-stream', () => undefined));
    assert.throws(
      () => registry.open('tok_a', 'approval-stream', () => undefined),
      (error: Error & { code?: string }) => error.code === 'QUOTA_EXCEEDED',
    );
    registry.open('tok_a', 'event-stream', () => undefined);
    registry.open('tok_b', 'approval-stream', () => undefined);
    handles[0]!.release();
    registry.open('tok_a', 'approval-stream', () => undefined);
    assert.equal(registry.count('tok_a', 'approval-stream'), cap);
    assert.equal(registry.count('tok_a'), cap + 1);
  });

  it('ends everything of a token, and only of that token, at its end or at a sweep that finds it revoked', async () => {
    const revoked = new Set<string>();
    const endedLogins: string[] = [];
    const registry = new OpenByToken({ isLive: async (tokenId) => !revoked.has(tokenId), sweepMs: 0, onEnd: (tokenId) => endedLogins.push(tokenId) });
    const closed: string[] = [];
    registry.open('tok_a', 'terminal', () => closed.push('a-terminal'));
    registry.open('tok_a', 'mcp-session', () => closed.push('a-mcp'));
    registry.open('tok_b', 'event-stream', () => closed.push('b-stream'));
    registry.open('tok_c', 'approval-wait', () => closed.push('c-wait'));
    assert.equal(registry.endToken('tok_a'), 2);
    assert.deepEqual(closed, ['a-terminal', 'a-mcp']);
    revoked.add('tok_c');
    await registry.sweep();
    assert.deepEqual(closed, ['a-terminal', 'a-mcp', 'c-wait']);
    assert.deepEqual(endedLogins, ['tok_a', 'tok_c']);
    assert.equal(registry.count('tok_b'), 1);
  });

  it('keeps console logins per token: one token at its cap never ends another’s', () => {
    const logins = new ConsoleLogins();
    const grant = (tokenId: string) => ({ tokenId, tenant: 'acme', role: 'agent' as const, name: tokenId });
    const admin = logins.create(grant('admin'));
    const agentLogins = Array.from({ length: MAX_LOGINS_PER_TOKEN + 5 }, () => logins.create(grant('tok_agent')));
    assert.ok(logins.find(admin.id));
    assert.equal(logins.find(agentLogins[0]!.id), undefined);
    assert.ok(logins.find(agentLogins.at(-1)!.id));
    assert.equal(logins.size, 1 + MAX_LOGINS_PER_TOKEN);
  });
});

async function waitUntil(done: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) assert.fail(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function waitUntilAsync(done: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await done())) {
    if (Date.now() > deadline) assert.fail(`${what}: not within 10 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
