/**
 * Conformance cases about transactions: all or nothing, reads inside see the
 * transaction's writes and reads outside see only committed ones, callbacks
 * and change announcements only after a commit, no nesting, and a
 * transaction object that cannot be used once its transaction ended.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store, StoreChange, StoreTransaction } from '../../core/store.js';
import { sampleApproval, sampleSession, type StoreConformanceContext } from './store-conformance-context.js';

/** Registers the transaction cases. */
export function transactionCases(getContext: () => StoreConformanceContext): void {
  const withStore = async (work: (store: Store) => Promise<void>): Promise<void> => {
    const store = await getContext().open();
    try {
      await work(store);
    } finally {
      await store.close();
    }
  };

  describe('transactions', () => {
    it('commits all of a transaction or nothing of it', async () => {
      await withStore(async (store) => {
        const kept = sampleSession();
        const lost = sampleSession();
        await store.transaction((tx) => tx.insertSession(kept));
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.insertSession(lost);
            await tx.replaceSession({ ...kept, state: 'paused', version: kept.version + 1 });
            throw new Error('the work failed half-way');
          }),
          /half-way/,
        );
        assert.equal(await store.getSession(lost.id), undefined);
        assert.equal((await store.getSession(kept.id))?.state, kept.state);
      });
    });

    it('shows a transaction its own writes, and others only what committed', async () => {
      await withStore(async (store) => {
        const session = sampleSession();
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        let seenInside: string | undefined;
        const writing = store.transaction(async (tx) => {
          await tx.insertSession(session);
          seenInside = (await tx.getSession(session.id))?.id;
          await gate;
        });
        // The write is done (or queued behind nothing) but not committed yet.
        await new Promise((resolve) => setImmediate(resolve));
        assert.equal(await store.getSession(session.id), undefined, 'an uncommitted write is not visible outside');
        release();
        await writing;
        assert.equal(seenInside, session.id);
        assert.equal((await store.getSession(session.id))?.id, session.id);
      });
    });

    it('runs after-commit callbacks and announces changes only once committed', async () => {
      await withStore(async (store) => {
        const heard: StoreChange[] = [];
        const stop = store.watch((change) => heard.push(change));
        const calls: string[] = [];
        await assert.rejects(
          store.transaction(async (tx) => {
            tx.afterCommit(() => calls.push('rolled back'));
            await tx.insertApproval(sampleApproval('ses_a'));
            throw new Error('no');
          }),
        );
        const approval = sampleApproval('ses_a');
        await store.transaction(async (tx) => {
          tx.afterCommit(() => calls.push('committed'));
          await tx.insertApproval(approval);
          assert.deepEqual(calls, [], 'not before the commit');
        });
        assert.deepEqual(calls, ['committed']);
        assert.deepEqual(heard, [{ kind: 'approval', approvalId: approval.id, sessionId: 'ses_a', state: 'pending' }]);
        stop();
      });
    });

    it('refuses a transaction inside another instead of deadlocking or escaping it', async () => {
      await withStore(async (store) => {
        const session = sampleSession();
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.insertSession(session);
            await store.transaction((inner) => inner.insertSession(sampleSession()));
          }),
          /inside another/,
        );
        assert.equal(await store.getSession(session.id), undefined);
        // and the store still works
        await store.transaction((tx) => tx.insertSession(session));
        assert.equal((await store.getSession(session.id))?.id, session.id);
      });
    });

    it('refuses writes through a transaction object kept past its end', async () => {
      await withStore(async (store) => {
        let kept: StoreTransaction | undefined;
        await store.transaction(async (tx) => {
          kept = tx;
        });
        await assert.rejects(async () => kept?.insertSession(sampleSession()), /already ended/);
      });
    });
  });
}
