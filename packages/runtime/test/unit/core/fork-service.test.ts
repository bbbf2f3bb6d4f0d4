import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { AirlockError } from '../../../src/core/errors.js';
import type { ExecRequest } from '../../../src/core/sandbox-driver.js';
import type { SessionRecord } from '../../../src/core/session.js';

/** Makes the fake list one hook in `phase` and records the env each hook ran with. */
function installHook(fx: CoreFixture, phase: string): { sandboxId: string; env: Record<string, string> }[] {
  const runs: { sandboxId: string; env: Record<string, string> }[] = [];
  const hook = `/etc/airlock/hooks/${phase}.d/10-reseed`;
  fx.driver.handler = (argv) => (argv[0] === hook ? { stdout: 'reseeded\n' } : {});
  const list = fx.driver.files.list.bind(fx.driver.files);
  fx.driver.files.list = async (handle, path, options) => {
    if (path !== `/etc/airlock/hooks/${phase}.d`) return list(handle, path, options);
    return [{ name: '10-reseed', path: hook, type: 'file', size: 10, mode: '0755', modifiedAt: new Date(0).toISOString() }];
  };
  const exec = fx.driver.exec.bind(fx.driver);
  fx.driver.exec = async (handle, request: ExecRequest) => {
    if (request.argv[0] === hook) runs.push({ sandboxId: handle.sandboxId, env: request.env });
    return exec(handle, request);
  };
  return runs;
}

function okBranches(result: Awaited<ReturnType<CoreFixture['forks']['fork']>>): SessionRecord[] {
  return result.branches.map((branch) => {
    assert.ok(branch.ok, `branch ${branch.index} failed: ${branch.ok ? '' : branch.error.message}`);
    return branch.session;
  });
}

