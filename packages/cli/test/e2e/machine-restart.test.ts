/**
 * Issue 12 item 8, end to end on gVisor: `airlock sessions restart ID` puts a
 * fresh machine on the session's disk, for a machine that runs, and for one
 * that died under the session (killed from the host): files kept, processes
 * lost, audited with who asked. Bad input is refused and changes nothing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestInstallation, hostProcessesMatching } from '../support/test-installation.js';

interface SessionView {
  id: string;
  state: string;
  sandboxId: string | null;
  failure: { code: string; message: string } | null;
}

describe('restarting the machine of a session on gVisor', () => {
  let installation: TestInstallation;
  before(async () => {
    installation = await TestInstallation.start();
  });
  after(async () => {
    await installation?.destroy();
  });

  function view(id: string): SessionView {
    const got = installation.cli(['sessions', 'get', id, '--json']);
    assert.equal(got.code, 0, got.stderr);
    return JSON.parse(got.stdout) as SessionView;
  }

  function audit(id: string): { type: string; data: Record<string, unknown> }[] {
    const listed = installation.cli(['audit', 'export', id]);
    assert.equal(listed.code, 0, listed.stderr);
    return listed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type?: string; data?: Record<string, unknown> })
      .filter((entry): entry is { type: string; data: Record<string, unknown> } => typeof entry.type === 'string');
  }

  function createWithWork(): string {
    const created = installation.cli(['sessions', 'create']);
    assert.equal(created.code, 0, created.stderr);
    const id = created.stdout.trim();
    const work = installation.cli(['exec', id, '--', 'sh', '-c', 'echo kept > /workspace/kept.txt; (sleep 100000 >/dev/null 2>&1 &); echo started']);
    assert.equal(work.code, 0, work.stderr);
    return id;
  }

  function sleepers(id: string): number {
    const listed = installation.cli(['exec', id, '--', 'sh', '-c', 'ps -eo args | grep -c "^sleep 100000" || true']);
    assert.equal(listed.code, 0, listed.stderr);
    return Number.parseInt(listed.stdout.trim(), 10);
  }

  it('restarts a running machine: a new machine on the same disk, files kept, processes gone, audited', () => {
    const id = createWithWork();
    const before = view(id);
    assert.equal(sleepers(id), 1, 'control: the background process runs before the restart');
    const restarted = installation.cli(['sessions', 'restart', id, '--json']);
    assert.equal(restarted.code, 0, restarted.stderr);
    const after = JSON.parse(restarted.stdout) as SessionView;
    assert.equal(after.state, 'running');
    assert.notEqual(after.sandboxId, before.sandboxId);
    assert.deepEqual(hostProcessesMatching(before.sandboxId ?? 'no-sandbox'), [], 'the old machine is gone from the host');
    const read = installation.cli(['files', 'read', id, '/workspace/kept.txt']);
    assert.equal(read.stdout, 'kept\n', read.stderr);
    assert.equal(sleepers(id), 0, 'processes of the old machine are gone');
    const record = audit(id).find((entry) => entry.type === 'session.restarted');
    assert.ok(record, 'the restart is audited');
    assert.equal(record.data['from'], 'running');
    assert.match(String(record.data['by']), /^token:/);
  });

  it('restarts a machine that died under the session (killed from the host): failed with its cause, then running with its files', () => {
    const id = createWithWork();
    const sandboxId = view(id).sandboxId ?? '';
    const pids = hostProcessesMatching(sandboxId).map((line) => Number.parseInt(line.trim(), 10));
    assert.ok(pids.length > 0, `control: the machine ${sandboxId} has processes on the host`);
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone already
      }
    }
    const call = installation.cli(['exec', id, '--', 'true']);
    assert.notEqual(call.code, 0, 'control: a call on a killed machine fails');
    const failed = view(id);
    assert.ok(['failed', 'degraded'].includes(failed.state), `the session says what happened, not running (${failed.state})`);
    assert.ok(failed.failure?.message, 'with its cause');
    const restarted = installation.cli(['sessions', 'restart', id]);
    assert.equal(restarted.code, 0, restarted.stderr);
    assert.equal(restarted.stdout.trim(), `${id} running`);
    const read = installation.cli(['files', 'read', id, '/workspace/kept.txt']);
    assert.equal(read.stdout, 'kept\n', read.stderr);
    const after = installation.cli(['exec', id, '--', 'echo', 'alive']);
    assert.equal(after.stdout, 'alive\n', after.stderr);
    assert.equal(view(id).failure, null, 'the cause is cleared once the machine answers again');
  });

  it('refuses a restart of a suspended or unknown session, and changes nothing', () => {
    const id = createWithWork();
    assert.equal(installation.cli(['sessions', 'suspend', id]).code, 0);
    const refused = installation.cli(['sessions', 'restart', id]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /INVALID_STATE.*suspended; resume it first/);
    assert.equal(view(id).state, 'suspended');
    const unknown = installation.cli(['sessions', 'restart', 'ses_doesnotexist00']);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /SESSION_NOT_FOUND/);
  });
});
