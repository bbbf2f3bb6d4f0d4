/**
 * Opens the store a server was pointed at: PostgreSQL for a `postgres://`
 * URL (`--store` or AIRLOCK_STORE_URL), else SQLite in the data dir.
 */
import type { Store } from '../core/store.js';
import { AirlockError } from '../core/errors.js';
import { PostgresStore, type PostgresStoreOptions } from './postgres/postgres-store.js';
import { SqliteStore } from './sqlite/sqlite-store.js';

/** True for URLs the PostgreSQL store takes. */
export function isPostgresUrl(url: string): boolean {
  return /^postgres(ql)?:\/\//.test(url);
}

/** Opens the store at `url`, or the SQLite file `sqlitePath` when no URL is given. */
export async function openStore(options: { url?: string | undefined; sqlitePath: string; postgres?: PostgresStoreOptions }): Promise<Store> {
  const url = options.url?.trim();
  if (!url) return new SqliteStore(options.sqlitePath);
  if (!isPostgresUrl(url)) {
    throw new AirlockError(
      'INVALID_ARGUMENTS',
      `--store takes a PostgreSQL URL such as postgres://airlock@127.0.0.1:5432/airlock (got ${JSON.stringify(url.slice(0, 80))}); leave it out to use SQLite in the data dir`,
      {
        details: { field: 'store' },
      },
    );
  }
  return PostgresStore.open(url, options.postgres);
}
