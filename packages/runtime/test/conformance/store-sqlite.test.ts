/** The Store conformance suite against the embedded SQLite store, one fresh file per case. */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runStoreConformance } from '../../src/stores/conformance/store-conformance.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { conformanceCore } from '../support/store-conformance-core.js';

runStoreConformance('sqlite', async () => {
  const dir = mkdtempSync('/tmp/airlock-store-sqlite-');
  const auditKey = randomBytes(32);
  let files = 0;
  return {
    open: async () => new SqliteStore(join(dir, `store-${(files += 1)}.db`)),
    noPeerReason: 'the embedded store serves one server process (a second process would wait on the file lock); share state between servers with PostgreSQL',
    core: async (store) => conformanceCore(store, auditKey),
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
});
