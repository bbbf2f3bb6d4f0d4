/**
 * Conformance cases about tokens and tenants: a token is found by the hash of
 * its secret (never stored as the secret), revocation and last use are
 * updates of its record, two tokens cannot share a secret, and a tenant's
 * settings are stored and replaced whole. With a peer, a revocation through
 * one server is seen at once through another (no cache between them).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../core/store.js';
import type { ApiTokenRecord, TenantRecord } from '../../core/tenancy.js';
import { uniqueId, type StoreConformanceContext } from './store-conformance-context.js';

/** A token record as the token service stores it. */
export function sampleToken(overrides: Partial<ApiTokenRecord> = {}): ApiTokenRecord {
  const id = overrides.id ?? uniqueId('tok');
  return {
    id,
    tenant: 'acme',
    role: 'operator',
    name: id,
    secretHash: `hash-of-${id}`,
    createdAt: new Date().toISOString(),
    lastUsedAt: null,
    revokedAt: null,
    ...overrides,
  };
}

/** Registers the tenancy cases. */
export function tenancyCases(getContext: () => StoreConformanceContext): void {
  const withStore = async (work: (store: Store) => Promise<void>): Promise<void> => {
    const store = await getContext().open();
    try {
      await work(store);
    } finally {
      await store.close();
    }
  };

  describe('tokens and tenants', () => {
    it('stores a token, finds it by id and by secret hash, lists oldest first', async () => {
      await withStore(async (store) => {
        const first = sampleToken({ createdAt: '2026-01-01T00:00:00.000Z' });
        const second = sampleToken({ createdAt: '2026-01-02T00:00:00.000Z', tenant: 'other', role: 'agent' });
        await store.transaction(async (tx) => {
          await tx.insertToken(second);
          await tx.insertToken(first);
          assert.deepEqual(await tx.getToken(first.id), first, 'a transaction reads its own writes');
        });
        assert.deepEqual(await store.getToken(second.id), second);
        assert.deepEqual(await store.findTokenBySecretHash(first.secretHash), first);
        assert.equal(await store.findTokenBySecretHash('hash-of-nothing'), undefined);
        assert.equal(await store.getToken('tok_missing'), undefined);
        assert.deepEqual(
          (await store.listTokens()).map((token) => token.id),
          [first.id, second.id],
        );
      });
    });

    it('refuses a second token with the same secret hash, and keeps the first', async () => {
      await withStore(async (store) => {
        const first = sampleToken();
        await store.transaction((tx) => tx.insertToken(first));
        await assert.rejects(store.transaction((tx) => tx.insertToken(sampleToken({ secretHash: first.secretHash }))));
        assert.deepEqual(
          (await store.listTokens()).map((token) => token.id),
          [first.id],
        );
      });
    });

    it('revokes and touches a token by replacing its record; an unknown id changes nothing', async () => {
      await withStore(async (store) => {
        const token = sampleToken();
        await store.transaction((tx) => tx.insertToken(token));
        const revoked = { ...token, revokedAt: '2026-02-01T00:00:00.000Z', lastUsedAt: '2026-01-31T00:00:00.000Z' };
        assert.equal(await store.transaction((tx) => tx.updateToken(revoked)), true);
        assert.deepEqual(await store.findTokenBySecretHash(token.secretHash), revoked);
        assert.equal(await store.transaction((tx) => tx.updateToken(sampleToken())), false);
        assert.equal((await store.listTokens()).length, 1);
      });
    });

    it('rolls a token back with its transaction', async () => {
      await withStore(async (store) => {
        const token = sampleToken();
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.insertToken(token);
            throw new Error('abort');
          }),
          /abort/,
        );
        assert.equal(await store.getToken(token.id), undefined);
      });
    });

    it('stores tenant settings, replaces them whole, lists by name', async () => {
      await withStore(async (store) => {
        const beta: TenantRecord = {
          name: 'beta',
          quotas: { maxSessions: 2, maxConcurrentCalls: null, maxForkBranches: 4, maxForkDepth: 1 },
          updatedAt: '2026-01-01T00:00:00.000Z',
        };
        const alpha: TenantRecord = {
          name: 'alpha',
          quotas: { maxSessions: null, maxConcurrentCalls: 3, maxForkBranches: null, maxForkDepth: null },
          updatedAt: '2026-01-01T00:00:00.000Z',
        };
        await store.transaction(async (tx) => {
          await tx.putTenant(beta);
          await tx.putTenant(alpha);
        });
        assert.deepEqual(await store.getTenant('beta'), beta);
        assert.equal(await store.getTenant('gamma'), undefined);
        const changed: TenantRecord = { ...beta, quotas: { ...beta.quotas, maxSessions: 5 }, updatedAt: '2026-01-02T00:00:00.000Z' };
        await store.transaction((tx) => tx.putTenant(changed));
        assert.deepEqual(await store.listTenants(), [alpha, changed]);
      });
    });

    it('a revocation through one server is seen at once through another', async (t) => {
      const context = getContext();
      if (!context.openPeer) {
        t.skip(context.noPeerReason ?? 'no second server on this store');
        return;
      }
      await withStore(async (store) => {
        const peer = await context.openPeer!(store);
        try {
          const token = sampleToken();
          await store.transaction((tx) => tx.insertToken(token));
          assert.equal((await peer.findTokenBySecretHash(token.secretHash))?.revokedAt, null);
          await peer.transaction((tx) => tx.updateToken({ ...token, revokedAt: new Date().toISOString() }));
          assert.notEqual((await store.findTokenBySecretHash(token.secretHash))?.revokedAt, null);
        } finally {
          await peer.close();
        }
      });
    });
  });
}
