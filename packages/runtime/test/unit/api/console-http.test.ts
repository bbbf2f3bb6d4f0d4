/**
 * The console's side of the HTTP server, over a real listening server (fake
 * driver, real SQLite): login cookie, CSRF, log out, the approver of a console
 * decision, static files, and the live event stream.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../../src/server.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';
import { DirectoryDisks, StaticImages } from '../../support/core-fixture.js';

const TOKEN = 'console-http-test-token-0123456789';
const APPROVE_ECHO = {
  version: 1,
  identity: { tenant: 'acme', objective: 'ship the report' },
  policies: ['permit(principal, action, resource);', '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };'],
};

/** One server-sent event. */
interface StreamedEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Reads a server-sent event stream until `until` holds or the stream ends; then stops reading. */
async function readEvents(response: Response, until: (events: StreamedEvent[], comments: string[]) => boolean): Promise<{ events: StreamedEvent[]; comments: string[] }> {
  assert.ok(response.body);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const events: StreamedEvent[] = [];
  const comments: string[] = [];
  let buffer = '';
  try {
    while (!until(events, comments)) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(':')) comments.push(block);
        const event = /^event: (.+)$/m.exec(block)?.[1];
        const data = /^data: (.+)$/m.exec(block)?.[1];
        if (event && data) events.push({ event, data: JSON.parse(data) as Record<string, unknown> });
      }
    }
  } finally {
    await reader.cancel();
  }
  return { events, comments };
}

