/**
 * The Store conformance suite against PostgreSQL: one fresh database per
 * case, and a second pool on it as another server would hold. Skipped (with
 * the reason) when no test cluster is configured; .ci/run configures one.
 */
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { runStoreConformance } from '../../src/stores/conformance/store-conformance.js';
import { PostgresStore } from '../../src/stores/postgres/postgres-store.js';
import type { Store } from '../../src/core/store.js';
import { conformanceCore } from '../support/store-conformance-core.js';
import { createTestDatabase, NO_POSTGRES, testPostgresUrl, type TestDatabase } from '../support/postgres-database.js';

if (!testPostgresUrl()) {
  describe('postgres store conformance', () => {
    it('runs against a PostgreSQL cluster', (t) => t.skip(NO_POSTGRES));
  });
} else {
  runStoreConformance('postgres', async () => {
    const auditKey = randomBytes(32);
    const databases = new Map<Store, TestDatabase>();
    return {
      async open() {
        const database = await createTestDatabase('conformance');
        const store = await PostgresStore.open(database.url);
        databases.set(store, database);
        return store;
      },
      async openPeer(store) {
        const database = databases.get(store);
        if (!database) throw new Error('peer of an unknown store');
        return PostgresStore.open(database.url);
      },
      core: async (store) => conformanceCore(store, auditKey),
      async dispose() {
        for (const database of databases.values()) await database.drop();
      },
    };
  });
}
