/**
 * Conformance cases about concurrent writers, in this process and (where
 * the store is shared) from a second handle as another server would hold:
 * two writers racing one compare-and-set, updates that must not be lost,
 * budget reservation under 30 parallel calls, an approval decided once under
 * concurrent deciders, audit appends that keep one chain, and changes heard
 * by the other handle.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { Store } from '../../core/store.js';
import { sampleApproval, sampleSession, type StoreConformanceContext } from './store-conformance-context.js';

/** Registers the concurrency cases. */
export function concurrencyCases(getContext: () => StoreConformanceContext): void {
  /** The store and, where the store is shared, a peer handle on the same database. */
  const withStores = async (t: TestContext, needsPeer: boolean, work: (store: Store, peer: Store) => Promise<void>): Promise<void> => {
    const context = getContext();
    if (needsPeer && !context.openPeer) {
      t.skip(context.noPeerReason ?? 'the store serves one process');
      return;
    }
    const store = await context.open();
    const peer = context.openPeer ? await context.openPeer(store) : store;
    try {
      await work(store, peer);
    } finally {
      if (peer !== store) await peer.close();
      await store.close();
    }
  };

  describe('concurrency', () => {
    it('lets exactly one of two writers win a compare-and-set from the same version', async (t) => {
      await withStores(t, false, async (store, peer) => {
        const session = sampleSession();
        await store.transaction((tx) => tx.insertSession(session));
        const read = await store.getSession(session.id);
        assert.ok(read);
        const results = await Promise.all([
          store.transaction((tx) => tx.replaceSession({ ...read, state: 'paused', version: read.version + 1 })),
          peer.transaction((tx) => tx.replaceSession({ ...read, state: 'suspended', version: read.version + 1 })),
        ]);
        assert.deepEqual(results.filter(Boolean).length, 1, `exactly one write wins: ${JSON.stringify(results)}`);
        assert.equal((await store.getSession(session.id))?.version, read.version + 1);
      });
    });

    it('loses no update when 30 writers change one session at once (locks and compare-and-set)', async (t) => {
      await withStores(t, false, async (store, peer) => {
        const core = await getContext().core(store);
        const peerCore = peer === store ? core : await getContext().core(peer);
        try {
          const session = await core.createSession(core.contract());
          await Promise.all(
            Array.from({ length: 30 }, (_, index) =>
              (index % 2 ? peerCore : core).records.update(session.id, (fresh) => ({ meters: { ...fresh.meters, diskBytes: fresh.meters.diskBytes + 1 } })),
            ),
          );
          assert.equal((await store.getSession(session.id))?.meters.diskBytes, 30);
        } finally {
          if (peerCore !== core) await peerCore.close();
          await core.close();
        }
      });
    });

    it('reserves budgets before calls run: 30 concurrent calls against maxToolCalls 5 run exactly 5', async (t) => {
      await withStores(t, false, async (store) => {
        const core = await getContext().core(store);
        try {
          const session = await core.createSession(core.contract({ budgets: { maxToolCalls: 5 } }));
          const before = core.driver.execs.length;
          const outcomes = await Promise.all(
            Array.from({ length: 30 }, (_, index) => core.pipeline.submit(session.id, 'exec', { argv: ['echo', String(index)] })),
          );
          const completed = outcomes.filter((outcome) => outcome.status === 'completed');
          const refused = outcomes.filter((outcome) => outcome.status === 'refused' && outcome.error.code === 'BUDGET_EXCEEDED');
          assert.equal(completed.length, 5);
          assert.equal(refused.length, 25);
          assert.equal(core.driver.execs.length - before, 5, 'the refused calls never reached the machine');
          assert.equal((await store.getSession(session.id))?.meters.toolCalls, 5);
        } finally {
          await core.close();
        }
      });
    });

    it('decides an approval once under concurrent deciders (on both handles)', async (t) => {
      await withStores(t, false, async (store, peer) => {
        const core = await getContext().core(store);
        const peerCore = peer === store ? core : await getContext().core(peer);
        try {
          const approval = sampleApproval('ses_nowhere', {
            call: {
              id: 'call_conn',
              sessionId: 'ses_nowhere',
              tool: 'net.connect',
              arguments: { host: 'example.com', port: 443 },
              receivedAt: new Date().toISOString(),
            },
          });
          await store.transaction((tx) => tx.insertApproval(approval));
          const results = await Promise.allSettled(
            Array.from({ length: 12 }, (_, index) =>
              (index % 2 ? peerCore : core).approvals.decide(approval.id, index % 3 ? 'approve' : 'deny', `human-${index}`, null),
            ),
          );
          const won = results.filter((result) => result.status === 'fulfilled');
          assert.equal(won.length, 1, 'one decision wins');
          for (const result of results) {
            if (result.status === 'rejected') assert.equal((result.reason as { code?: string }).code, 'APPROVAL_ALREADY_DECIDED');
          }
          const decided = await store.getApproval(approval.id);
          const winner = won[0];
          assert.ok(winner?.status === 'fulfilled');
          assert.equal(decided?.decidedBy, winner.value.decidedBy);
          const audited = (await store.listAudit('ses_nowhere')).filter((record) => record.type === 'approval.granted' || record.type === 'approval.denied');
          assert.equal(audited.length, 1, 'one decision recorded');
        } finally {
          if (peerCore !== core) await peerCore.close();
          await core.close();
        }
      });
    });

    it('keeps one chain when calls append concurrently (from both handles)', async (t) => {
      await withStores(t, false, async (store, peer) => {
        const core = await getContext().core(store);
        const peerCore = peer === store ? core : await getContext().core(peer);
        try {
          await Promise.all(
            Array.from({ length: 40 }, (_, index) =>
              (index % 2 ? peerCore : core).audit.appendNow(index % 2 ? peer : store, { sessionId: 'ses_busy', type: 'tool-call.completed', data: { index } }),
            ),
          );
          const records = await store.listAudit('ses_busy');
          assert.deepEqual(
            records.map((record) => record.seq),
            Array.from({ length: 40 }, (_, index) => index + 1),
          );
          assert.deepEqual(new Set(records.map((record) => record.data['index'])).size, 40);
          const verified = await core.audit.verify(store, 'ses_busy', { mustHaveRecords: true });
          assert.equal(verified.ok, true, JSON.stringify(verified.problem));
        } finally {
          if (peerCore !== core) await peerCore.close();
          await core.close();
        }
      });
    });

    it('tells the other handle about approvals and audit appends it did not write', async (t) => {
      await withStores(t, true, async (store, peer) => {
        const heard: string[] = [];
        let resolve!: () => void;
        const both = new Promise<void>((done) => (resolve = done));
        const stop = peer.watch((change) => {
          if (change.kind === 'resync') return;
          heard.push(change.kind);
          if (heard.includes('approval') && heard.includes('audit')) resolve();
        });
        const core = await getContext().core(store);
        try {
          await store.transaction(async (tx) => {
            await tx.insertApproval(sampleApproval('ses_far'));
            await core.audit.append(tx, { sessionId: 'ses_far', type: 'approval.requested', data: {} });
          });
          await both;
          assert.ok(heard.includes('approval') && heard.includes('audit'));
        } finally {
          stop();
          await core.close();
        }
      });
    });
  });
}