describe('the console over HTTP', () => {
  let server: RunningServer;
  let root: string;
  let cookie: string;
  let csrf: string;
  let closed = false;

  const call = (path: string, init: RequestInit & { headers?: Record<string, string> } = {}) => fetch(`${server.url}${path}`, init);
  const bearer = { authorization: `Bearer ${TOKEN}` };

  before(async () => {
    root = mkdtempSync('/tmp/airlock-console-http-');
    const consoleDir = join(root, 'console');
    mkdirSync(join(consoleDir, 'assets'), { recursive: true });
    writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>');
    writeFileSync(join(consoleDir, 'assets', 'main-ABCD2345.js'), 'console.log(1)');
    writeFileSync(join(consoleDir, 'assets', 'main-ABCD2345.css'), 'body{}');
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
    const login = await call('/v1/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: TOKEN }) });
    assert.equal(login.status, 200);
    const setCookie = login.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /^airlock_login=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    cookie = setCookie.split(';')[0] ?? '';
    csrf = ((await login.json()) as { csrfToken: string }).csrfToken;
  });

  after(async () => {
    if (!closed) await server?.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('refuses a wrong token at login and sets no cookie', async () => {
    const response = await call('/v1/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'wrong' }) });
    assert.equal(response.status, 401);
    assert.equal(response.headers.get('set-cookie'), null);
    assert.equal(((await response.json()) as { error: { code: string } }).error.code, 'UNAUTHORIZED');
    const empty = await call('/v1/login', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({}) });
    assert.equal(empty.status, 400);
  });

  it('the cookie reads the API; a POST with it needs the CSRF header; bearer requests work as before', async () => {
    assert.equal((await call('/v1/sessions', { headers: { cookie } })).status, 200);
    const refused = await call('/v1/sessions', { method: 'POST', headers: { cookie, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(refused.status, 403);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'CSRF_REJECTED');
    assert.equal(((await (await call('/v1/sessions', { headers: bearer })).json()) as { sessions: unknown[] }).sessions.length, 0, 'the refused POST created nothing');
    const created = await call('/v1/sessions', { method: 'POST', headers: { cookie, 'x-airlock-csrf': csrf, 'content-type': 'application/json' }, body: '{}' });
    assert.equal(created.status, 201);
    const viaBearer = await call('/v1/sessions', { headers: bearer });
    assert.equal(((await viaBearer.json()) as { sessions: unknown[] }).sessions.length, 1);
    const whoami = (await (await call('/v1/whoami', { headers: { cookie } })).json()) as { identity: { kind: string }; csrfToken: string };
    assert.equal(whoami.identity.kind, 'console');
    assert.equal(whoami.csrfToken, csrf);
  });

  it('streams session changes, approvals and (for one session) audit records, coalesced', async () => {
    const created = (await (await call('/v1/sessions', { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ contract: APPROVE_ECHO }) })).json()) as { id: string };
    const all = await call('/v1/events', { headers: { cookie } });
    assert.equal(all.status, 200);
    assert.match(all.headers.get('content-type') ?? '', /^text\/event-stream/);
    const one = await call(`/v1/events?sessionId=${created.id}`, { headers: { cookie } });
    const held = await call(`/v1/sessions/${created.id}/exec`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ argv: ['tar', 'cf', 'x.tar', '.'] }) });
    assert.equal(held.status, 202);
    const approvalId = ((await held.json()) as { approvalId: string }).approvalId;
    const seenAll = await readEvents(all, (events) => events.some((event) => event.event === 'approval.changed' && event.data['id'] === approvalId));
    assert.equal(seenAll.events[0]?.event, 'stream.ready');
    assert.ok(seenAll.events.some((event) => event.event === 'session.changed' && event.data['id'] === created.id));
    assert.ok(!seenAll.events.some((event) => event.event === 'audit.appended'), 'no audit firehose on the all-sessions stream');
    const seenOne = await readEvents(one, (events) => events.some((event) => event.event === 'audit.appended' && event.data['type'] === 'approval.requested'));
    const types = seenOne.events.filter((event) => event.event === 'audit.appended').map((event) => event.data['type']);
    assert.ok(types.includes('tool-call.held'), types.join(','));
    // Several records in one flush give one session.changed, not one per record.
    const changes = seenOne.events.filter((event) => event.event === 'session.changed').length;
    assert.ok(changes < types.length, `${changes} session.changed for ${types.length} records`);
  });

  it('records a console decision as the login, never as the body says', async () => {
    const created = (await (await call('/v1/sessions', { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ contract: APPROVE_ECHO }) })).json()) as { id: string };
    const held = (await (await call(`/v1/sessions/${created.id}/exec`, { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: JSON.stringify({ argv: ['tar', 'cf', 'y.tar', '.'] }) })).json()) as { approvalId: string };
    const denied = await call(`/v1/approvals/${held.approvalId}/deny`, {
      method: 'POST',
      headers: { cookie, 'x-airlock-csrf': csrf, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'no', by: 'the-ceo' }),
    });
    assert.equal(denied.status, 200);
    const approval = (await denied.json()) as { decidedBy: string; state: string };
    assert.equal(approval.decidedBy, 'console:admin');
    assert.equal(approval.state, 'denied');
    const audit = (await (await call(`/v1/sessions/${created.id}/audit?tail=3`, { headers: bearer })).json()) as { records: { type: string; data: Record<string, unknown> }[] };
    assert.ok(audit.records.length <= 3);
    assert.equal(audit.records.find((record) => record.type === 'approval.denied')?.data['decidedBy'], 'console:admin');
  });

  it('serves the console: index.html for client routes, hashed assets cached for a year, the API kept apart', async () => {
    for (const path of ['/', '/sessions/ses_x', '/approvals']) {
      const page = await call(path);
      assert.equal(page.status, 200, path);
      assert.equal(page.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(page.headers.get('cache-control'), 'no-cache');
      assert.match(page.headers.get('content-security-policy') ?? '', /default-src 'self'/);
      assert.equal(page.headers.get('x-frame-options'), 'DENY');
    }
    const script = await call('/assets/main-ABCD2345.js');
    assert.equal(script.headers.get('content-type'), 'text/javascript; charset=utf-8');
    assert.equal(script.headers.get('cache-control'), 'public, max-age=31536000, immutable');
    const etag = script.headers.get('etag') ?? '';
    assert.equal((await call('/assets/main-ABCD2345.js', { headers: { 'if-none-match': etag } })).status, 304);
    assert.equal((await call('/assets/main-ABCD2345.css')).headers.get('content-type'), 'text/css; charset=utf-8');
    assert.equal((await call('/assets/missing-ABCD2345.js')).status, 404);
    const api404 = await call('/v1/no-such-route', { headers: bearer });
    assert.equal(api404.status, 404);
    assert.equal(((await api404.json()) as { error: { code: string } }).error.code, 'NOT_FOUND');
    assert.equal((await call('/v1/sessions')).status, 401, 'the API still needs a credential');
  });

  it('answers the takeover terminal with NOT_AVAILABLE on a driver without PTYs (the fake driver)', async () => {
    const created = (await (await call('/v1/sessions', { method: 'POST', headers: { ...bearer, 'content-type': 'application/json' }, body: '{}' })).json()) as { id: string };
    const terminal = await call(`/v1/sessions/${created.id}/terminal`, { headers: { cookie } });
    assert.equal(terminal.status, 501);
    assert.equal(((await terminal.json()) as { error: { code: string } }).error.code, 'NOT_AVAILABLE');
    assert.equal((await call('/v1/sessions/ses_nope/terminal', { headers: { cookie } })).status, 404);
  });

  it('log out ends the login: its cookie no longer reads anything', async () => {
    const logout = await call('/v1/logout', { method: 'POST', headers: { cookie, 'x-airlock-csrf': csrf } });
    assert.equal(logout.status, 200);
    assert.match(logout.headers.get('set-cookie') ?? '', /^airlock_login=; .*Max-Age=0/);
    const after = await call('/v1/sessions', { headers: { cookie } });
    assert.equal(after.status, 401);
    assert.equal(((await after.json()) as { error: { code: string } }).error.code, 'LOGIN_EXPIRED');
  });
  it('closes while event streams are open (they end first instead of holding the server)', { timeout: 30_000 }, async () => {
    const events = await call('/v1/events', { headers: bearer });
    const approvals = await call('/v1/approvals/events', { headers: bearer });
    assert.equal(events.status, 200);
    assert.equal(approvals.status, 200);
    const ended = Promise.all([events.text(), approvals.text()]);
    await server.close();
    closed = true;
    const [eventsText] = await ended;
    assert.match(eventsText, /event: stream.ready/);
  });

});
