/**
 * Issue 3's "done when", end to end through the CLI against a real server
 * and gVisor: the example contract forbids rm anywhere in a command, holds
 * tar for approval, allows the rest; the breaker, filesystem rules and the
 * audit chain.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TestInstallation } from '../support/test-installation.js';

const CONTRACT = fileURLToPath(new URL('../../../../../examples/contracts/no-rm-approve-tar.json', import.meta.url));

async function waitFor<T>(probe: () => T | undefined, what: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('the airlock: policy, approval, breaker and audit through the CLI', () => {
  let installation: TestInstallation;
  let id: string;
  before(async () => {
    installation = await TestInstallation.start();
    const check = installation.cli(['contract', 'check', CONTRACT]);
    assert.equal(check.code, 0, check.stderr);
    const created = installation.cli(['sessions', 'create', '--contract', CONTRACT]);
    assert.equal(created.code, 0, created.stderr);
    id = created.stdout.trim();
    assert.equal(installation.cli(['exec', id, '--', 'sh', '-c', 'mkdir -p /workspace/keep && echo precious > /workspace/keep/file']).code, 0);
  });
  after(async () => {
    await installation?.destroy();
  });

  it('denies a command that runs rm anywhere, and nothing is deleted', () => {
    const denied = installation.cli(['exec', id, '--', 'sh', '-c', 'ls && rm -rf /workspace']);
    assert.equal(denied.code, 126);
    assert.match(denied.stderr, /POLICY_DENIED/);
    assert.match(denied.stderr, /policy1/);
    for (const command of ['echo $(rm -rf /workspace/keep)', 'find /workspace -exec rm {} +', 'env X=1 /bin/rm -rf /workspace']) {
      assert.equal(installation.cli(['exec', id, '--', 'sh', '-c', command]).code, 126, command);
    }
    assert.equal(installation.cli(['files', 'read', id, '/workspace/keep/file']).stdout, 'precious\n');
  });

  it('holds tar until a human approves, then runs it exactly once', async () => {
    const waiting = installation.cliAsync(['exec', id, '--', 'sh', '-c', 'tar cf /workspace/a.tar -C /workspace keep && echo ran >> /workspace/tar-runs']);
    const approval = await waitFor(() => {
      const list = installation.cli(['approvals', 'ls', '--json']);
      const pending = JSON.parse(list.stdout) as { id: string; sessionId: string; call: { tool: string } }[];
      return pending.find((a) => a.sessionId === id);
    }, 'the approval to appear');
    assert.equal(approval.call.tool, 'exec');
    assert.equal(installation.cli(['files', 'read', id, '/workspace/tar-runs']).code, 1, 'nothing ran before approval');
    const approved = installation.cli(['approvals', 'approve', approval.id, '--reason', 'backup is fine']);
    assert.equal(approved.code, 0, approved.stderr);
    const result = await waiting;
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, new RegExp(approval.id));
    assert.equal(installation.cli(['approvals', 'approve', approval.id]).code, 1, 'a second approval is refused');
    await waitFor(() => {
      const all = JSON.parse(installation.cli(['approvals', 'ls', '--all', '--json']).stdout) as { id: string; state: string }[];
      return all.find((a) => a.id === approval.id && a.state === 'executed');
    }, 'the approval to be closed as executed');
    assert.equal(installation.cli(['files', 'read', id, '/workspace/tar-runs']).stdout, 'ran\n', 'ran exactly once');
  });

  it('never runs a call a human denied', async () => {
    const waiting = installation.cliAsync(['exec', id, '--', 'sh', '-c', 'tar cf /workspace/b.tar /workspace/keep; echo ran > /workspace/denied-ran']);
    const approval = await waitFor(() => {
      const pending = JSON.parse(installation.cli(['approvals', 'ls', '--json']).stdout) as { id: string; sessionId: string }[];
      return pending.find((a) => a.sessionId === id);
    }, 'the approval to appear');
    assert.equal(installation.cli(['approvals', 'deny', approval.id, '--reason', 'no archives today']).code, 0);
    const result = await waiting;
    assert.equal(result.code, 126);
    assert.match(result.stderr, /APPROVAL_DENIED/);
    assert.match(result.stderr, /no archives today/);
    assert.equal(installation.cli(['files', 'read', id, '/workspace/denied-ran']).code, 1, 'the denied call never ran');
  });

  it('refuses writes to denied paths, also through .. and symlinks', () => {
    assert.equal(installation.cli(['exec', id, '--', 'ln', '-s', '/etc', '/workspace/etc-link']).code, 0);
    assert.equal(installation.cli(['exec', id, '--', 'mkdir', '-p', '/workspace/secret']).code, 0);
    for (const path of [
      '/etc/motd',
      '/workspace/../etc/motd',
      '/workspace/etc-link/motd',
      'etc-link/motd',
      '/workspace/secret/key',
      '/workspace/./secret/../secret/key',
    ]) {
      const write = installation.cli(['files', 'write', id, path], { input: 'x' });
      assert.equal(write.code, 126, `${path}: ${write.stderr}`);
      assert.match(write.stderr, /POLICY_DENIED/);
      assert.match(write.stderr, /denyWrite/);
    }
    assert.equal(installation.cli(['files', 'write', id, '/workspace/ok.txt'], { input: 'fine' }).code, 0);
  });

  it('trips the breaker after 20 identical failing calls', () => {
    for (let i = 0; i < 20; i += 1) assert.equal(installation.cli(['exec', id, '--', 'sh', '-c', 'exit 7']).code, 7);
    const tripped = installation.cli(['exec', id, '--', 'echo', 'hello']);
    assert.equal(tripped.code, 126);
    assert.match(tripped.stderr, /RUNAWAY_DETECTED/);
    assert.equal(installation.cli(['sessions', 'reset-guard', id]).code, 0);
    assert.equal(installation.cli(['exec', id, '--', 'echo', 'hello']).stdout, 'hello\n');
  });

  it('audit verify passes, and fails after any single record of the store is altered', async () => {
    const log = JSON.parse(installation.cli(['audit', id, '--json']).stdout) as { type: string; data: Record<string, unknown> }[];
    assert.ok(log.some((r) => r.type === 'tool-call.denied' && (r.data['policyIds'] as string[]).includes('policy1')));
    assert.ok(log.some((r) => r.type === 'approval.granted' && r.data['decidedBy'] !== undefined));
    assert.ok(log.some((r) => r.type === 'session.created' && typeof r.data['imageDigest'] === 'string'));
    assert.ok(log.some((r) => r.type === 'tool-call.completed' && r.data['exitCode'] === 7));
    assert.equal(installation.cli(['audit', 'verify', id]).code, 0);
    const changed = await installation.writeStore(
      {
        sqlite:
          "UPDATE audit_records SET data = json_set(data, '$.decision', 'allow') WHERE session_id = ? AND type = 'tool-call.denied' AND seq = (SELECT MIN(seq) FROM audit_records WHERE session_id = ? AND type = 'tool-call.denied')",
        postgres:
          "UPDATE audit_records SET data = jsonb_set(data::jsonb, '{decision}', '\"allow\"')::json WHERE session_id = $1 AND type = 'tool-call.denied' AND seq = (SELECT MIN(seq) FROM audit_records WHERE session_id = $2 AND type = 'tool-call.denied')",
      },
      [id, id],
    );
    assert.equal(changed, 1);
    const verify = installation.cli(['audit', 'verify', id]);
    assert.equal(verify.code, 1);
    assert.match(verify.stdout, /FAILED at record \d+: edited/);
  });

  it('decides a denied call without the machine: a suspended session stays suspended, an allowed call wakes it and says so', async () => {
    assert.equal(installation.cli(['sessions', 'suspend', id]).code, 0);
    const before = JSON.parse(installation.cli(['audit', id, '--json']).stdout) as { seq: number }[];
    const write = installation.cli(['files', 'write', id, '/etc/motd'], { input: 'x' });
    assert.equal(write.code, 126, write.stderr);
    assert.match(write.stderr, /POLICY_DENIED/);
    assert.equal(installation.cli(['exec', id, '--', 'rm', '-rf', '/workspace/keep']).code, 126);
    const state = JSON.parse(installation.cli(['sessions', 'get', id, '--json']).stdout) as { state: string };
    assert.equal(state.state, 'suspended', 'the denied calls never woke the machine');
    const since = (JSON.parse(installation.cli(['audit', id, '--json']).stdout) as { seq: number; type: string }[]).filter(
      (r) => r.seq > (before.at(-1)?.seq ?? 0),
    );
    assert.deepEqual(
      since.map((r) => r.type),
      ['tool-call.denied', 'tool-call.denied'],
    );

    const allowed = installation.cli(['files', 'write', id, '/workspace/woken.txt'], { input: 'up' });
    assert.equal(allowed.code, 0, allowed.stderr);
    const after = (JSON.parse(installation.cli(['audit', id, '--json']).stdout) as { seq: number; type: string; data: Record<string, unknown> }[]).filter(
      (r) => r.seq > (since.at(-1)?.seq ?? 0),
    );
    const authorized = after.find((r) => r.type === 'tool-call.authorized');
    const resumed = after.find((r) => r.type === 'session.resumed');
    assert.ok(authorized && resumed, after.map((r) => r.type).join(', '));
    assert.ok(authorized.seq < resumed.seq, 'the decision comes before the wake');
    assert.equal(resumed.data['wokenBy'], 'call');
    assert.equal(resumed.data['gen_ai.tool.call.id'], authorized.data['gen_ai.tool.call.id'], 'the wake names the call it was for');
  });

  it('reserves budgets before calls run: 30 concurrent calls against maxToolCalls 5 run exactly 5, the other 25 exit 126', async () => {
    const dir = mkdtempSync('/var/tmp/airlock-budget-');
    try {
      const contract = join(dir, 'budget.json');
      writeFileSync(contract, JSON.stringify({ version: 1, budgets: { maxToolCalls: 5 } }));
      const created = installation.cli(['sessions', 'create', '--contract', contract]);
      assert.equal(created.code, 0, created.stderr);
      const session = created.stdout.trim();
      const results = await Promise.all(
        Array.from({ length: 30 }, (_, index) => installation.cliAsync(['exec', session, '--', 'sh', '-c', `echo ${index} >> /workspace/ran`])),
      );
      const ran = results.filter((result) => result.code === 0);
      const refused = results.filter((result) => result.code === 126 && /BUDGET_EXCEEDED/.test(result.stderr));
      assert.equal(ran.length, 5, results.map((result) => `${result.code} ${result.stderr.trim()}`).join('\n'));
      assert.equal(refused.length, 25);
      const records = JSON.parse(installation.cli(['audit', session, '--json']).stdout) as { type: string }[];
      assert.equal(records.filter((record) => record.type === 'tool-call.started').length, 5, 'the machine ran 5 calls');
      assert.equal(records.filter((record) => record.type === 'tool-call.refused').length, 25);
      assert.equal(installation.cli(['sessions', 'rm', session]).code, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
