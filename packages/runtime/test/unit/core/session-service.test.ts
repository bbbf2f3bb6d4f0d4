import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, readdirSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { AirlockError } from '../../../src/core/errors.js';

describe('SessionService', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(() => fx.close());

  it('creates, suspends, resumes and terminates, recording each step in a valid chain', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    assert.equal(session.state, 'running');
    assert.ok(session.sandbox);
    const suspended = await fx.sessions.suspend(session.id);
    assert.equal(suspended.state, 'suspended');
    assert.equal(suspended.sandbox, null);
    assert.equal(fx.driver.sandboxes.size, 0, 'no sandbox while suspended');
    const resumed = await fx.sessions.resume(session.id);
    assert.equal(resumed.state, 'running');
    assert.equal(resumed.generation, 2);
    const terminated = await fx.sessions.terminate(session.id);
    assert.equal(terminated.state, 'terminated');
    assert.deepEqual(readdirSync(join(fx.dir, 'snapshots')), [], 'memory images are destroyed');
    const records = await fx.store.listAudit(session.id);
    assert.deepEqual(
      records.map((r) => r.type).filter((t) => !t.endsWith('-started')),
      ['session.created', 'session.started', 'session.suspended', 'session.resumed', 'snapshot.deleted', 'session.terminated'],
    );
    const verified = await fx.audit.verify(fx.store, session.id, { mustHaveRecords: true });
    assert.equal(verified.ok, true, JSON.stringify(verified.problem));
    assert.equal(verified.authenticity, 'keyed');
  });

  it('refuses transitions from the wrong state and changes nothing', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await assert.rejects(fx.sessions.resume(session.id), { code: 'INVALID_STATE' });
    await fx.sessions.suspend(session.id);
    await assert.rejects(fx.sessions.suspend(session.id), { code: 'INVALID_STATE' });
    await fx.sessions.terminate(session.id);
    await assert.rejects(fx.sessions.resume(session.id), { code: 'INVALID_STATE' });
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['true'] }), { code: 'INVALID_STATE' });
    await assert.rejects(fx.sessions.get('ses_nope'), { code: 'SESSION_NOT_FOUND' });
  });

  it('keeps the session running when a checkpoint fails', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.checkpoint = async () => {
      throw Object.assign(new Error('No space left on device'), { code: 'ENOSPC' });
    };
    await assert.rejects(fx.sessions.suspend(session.id), /suspend of session/);
    const after = await fx.sessions.get(session.id);
    assert.equal(after.state, 'running');
    assert.equal(after.pendingOperation, null);
    const left = existsSync(join(fx.dir, 'snapshots')) ? readdirSync(join(fx.dir, 'snapshots')) : [];
    assert.deepEqual(left, [], 'no half snapshot is left behind');
  });

  it('keeps the machine running, not paused, when sealing (uploading) the image fails, and says why', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const seen: string[] = [];
    fx.artifacts.seal = async (snapshotId, options) => {
      seen.push(`seal:${fx.driver.sandboxes.get(session.sandbox?.sandboxId ?? '')}:${options?.liveDiskOf ?? ''}`);
      throw new AirlockError('OBJECT_STORAGE_UNAVAILABLE', `object storage s3://bucket: writing ${snapshotId} failed: cannot reach it`);
    };
    await assert.rejects(fx.sessions.suspend(session.id), (error: AirlockError) => {
      assert.equal(error.code, 'OBJECT_STORAGE_UNAVAILABLE');
      assert.match(error.message, /^suspend of session .* failed: object storage/);
      assert.equal(error.details['stillRunning'], true);
      return true;
    });
    assert.deepEqual(seen, [`seal:paused:${session.id}`], 'the machine was paused, not stopped, while its image was sealed');
    assert.equal(fx.driver.sandboxes.get(session.sandbox?.sandboxId ?? ''), 'running');
    const after = await fx.sessions.get(session.id);
    assert.equal(after.state, 'running');
    assert.equal(after.pendingOperation, null);
    const failed = await fx.store.listAudit(session.id, { types: ['session.suspend-failed'] });
    assert.equal(failed.at(-1)?.data['code'], 'OBJECT_STORAGE_UNAVAILABLE');
    assert.equal(failed.at(-1)?.data['stillRunning'], true);
    assert.deepEqual(readdirSync(join(fx.dir, 'snapshots')), [], 'no half snapshot is left behind');
    // and the session goes on: the next call runs on the same machine
    assert.equal((await fx.pipeline.submit(session.id, 'exec', { argv: ['true'] })).status, 'completed');
  });

  it('refuses to resume over an image whose digest changed since the suspend, and stays suspended', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(session.id);
    (fx.images.image as { digest: string }).digest = 'sha256:other-bytes';
    await assert.rejects(fx.sessions.resume(session.id), {
      code: 'INVALID_STATE',
      message: /suspended on sha256:test; its memory cannot run on another root filesystem/,
    });
    assert.equal((await fx.sessions.get(session.id)).state, 'suspended');
  });

  it('refuses to resume from a snapshot altered on disk, and stays suspended', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const suspended = await fx.sessions.suspend(session.id);
    writeFileSync(join(fx.artifacts.pathFor(suspended.resumeSnapshotId ?? ''), 'checkpoint.img'), 'tampered');
    await assert.rejects(fx.sessions.resume(session.id), { code: 'SNAPSHOT_CORRUPT' });
    assert.equal((await fx.sessions.get(session.id)).state, 'suspended');
    // The image was checked while the machine restored from it: that machine is gone, and no call reached it.
    assert.equal(fx.driver.sandboxes.size, 0, 'the machine restored from the altered image was destroyed');
    assert.deepEqual(
      fx.driver.execs.map((exec) => exec.argv.join(' ')),
      [],
      'nothing ran in it',
    );
    const failed = await fx.store.listAudit(session.id, { types: ['session.resume-failed'] });
    assert.equal(failed.at(-1)?.data['code'], 'SNAPSHOT_CORRUPT');
  });

  it('restores a session with a network only after its image was verified', async () => {
    const restores: string[] = [];
    const verify = fx.artifacts.verify.bind(fx.artifacts);
    fx.artifacts.verify = async (snapshotId, checksum) => {
      const verified = await verify(snapshotId, checksum);
      restores.push('verified');
      return verified;
    };
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(session.id);
    await fx.forceRecord(session.id, { contract: { ...session.contract, network: { allowedDomains: ['example.org'] } } as typeof session.contract });
    const restore = fx.driver.restore.bind(fx.driver);
    fx.driver.restore = async (spec) => {
      restores.push('restore');
      return restore(spec);
    };
    await fx.sessions.resume(session.id).catch(() => undefined);
    assert.deepEqual(restores.slice(0, 2), ['verified', 'restore'], 'verified before any machine existed');
  });

  it('wakes a suspended session transparently on the next tool call', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(session.id);
    const outcome = await fx.pipeline.submit(session.id, 'exec', { argv: ['echo', 'hi'] });
    assert.equal(outcome.status, 'completed');
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
  });

  it('reconciles after a crash: an interrupted suspend whose image is complete becomes suspended, orphans are removed', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    // simulate a crash after the checkpoint completed but before it was recorded
    const snapshotId = 'snap_crashed0000000000';
    await fx.records.transition(session.id, 'begin-suspend', { type: 'session.suspend-started', data: { snapshotId } });
    const handle = (await fx.sessions.get(session.id)).sandbox;
    assert.ok(handle);
    await fx.driver.checkpoint(handle, fx.artifacts.pathFor(snapshotId), { leaveRunning: false });
    await fx.driver.start({
      sandboxId: 'airlock-ses_orphan-g1',
      sessionId: 'ses_orphan',
      rootfs: { kind: 'directory', path: '' },
      disk: { kind: 'directory', path: '' },
      stateDir: '',
      hostname: '',
      resources: { cpus: 1, memoryMb: 1, diskMb: 1, maxProcesses: 1 },
      env: {},
    });
    const report = await fx.reconcile();
    assert.deepEqual(report.completed, [session.id]);
    assert.ok(report.orphansRemoved.includes('airlock-ses_orphan-g1'));
    const after = await fx.sessions.get(session.id);
    assert.equal(after.state, 'suspended');
    assert.equal(after.resumeSnapshotId, snapshotId);
    assert.equal((await fx.sessions.resume(session.id)).state, 'running');
  });

  it('reconciles a suspend cut while its paused machine was being destroyed: finished from the complete image, never thawed', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const snapshotId = 'snap_crashedpaused00000';
    await fx.records.transition(session.id, 'begin-suspend', { type: 'session.suspend-started', data: { snapshotId } });
    const handle = (await fx.sessions.get(session.id)).sandbox;
    assert.ok(handle);
    await fx.driver.pause(handle);
    await fx.driver.checkpoint(handle, fx.artifacts.pathFor(snapshotId), { leaveRunning: true });
    let thawed = 0;
    fx.driver.unpause = async () => void thawed++;
    const report = await fx.reconcile();
    assert.deepEqual(report.completed, [session.id]);
    assert.equal(thawed, 0, 'a machine whose shutdown may be queued is never thawed');
    assert.equal((await fx.sessions.get(session.id)).state, 'suspended');
    assert.equal(fx.driver.sandboxes.has(handle.sandboxId), false);
  });

  it('reconciles a suspend cut after its machine ran again: rolled back to running, the image dropped', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const snapshotId = 'snap_crashedrunning0000';
    await fx.records.transition(session.id, 'begin-suspend', { type: 'session.suspend-started', data: { snapshotId } });
    const handle = (await fx.sessions.get(session.id)).sandbox;
    assert.ok(handle);
    await fx.driver.checkpoint(handle, fx.artifacts.pathFor(snapshotId), { leaveRunning: true });
    const report = await fx.reconcile();
    assert.deepEqual(report.rolledBack, [session.id]);
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
  });

  it('reconciles item by item: a sandbox that cannot be destroyed is reported and audited, and the rest is still repaired', async () => {
    const kept = await fx.sessions.create({ contract: fx.contract() });
    const crashedCreate = await fx.sessions.create({ contract: fx.contract() });
    // A crash mid-create: the record says so and its sandbox exists, but the handle was never stored.
    await fx.forceRecord(crashedCreate.id, { pendingOperation: 'create', sandbox: null });
    await fx.driver.start({
      sandboxId: 'stuck-sandbox',
      sessionId: 'ses_gone',
      rootfs: { kind: 'directory', path: '' },
      disk: { kind: 'directory', path: '' },
      stateDir: '',
      hostname: '',
      resources: { cpus: 1, memoryMb: 1, diskMb: 1, maxProcesses: 1 },
      env: {},
    });
    const destroy = fx.driver.destroy.bind(fx.driver);
    fx.driver.destroy = async (handle) => {
      if (handle.sandboxId === 'stuck-sandbox') throw new AirlockError('DRIVER_FAILED', 'runsc delete timed out');
      return destroy(handle);
    };
    // What an interrupted checkpoint and an interrupted seal leave in the snapshot folder.
    mkdirSync(join(fx.dir, 'snapshots', 'snap_half0000000000.partial-0a1b2c3d'), { recursive: true });
    writeFileSync(join(fx.dir, 'snapshots', 'snap_sealonly000000.seal.json'), '{}');
    const report = await fx.reconcile();
    assert.deepEqual(
      report.problems.map((problem) => [problem.item, problem.code]),
      [['sandbox:stuck-sandbox', 'DRIVER_FAILED']],
    );
    assert.deepEqual(report.failed, [crashedCreate.id]);
    assert.equal((await fx.sessions.get(crashedCreate.id)).state, 'failed');
    assert.ok(report.orphansRemoved.includes(crashedCreate.sandbox?.sandboxId ?? ''), 'the sandbox of the interrupted create is removed without its handle');
    assert.equal((await fx.sessions.get(kept.id)).state, 'running');
    assert.deepEqual(readdirSync(join(fx.dir, 'snapshots')), [], 'half-written images and stray seals are swept');
    const audited = await fx.store.listAudit('', { types: ['reconcile.problem-found'] });
    assert.equal(audited.at(-1)?.data['item'], 'sandbox:stuck-sandbox');
  });

  it('reconciles after a crash: a running session whose machine is gone is marked failed, not lost silently', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.sandboxes.clear();
    const report = await fx.reconcile();
    assert.deepEqual(report.failed, [session.id]);
    assert.equal((await fx.sessions.get(session.id)).failure?.code, 'SANDBOX_DIED');
  });

  it('marks a session failed when its machine dies under a call; later machine calls are refused with the cause, its files stay reachable per call', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.driver.exec = async () => {
      throw new AirlockError('SANDBOX_DIED', 'sandbox airlock-x is dead');
    };
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['kill', '-9', '1'] }), { code: 'SANDBOX_DIED' });
    const failed = await fx.sessions.get(session.id);
    assert.equal(failed.state, 'failed');
    assert.equal(failed.failure?.code, 'SANDBOX_DIED');
    await assert.rejects(fx.pipeline.submit(session.id, 'exec', { argv: ['true'] }), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'INVALID_STATE');
      assert.match(error.message, /it failed \(sandbox airlock-x is dead\)\. Its disk is kept: the files API and `exec --ephemeral` still reach it/);
      return true;
    });
    // Recovery: the files of the dead machine, each call in a fresh sandbox over its disk (the real read is in the e2e tests).
    const before = fx.driver.execs.length;
    const filesBefore = fx.driver.files.calls.length;
    await fx.disks.ensureMounted(session.id).then((dir) => {
      mkdirSync(join(dir, 'workspace'), { recursive: true });
      writeFileSync(join(dir, 'workspace', 'work.txt'), 'kept');
    });
    assert.equal((await fx.pipeline.submit(session.id, 'files.read', { path: '/workspace/work.txt' })).status, 'completed');
    assert.equal((await fx.pipeline.submit(session.id, 'exec', { argv: ['ls', '/workspace'], ephemeral: true })).status, 'completed');
    const recoveries = [...fx.driver.execs.slice(before), ...fx.driver.files.calls.slice(filesBefore)];
    assert.ok(recoveries.length >= 3 && recoveries.every((call) => call.sandboxId.includes('-run-')), JSON.stringify(recoveries));
    assert.equal((await fx.sessions.terminate(session.id)).state, 'terminated');
  });
});
