/**
 * Conformance cases about the webhook outbox (issue 24): endpoints stored
 * whole, scan marks that only move forward, one delivery per (endpoint,
 * session, seq), due deliveries in order per endpoint and session, a lease
 * that one claimer wins, an outcome written only by the lease's holder. With
 * a peer, two servers enqueueing the same record enqueue it once, and only
 * one of them claims it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../core/store.js';
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from '../../core/webhook.js';
import { uniqueId, type StoreConformanceContext } from './store-conformance-context.js';

function sampleEndpoint(overrides: Partial<WebhookEndpointRecord> = {}): WebhookEndpointRecord {
  return {
    id: uniqueId('wh'),
    url: 'http://127.0.0.1:9/hook',
    events: ['session.*'],
    tenant: null,
    secret: 'whsec_c2VjcmV0',
    state: 'active',
    disabledReason: null,
    createdAt: new Date().toISOString(),
    createdBy: 'admin',
    ...overrides,
  };
}

function sampleDelivery(endpointId: string, sessionId: string, seq: number, overrides: Partial<WebhookDeliveryRecord> = {}): WebhookDeliveryRecord {
  const now = '2026-01-01T00:00:00.000Z';
  return {
    id: uniqueId('msg'),
    endpointId,
    sessionId,
    seq,
    body: `{"seq":${seq}}`,
    state: 'pending',
    attempts: 0,
    createdAt: now,
    nextAttemptAt: now,
    leaseOwner: '',
    leaseUntil: '',
    lastError: null,
    ...overrides,
  };
}

const NOW = '2026-01-01T00:01:00.000Z';
const LATER = '2026-01-01T00:02:00.000Z';

/** Registers the webhook outbox cases. */
export function webhookCases(getContext: () => StoreConformanceContext): void {
  const withStore = async (work: (store: Store) => Promise<void>): Promise<void> => {
    const store = await getContext().open();
    try {
      await work(store);
    } finally {
      await store.close();
    }
  };

  describe('webhook outbox', () => {
    it('stores endpoints whole, replaces and removes them with their deliveries', async () => {
      await withStore(async (store) => {
        const first = sampleEndpoint({ createdAt: '2026-01-01T00:00:00.000Z' });
        const second = sampleEndpoint({ createdAt: '2026-01-02T00:00:00.000Z', tenant: 'acme' });
        await store.transaction(async (tx) => {
          await tx.webhooks.insertEndpoint(second);
          await tx.webhooks.insertEndpoint(first);
          assert.deepEqual(await tx.webhooks.getEndpoint(first.id), first);
        });
        const listed = await store.transaction((tx) => tx.webhooks.listEndpoints());
        assert.deepEqual(
          listed.map((endpoint) => endpoint.id),
          [first.id, second.id],
        );
        const disabled = { ...first, state: 'disabled' as const, disabledReason: 'the endpoint answered 410 Gone' };
        assert.equal(await store.transaction((tx) => tx.webhooks.updateEndpoint(disabled)), true);
        assert.equal(await store.transaction((tx) => tx.webhooks.updateEndpoint(sampleEndpoint())), false);
        await store.transaction((tx) => tx.webhooks.insertDelivery(sampleDelivery(first.id, 'ses_a', 1)));
        assert.equal(await store.transaction((tx) => tx.webhooks.deleteEndpoint(first.id)), true);
        assert.equal(await store.transaction((tx) => tx.webhooks.deleteEndpoint(first.id)), false);
        assert.deepEqual(await store.transaction((tx) => tx.webhooks.countDeliveries(first.id)), {});
        assert.deepEqual(await store.transaction((tx) => tx.webhooks.getEndpoint(second.id)), second);
      });
    });

    it('moves a scan mark only forward', async () => {
      await withStore(async (store) => {
        const session = uniqueId('ses');
        assert.equal(await store.transaction((tx) => tx.webhooks.scanMark(session)), 0);
        await store.transaction((tx) => tx.webhooks.advanceScanMark(session, 5));
        await store.transaction((tx) => tx.webhooks.advanceScanMark(session, 3));
        assert.equal(await store.transaction((tx) => tx.webhooks.scanMark(session)), 5);
      });
    });

    it('enqueues one delivery per endpoint, session and seq; hands out the earliest pending one of each session, due and unleased', async () => {
      await withStore(async (store) => {
        const endpoint = sampleEndpoint();
        const [a, b] = [uniqueId('ses'), uniqueId('ses')];
        await store.transaction((tx) => tx.webhooks.insertEndpoint(endpoint));
        const first = sampleDelivery(endpoint.id, a, 1);
        assert.equal(await store.transaction((tx) => tx.webhooks.insertDelivery(first)), true);
        assert.equal(await store.transaction((tx) => tx.webhooks.insertDelivery(sampleDelivery(endpoint.id, a, 1))), false, 'same seq: once');
        await store.transaction(async (tx) => {
          await tx.webhooks.insertDelivery(sampleDelivery(endpoint.id, a, 2));
          await tx.webhooks.insertDelivery(sampleDelivery(endpoint.id, b, 7, { nextAttemptAt: LATER }));
        });
        const due = await store.transaction((tx) => tx.webhooks.listDueDeliveries(NOW, 10));
        assert.deepEqual(
          due.map((delivery) => [delivery.sessionId, delivery.seq]),
          [[a, 1]],
          'seq 2 waits behind seq 1; b is not due yet',
        );
        assert.equal(await store.transaction((tx) => tx.webhooks.claimDelivery(first.id, 'node-1', NOW, LATER)), true);
        assert.equal(await store.transaction((tx) => tx.webhooks.claimDelivery(first.id, 'node-2', NOW, LATER)), false, 'one claimer wins');
        assert.deepEqual(await store.transaction((tx) => tx.webhooks.listDueDeliveries(NOW, 10)), [], 'a leased delivery is not handed out');
        const claimed = await store.transaction((tx) => tx.webhooks.getDelivery(first.id));
        assert.equal(claimed?.leaseOwner, 'node-1');
        const done = { ...first, state: 'delivered' as const, attempts: 1, leaseOwner: '', leaseUntil: '' };
        assert.equal(await store.transaction((tx) => tx.webhooks.finishAttempt(done, 'node-2')), false, 'only the lease holder writes the outcome');
        assert.equal(await store.transaction((tx) => tx.webhooks.finishAttempt(done, 'node-1')), true);
        const next = await store.transaction((tx) => tx.webhooks.listDueDeliveries(NOW, 10));
        assert.deepEqual(
          next.map((delivery) => [delivery.sessionId, delivery.seq]),
          [[a, 2]],
        );
        assert.deepEqual(await store.transaction((tx) => tx.webhooks.countDeliveries(endpoint.id)), { delivered: 1, pending: 2 });
        assert.equal(
          (await store.transaction((tx) => tx.webhooks.listDueDeliveries(LATER, 10))).length,
          2,
          'an expired lease or a due retry is handed out again',
        );
      });
    });

    it('two servers enqueue the same record once, and one of them claims it', async (t) => {
      const context = getContext();
      if (!context.openPeer) {
        t.skip(context.noPeerReason ?? 'no second server on this store');
        return;
      }
      await withStore(async (store) => {
        const peer = await context.openPeer!(store);
        try {
          const endpoint = sampleEndpoint();
          const session = uniqueId('ses');
          await store.transaction((tx) => tx.webhooks.insertEndpoint(endpoint));
          const inserted = await Promise.all([
            store.transaction((tx) => tx.webhooks.insertDelivery(sampleDelivery(endpoint.id, session, 4))),
            peer.transaction((tx) => tx.webhooks.insertDelivery(sampleDelivery(endpoint.id, session, 4))),
          ]);
          assert.equal(inserted.filter(Boolean).length, 1);
          const [due] = await store.transaction((tx) => tx.webhooks.listDueDeliveries(NOW, 10));
          assert.ok(due);
          const claims = await Promise.all([
            store.transaction((tx) => tx.webhooks.claimDelivery(due.id, 'node-1', NOW, LATER)),
            peer.transaction((tx) => tx.webhooks.claimDelivery(due.id, 'node-2', NOW, LATER)),
          ]);
          assert.equal(claims.filter(Boolean).length, 1);
        } finally {
          await peer.close();
        }
      });
    });
  });
}
