/**
 * Lifecycle webhooks against a real `airlock serve` and a real HTTP receiver
 * on loopback (issue 24, item 2), every signature verified with the
 * `standardwebhooks` package: events arrive signed with their reason and who;
 * a delivery pending when the server is killed with -9 arrives once after the
 * restart; a receiver down for a while gets every event when it comes back,
 * in order per session; a 410 answer disables the endpoint; a tenant's
 * endpoint sees only that tenant's events.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Webhook } from 'standardwebhooks';
import { TestInstallation, type CliResult } from '../support/test-installation.js';

const CONTRACT = fileURLToPath(new URL('../../../../../examples/contracts/no-rm-approve-tar.json', import.meta.url));

interface Received {
  path: string;
  webhookId: string;
  status: number;
  event: { type: string; timestamp: string; data: Record<string, unknown> & { sessionId: string; seq: number; tenant: string } };
}

/** A receiver on loopback: answers each path as told (200 by default), verifies every signature it is given a secret for. */
class Receiver {
  readonly received: Received[] = [];
  readonly answers = new Map<string, number>();
  readonly secrets = new Map<string, string>();
  readonly badSignatures: string[] = [];
  private server: Server | undefined;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        const path = request.url ?? '';
        const secret = this.secrets.get(path);
        let event: Received['event'];
        try {
          if (!secret) throw new Error(`no secret for ${path}`);
          event = new Webhook(secret).verify(body, request.headers as Record<string, string>) as Received['event'];
        } catch (error) {
          this.badSignatures.push(`${path}: ${(error as Error).message}`);
          response.writeHead(400).end();
          return;
        }
        const status = this.answers.get(path) ?? 200;
        this.received.push({ path, webhookId: String(request.headers['webhook-id']), status, event });
        response.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Events a path accepted (2xx), first acceptance of each message only. */
  accepted(path: string): Received[] {
    return this.received.filter((entry) => entry.path === path && entry.status >= 200 && entry.status < 300);
  }

