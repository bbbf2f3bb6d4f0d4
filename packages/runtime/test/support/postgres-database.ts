/**
 * Throwaway PostgreSQL databases for tests, on the cluster named by
 * AIRLOCK_TEST_POSTGRES_URL (scripts/postgres-test-cluster.sh starts one;
 * .ci/run exports it). Each database is created empty and dropped after.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The admin URL of the test cluster, or undefined when none is configured. */
export function testPostgresUrl(): string | undefined {
  return process.env['AIRLOCK_TEST_POSTGRES_URL'] || undefined;
}

/** Why PostgreSQL cases are skipped on this machine. */
export const NO_POSTGRES = 'no PostgreSQL to test against: start one with `scripts/postgres-test-cluster.sh start DIR` and export AIRLOCK_TEST_POSTGRES_URL';

/** A fresh empty database on the test cluster. */
export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** Creates an empty database named `airlock_<label>_<random>`. */
export async function createTestDatabase(label: string): Promise<TestDatabase> {
  const admin = testPostgresUrl();
  if (!admin) throw new Error(NO_POSTGRES);
  const name = `airlock_${label.replace(/[^a-z0-9]/g, '_')}_${randomBytes(5).toString('hex')}`;
  await adminQuery(admin, `CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => adminQuery(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function adminQuery(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}
