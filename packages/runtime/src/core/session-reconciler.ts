/**
 * Reconciliation after a restart of the control plane (clean or `kill -9`).
 * The store says what each session should be; the host says what exists.
 * Half-done operations are finished or rolled back, running machines are
 * adopted, and anything on the host that no session owns is removed.
 */
import type { SandboxDriver, SandboxHandle, SandboxListing } from './sandbox-driver.js';
import type { SandboxDrivers } from './sandbox-drivers.js';
import type { SandboxSpecs } from './sandbox-specs.js';
import type { SessionDisks } from './session-disks.js';
import type { SnapshotArtifacts } from './snapshot-artifacts.js';
import type { Store } from './store.js';
import type { SessionRecord } from './session.js';
import type { SessionRecords } from './session-records.js';
import type { SnapshotDisposal } from './snapshot-disposal.js';
import type { AuditLog } from '../audit/audit-log.js';
import { isAirlockError, toAirlockError } from './errors.js';

/** Something reconciliation could not fix: the server starts anyway and reports it. */
export interface ReconcileProblem {
  /** what it was about: a session id, `sandbox:<id>`, `disk:<session>`, `snapshot:<id>` */
  item: string;
  code: string;
  message: string;
}

/** What reconciliation did, for the server's start-up log. */
export interface ReconcileReport {
  adopted: string[];
  rolledBack: string[];
  completed: string[];
  failed: string[];
  orphansRemoved: string[];
  /** items left as they were because fixing them failed; each is also in the system audit chain */
  problems: ReconcileProblem[];
}

/** What reconciliation works with. */
export interface ReconcileDeps {
  store: Store;
  audit: AuditLog;
  records: SessionRecords;
  disposal: SnapshotDisposal;
  drivers: SandboxDrivers;
  specs: SandboxSpecs;
  disks: SessionDisks;
  artifacts: SnapshotArtifacts;
}

/**
 * Brings the store and the host into agreement. Never throws: each session,
 * sandbox, disk and snapshot is handled on its own, and what cannot be fixed
 * is reported (and audited) instead of stopping the server from starting.
 * Only this server's sessions are touched: sessions of other servers sharing
 * the store live on their hosts, and their records are theirs to change.
 */
