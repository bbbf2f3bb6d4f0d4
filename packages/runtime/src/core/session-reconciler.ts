/**
 * Reconciliation after a restart of the control plane (clean or `kill -9`).
 * The store says what each session should be; the host says what exists.
 * Half-done operations are finished or rolled back, running machines are
 * adopted, and anything on the host that no session owns is removed.
 */
import type { SandboxDriver, SandboxHandle } from './sandbox-driver.js';
import type { SessionDisks } from './session-disks.js';
import type { SnapshotArtifacts } from './snapshot-artifacts.js';
import type { Store } from './store.js';
import type { SessionRecord } from './session.js';
import type { SessionService } from './session-service.js';
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

/**
 * Brings the store and the host into agreement. Never throws: each session,
 * sandbox, disk and snapshot is handled on its own, and what cannot be fixed
 * is reported (and audited) instead of stopping the server from starting.
 */
export async function reconcileSessions(deps: {
  store: Store;
  driver: SandboxDriver;
  disks: SessionDisks;
  artifacts: SnapshotArtifacts;
  sessions: SessionService;
}): Promise<ReconcileReport> {
  const { store, driver, disks, artifacts, sessions } = deps;
  const report: ReconcileReport = { adopted: [], rolledBack: [], completed: [], failed: [], orphansRemoved: [], problems: [] };

  /** Runs one repair; a failure becomes a reported problem instead of an abort. */
  async function attempt(item: string, repair: () => Promise<void>): Promise<void> {
    try {
      await repair();
    } catch (error) {
      const failure = toAirlockError(error);
      report.problems.push({ item, code: failure.code, message: failure.message });
      try {
        store.appendAudit({ sessionId: '', type: 'reconcile.problem-found', data: { item, code: failure.code, message: failure.message } });
      } catch {
        // the report still carries it
      }
    }
  }

  let live: SessionRecord[] = [];
  await attempt('sessions', async () => {
    live = store.listSessions().filter((session) => session.state !== 'terminated' || session.pendingOperation);
  });
  for (const session of live) {
    await attempt(session.id, async () => {
      try {
        await reconcileOne(session);
      } catch (error) {
        // Object storage down says nothing about the session: it stays as it was, and the problem is reported.
        if (isAirlockError(error, 'OBJECT_STORAGE_UNAVAILABLE')) throw error;
        const failure = toAirlockError(error);
        sessions.commit(session, { state: 'failed', pendingOperation: null, failure: { code: failure.code, message: failure.message } }, 'session.reconciled', {
          outcome: 'failed',
          code: failure.code,
          message: failure.message,
        });
        report.failed.push(session.id);
      }
    });
  }

  // Sandboxes: what no session's record holds is an orphan (a crash mid-create, mid-restore, a per-call run).
  let listings: Awaited<ReturnType<SandboxDriver['list']>> = [];
  await attempt('sandboxes', async () => {
    listings = await driver.list();
  });
  const owned = new Set<string>();
  await attempt('sessions', async () => {
    for (const session of store.listSessions()) if (session.sandbox && session.state !== 'terminated') owned.add(session.sandbox.sandboxId);
  });
  for (const sandbox of listings) {
    if (owned.has(sandbox.sandboxId)) continue;
    await attempt(`sandbox:${sandbox.sandboxId}`, async () => {
      await driver.destroy({ sandboxId: sandbox.sandboxId, sessionId: sandbox.sessionId ?? sessionIdOf(sandbox.sandboxId), driverData: {} });
      report.orphansRemoved.push(sandbox.sandboxId);
    });
  }

  // Failed sessions keep their disk: it is what a user recovers their work from.
  let disksOnHost: string[] = [];
  await attempt('disks', async () => {
    disksOnHost = await disks.list();
  });
  const withDisks = new Set<string>();
  await attempt('sessions', async () => {
    for (const session of store.listSessions()) if (session.state !== 'terminated') withDisks.add(session.id);
  });
  for (const sessionId of disksOnHost) {
    if (withDisks.has(sessionId)) continue;
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
    const current = new Map(store.listSessions().map((session) => [session.id, session.resumeSnapshotId]));
    superseded = store
      .listSnapshots()
      .filter((snapshot) => snapshot.reason === 'suspend' && !snapshot.deletedAt && current.get(snapshot.sessionId) !== snapshot.id)
      .map((snapshot) => snapshot.id);
  });
  for (const snapshotId of superseded) {
    await attempt(`snapshot:${snapshotId}`, async () => {
      await sessions.dropSnapshot(snapshotId, 'superseded');
      report.completed.push(`snapshot:${snapshotId}`);
    });
  }
  let snapshotsOnHost: string[] = [];
  await attempt('snapshots', async () => {
    snapshotsOnHost = await artifacts.list();
  });
  const keptSnapshots = new Set<string>();
  await attempt('snapshots', async () => {
    for (const snapshot of store.listSnapshots()) if (!snapshot.deletedAt) keptSnapshots.add(snapshot.id);
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
    const status = handle ? await driver.status(handle) : 'missing';
    const alive = status === 'running' || status === 'paused';
    switch (session.pendingOperation) {
      case 'create': {
        if (handle) await driver.destroy(handle);
        await disks.destroy(session.id);
        sessions.commit(session, { state: 'failed', pendingOperation: null, sandbox: null, failure: { code: 'INTERNAL', message: 'the server stopped while the session was being created' } }, 'session.reconciled', { outcome: 'failed', interrupted: 'create' });
        report.failed.push(session.id);
        return;
      }
      case 'suspend': {
        const snapshotId = pendingSnapshotId(store, session.id);
        if (alive) {
          if (snapshotId) await artifacts.remove(snapshotId);
          if (status === 'paused' && handle) await driver.unpause(handle);
          sessions.commit(session, { state: 'running', pendingOperation: null }, 'session.reconciled', { outcome: 'running', interrupted: 'suspend', action: 'rolled back' });
          report.rolledBack.push(session.id);
          return;
        }
        if (snapshotId && (await artifacts.list()).includes(snapshotId)) {
          const { checksum, sizeBytes } = await artifacts.seal(snapshotId, { liveDiskOf: session.id });
          if (handle) await driver.destroy(handle);
          store.insertSnapshot({
            id: snapshotId, sessionId: session.id, name: null, parentSnapshotId: session.resumeSnapshotId,
            imageName: session.imageName, imageDigest: session.imageDigest, contractVersion: session.contractVersion,
            reason: 'suspend', path: artifacts.pathFor(snapshotId), sizeBytes, checksum,
            createdAt: new Date().toISOString(), expiresAt: null, deletedAt: null,
          });
          sessions.commit(session, { state: 'suspended', pendingOperation: null, sandbox: null, resumeSnapshotId: snapshotId }, 'session.reconciled', { outcome: 'suspended', interrupted: 'suspend', action: 'completed', snapshotId });
          report.completed.push(session.id);
          return;
        }
        break;
      }
      case 'resume': {
        // The restore never reported success, so nothing was acknowledged: go back to the snapshot.
        // The half-restored sandbox has no handle in the record: the orphan sweep below removes it.
        sessions.commit(session, { state: 'suspended', pendingOperation: null, sandbox: null }, 'session.reconciled', { outcome: 'suspended', interrupted: 'resume', action: 'rolled back' });
        report.rolledBack.push(session.id);
        return;
      }
      case 'terminate': {
        if (handle) await driver.destroy(handle);
        await disks.destroy(session.id);
        for (const snapshot of store.listSnapshots({ sessionId: session.id })) await sessions.dropSnapshot(snapshot.id, 'session-terminated');
        sessions.commit(session, { state: 'terminated', pendingOperation: null, sandbox: null, resumeSnapshotId: null }, 'session.reconciled', { outcome: 'terminated', interrupted: 'terminate', action: 'completed' });
        report.completed.push(session.id);
        return;
      }
      default:
        break;
    }
    if (session.state === 'suspended' && session.resumeSnapshotId && (await artifacts.has(session.resumeSnapshotId))) {
      if (session.pendingOperation) sessions.commit(session, { pendingOperation: null }, 'session.reconciled', { outcome: 'suspended' });
      return;
    }
    if (session.mode === 'per-call' && session.state === 'running') {
      await disks.ensureMounted(session.id);
      report.adopted.push(session.id);
      return;
    }
    if ((session.state === 'running' || session.state === 'paused') && alive) {
      await disks.ensureMounted(session.id);
      const state = status === 'paused' ? 'paused' : 'running';
      if (state !== session.state || session.pendingOperation) {
        sessions.commit(session, { state, pendingOperation: null }, 'session.reconciled', { outcome: state, action: 'adopted' });
      }
      report.adopted.push(session.id);
      return;
    }
    if (session.state === 'failed' && !session.pendingOperation) return;
    if (handle) await driver.destroy(handle);
    sessions.commit(session, { state: 'failed', pendingOperation: null, sandbox: null, failure: { code: 'SANDBOX_DIED', message: 'the machine stopped while the server was down; its disk is kept' } }, 'session.reconciled', { outcome: 'failed', sandboxStatus: status });
    report.failed.push(session.id);
  }
}

function pendingSnapshotId(store: Store, sessionId: string): string | undefined {
  const started = store.listAudit(sessionId, { types: ['session.suspend-started'] }).at(-1);
  const id = started?.data['snapshotId'];
  return typeof id === 'string' ? id : undefined;
}

function sessionIdOf(sandboxId: string): string {
  return sandboxId.replace(/^airlock-/, '').replace(/-g\d+$/, '').replace(/-(run|fork)-.*$/, '');
}
