/**
 * PostgreSQL for end-to-end tests: throwaway databases on the cluster named
 * by AIRLOCK_TEST_POSTGRES_URL (scripts/postgres-test-cluster.sh; .ci/run
 * starts one), and the store end-to-end suites run against when
 * AIRLOCK_TEST_STORE=postgres.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The admin URL of the test cluster, or undefined when none is configured. */
export function testPostgresUrl(): string | undefined {
  return process.env['AIRLOCK_TEST_POSTGRES_URL'] || undefined;
}

/** Why PostgreSQL cases are skipped on this machine. */
export const NO_POSTGRES = 'no PostgreSQL to test against: start one with `scripts/postgres-test-cluster.sh start DIR` and export AIRLOCK_TEST_POSTGRES_URL';

/** The store test installations use unless a test says otherwise. */
export function defaultTestStore(): 'sqlite' | 'postgres' {
  return process.env['AIRLOCK_TEST_STORE'] === 'postgres' ? 'postgres' : 'sqlite';
}

/** A fresh, empty database. */
export interface TestDatabase {
  url: string;
  /** runs one statement on it */
  query(sql: string, params?: unknown[]): Promise<pg.QueryResult>;
  drop(): Promise<void>;
}

/** Creates an empty database `airlock_<label>_<random>` on the test cluster. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const admin = testPostgresUrl();
  if (!admin) throw new Error(NO_POSTGRES);
  const name = `airlock_${label.replace(/[^a-z0-9]/g, '_')}_${randomBytes(5).toString('hex')}`;
  await onDatabase(admin, `CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    query: (sql, params = []) => onDatabase(url.toString(), sql, params),
    drop: async () => {
      await onDatabase(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** Runs one statement on the database at `url`; returns the rows it changed. */
export async function runOnDatabase(url: string, sql: string, params: unknown[] = []): Promise<number> {
  return (await onDatabase(url, sql, params)).rowCount ?? 0;
}

/** One statement on its own connection (tests make few, and a pool would outlive them). */
async function onDatabase(url: string, sql: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(sql, params);
  } finally {
    await client.end();
  }
}