  async close(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

async function until<T>(what: string, probe: () => T | undefined | false, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function ok(result: CliResult): string {
  assert.equal(result.code, 0, `exit ${result.code}: ${result.stderr}`);
  return result.stdout;
}

describe('lifecycle webhooks', () => {
  let installation: TestInstallation;
  const receiver = new Receiver();
  const ids: Record<string, string> = {};

  before(async () => {
    await receiver.start();
    installation = await TestInstallation.start({ env: { AIRLOCK_WEBHOOK_RETRY_MS: '200', AIRLOCK_LOG_LEVEL: 'debug' } });
    for (const [name, args] of [
      ['main', ['--events', 'session.*,approval.*,snapshot.*,takeover.*']],
      ['acme', ['--events', '*', '--tenant', 'acme']],
      ['gone', ['--events', 'session.*']],
    ] as const) {
      const created = JSON.parse(ok(installation.cli(['webhooks', 'add', receiver.url(`/${name}`), ...args, '--json']))) as { id: string; secret: string };
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]+=*$/);
      receiver.secrets.set(`/${name}`, created.secret);
      ids[name] = created.id;
    }
    receiver.answers.set('/gone', 410);
  });
  after(async () => {
    await installation?.destroy();
    await receiver.close();
  });

  it('never shows a secret again, and refuses a bad endpoint saying what to do', async () => {
    const listed = ok(installation.cli(['webhooks', 'ls', '--json']));
    for (const secret of receiver.secrets.values()) {
      assert.ok(!listed.includes(secret), 'ls shows no secret');
      assert.ok(!installation.serverLog.includes(secret), 'no secret in the server log');
    }
    // The log reaches this process through a pipe read by its event loop: wait for the lines of those requests.
    await until('the request lines of /v1/webhooks in the server log', () => installation.serverLog.includes('/v1/webhooks'));
    for (const secret of receiver.secrets.values()) assert.ok(!installation.serverLog.includes(secret), 'no secret in the server log');
    const bad = installation.cli(['webhooks', 'add', 'ftp://example.invalid/x', '--events', 'session.*']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /http:\/\/ or https:\/\//);
    const unknown = installation.cli(['webhooks', 'add', receiver.url('/x'), '--events', 'nothing.*']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /matches no event/);
    // Not the synchronous CLI: the receiver runs in this process.
    const tested = JSON.parse(ok(await installation.cliAsync(['webhooks', 'test', ids['main'] ?? '', '--json']))) as { ok: boolean; status: number };
    assert.deepEqual([tested.ok, tested.status], [true, 200]);
  });

  it('sends session state changes signed, with the reason and who; a 410 disables the endpoint', async () => {
    const session = ok(installation.cli(['sessions', 'create'])).trim();
    ok(installation.cli(['sessions', 'suspend', session]));
    ok(installation.cli(['exec', session, '--', 'true']));
    const events = await until('created, running, suspended, resumed at /main', () => {
      const mine = receiver.accepted('/main').filter((entry) => entry.event.data.sessionId === session);
      const types = mine.map((entry) => entry.event.type);
      return ['session.created', 'session.running', 'session.suspended', 'session.resumed'].every((type) => types.includes(type)) && mine;
    });
    const suspended = events.find((entry) => entry.event.type === 'session.suspended');
    assert.equal(suspended?.event.data['reason'], 'api');
    assert.equal(suspended?.event.data['state'], 'suspended');
    assert.equal(suspended?.event.data['tenant'], 'default');
    assert.match(String(suspended?.event.data['by']), /^token:/, 'who asked: the token');
    assert.match(String(events.find((entry) => entry.event.type === 'session.created')?.event.data['by']), /^token:/);
    const resumed = events.find((entry) => entry.event.type === 'session.resumed');
    assert.equal(resumed?.event.data['reason'], 'call');
    assert.ok(
      events.every((entry, index) => index === 0 || entry.event.data.seq > (events[index - 1]?.event.data.seq ?? 0)),
      'in order',
    );
    assert.deepEqual(receiver.badSignatures, []);

    await until('the 410 endpoint disabled', () => {
      const listed = JSON.parse(ok(installation.cli(['webhooks', 'ls', '--json']))) as { id: string; state: string; disabledReason: string | null }[];
      return listed.find((endpoint) => endpoint.id === ids['gone'] && endpoint.state === 'disabled');
    });
    const goneCalls = receiver.received.filter((entry) => entry.path === '/gone').length;
    ok(installation.cli(['sessions', 'pause', session]));
    await until('paused at /main', () =>
      receiver.accepted('/main').some((entry) => entry.event.type === 'session.paused' && entry.event.data.sessionId === session),
    );
    assert.equal(receiver.received.filter((entry) => entry.path === '/gone').length, goneCalls, 'a disabled endpoint gets nothing more');
    ok(installation.cli(['sessions', 'rm', session]));
    await until('terminated at /main', () =>
      receiver.accepted('/main').some((entry) => entry.event.type === 'session.terminated' && entry.event.data.sessionId === session),
    );
  });

  it("a tenant's endpoint sees only its tenant's events, approvals included", async () => {
    const session = ok(installation.cli(['sessions', 'create', '--mode', 'per-call', '--contract', CONTRACT])).trim();
    const held = installation.cliAsync(['exec', session, '--', 'tar', 'cf', '/tmp/w.tar', '/workspace']);
    const requested = await until('approval.requested at /acme', () =>
      receiver.accepted('/acme').find((entry) => entry.event.type === 'approval.requested' && entry.event.data.sessionId === session),
    );
    assert.equal(requested.event.data['tool'], 'exec');
    assert.equal(requested.event.data['link'], `/sessions/${session}`);
    assert.ok(Array.isArray(requested.event.data['policyIds']));
    ok(installation.cli(['approvals', 'approve', String(requested.event.data['approvalId'])]));
    assert.equal((await held).code, 0);
    const decided = await until('approval.decided at /acme', () =>
      receiver.accepted('/acme').find((entry) => entry.event.type === 'approval.decided' && entry.event.data.sessionId === session),
    );
    assert.equal(decided.event.data['decision'], 'granted');
    assert.equal(typeof decided.event.data['by'], 'string');
    await until('approval.requested at /main too', () =>
      receiver.accepted('/main').some((entry) => entry.event.type === 'approval.requested' && entry.event.data.sessionId === session),
    );
    assert.ok(receiver.accepted('/acme').length > 0);
    assert.ok(
      receiver.accepted('/acme').every((entry) => entry.event.data.tenant === 'acme'),
      'only acme events at the acme endpoint',
    );
    ok(installation.cli(['sessions', 'rm', session]));
  });

  it('a delivery pending when the server is killed with -9 arrives once after the restart; a receiver down gets every event in order', async () => {
    receiver.answers.set('/main', 503);
    const session = ok(installation.cli(['sessions', 'create', '--mode', 'per-call'])).trim();
    const refused = await until('a refused attempt of session.created', () =>
      receiver.received.find(
        (entry) => entry.path === '/main' && entry.status === 503 && entry.event.data.sessionId === session && entry.event.type === 'session.created',
      ),
    );
    await installation.crashServer();
    await installation.startServer();
    // Still down for a while: more events pile up behind the first.
    ok(installation.cli(['sessions', 'rm', session]));
    await until('a retry after the restart', () => receiver.received.filter((entry) => entry.webhookId === refused.webhookId).length >= 2);
    receiver.answers.set('/main', 200);
    const delivered = await until('session.created and session.terminated accepted', () => {
      const mine = receiver.accepted('/main').filter((entry) => entry.event.data.sessionId === session);
      return mine.some((entry) => entry.event.type === 'session.terminated') && mine;
    });
    assert.equal(delivered.filter((entry) => entry.webhookId === refused.webhookId).length, 1, 'accepted once');
    assert.deepEqual(
      delivered.map((entry) => entry.event.type),
      ['session.created', 'session.running', 'session.terminated'],
      'every event, in order',
    );
    assert.deepEqual(receiver.badSignatures, []);
    const metrics = await (await fetch(`${installation.url}/metrics`, { headers: { authorization: `Bearer ${installation.token}` } })).text();
    assert.match(metrics, /airlock_webhook_deliveries_total\{outcome="delivered"\} [1-9]/);
    assert.match(metrics, /airlock_webhook_deliveries_total\{outcome="retried"\} [1-9]/);
    assert.match(metrics, /airlock_webhook_endpoints\{state="disabled"\} 1/);
    // Retries of other sessions' events may still be backing off: in the end nothing stays pending.
    await until('nothing pending at /main', () => {
      const listed = JSON.parse(ok(installation.cli(['webhooks', 'ls', '--json']))) as { id: string; deliveries: Record<string, number> }[];
      return (listed.find((endpoint) => endpoint.id === ids['main'])?.deliveries['pending'] ?? 0) === 0;
    });
  });
});
