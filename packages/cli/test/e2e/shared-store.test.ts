/**
 * Issue 13, end to end: two `airlock serve` processes with two data dirs on
 * one PostgreSQL database (sharing the audit key). Each manages the sessions
 * it created and refuses to run the other's; an approval decided through one
 * is run by the other; and when one is killed with SIGKILL in the middle of
 * a call, the other keeps serving its own sessions, sees the killed one's
 * audit chain intact, and never touches its sessions, sandboxes or disks.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TestInstallation } from '../support/test-installation.js';
import { createTestDatabase, NO_POSTGRES, testPostgresUrl, type TestDatabase } from '../support/test-database.js';

async function waitFor<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface AuditEntry {
  seq: number;
  type: string;
  data: Record<string, unknown>;
}

describe('two servers on one PostgreSQL database', { skip: testPostgresUrl() ? false : NO_POSTGRES }, () => {
  let database: TestDatabase;
  let shared: string;
  let a: TestInstallation;
  let b: TestInstallation;
  let sessionOfA: string;
  let sessionOfB: string;
  before(async () => {
    database = await createTestDatabase('shared');
    shared = mkdtempSync('/var/tmp/airlock-shared-');
    const env = { AIRLOCK_AUDIT_KEY_FILE: join(shared, 'audit.key') };
    a = await TestInstallation.start({ store: { url: database.url }, env });
    b = await TestInstallation.start({ store: { url: database.url }, env });
    const contract = join(shared, 'ask-tar.json');
    writeFileSync(
      contract,
      JSON.stringify({
        version: 1,
        policies: [
          'permit(principal, action, resource);',
          '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
        ],
      }),
    );
    const createdA = a.cli(['sessions', 'create', '--contract', contract]);
    assert.equal(createdA.code, 0, createdA.stderr);
    sessionOfA = createdA.stdout.trim();
    const createdB = b.cli(['sessions', 'create']);
    assert.equal(createdB.code, 0, createdB.stderr);
    sessionOfB = createdB.stdout.trim();
  });
  after(async () => {
    await a?.destroy();
    await b?.destroy();
    await database?.drop();
    if (shared) rmSync(shared, { recursive: true, force: true });
  });

  it('a token made through one server works through the other, and revoked through that one answers 401 on both at once', async () => {
    const made = a.cli(['tokens', 'create', '--tenant', 'shared-tenant', '--role', 'operator', '--json']);
    assert.equal(made.code, 0, made.stderr);
    const { id, token } = JSON.parse(made.stdout) as { id: string; token: string };
    const sessionsVia = async (installation: TestInstallation) => fetch(`${installation.url}/v1/sessions`, { headers: { authorization: `Bearer ${token}` } });
    const throughB = await sessionsVia(b);
    assert.equal(throughB.status, 200);
    assert.deepEqual((await throughB.json()) as { sessions: unknown[] }, { sessions: [] }, "the tenant's list holds none of the default tenant's sessions");
    const revoked = b.cli(['tokens', 'revoke', id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.equal((await sessionsVia(a)).status, 401, 'the other server refuses it at once (no cache)');
    assert.equal((await sessionsVia(b)).status, 401);
  });

  it('shows every session through either server, and runs calls only on the server that manages the session', () => {
    for (const installation of [a, b]) {
      const listed = JSON.parse(installation.cli(['sessions', 'ls', '--json']).stdout) as { id: string }[];
      assert.deepEqual(new Set(listed.map((session) => session.id)), new Set([sessionOfA, sessionOfB]));
    }
    assert.equal(a.cli(['exec', sessionOfA, '--', 'sh', '-c', 'echo from-a > /workspace/a.txt']).code, 0);
    const refused = b.cli(['exec', sessionOfA, '--', 'true']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /SESSION_NOT_OWNED/);
    assert.match(b.cli(['sessions', 'suspend', sessionOfA]).stderr, /SESSION_NOT_OWNED/);
    assert.match(b.cli(['sessions', 'rm', sessionOfA]).stderr, /SESSION_NOT_OWNED/);
    assert.equal(a.cli(['files', 'read', sessionOfA, '/workspace/a.txt']).stdout, 'from-a\n', 'nothing changed');
  });

  it('runs a call approved through the other server on the server that manages its session (LISTEN/NOTIFY)', async () => {
    const waiting = a.cliAsync(['exec', sessionOfA, '--', 'sh', '-c', 'tar cf /workspace/x.tar /workspace/a.txt && echo archived >> /workspace/runs']);
    const approval = await waitFor(() => {
      const pending = JSON.parse(b.cli(['approvals', 'ls', '--json']).stdout) as { id: string; sessionId: string }[];
      return pending.find((entry) => entry.sessionId === sessionOfA);
    }, 'the held call to show on the other server');
    assert.equal(b.cli(['approvals', 'approve', approval.id, '--reason', 'fine']).code, 0);
    const result = await waiting;
    assert.equal(result.code, 0, result.stderr);
    assert.equal(a.cli(['files', 'read', sessionOfA, '/workspace/runs']).stdout, 'archived\n', 'ran once');
    const executed = await waitFor(() => {
      const all = JSON.parse(b.cli(['approvals', 'ls', '--all', '--json']).stdout) as { id: string; state: string }[];
      return all.find((entry) => entry.id === approval.id && entry.state === 'executed');
    }, 'the other server to see the approval executed');
    assert.ok(executed);
    // How long A took to hear B's decision and start the call: both records are in A's session chain.
    const chain = JSON.parse(b.cli(['audit', sessionOfA, '--json']).stdout) as (AuditEntry & { at: string })[];
    const granted = chain.find((record) => record.type === 'approval.granted' && record.data['approvalId'] === approval.id);
    const started = chain.find((record) => record.type === 'tool-call.started' && granted && record.seq > granted.seq);
    assert.ok(granted && started);
    process.stdout.write(`# decided on B → started on A: ${Date.parse(started.at) - Date.parse(granted.at)} ms\n`);
  });

  it('keeps serving its own sessions when the other is killed mid-call, and sees its audit intact', async () => {
    const sandboxesOfA = readdirSync(join(a.dataDir, 'sandboxes'));
    const disksOfA = readdirSync(join(a.dataDir, 'disks'));
    const longCall = a.cliAsync(['exec', sessionOfA, '--', 'sh', '-c', 'echo started > /workspace/long; sleep 30; echo finished >> /workspace/long']);
    await waitFor(() => {
      const records = JSON.parse(b.cli(['audit', sessionOfA, '--json']).stdout) as AuditEntry[];
      const last = records.at(-1);
      return last?.type === 'tool-call.started' && JSON.stringify(last.data['arguments']).includes('sleep 30') ? last : undefined;
    }, 'the long call to start on A');
    await a.crashServer();
    await longCall;

    const mine = b.cli(['exec', sessionOfB, '--', 'echo', 'still here']);
    assert.equal(mine.code, 0, mine.stderr);
    assert.equal(mine.stdout, 'still here\n');
    const verified = b.cli(['audit', 'verify', sessionOfA]);
    assert.equal(verified.code, 0, verified.stdout + verified.stderr);
    assert.match(verified.stdout, /^ok: \d+ records, chain intact \(keyed/);
    assert.equal(b.cli(['audit', 'verify', sessionOfB]).code, 0);
    const seen = JSON.parse(b.cli(['sessions', 'get', sessionOfA, '--json']).stdout) as { state: string };
    assert.equal(seen.state, 'running', 'B does not change a session it does not manage');
    assert.deepEqual(readdirSync(join(a.dataDir, 'sandboxes')), sandboxesOfA, "A's sandboxes are untouched");
    assert.deepEqual(readdirSync(join(a.dataDir, 'disks')), disksOfA, "A's disks are untouched");

    // B restarting reconciles its own sessions only.
    await b.stopServer();
    await b.startServer();
    assert.equal(b.cli(['exec', sessionOfB, '--', 'true']).code, 0);
    assert.equal((JSON.parse(b.cli(['sessions', 'get', sessionOfA, '--json']).stdout) as { state: string }).state, 'running');

    // A comes back: its machine is still there, adopted, and the interrupted call is in its chain.
    await a.startServer();
    assert.equal(a.cli(['files', 'read', sessionOfA, '/workspace/long']).stdout.split('\n')[0], 'started');
    assert.equal(a.cli(['exec', sessionOfA, '--', 'echo', 'back']).stdout, 'back\n');
    assert.equal(a.cli(['audit', 'verify', sessionOfA]).code, 0);
  });
});
