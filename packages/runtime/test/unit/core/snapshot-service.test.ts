import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, writeFileSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';

const DAY = 86_400_000;

describe('SnapshotService', () => {
  let fx: CoreFixture;
  beforeEach(() => {
    fx = coreFixture();
  });
  afterEach(() => fx.close());

  it('snapshots memory and disk while the machine is paused, then lets it run on', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    writeFileSync(join(await fx.disks.ensureMounted(session.id), 'notes.txt'), 'before');
    const steps: string[] = [];
    const { driver, disks } = fx;
    const pause = driver.pause.bind(driver);
    const unpause = driver.unpause.bind(driver);
    const checkpoint = driver.checkpoint.bind(driver);
    const snapshotDisk = disks.snapshot.bind(disks);
    driver.pause = async (handle) => (steps.push('pause'), pause(handle));
    driver.unpause = async (handle) => (steps.push('unpause'), unpause(handle));
    driver.checkpoint = async (handle, dir, options) => {
      steps.push(`checkpoint:${driver.sandboxes.get(handle.sandboxId)}:${options.leaveRunning}`);
      return checkpoint(handle, dir, options);
    };
    disks.snapshot = async (id, dest) => (steps.push(`disk:${driver.sandboxes.get(session.sandbox?.sandboxId ?? '')}`), snapshotDisk(id, dest));

    const snapshot = await fx.snapshots.create(session.id, { name: 'step-37' });
    assert.deepEqual(steps, ['pause', 'checkpoint:paused:true', 'disk:paused', 'unpause']);
    assert.equal(snapshot.name, 'step-37');
    assert.equal(snapshot.reason, 'manual');
    assert.equal(snapshot.sessionId, session.id);
    assert.equal(snapshot.imageDigest, session.imageDigest);
    assert.equal(snapshot.contractVersion, 1);
    assert.equal(snapshot.expiresAt, null, 'no retention in the contract: kept until removed');
    assert.match(snapshot.checksum, /^sha256:[0-9a-f]{64}$/);
    assert.ok(snapshot.sizeBytes > 0);
    assert.deepEqual(readdirSync(fx.artifacts.pathFor(snapshot.id)).sort(), ['checkpoint.img', 'disk.ext4']);
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
    assert.equal(driver.sandboxes.get(session.sandbox?.sandboxId ?? ''), 'running');
    const created = await fx.store.listAudit(session.id, { types: ['snapshot.created'] });
    assert.equal(created.length, 1);
    assert.equal(created[0]?.data['snapshotId'], snapshot.id);
    assert.equal(typeof created[0]?.data['pausedMs'], 'number');
  });

  it('leaves a paused machine paused', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.pause(session.id);
    await fx.snapshots.create(session.id);
    assert.equal(fx.driver.sandboxes.get(session.sandbox?.sandboxId ?? ''), 'paused');
  });

  it('covers memory and disk with its checksum: altering or truncating either is refused', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    writeFileSync(join(await fx.disks.ensureMounted(session.id), 'notes.txt'), 'x'.repeat(1000));
    const first = await fx.snapshots.create(session.id);
    const second = await fx.snapshots.create(session.id);
    await fx.artifacts.verify(first.id, first.checksum);
    truncateSync(fx.artifacts.diskPathFor(first.id), 10);
    await assert.rejects(fx.artifacts.verify(first.id, first.checksum), { code: 'SNAPSHOT_CORRUPT' });
    writeFileSync(join(fx.artifacts.pathFor(second.id), 'checkpoint.img'), 'tampered');
    await assert.rejects(fx.artifacts.verify(second.id, second.checksum), { code: 'SNAPSHOT_CORRUPT' });
  });

  it('expires snapshots by the contract retention: bytes deleted, audited, no longer restorable', async () => {
    const session = await fx.sessions.create({ contract: fx.contract({ retention: { snapshotDays: 2 } }) });
    const snapshot = await fx.snapshots.create(session.id);
    assert.equal(Date.parse(snapshot.expiresAt ?? ''), Date.parse(snapshot.createdAt) + 2 * DAY);
    assert.deepEqual(await fx.snapshots.sweepExpired(), [], 'nothing expires early');
    fx.clock.advance(2 * DAY + 1);
    assert.deepEqual(await fx.snapshots.sweepExpired(), [snapshot.id]);
    assert.equal(existsSync(fx.artifacts.pathFor(snapshot.id)), false, 'bytes deleted');
    assert.ok((await fx.snapshots.get(snapshot.id)).deletedAt, 'the record stays, marked');
    const expired = await fx.store.listAudit(session.id, { types: ['snapshot.expired'] });
    assert.equal(expired[0]?.data['snapshotId'], snapshot.id);
    await assert.rejects(fx.snapshots.restorable(snapshot.id), { code: 'SNAPSHOT_NOT_FOUND', message: /expired/ });
    await assert.rejects(fx.forks.fork({ snapshotId: snapshot.id }, 1), { code: 'SNAPSHOT_NOT_FOUND', message: /expired/ });
  });

  it('lists suspend snapshots too, refuses to remove a resume point, removes the others', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const manual = await fx.snapshots.create(session.id, { name: 'kept' });
    const suspended = await fx.sessions.suspend(session.id);
    const listed = await fx.snapshots.list({ sessionId: session.id });
    assert.deepEqual(listed.map((s) => s.reason).sort(), ['manual', 'suspend']);
    await assert.rejects(fx.snapshots.remove(suspended.resumeSnapshotId ?? ''), { code: 'INVALID_STATE', message: /resumes from/ });
    const removed = await fx.snapshots.remove(manual.id);
    assert.ok(removed.deletedAt);
    assert.equal(existsSync(fx.artifacts.pathFor(manual.id)), false);
    assert.deepEqual((await fx.snapshots.list({ sessionId: session.id })).map((s) => s.reason), ['suspend']);
    assert.equal((await fx.snapshots.list({ sessionId: session.id, includeDeleted: true })).length, 2);
    assert.equal((await fx.store.listAudit(session.id, { types: ['snapshot.deleted'] })).length, 1);
    await assert.rejects(fx.forks.fork({ snapshotId: manual.id }, 1), { code: 'SNAPSHOT_NOT_FOUND', message: /deleted/ });
    await assert.rejects(fx.snapshots.get('snap_nothere'), { code: 'SNAPSHOT_NOT_FOUND' });
  });

  it('refuses snapshots of machines that are not live, with the way out in the message', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    await fx.sessions.suspend(session.id);
    await assert.rejects(fx.snapshots.create(session.id), { code: 'INVALID_STATE', message: /fork it directly/ });
    await fx.sessions.terminate(session.id);
    await assert.rejects(fx.snapshots.create(session.id), { code: 'INVALID_STATE', message: /terminated/ });
    const perCall = await fx.sessions.create({ contract: fx.contract(), mode: 'per-call' });
    await assert.rejects(fx.snapshots.create(perCall.id), { code: 'INVALID_STATE', message: /no machine/ });
  });

  it('keeps the session running and keeps nothing when the checkpoint or the disk copy fails', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.disks.snapshot = async () => {
      throw Object.assign(new Error('No space left on device'), { code: 'ENOSPC' });
    };
    await assert.rejects(fx.snapshots.create(session.id), /snapshot of session .* failed, nothing was kept/);
    assert.equal(fx.driver.sandboxes.get(session.sandbox?.sandboxId ?? ''), 'running', 'thawed after the failure');
    assert.equal((await fx.sessions.get(session.id)).state, 'running');
    assert.deepEqual(readdirSync(join(fx.dir, 'snapshots')), [], 'no half snapshot left');
    assert.equal((await fx.snapshots.list()).length, 0);
    assert.equal((await fx.store.listAudit(session.id, { types: ['snapshot.failed'] })).length, 1);
  });
});
