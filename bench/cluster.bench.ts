/**
 * Issue 14's cluster figures, two nodes in one process over one PostgreSQL
 * database and one s3rver bucket on loopback: what forwarding adds to a call
 * (`exec true` through the node holding the session, the floor, against
 * through the other node), and a resume on another node once the holder has
 * left (lease takeover, memory image and disk fetched from the bucket)
 * against a resume on the holder (its local copy is the cache).
 * Usage: AIRLOCK_BENCH_POSTGRES_URL=postgres://USER@HOST:PORT/postgres npx tsx bench/cluster.bench.ts [calls]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { startServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import { printComparisons, timed } from './stats.js';

const calls = Number.parseInt(process.argv[2] ?? '40', 10);
const admin = process.env['AIRLOCK_BENCH_POSTGRES_URL'];
if (!admin) throw new Error('set AIRLOCK_BENCH_POSTGRES_URL (scripts/postgres-test-cluster.sh start DIR prints one)');
const work = mkdtempSync('/var/tmp/airlock-bench-cluster-');
const database = `airlock_bench_${randomBytes(4).toString('hex')}`;
const once = async (sql: string) => {
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(sql).finally(() => client.end());
};
await once(`CREATE DATABASE ${database}`);
const storeUrl = Object.assign(new URL(admin), { pathname: `/${database}` }).toString();

const storage = spawn(process.execPath, [fileURLToPath(new URL('../packages/runtime/dist/test/support/object-storage-process.js', import.meta.url))], { stdio: ['pipe', 'pipe', 'inherit'] });
const s3Port = (JSON.parse(await new Promise<string>((resolve) => createInterface({ input: storage.stdout! }).once('line', resolve))) as { port: number }).port;
Object.assign(process.env, {
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  AWS_ENDPOINT_URL: `http://127.0.0.1:${s3Port}`,
  AWS_REGION: 'us-east-1',
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AIRLOCK_AUDIT_KEY_FILE: join(work, 'audit.key'),
});
const objects = `s3://airlock-test/bench-${randomBytes(3).toString('hex')}`;

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
const node = async (name: string) => {
  const port = await freePort();
  return startServer({ dataDir: join(work, name), host: '127.0.0.1', port, token: 'bench', storeUrl, objects, nodeId: name, advertise: `http://127.0.0.1:${port}` });
};
const a = await node('a');
const b = await node('b');
let aClosed = false;
try {
  const sandbox = await Sandbox.create({ url: a.url, token: 'bench' });
  const through = await Sandbox.connect(sandbox.id, { url: b.url, token: 'bench' });
  for (let i = 0; i < 5; i += 1) {
    await sandbox.commands.run(['true']);
    await through.commands.run(['true']);
  }
  const direct: number[] = [];
  const forwarded: number[] = [];
  for (let i = 0; i < calls; i += 1) {
    direct.push(await timed(() => sandbox.commands.run(['true'])));
    forwarded.push(await timed(() => through.commands.run(['true'])));
  }
  const files: number[] = [];
  const filesForwarded: number[] = [];
  const body = randomBytes(4 * 1024 * 1024).toString('base64');
  for (let i = 0; i < Math.min(calls, 10); i += 1) {
    files.push(await timed(() => sandbox.files.write('/workspace/blob', body)));
    filesForwarded.push(await timed(() => through.files.write('/workspace/blob', body)));
  }
  printComparisons(`Forwarding a call to the node holding the session (${calls} calls each)`, [
    { operation: 'exec true: through the other node vs on the holder', airlock: forwarded, floor: direct },
    { operation: 'write 5.6 MB file: through the other node vs on the holder', airlock: filesForwarded, floor: files },
  ]);

  const warm: number[] = [];
  await sandbox.suspend();
  warm.push(await timed(() => sandbox.commands.run(['true'])));
  await sandbox.suspend();
  await a.close();
  aClosed = true;
  const elsewhere = await timed(() => through.commands.run(['true']));
  const owner = (await b.services.store.getSession(sandbox.id))?.owner;
  printComparisons(`Resume → first output: on another node after the holder left (owner now ${owner}) vs on the holder (one sample each)`, [
    { operation: 'exec true after suspend', airlock: [elsewhere], floor: warm },
  ]);
  await through.kill();
  // a comes back: its reconciler removes its copy of the session's disk (the session ended elsewhere).
  const again = await startServer({ dataDir: join(work, 'a'), host: '127.0.0.1', port: 0, token: 'bench', storeUrl, objects, nodeId: 'a' });
  await again.close();
} finally {
  if (!aClosed) await a.close();
  await b.close();
  storage.stdin?.end();
  await once(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  rmSync(work, { recursive: true, force: true });
}
