/**
 * Hostile suite: per-tenant quotas on a real server, under concurrency. A
 * tenant over its sessions, calls in flight, fork branches or fork depth
 * gets QUOTA_EXCEEDED (429) and nothing is made or run; other tenants are
 * not counted; room comes back when work ends.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, waitFor, type Answer } from '../support/hostile-kit.js';

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

describe('hostile: per-tenant quotas hold under concurrency', { timeout: 900_000 }, () => {
  let installation: TestInstallation;
  let admin: HostileApi;

  const operatorOf = (tenant: string): TokenApi => {
    const made = installation.cli(['tokens', 'create', '--tenant', tenant, '--role', 'operator', '--json']);
    assert.equal(made.code, 0, made.stderr);
    return new TokenApi(installation, (JSON.parse(made.stdout) as { token: string }).token);
  };
  const setQuotas = (tenant: string, flags: string[]) => {
    const result = installation.cli(['tenants', 'set', tenant, ...flags, '--json']);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as { name: string; quotas: Record<string, number | null> };
  };
  const sessionsOf = async (tenant: string) =>
    ((await admin.request('GET', '/v1/sessions')).body['sessions'] as { id: string; tenant: string; state: string; lineage: unknown }[]).filter(
      (session) => session.tenant === tenant && session.state !== 'terminated',
    );

  before(async () => {
    installation = await TestInstallation.start();
    admin = new HostileApi(installation);
  });

  after(async () => {
    await installation?.destroy();
  });

  it('`tenants set` stores quotas, changes only the flags given, and refuses bad values', () => {
    assert.deepEqual(setQuotas('settings', ['--max-sessions', '3', '--max-fork-depth', '2']).quotas, {
      maxSessions: 3,
      maxConcurrentCalls: null,
      maxForkBranches: null,
      maxForkDepth: 2,
    });
    assert.deepEqual(setQuotas('settings', ['--max-concurrent-calls', '4', '--max-sessions', 'none']).quotas, {
      maxSessions: null,
      maxConcurrentCalls: 4,
      maxForkBranches: null,
      maxForkDepth: 2,
    });
    assert.notEqual(installation.cli(['tenants', 'set', 'settings', '--max-sessions', '-1']).code, 0);
    assert.notEqual(installation.cli(['tenants', 'set', 'settings', '--max-sessions', 'lots']).code, 0);
    assert.notEqual(installation.cli(['tenants', 'set', '../x', '--max-sessions', '1']).code, 0);
    const listed = JSON.parse(installation.cli(['tenants', 'ls', '--json']).stdout) as { name: string; quotas: Record<string, number | null> }[];
    assert.deepEqual(listed.find((tenant) => tenant.name === 'settings')?.quotas, {
      maxSessions: null,
      maxConcurrentCalls: 4,
      maxForkBranches: null,
      maxForkDepth: 2,
    });
    const operator = installation.cli(['tenants', 'set', 'settings', '--max-sessions', '100'], {
      env: { AIRLOCK_TOKEN: JSON.parse(installation.cli(['tokens', 'create', '--tenant', 'settings', '--json']).stdout).token },
    });
    assert.notEqual(operator.code, 0, 'only an admin changes quotas');
  });

  it('6 concurrent creates against maxSessions 2 make exactly 2 sessions; the other 4 get QUOTA_EXCEEDED; a terminate makes room', async () => {
    setQuotas('q-sessions', ['--max-sessions', '2']);
    const operator = operatorOf('q-sessions');
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => operator.request('POST', '/v1/sessions', { contract: { version: 1, idle: { keepAwake: true } } })),
    );
    const made = answers.filter((answer) => answer.status === 201);
    const refused = answers.filter((answer) => answer.code === 'QUOTA_EXCEEDED');
    assert.equal(made.length, 2, answers.map((answer) => `${answer.status} ${answer.code}`).join(', '));
    assert.equal(refused.length, 4);
    for (const answer of refused) {
      assert.equal(answer.status, 429);
      assert.match(answer.message, /2 sessions/);
    }
    assert.equal((await sessionsOf('q-sessions')).length, 2, 'nothing more was made');
    const other = operatorOf('q-other');
    const unlimited = await other.request('POST', '/v1/sessions', { contract: { version: 1 } });
    assert.equal(unlimited.status, 201, 'another tenant is not counted');
    await operator.terminate(String(made[0]!.body['id']));
    const again = await operator.request('POST', '/v1/sessions', { contract: { version: 1, idle: { keepAwake: true } } });
    assert.equal(again.status, 201, `${again.code} ${again.message}`);
  });

  it('with maxConcurrentCalls 2, calls beyond the two in flight are refused before they run; a slot comes back when a call ends', async () => {
    setQuotas('q-calls', ['--max-concurrent-calls', '2']);
    const operator = operatorOf('q-calls');
    const session = await operator.createSession({ version: 1, idle: { keepAwake: true } });
    // Two calls that stay in flight until their clients go away (a disconnect stops the command and frees the slot).
    const aborts = [new AbortController(), new AbortController()];
    const blockers = aborts.map((abort, index) =>
      fetch(`${installation.url}/v1/sessions/${session}/tools/exec`, {
        method: 'POST',
        headers: { authorization: `Bearer ${operator.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ command: `echo blocker-${index}; sleep 600`, timeoutMs: 600_000 }),
        signal: abort.signal,
      }).then(
        (response) => `answered ${response.status}`,
        (error: unknown) => (error as Error).name,
      ),
    );
    await waitFor(async () => {
      const records = (await admin.request('GET', `/v1/sessions/${session}/audit?tail=50`)).body['records'] as { type: string }[];
      return records.filter((record) => record.type === 'tool-call.started').length >= 2 || undefined;
    }, 'both blocking calls to be running');
    const extra = await Promise.all(Array.from({ length: 6 }, (_, index) => operator.tool(session, 'exec', { command: `touch /workspace/extra-${index}` })));
    for (const answer of extra) {
      assert.equal(answer.status, 429, `${answer.code} ${answer.message}`);
      assert.equal(answer.code, 'QUOTA_EXCEEDED');
      assert.match(answer.message, /2 tool calls in flight/);
    }
    const byAdmin = await admin.tool(session, 'files.write', { path: '/workspace/by-admin', content: 'x' });
    assert.equal(byAdmin.code, 'QUOTA_EXCEEDED', "the admin's calls on the tenant's session count too");
    // A call of another tenant, meanwhile, runs.
    const other = operatorOf('q-calls-other');
    const otherSession = await other.createSession({ version: 1 });
    assert.equal((await other.tool(otherSession, 'files.write', { path: '/workspace/x', content: 'x' })).code, 'ok');
    await other.terminate(otherSession);
    for (const abort of aborts) abort.abort();
    assert.deepEqual(await Promise.all(blockers), ['AbortError', 'AbortError'], 'the blockers were still in flight');
    // The slots come back once the server saw the clients go.
    await waitFor(
      async () => ((await operator.tool(session, 'files.write', { path: '/workspace/after', content: 'x' })).code === 'ok' ? true : undefined),
      'a slot to come back',
    );
    const listing = await operator.run(session, 'ls /workspace');
    assert.ok(!/extra-|by-admin/.test(listing.stdout), `a refused call ran: ${listing.stdout}`);
  });

  it('forks: more branches than maxForkBranches, or deeper than maxForkDepth, are refused and make nothing', async () => {
    setQuotas('q-forks', ['--max-fork-branches', '2', '--max-fork-depth', '1', '--max-sessions', '4']);
    const operator = operatorOf('q-forks');
    const root = await operator.createSession({ version: 1, idle: { keepAwake: true } });
    const wide = await operator.request('POST', `/v1/sessions/${root}/fork`, { count: 3 });
    assert.equal(wide.status, 429);
    assert.equal((wide.body['error'] as { details: { quota: string } }).details.quota, 'maxForkBranches');
    const wideTool = await operator.tool(root, 'fork', { count: 3 });
    assert.equal(wideTool.code, 'QUOTA_EXCEEDED', 'the fork tool meets the same quota');
    assert.equal((await sessionsOf('q-forks')).length, 1, 'no branch was made');
    const fork = await operator.request('POST', `/v1/sessions/${root}/fork`, { count: 1 });
    assert.equal(fork.status, 201, `${fork.code} ${fork.message}`);
    const branch = String((fork.body['branches'] as { id: string }[])[0]?.id);
    const deep = await operator.request('POST', `/v1/sessions/${branch}/fork`, { count: 1 });
    assert.equal(deep.status, 429);
    assert.equal((deep.body['error'] as { details: { quota: string } }).details.quota, 'maxForkDepth');
    const tooMany = await operator.request('POST', `/v1/sessions/${root}/fork`, { count: 2, snapshotId: String((fork.body['snapshot'] as { id: string }).id) });
    assert.equal(tooMany.status, 201, 'two more branches fit in 4 sessions');
    const full = await operator.request('POST', `/v1/sessions/${root}/fork`, { count: 1 });
    assert.equal(full.code, 'QUOTA_EXCEEDED', 'a fifth session does not fit');
    assert.equal((await sessionsOf('q-forks')).length, 4);
  });
});
