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
import { toAirlockError } from './errors.js';

/** What reconciliation did, for the server's start-up log. */
export interface ReconcileReport {
  adopted: string[];
  rolledBack: string[];
  completed: string[];
  failed: string[];
  orphansRemoved: string[];
}

/** Brings the store and the host into agreement. */
export async function reconcileSessions(deps: {
  store: Store;
  driver: SandboxDriver;
  disks: SessionDisks;
  artifacts: SnapshotArtifacts;
  sessions: SessionService;
}): Promise<ReconcileReport> {
  const { store, driver, disks, artifacts, sessions } = deps;
  const report: ReconcileReport = { adopted: [], rolledBack: [], completed: [], failed: [], orphansRemoved: [] };
  const live = store.listSessions().filter((session) => session.state !== 'terminated' || session.pendingOperation);

  for (const session of live) {
    try {
      await reconcileOne(session);
    } catch (error) {
      const failure = toAirlockError(error);
      sessions.commit(session, { state: 'failed', pendingOperation: null, failure: { code: failure.code, message: failure.message } }, 'session.reconciled', {
        outcome: 'failed',
        code: failure.code,
        message: failure.message,
      });
      report.failed.push(session.id);
    }
  }

  const owned = new Set(
    store
      .listSessions()
      .map((session) => session.sandbox?.sandboxId)
      .filter((id): id is string => id !== undefined),
  );
  for (const sandbox of await driver.list()) {
    if (owned.has(sandbox.sandboxId)) continue;
    await driver.destroy({ sandboxId: sandbox.sandboxId, sessionId: sessionIdOf(sandbox.sandboxId), driverData: {} });
    report.orphansRemoved.push(sandbox.sandboxId);
  }
  // Failed sessions keep their disk: it is what a user recovers their work from.
  const withDisks = new Set(store.listSessions().filter((s) => s.state !== 'terminated').map((s) => s.id));
  for (const sessionId of await disks.list()) {
    if (withDisks.has(sessionId)) continue;
    await disks.destroy(sessionId);
    report.orphansRemoved.push(`disk:${sessionId}`);
  }
  const keptSnapshots = new Set(store.listSnapshots().filter((s) => !s.deletedAt).map((s) => s.id));
  for (const snapshotId of await artifacts.list()) {
    if (keptSnapshots.has(snapshotId)) continue;
    await artifacts.remove(snapshotId);
    report.orphansRemoved.push(`snapshot:${snapshotId}`);
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
          const { checksum, sizeBytes } = await artifacts.seal(snapshotId);
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
        await driver.destroy({ sandboxId: `airlock-${session.id}-g${session.generation}`, sessionId: session.id, driverData: {} });
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
    if (session.state === 'suspended' && session.resumeSnapshotId && (await artifacts.list()).includes(session.resumeSnapshotId)) {
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
