/**
 * Conformance cases about records: sessions (with their compare-and-set),
 * approvals (with their state transition), snapshots and settings, stored
 * and read back exactly, with the filters the core lists them by.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../core/store.js';
import { sampleApproval, sampleSession, sampleSnapshot, type StoreConformanceContext } from './store-conformance-context.js';

/** Registers the record cases. */
export function recordCases(getContext: () => StoreConformanceContext): void {
  const withStore = async (work: (store: Store) => Promise<void>): Promise<void> => {
    const store = await getContext().open();
    try {
      await work(store);
    } finally {
      await store.close();
    }
  };

  describe('records', () => {
    it('stores a session and reads it back exactly, the contract with its type', async () => {
      await withStore(async (store) => {
        const session = sampleSession({ exposedPorts: [8000], keepAwake: true });
        await store.transaction((tx) => tx.insertSession(session));
        assert.deepEqual(await store.getSession(session.id), session);
        assert.equal((await store.getSession(session.id))?.contract.identity.tenant, 'acme');
        assert.equal(await store.getSession('ses_missing'), undefined);
      });
    });

    it('lists sessions oldest first, by state, tenant and owner', async () => {
      await withStore(async (store) => {
        const first = sampleSession({ createdAt: '2026-01-01T00:00:00.000Z', state: 'running' });
        const second = sampleSession({ createdAt: '2026-01-02T00:00:00.000Z', state: 'suspended', owner: 'srv_b' });
        const third = sampleSession({ createdAt: '2026-01-03T00:00:00.000Z', state: 'running', tenant: 'other' });
        await store.transaction(async (tx) => {
          for (const session of [third, first, second]) await tx.insertSession(session);
        });
        assert.deepEqual(
          (await store.listSessions()).map((s) => s.id),
          [first.id, second.id, third.id],
        );
        assert.deepEqual(
          (await store.listSessions({ states: ['running'] })).map((s) => s.id),
          [first.id, third.id],
        );
        assert.deepEqual(
          (await store.listSessions({ tenant: 'other' })).map((s) => s.id),
          [third.id],
        );
        assert.deepEqual(
          (await store.listSessions({ owner: 'srv_b' })).map((s) => s.id),
          [second.id],
        );
        assert.deepEqual(
          (await store.listSessions({ states: ['running'], owner: 'srv_a', tenant: 'acme' })).map((s) => s.id),
          [first.id],
        );
      });
    });

    it('replaces a session only from the version it was read at (compare-and-set)', async () => {
      await withStore(async (store) => {
        const session = sampleSession();
        await store.transaction((tx) => tx.insertSession(session));
        const next = { ...session, state: 'paused' as const, version: session.version + 1 };
        assert.equal(await store.transaction((tx) => tx.replaceSession(next)), true);
        const stale = { ...session, state: 'suspended' as const, version: session.version + 1 };
        assert.equal(await store.transaction((tx) => tx.replaceSession(stale)), false, 'a write from an old version is refused');
        const stored = await store.getSession(session.id);
        assert.deepEqual([stored?.state, stored?.version], ['paused', 2]);
        assert.equal(await store.transaction((tx) => tx.replaceSession({ ...sampleSession(), version: 2 })), false, 'an unknown session is not created');
      });
    });

    it('moves an approval from one state only, and lists approvals by session and state', async () => {
      await withStore(async (store) => {
        const approval = sampleApproval('ses_x');
        const other = sampleApproval('ses_y', { createdAt: new Date(Date.now() + 1000).toISOString() });
        await store.transaction(async (tx) => {
          await tx.insertApproval(approval);
          await tx.insertApproval(other);
        });
        assert.deepEqual(await store.getApproval(approval.id), approval);
        const approved = { ...approval, state: 'approved' as const, decidedBy: 'alice' };
        assert.equal(await store.transaction((tx) => tx.transitionApproval(approval.id, 'pending', approved)), true);
        assert.equal(await store.transaction((tx) => tx.transitionApproval(approval.id, 'pending', { ...approval, state: 'denied' })), false);
        assert.equal((await store.getApproval(approval.id))?.decidedBy, 'alice');
        assert.deepEqual(
          (await store.listApprovals({ states: ['pending'] })).map((a) => a.id),
          [other.id],
        );
        assert.deepEqual(
          (await store.listApprovals({ sessionId: 'ses_x' })).map((a) => a.id),
          [approval.id],
        );
        assert.deepEqual(
          (await store.listApprovals()).map((a) => a.id),
          [approval.id, other.id],
        );
      });
    });

    it('stores, updates and lists snapshots, and keeps settings', async () => {
      await withStore(async (store) => {
        const snapshot = sampleSnapshot('ses_x', { name: 'step-37', expiresAt: '2027-01-01T00:00:00.000Z' });
        const later = sampleSnapshot('ses_y', { createdAt: new Date(Date.now() + 1000).toISOString() });
        await store.transaction(async (tx) => {
          await tx.insertSnapshot(snapshot);
          await tx.insertSnapshot(later);
          await tx.setSetting('audit-key-id', 'k1');
        });
        assert.deepEqual(await store.getSnapshot(snapshot.id), snapshot);
        await store.transaction((tx) => tx.updateSnapshot({ ...snapshot, deletedAt: '2026-06-01T00:00:00.000Z' }));
        assert.equal((await store.getSnapshot(snapshot.id))?.deletedAt, '2026-06-01T00:00:00.000Z');
        assert.deepEqual(
          (await store.listSnapshots()).map((s) => s.id),
          [snapshot.id, later.id],
        );
        assert.deepEqual(
          (await store.listSnapshots({ sessionId: 'ses_y' })).map((s) => s.id),
          [later.id],
        );
        assert.equal(await store.getSetting('audit-key-id'), 'k1');
        await store.transaction((tx) => tx.setSetting('audit-key-id', 'k2'));
        assert.equal(await store.getSetting('audit-key-id'), 'k2');
      });
    });
  });
}