describe('ForkService', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(() => fx.close());

  it('forks a running session into N running branches with lineage, own disks and fresh identities', async () => {
    const parent = await fx.sessions.create({ contract: fx.contract() });
    writeFileSync(join(await fx.disks.ensureMounted(parent.id), 'task.txt'), 'the task');
    const result = await fx.forks.fork({ sessionId: parent.id }, 3);
    const branches = okBranches(result);
    assert.equal(result.snapshot.reason, 'fork');
    assert.deepEqual(branches.map((b) => b.lineage), [0, 1, 2].map((branchIndex) => ({ parentSessionId: parent.id, snapshotId: result.snapshot.id, branchIndex })));
    for (const branch of branches) {
      assert.equal(branch.state, 'running');
      assert.equal(branch.imageDigest, parent.imageDigest);
      assert.deepEqual(branch.contract, parent.contract);
      assert.equal(readFileSync(join(fx.dir, 'disks', branch.id, 'task.txt'), 'utf8'), 'the task', 'the disk copy came along');
      const records = await fx.store.listAudit(branch.id);
      assert.equal(records[0]?.type, 'session.forked', 'the chain of a branch starts from the fork');
      assert.equal(records[0]?.data['parentSessionId'], parent.id);
      assert.equal(records[0]?.data['branchIndex'], branch.lineage?.branchIndex);
      assert.equal((await fx.audit.verify(fx.store, branch.id, { mustHaveRecords: true })).ok, true);
    }
    const identities = branches.map((b) => fx.driver.identities.get(b.sandbox?.sandboxId ?? ''));
    assert.equal(new Set(identities.map((i) => i?.hostname)).size, 3, 'hostnames differ');
    assert.equal(new Set(identities.map((i) => i?.machineId)).size, 3, 'machine ids differ');
    assert.ok(identities.every((i) => i?.hostname !== parent.id.replace(/_/g, '-')));
    writeFileSync(join(fx.dir, 'disks', branches[0]?.id ?? '', 'only-0.txt'), 'x');
    assert.equal(existsSync(join(fx.dir, 'disks', branches[1]?.id ?? '', 'only-0.txt')), false, 'a write in one branch stays there');
    assert.equal(existsSync(join(fx.dir, 'disks', parent.id, 'only-0.txt')), false);
    assert.equal((await fx.sessions.get(parent.id)).state, 'running', 'the parent runs on');
    const parentTypes = (await fx.store.listAudit(parent.id)).map((r) => r.type);
    for (const type of ['snapshot.created', 'session.fork-started', 'session.fork-completed']) assert.ok(parentTypes.includes(type), type);
  });

  it('runs on-fork hooks in each branch with its index, a fresh seed and the ids, and audits their output', async () => {
    const runs = installHook(fx, 'on-fork');
    const parent = await fx.sessions.create({ contract: fx.contract() });
    const branches = okBranches(await fx.forks.fork({ sessionId: parent.id }, 2));
    assert.equal(runs.length, 2);
    for (const branch of branches) {
      const run = runs.find((r) => r.sandboxId === branch.sandbox?.sandboxId);
      assert.ok(run, `hook ran in ${branch.id}`);
      assert.equal(run.env['AIRLOCK_BRANCH_INDEX'], String(branch.lineage?.branchIndex));
      assert.equal(run.env['AIRLOCK_SESSION_ID'], branch.id);
      assert.equal(run.env['AIRLOCK_PARENT_SESSION_ID'], parent.id);
      assert.equal(run.env['AIRLOCK_HOOK'], 'on-fork');
      assert.match(run.env['AIRLOCK_FORK_SEED'] ?? '', /^[0-9a-f]{64}$/);
      const executed = await fx.store.listAudit(branch.id, { types: ['hook.executed'] });
      assert.equal(executed[0]?.data['stdout'], 'reseeded\n');
      assert.equal(executed[0]?.data['phase'], 'on-fork');
    }
    assert.notEqual(runs[0]?.env['AIRLOCK_FORK_SEED'], runs[1]?.env['AIRLOCK_FORK_SEED']);
  });

  it('runs on-resume hooks after a resume from a snapshot', async () => {
    const runs = installHook(fx, 'on-resume');
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(session.id);
    await fx.sessions.resume(session.id);
    assert.equal(runs.length, 1);
    assert.equal(runs[0]?.env['AIRLOCK_SESSION_ID'], session.id);
    assert.match(runs[0]?.env['AIRLOCK_RESUME_SEED'] ?? '', /^[0-9a-f]{64}$/);
    assert.equal((await fx.store.listAudit(session.id, { types: ['hook.executed'] })).length, 1);
  });

  it('refuses bad counts and sources with clear errors, creating nothing', async () => {
    const small = coreFixture({ maxBranches: 4 });
    try {
      const parent = await small.sessions.create({ contract: small.contract() });
      for (const count of [0, -1, 1.5, 5, Number.NaN]) {
        await assert.rejects(small.forks.fork({ sessionId: parent.id }, count), { code: 'INVALID_ARGUMENTS', message: /from 1 to 4/ });
      }
      assert.equal((await small.sessions.list()).length, 1);
      assert.equal((await small.snapshots.list()).length, 0, 'no snapshot taken for a refused fork');
      await small.sessions.terminate(parent.id);
      await assert.rejects(small.forks.fork({ sessionId: parent.id }, 1), { code: 'INVALID_STATE', message: /terminated/ });
      await assert.rejects(small.forks.fork({ sessionId: 'ses_nothere' }, 1), { code: 'SESSION_NOT_FOUND' });
      await assert.rejects(small.forks.fork({ snapshotId: 'snap_nothere' }, 1), { code: 'SNAPSHOT_NOT_FOUND' });
      const other = await small.sessions.create({ contract: small.contract() });
      const otherSnapshot = await small.snapshots.create(other.id);
      const third = await small.sessions.create({ contract: small.contract() });
      // Another session's snapshot answers exactly as a made-up id (no existence oracle): same code, same message, same details.
      const answer = async (snapshotId: string) => {
        const error = await small.forks.fork({ sessionId: third.id, snapshotId }, 1).then(
          () => assert.fail('the fork ran'),
          (failure: AirlockError) => failure,
        );
        return { code: error.code, message: error.message.replaceAll(snapshotId, 'ID'), details: JSON.stringify(error.details).replaceAll(snapshotId, 'ID') };
      };
      const foreign = await answer(otherSnapshot.id);
      assert.equal(foreign.code, 'SNAPSHOT_NOT_FOUND');
      assert.deepEqual(foreign, await answer('snap_0000000000000000000000000000'));
    } finally {
      await small.close();
    }
  });

  it('refuses a corrupt snapshot before creating any branch', async () => {
    const parent = await fx.sessions.create({ contract: fx.contract() });
    const snapshot = await fx.snapshots.create(parent.id);
    writeFileSync(fx.artifacts.diskPathFor(snapshot.id), JSON.stringify({ 'injected.txt': 'eA==' }));
    await assert.rejects(fx.forks.fork({ snapshotId: snapshot.id }, 3), { code: 'SNAPSHOT_CORRUPT' });
    assert.equal((await fx.sessions.list()).length, 1, 'no branch session was created');
  });

  it('forks a suspended session from its suspend image plus its disk; the parent stays suspended', async () => {
    const parent = await fx.sessions.create({ contract: fx.contract() });
    writeFileSync(join(await fx.disks.ensureMounted(parent.id), 'task.txt'), 'suspended work');
    const suspended = await fx.sessions.suspend(parent.id);
    const result = await fx.forks.fork({ sessionId: parent.id }, 2);
    const branches = okBranches(result);
    assert.equal(result.snapshot.parentSnapshotId, suspended.resumeSnapshotId);
    assert.equal(readFileSync(join(fx.dir, 'disks', branches[1]?.id ?? '', 'task.txt'), 'utf8'), 'suspended work');
    assert.equal((await fx.sessions.get(parent.id)).state, 'suspended');
    // the suspend snapshot, named directly, works the same while it is the resume point
    okBranches(await fx.forks.fork({ snapshotId: suspended.resumeSnapshotId ?? '' }, 1));
    await fx.sessions.resume(parent.id);
    await assert.rejects(fx.forks.fork({ snapshotId: suspended.resumeSnapshotId ?? '' }, 1), { code: 'INVALID_STATE', message: /memory only/ });
  });

  it('reports a branch that fails to restore with its cause and leaves nothing of it; the others are unaffected', async () => {
    const parent = await fx.sessions.create({ contract: fx.contract() });
    const restore = fx.driver.restore.bind(fx.driver);
    let calls = 0;
    fx.driver.restore = async (spec) => {
      calls += 1;
      if (calls === 2) throw new AirlockError('DRIVER_FAILED', 'restoring: runsc exited with 128');
      return restore(spec);
    };
    const result = await fx.forks.fork({ sessionId: parent.id }, 3);
    const failed = result.branches.filter((b) => !b.ok);
    assert.equal(failed.length, 1);
    const failure = failed[0];
    assert.ok(failure && !failure.ok && failure.sessionId);
    const failedId = failure.sessionId;
    assert.equal(failure.error.code, 'DRIVER_FAILED');
    assert.match(failure.error.message, /runsc exited with 128/);
    const record = await fx.sessions.get(failedId);
    assert.equal(record.state, 'failed');
    assert.equal(record.failure?.code, 'DRIVER_FAILED');
    assert.equal(fx.disks.existing().includes(failedId), false, 'its disk is gone');
    assert.equal([...fx.driver.sandboxes.keys()].some((id) => id.includes(failedId)), false, 'no sandbox of it');
    assert.equal(result.branches.filter((b) => b.ok).length, 2);
    const completed = (await fx.store.listAudit(parent.id, { types: ['session.fork-completed'] }))[0];
    assert.equal((completed?.data['failed'] as unknown[]).length, 1);
  });

  it('cleans up a branch whose identity cannot be set', async () => {
    const parent = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.personalize = async () => {
      throw new AirlockError('DRIVER_FAILED', 'setting the hostname failed');
    };
    const result = await fx.forks.fork({ sessionId: parent.id }, 1);
    const branch = result.branches[0];
    assert.ok(branch && !branch.ok);
    assert.equal(fx.driver.sandboxes.size, 1, 'only the parent sandbox is left');
    assert.deepEqual(fx.disks.existing(), [parent.id]);
  });

  it('stops creating branches when the disk is full, and says why', async () => {
    const serial = coreFixture({ concurrency: 1 });
    try {
      const parent = await serial.sessions.create({ contract: serial.contract() });
      const createFrom = serial.disks.createFrom.bind(serial.disks);
      let calls = 0;
      serial.disks.createFrom = async (id, source) => {
        calls += 1;
        if (calls === 2) throw new AirlockError('DISK_FULL', 'creating the disk of a branch: no space left on the host disk');
        return createFrom(id, source);
      };
      const result = await serial.forks.fork({ sessionId: parent.id }, 4);
      assert.deepEqual(result.branches.map((b) => b.ok), [true, false, false, false]);
      assert.equal(calls, 2, 'no disk was attempted after the first DISK_FULL');
      const [, full, ...skipped] = result.branches;
      assert.ok(full && !full.ok && full.sessionId, 'the branch that hit the limit is a failed session');
      assert.equal(full.error.code, 'DISK_FULL');
      for (const branch of skipped) {
        assert.ok(!branch.ok);
        assert.equal(branch.sessionId, null, 'never created');
        assert.equal(branch.error.code, 'DISK_FULL');
        assert.match(branch.error.message, /was not created: the host ran out of disk space while creating branch 1/);
      }
      assert.equal((await serial.sessions.list()).length, 3, 'parent, one branch, one failed branch');
    } finally {
      await serial.close();
    }
  });
});
