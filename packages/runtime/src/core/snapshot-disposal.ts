/**
 * Deleting a snapshot's bytes: the artifact goes first, then its record is
 * marked deleted with its audit record in one transaction. Used by
 * terminate, by suspend (the image it supersedes), by `snapshots rm`, by
 * retention and by the reconciler.
 */
import type { AuditLog } from '../audit/audit-log.js';
import type { Clock } from './clock.js';
import type { SnapshotArtifacts } from './snapshot-artifacts.js';
import type { SnapshotRecord } from './snapshot.js';
import type { Store } from './store.js';

/** Deletes snapshot bytes and records it. */
export class SnapshotDisposal {
  constructor(private readonly deps: { store: Store; audit: AuditLog; artifacts: SnapshotArtifacts; clock: Clock }) {}

  /** Deletes the bytes (idempotent) and records `type` (default `snapshot.deleted`); returns the record as it is now. */
  async drop(snapshotId: string, reason: string, type: 'snapshot.deleted' | 'snapshot.expired' = 'snapshot.deleted'): Promise<SnapshotRecord | undefined> {
    const { store, audit, artifacts, clock } = this.deps;
    const snapshot = await store.getSnapshot(snapshotId);
    if (!snapshot || snapshot.deletedAt) return snapshot;
    await artifacts.remove(snapshotId);
    const deleted: SnapshotRecord = { ...snapshot, deletedAt: clock.now().toISOString() };
    await store.transaction(async (tx) => {
      await tx.updateSnapshot(deleted);
      await audit.append(tx, {
        sessionId: snapshot.sessionId,
        type,
        data: { snapshotId, reason, ...(type === 'snapshot.expired' ? { expiresAt: snapshot.expiresAt } : {}) },
      });
    });
    return deleted;
  }
}