export async function reconcileSessions(deps: ReconcileDeps): Promise<ReconcileReport> {
  const { store, audit, records, disposal, drivers, specs, disks, artifacts } = deps;
  const owner = records.owner;
  const report: ReconcileReport = { adopted: [], rolledBack: [], completed: [], failed: [], orphansRemoved: [], problems: [] };

  /** Runs one repair; a failure becomes a reported problem instead of an abort. */
  async function attempt(item: string, repair: () => Promise<void>): Promise<void> {
    try {
      await repair();
    } catch (error) {
      const failure = toAirlockError(error);
      report.problems.push({ item, code: failure.code, message: failure.message });
      try {
        await audit.appendNow(store, { sessionId: '', type: 'reconcile.problem-found', data: { item, code: failure.code, message: failure.message } });
      } catch {
        // the report still carries it
      }
    }
  }

  let live: SessionRecord[] = [];
  await attempt('sessions', async () => {
    live = (await store.listSessions({ owner })).filter((session) => session.state !== 'terminated' || session.pendingOperation);
  });
  for (const session of live) {
    await attempt(session.id, async () => {
      try {
        await reconcileOne(session);
      } catch (error) {
        // Object storage down says nothing about the session: it stays as it was, and the problem is reported.
        if (isAirlockError(error, 'OBJECT_STORAGE_UNAVAILABLE')) throw error;
        const failure = toAirlockError(error);
        await records.transition(
          session.id,
          'fail',
          { type: 'session.reconciled', data: { outcome: 'failed', code: failure.code, message: failure.message } },
          { failure: { code: failure.code, message: failure.message } },
        );
        report.failed.push(session.id);
      }
    });
  }

  // Sandboxes, of every driver on this host: what no session's record holds is an orphan (a crash mid-create, mid-restore, a per-call run).
  const owned = new Set<string>();
  await attempt('sessions', async () => {
    for (const session of await store.listSessions()) if (session.sandbox && session.state !== 'terminated') owned.add(session.sandbox.sandboxId);
  });
  for (const driver of drivers.all()) {
    let listings: SandboxListing[] = [];
    await attempt(`sandboxes:${driver.name}`, async () => {
      listings = await driver.list();
    });
    for (const sandbox of listings) {
      if (owned.has(sandbox.sandboxId)) continue;
      await attempt(`sandbox:${sandbox.sandboxId}`, async () => {
        await driver.destroy({ sandboxId: sandbox.sandboxId, sessionId: sandbox.sessionId ?? '', driver: driver.name, driverData: {} });
        report.orphansRemoved.push(sandbox.sandboxId);
      });
    }
  }

  // Failed sessions keep their disk: it is what a user recovers their work from.
  let disksOnHost: string[] = [];
  await attempt('disks', async () => {
    disksOnHost = await disks.list();
  });
  const withDisks = new Set<string>();
  await attempt('sessions', async () => {
    for (const session of await store.listSessions()) if (session.state !== 'terminated') withDisks.add(session.id);
  });
  for (const sessionId of disksOnHost) {
    if (withDisks.has(sessionId)) {
      // A crash while a snapshot or fork copied this disk leaves it frozen: every write of the session would hang.
      await attempt(`disk:${sessionId}`, () => disks.thaw(sessionId));
      continue;
    }
    await attempt(`disk:${sessionId}`, async () => {
      await disks.destroy(sessionId);
      report.orphansRemoved.push(`disk:${sessionId}`);
    });
  }

  await attempt('snapshots', async () => {
    for (const name of await artifacts.sweepIncomplete()) report.orphansRemoved.push(`snapshot:${name}`);
  });
  // A crash right after a suspend was recorded leaves the image it superseded: nothing resumes from it.
  let superseded: string[] = [];
  await attempt('snapshots', async () => {
    // Only this server's sessions: another server's snapshots are on its host.
    const current = new Map((await store.listSessions({ owner })).map((session) => [session.id, session.resumeSnapshotId]));
    superseded = (await store.listSnapshots())
      .filter((snapshot) => snapshot.reason === 'suspend' && !snapshot.deletedAt && current.has(snapshot.sessionId) && current.get(snapshot.sessionId) !== snapshot.id)
      .map((snapshot) => snapshot.id);
  });
  for (const snapshotId of superseded) {
    await attempt(`snapshot:${snapshotId}`, async () => {
      await disposal.drop(snapshotId, 'superseded');
      report.completed.push(`snapshot:${snapshotId}`);
    });
  }
  let snapshotsOnHost: string[] = [];
  await attempt('snapshots', async () => {
    snapshotsOnHost = await artifacts.list();
  });
  const keptSnapshots = new Set<string>();
  await attempt('snapshots', async () => {
    for (const snapshot of await store.listSnapshots()) if (!snapshot.deletedAt) keptSnapshots.add(snapshot.id);
  });
  for (const snapshotId of snapshotsOnHost) {
    if (keptSnapshots.has(snapshotId)) continue;
    await attempt(`snapshot:${snapshotId}`, async () => {
      await artifacts.remove(snapshotId);
      report.orphansRemoved.push(`snapshot:${snapshotId}`);
    });
  }
  return report;

  async function reconcileOne(session: SessionRecord): Promise<void> {
    const handle: SandboxHandle | null = session.sandbox;
    const driver: SandboxDriver = drivers.forSession(session);
    const status = handle ? await driver.status(handle) : 'missing';
    const alive = status === 'running' || status === 'paused';
    switch (session.pendingOperation) {
      case 'create': {
        if (handle) await driver.destroy(handle);
        await disks.destroy(session.id);
        await records.transition(
          session.id,
          'fail',
          { type: 'session.reconciled', data: { outcome: 'failed', interrupted: 'create' } },
          { sandbox: null, failure: { code: 'INTERNAL', message: 'the server stopped while the session was being created' } },
        );
        report.failed.push(session.id);
        return;
      }
      case 'suspend': {
        const snapshotId = await pendingSnapshotId(store, session.id);
        const imageComplete = snapshotId !== undefined && (await artifacts.list()).includes(snapshotId);
        // A machine still paused with its whole image written is finished as a suspend, not rolled back: the
        // crash may have come while it was being destroyed, with the agent's shutdown order already in its
        // socket, which a thaw would deliver (the machine would end right after being called running).
        if (alive && !(status === 'paused' && imageComplete)) {
          if (snapshotId) await artifacts.remove(snapshotId);
          if (status === 'paused' && handle) await driver.unpause(handle);
          await records.transition(session.id, 'cancel-suspend', { type: 'session.reconciled', data: { outcome: 'running', interrupted: 'suspend', action: 'rolled back' } });
          report.rolledBack.push(session.id);
          return;
        }
        if (snapshotId && imageComplete) {
          const { checksum, sizeBytes } = await artifacts.seal(snapshotId, { liveDiskOf: session.id });
          if (handle) await driver.destroy(handle);
          await store.transaction(async (tx) => {
            await tx.insertSnapshot({
              id: snapshotId, sessionId: session.id, name: null, parentSnapshotId: session.resumeSnapshotId,
              imageName: session.imageName, imageDigest: session.imageDigest, contractVersion: session.contractVersion,
              reason: 'suspend', path: artifacts.pathFor(snapshotId), sizeBytes, checksum,
              createdAt: records.now().toISOString(), expiresAt: null, deletedAt: null,
            });
            await records.transition(
              session.id,
              'finish-suspend',
              { type: 'session.reconciled', data: { outcome: 'suspended', interrupted: 'suspend', action: 'completed', snapshotId } },
              { sandbox: null, resumeSnapshotId: snapshotId },
              { tx },
            );
          });
          report.completed.push(session.id);
          return;
        }
        break;
      }
      case 'resume': {
        // The restore never reported success, so nothing was acknowledged: go back to the snapshot.
        // The half-restored sandbox has no handle in the record: the orphan sweep below removes it.
        await records.transition(session.id, 'cancel-resume', { type: 'session.reconciled', data: { outcome: 'suspended', interrupted: 'resume', action: 'rolled back' } }, { sandbox: null });
        report.rolledBack.push(session.id);
        return;
      }
      case 'restart': {
        // The old machine may be gone and the new one never recorded (the orphan sweep below removes it):
        // the disk is all that is sure, so the session says so and can be restarted again.
        if (handle) await driver.destroy(handle);
        await records.transition(
          session.id,
          'fail',
          { type: 'session.reconciled', data: { outcome: 'failed', interrupted: 'restart' } },
          { sandbox: null, failure: { code: 'INTERNAL', message: 'the server stopped while the machine was being restarted; its disk is kept: restart it again' } },
        );
        report.failed.push(session.id);
        return;
      }
      case 'terminate': {
        if (handle) await driver.destroy(handle);
        await disks.destroy(session.id);
        for (const snapshot of await store.listSnapshots({ sessionId: session.id })) await disposal.drop(snapshot.id, 'session-terminated');
        await records.transition(
          session.id,
          'finish-terminate',
          { type: 'session.reconciled', data: { outcome: 'terminated', interrupted: 'terminate', action: 'completed' } },
          { sandbox: null, resumeSnapshotId: null },
        );
        report.completed.push(session.id);
        return;
      }
      default:
        break;
    }
    if (session.state === 'suspended' && session.resumeSnapshotId && (await artifacts.has(session.resumeSnapshotId))) {
      if (session.pendingOperation) await records.transition(session.id, 'settle-suspended', { type: 'session.reconciled', data: { outcome: 'suspended' } });
      return;
    }
    if (session.mode === 'per-call' && session.state === 'running') {
      await specs.diskVolume(driver, session.id);
      report.adopted.push(session.id);
      return;
    }
    if ((session.state === 'running' || session.state === 'paused') && alive) {
      // A microVM holds its disk as a block device: it must stay unmounted on the host.
      await specs.diskVolume(driver, session.id);
      const state = status === 'paused' ? 'paused' : 'running';
      if (state !== session.state || session.pendingOperation) {
        await records.transition(session.id, state === 'paused' ? 'adopt-paused' : 'adopt-running', { type: 'session.reconciled', data: { outcome: state, action: 'adopted' } });
      }
      report.adopted.push(session.id);
      return;
    }
    if (session.state === 'failed' && !session.pendingOperation) return;
    // Still silent, or not: a degraded session stays so until a restart (its cause is in the record).
    if (session.state === 'degraded' && !session.pendingOperation && alive) {
      report.adopted.push(session.id);
      return;
    }
    if (handle) await driver.destroy(handle);
    await records.transition(
      session.id,
      'fail',
      { type: 'session.reconciled', data: { outcome: 'failed', sandboxStatus: status } },
      { sandbox: null, failure: { code: 'SANDBOX_DIED', message: 'the machine stopped while the server was down; its disk is kept' } },
    );
    report.failed.push(session.id);
  }
}

async function pendingSnapshotId(store: Store, sessionId: string): Promise<string | undefined> {
  const started = (await store.listAudit(sessionId, { types: ['session.suspend-started'] })).at(-1);
  const id = started?.data['snapshotId'];
  return typeof id === 'string' ? id : undefined;
}

