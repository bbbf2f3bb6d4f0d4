/**
 * Conformance cases about nodes sharing a store (issue 14): nodes register
 * and renew their heartbeat without overwriting a drain; a session write
 * naming an older lease epoch is refused (fencing); of two nodes racing to
 * take a session over exactly one wins, and from then on the loser's and
 * the old owner's writes are refused while the winner's go through.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Store } from '../../core/store.js';
import type { NodeRecord } from '../../core/cluster-node.js';
import { SessionRecords } from '../../core/session-records.js';
import { systemClock } from '../../core/clock.js';
import { isAirlockError } from '../../core/errors.js';
import { sampleSession, uniqueId, type StoreConformanceContext } from './store-conformance-context.js';

function sampleNode(overrides: Partial<NodeRecord> = {}): NodeRecord {
  const now = new Date().toISOString();
  return {
    id: uniqueId('node'),
    address: 'http://127.0.0.1:7070',
    state: 'active',
    capacity: { sessions: 8, cpus: 2, memoryMb: 4096 },
    runtimeVersion: 'gvisor',
    airlockVersion: '0.0.0',
    joinedAt: now,
    heartbeatAt: now,
    ...overrides,
  };
}

/** Registers the cluster cases. */
export function clusterCases(getContext: () => StoreConformanceContext): void {
  const withStores = async (t: TestContext, work: (store: Store, peer: Store) => Promise<void>): Promise<void> => {
    const context = getContext();
    const store = await context.open();
    const peer = context.openPeer ? await context.openPeer(store) : store;
    try {
      await work(store, peer);
    } finally {
      if (peer !== store) await peer.close();
      await store.close();
    }
    if (peer === store) t.diagnostic(context.noPeerReason ?? 'one handle plays both nodes');
  };

  describe('nodes and leases', () => {
    it('registers nodes, renews a heartbeat without undoing a drain, and reads them back by id', async (t) => {
      await withStores(t, async (store, peer) => {
        const a = sampleNode({ id: 'node-a' });
        const b = sampleNode({ id: 'node-b', address: 'http://127.0.0.1:7071' });
        await store.transaction(async (tx) => {
          await tx.putNode(b);
          await tx.putNode(a);
        });
        assert.deepEqual(await peer.listNodes(), [a, b]);
        assert.equal(await peer.transaction((tx) => tx.setNodeState('node-a', 'draining')), true);
        const later = new Date(Date.parse(a.heartbeatAt) + 5000).toISOString();
        assert.equal(await store.transaction((tx) => tx.touchNode('node-a', later)), true);
        assert.deepEqual(await store.getNode('node-a'), { ...a, state: 'draining', heartbeatAt: later });
        assert.equal(await store.transaction((tx) => tx.touchNode('node-missing', later)), false);
        assert.equal(await store.transaction((tx) => tx.setNodeState('node-missing', 'left')), false);
        assert.equal(await store.getNode('node-missing'), undefined);
        // Joining again replaces the record: a restarted node is active again.
        await store.transaction((tx) => tx.putNode({ ...a, address: 'http://127.0.0.1:7072' }));
        assert.deepEqual(await peer.getNode('node-a'), { ...a, address: 'http://127.0.0.1:7072' });
      });
    });

    it('refuses a session write that names an older lease epoch than the stored one (fencing)', async (t) => {
      await withStores(t, async (store) => {
        const session = sampleSession({ epoch: 2 });
        await store.transaction((tx) => tx.insertSession(session));
        const stale = await store.transaction((tx) => tx.replaceSession({ ...session, epoch: 1, version: 2, keepAwake: true }));
        assert.equal(stale, false, 'epoch 1 < 2: refused');
        assert.equal((await store.getSession(session.id))?.keepAwake, undefined);
        assert.equal(await store.transaction((tx) => tx.replaceSession({ ...session, version: 2, keepAwake: true })), true, 'the holder writes');
        assert.equal(await store.transaction((tx) => tx.replaceSession({ ...session, owner: 'srv_b', epoch: 3, version: 3 })), true, 'a takeover raises it');
        assert.equal(await store.transaction((tx) => tx.replaceSession({ ...session, epoch: 2, version: 4 })), false, 'the old holder is fenced off');
        assert.deepEqual(await store.getSession(session.id), { ...session, owner: 'srv_b', epoch: 3, version: 3 });
      });
    });

    it('lets exactly one of two nodes take a session over; the old owner and the loser are refused, the winner writes', async (t) => {
      await withStores(t, async (store, peer) => {
        const core = await getContext().core(store);
        try {
          const nodes = (owner: string, on: Store) => new SessionRecords({ store: on, audit: core.audit, clock: systemClock, owner });
          const old = nodes('srv_a', store);
          const b = nodes('srv_b', store);
          const c = nodes('srv_c', peer);
          const session = sampleSession({ state: 'suspended', pendingOperation: null });
          await old.insert(session, { type: 'session.created', data: {} });
          assert.equal(old.leases.epochOf(session.id), 0);
          const lost: string[] = [];
          old.leases.onLost((id) => lost.push(id));
          // Each takes it only from the node it saw gone, as the routing does.
          const fromOld = async (fresh: { owner: string }) => fresh.owner === 'srv_a';
          const results = await Promise.all([
            b.takeOver(session.id, fromOld, { type: 'session.lease-taken', data: {} }),
            c.takeOver(session.id, fromOld, { type: 'session.lease-taken', data: {} }),
          ]);
          const winners = results.filter((result) => result !== undefined);
          assert.equal(winners.length, 1, 'exactly one takeover');
          const winner = winners[0]!.owner === 'srv_b' ? b : c;
          assert.equal(winners[0]!.epoch, 1);
          assert.equal(winner.leases.epochOf(session.id), 1);
          await assert.rejects(
            old.update(session.id, () => ({ keepAwake: true })),
            (error: unknown) => isAirlockError(error, 'LEASE_LOST') && /taken over by node srv_[bc]/.test((error as Error).message),
          );
          assert.deepEqual(lost, [session.id], 'the old owner heard it lost the lease');
          assert.equal(old.leases.isLost(session.id), true);
          await assert.rejects(
            old.update(session.id, () => ({ keepAwake: false })),
            (error: unknown) => isAirlockError(error, 'LEASE_LOST'),
            'still refused later',
          );
          assert.deepEqual(lost, [session.id], 'heard once');
          const updated = await winner.update(session.id, () => ({ keepAwake: true }));
          assert.equal(updated.keepAwake, true);
          assert.equal(updated.epoch, 1);
          const chain = await store.listAudit(session.id, { types: ['session.lease-taken'] });
          assert.equal(chain.length, 1);
          assert.equal(chain[0]?.data['from'], 'srv_a');
          assert.equal(chain[0]?.data['epoch'], 1);
        } finally {
          await core.close();
        }
      });
    });
  });
}
