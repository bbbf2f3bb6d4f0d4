/**
 * Issue 13's figures: per tool call, what the store adds (admission with its
 * budget reservation and decision records, path and completion records,
 * session updates) on SQLite and on a local PostgreSQL, p50/p99. The calls
 * run through the real pipeline over the fake driver, so that the sandbox's
 * time is zero and what is measured is the core plus the store; the time
 * spent inside store transactions is summed per call. Also: one audit
 * append alone, and how fast a change reaches another server (LISTEN/NOTIFY).
 *
 * Usage: npx tsx bench/store-overhead.bench.ts [calls]
 * PostgreSQL rows need AIRLOCK_BENCH_POSTGRES_URL (an admin URL; a database is
 * created and dropped), ideally a cluster with fsync on:
 *   AIRLOCK_TEST_POSTGRES_FSYNC=on scripts/postgres-test-cluster.sh start DIR 55433
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { SqliteStore } from '../packages/runtime/dist/src/stores/sqlite/sqlite-store.js';
import { PostgresStore } from '../packages/runtime/dist/src/stores/postgres/postgres-store.js';
import type { Store } from '../packages/runtime/dist/src/core/store.js';
import { coreFixture } from '../packages/runtime/dist/test/support/core-fixture.js';
import { quantile } from './stats.js';

const calls = Number.parseInt(process.argv[2] ?? '400', 10);
const scratch = mkdtempSync('/var/tmp/airlock-bench-store-');

interface Row {
  store: string;
  what: string;
  samples: number[];
  transactions?: number;
}

/** Wraps `store.transaction` to add the time spent in each to `spent.ms`. */
function metered(store: Store): { store: Store; spent: { ms: number; count: number } } {
  const spent = { ms: 0, count: 0 };
  const transaction = store.transaction.bind(store);
  store.transaction = async (work) => {
    const started = process.hrtime.bigint();
    try {
      return await transaction(work);
    } finally {
      spent.ms += Number(process.hrtime.bigint() - started) / 1e6;
      spent.count += 1;
    }
  };
  return { store, spent };
}

async function measure(name: string, open: () => Promise<Store>): Promise<Row[]> {
  const { store, spent } = metered(await open());
  const fx = coreFixture({ store });
  const rows: Row[] = [];
  try {
    fx.driver.handler = (argv) => ({ stdout: argv.at(-2) ?? '' });
    const session = await fx.sessions.create({ contract: fx.contract() });
    for (const [tool, args] of [
      ['exec', { argv: ['true'] }],
      ['files.write', { path: '/workspace/a.txt', content: 'x' }],
    ] as const) {
      const storeMs: number[] = [];
      const totalMs: number[] = [];
      let transactions = 0;
      for (let i = 0; i < calls + 50; i += 1) {
        await fx.core.usage.drain();
        spent.ms = 0;
        spent.count = 0;
        const started = process.hrtime.bigint();
        const outcome = await fx.pipeline.submit(session.id, tool, args);
        const total = Number(process.hrtime.bigint() - started) / 1e6;
        if (outcome.status !== 'completed') throw new Error(`${tool} was ${outcome.status}`);
        if (i < 50) continue;
        storeMs.push(spent.ms);
        totalMs.push(total);
        transactions += spent.count;
      }
      rows.push({ store: name, what: `${tool}: store time per call`, samples: storeMs, transactions: transactions / calls });
      rows.push({ store: name, what: `${tool}: whole call, fake driver`, samples: totalMs });
    }
    const appends: number[] = [];
    for (let i = 0; i < calls; i += 1) {
      const started = process.hrtime.bigint();
      await fx.audit.appendNow(store, { sessionId: session.id, type: 'bench.recorded', data: { i } });
      appends.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
    rows.push({ store: name, what: 'one audit append (its own transaction)', samples: appends });
  } finally {
    await fx.close();
    await store.close();
  }
  return rows;
}

/** Milliseconds from a commit on one handle to the other handle hearing it. */
async function notifyLatency(url: string): Promise<number[]> {
  const writer = await PostgresStore.open(url);
  const reader = await PostgresStore.open(url);
  const samples: number[] = [];
  try {
    for (let i = 0; i < 200; i += 1) {
      const id = `apr_bench${i}`;
      const heard = new Promise<number>((resolve) => {
        const stop = reader.watch((change) => {
          if (change.kind === 'approval' && change.approvalId === id) {
            stop();
            resolve(Number(process.hrtime.bigint()));
          }
        });
      });
      let committed = 0n;
      await writer.transaction(async (tx) => {
        await tx.insertApproval({ id, sessionId: 'ses_bench', state: 'pending', call: { id: `call_${i}`, sessionId: 'ses_bench', tool: 'exec', arguments: {}, receivedAt: new Date().toISOString() }, policyIds: [], reason: '', createdAt: new Date().toISOString(), expiresAt: new Date().toISOString(), decidedAt: null, decidedBy: null, decisionReason: null });
        tx.afterCommit(() => (committed = process.hrtime.bigint()));
      });
      samples.push((await heard - Number(committed)) / 1e6);
    }
  } finally {
    await writer.close();
    await reader.close();
  }
  return samples;
}

const rows: Row[] = [];
let files = 0;
rows.push(...(await measure('SQLite', async () => new SqliteStore(join(scratch, `bench-${(files += 1)}.db`)))));
const admin = process.env['AIRLOCK_BENCH_POSTGRES_URL'];
let notify: number[] | undefined;
if (admin) {
  const name = `airlock_bench_${randomBytes(4).toString('hex')}`;
  const adminClient = new pg.Client({ connectionString: admin });
  await adminClient.connect();
  await adminClient.query(`CREATE DATABASE ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  try {
    const fsync = (await adminClient.query<{ fsync: string }>('SHOW fsync')).rows[0]?.fsync;
    rows.push(...(await measure(`PostgreSQL (fsync ${fsync})`, () => PostgresStore.open(url.toString()))));
    notify = await notifyLatency(url.toString());
  } finally {
    await adminClient.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await adminClient.end();
  }
}
rmSync(scratch, { recursive: true, force: true });

console.log(`\n### Store overhead per tool call (${calls} calls each, ${new Date().toISOString().slice(0, 16)})\n`);
console.log('| store | what | p50 (ms) | p99 (ms) | transactions per call | n |');
console.log('|---|---|---|---|---|---|');
for (const row of rows) {
  console.log(`| ${row.store} | ${row.what} | ${quantile(row.samples, 0.5).toFixed(3)} | ${quantile(row.samples, 0.99).toFixed(3)} | ${row.transactions === undefined ? '' : row.transactions.toFixed(1)} | ${row.samples.length} |`);
}
if (notify) console.log(`\nLISTEN/NOTIFY, commit on one server → heard by another: p50 ${quantile(notify, 0.5).toFixed(3)} ms, p99 ${quantile(notify, 0.99).toFixed(3)} ms (n=${notify.length})`);
else console.log('\n(PostgreSQL rows skipped: set AIRLOCK_BENCH_POSTGRES_URL)');
