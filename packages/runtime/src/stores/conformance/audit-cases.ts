/**
 * Conformance cases about audit chains: what the audit log computes is
 * stored and read back exactly (so hashes still verify), heads follow the
 * chain, reads filter by seq, type and count, and the stored head tells a
 * truncation.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { AuditLog } from '../../audit/audit-log.js';
import { GENESIS_HASH, verifyChain } from '../../audit/hash-chain.js';
import { systemClock } from '../../core/clock.js';
import type { Store } from '../../core/store.js';
import type { StoreConformanceContext } from './store-conformance-context.js';

/** Registers the audit cases. */
export function auditCases(getContext: () => StoreConformanceContext): void {
  const key = randomBytes(32);
  const log = new AuditLog({ key, clock: systemClock });
  const withStore = async (work: (store: Store) => Promise<void>): Promise<void> => {
    const store = await getContext().open();
    try {
      await work(store);
    } finally {
      await store.close();
    }
  };

  describe('audit chains', () => {
    it('keeps every value of a record exactly, so its keyed hash still verifies', async () => {
      await withStore(async (store) => {
        const data = {
          text: 'ünïcödé ✓ "quoted" \\ back\nslash \u0000 nul \u2028',
          numbers: [0, -1, 1.5, 1e21, 2 ** 53 - 1, 0.1 + 0.2],
          nested: { deep: { list: [true, false, null, { a: [] }] }, empty: {} },
          'gen_ai.tool.name': 'exec',
        };
        await log.appendNow(store, { sessionId: 'ses_a', type: 'tool-call.completed', data });
        const [record] = await store.listAudit('ses_a');
        assert.deepEqual(record?.data, data);
        assert.deepEqual(verifyChain('ses_a', await store.listAudit('ses_a'), { storedHead: await store.auditHead('ses_a'), key }), {
          ok: true,
          records: 1,
          authenticity: 'keyed',
          anchoredSeq: null,
        });
      });
    });

    it('keeps one chain per session; reads by seq, type and count; knows which sessions have chains', async () => {
      await withStore(async (store) => {
        assert.deepEqual(await store.auditHead('ses_a'), { seq: 0, hash: GENESIS_HASH });
        await store.transaction(async (tx) => {
          for (let i = 1; i <= 4; i += 1) await log.append(tx, { sessionId: 'ses_a', type: i % 2 ? 'odd.recorded' : 'even.recorded', data: { i } });
          await log.append(tx, { sessionId: '', type: 'system.recorded', data: {} });
        });
        const records = await store.listAudit('ses_a');
        assert.deepEqual(
          records.map((r) => r.seq),
          [1, 2, 3, 4],
        );
        assert.deepEqual((await store.auditHead('ses_a')).hash, records.at(-1)?.hash);
        assert.deepEqual(
          (await store.listAudit('ses_a', { afterSeq: 2 })).map((r) => r.seq),
          [3, 4],
        );
        assert.deepEqual(
          (await store.listAudit('ses_a', { limit: 2 })).map((r) => r.seq),
          [1, 2],
        );
        assert.deepEqual(
          (await store.listAudit('ses_a', { types: ['even.recorded'] })).map((r) => r.seq),
          [2, 4],
        );
        assert.deepEqual(await store.listAuditedSessions(), ['', 'ses_a']);
        assert.equal((await store.listAudit('')).length, 1);
      });
    });

    it('refuses a second record at a seq already taken', async () => {
      await withStore(async (store) => {
        const first = await log.appendNow(store, { sessionId: 'ses_a', type: 'a.recorded', data: {} });
        await assert.rejects(store.transaction((tx) => tx.insertAuditRecord({ ...first, data: { forged: true } })));
        assert.deepEqual(
          (await store.listAudit('ses_a')).map((r) => r.data),
          [{}],
        );
      });
    });
  });
}
