/**
 * Issue 14's figures for snapshots in object storage: bytes uploaded by a
 * first and a second suspend (10% of the memory rewritten in between), and
 * resume with a warm chunk cache (the node that suspended it) against a cold
 * one (another data dir on the same bucket), for an idle session and one
 * holding 512 MB: time to first output and bytes fetched. The floor of a
 * cold resume is the warm resume plus a plain parallel GET of the same
 * chunks. Two in-process servers, s3rver on loopback (one machine: no real
 * network, see docs/scale-out.md).
 * Usage: npx tsx bench/object-storage.bench.ts [iterations]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { startServer, type RunningServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import { quantile, timed } from './stats.js';

const iterations = Number.parseInt(process.argv[2] ?? '2', 10);
const work = mkdtempSync('/var/tmp/airlock-bench-objects-');
const MB = 1e6;
// Holds N MB of random bytes; rewrites the first 10% of them when /tmp/churn appears.
const holder = (mb: number): string =>
  [
    'import os, time',
    `b = bytearray(${mb} * 1024 * 1024)`,
    `for i in range(${mb}):`,
    '    b[i << 20:(i + 1) << 20] = os.urandom(1 << 20)',
    "open('/tmp/held', 'w').write('1')",
    'while True:',
    '    time.sleep(0.05)',
    "    if os.path.exists('/tmp/churn'):",
    '        n = len(b) // 10',
    '        b[:n] = os.urandom(n)',
    "        os.remove('/tmp/churn')",
  ].join('\n');

// The test object storage (s3rver behind a relay), as the end-to-end tests run it.
const storage = spawn(process.execPath, [fileURLToPath(new URL('../packages/runtime/dist/test/support/object-storage-process.js', import.meta.url))], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const port = (JSON.parse(await new Promise<string>((resolve) => createInterface({ input: storage.stdout! }).once('line', resolve))) as { port: number }).port;
Object.assign(process.env, { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', AWS_ENDPOINT_URL: `http://127.0.0.1:${port}`, AWS_REGION: 'us-east-1', AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' });
const prefix = `bench-${randomBytes(3).toString('hex')}`;
const objects = `s3://airlock-test/${prefix}`;
const s3 = new S3Client({ endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } });

type Transfer = { bytes: number; chunks: number; reusedChunks: number } | null;
interface Sample {
  firstUpload: number;
  secondUpload: number;
  secondReused: number;
  warmMs: number;
  coldMs: number;
  coldFetched: number;
  floorMs: number;
}

/** Audit data of the session's last record of `type` on a server. */
function lastAudit(server: RunningServer, id: string, type: string): Record<string, unknown> {
  return server.services.store.listAudit(id, { types: [type] }).at(-1)?.data ?? {};
}

/** A plain parallel GET (8 at a time) of every chunk a snapshot's manifest names: what fetching costs without verifying or assembling. */
async function rawFetch(snapshotId: string): Promise<number> {
  const get = async (key: string): Promise<Uint8Array> => (await (await s3.send(new GetObjectCommand({ Bucket: 'airlock-test', Key: `${prefix}/${key}` }))).Body!.transformToByteArray());
  const manifest = JSON.parse(Buffer.from(await get(`snapshots/${snapshotId}.json`)).toString()) as { files: { chunks: { sha256: string }[] }[]; disk: { chunks: { sha256: string }[] } | null };
  const keys = [...new Set([...manifest.files.flatMap((file) => file.chunks), ...(manifest.disk?.chunks ?? [])].map((chunk) => chunk.sha256))].map((sha) => `chunks/${sha.slice(0, 2)}/${sha}`);
  return timed(async () => {
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      while (next < keys.length) await get(keys[next++]!);
    }));
  });
}

const a = await startServer({ dataDir: join(work, 'a'), host: '127.0.0.1', port: 0, token: 'bench', objects });
const b = await startServer({ dataDir: join(work, 'b'), host: '127.0.0.1', port: 0, token: 'bench', objects });
const results = new Map<string, Sample[]>();
try {
  for (let i = 0; i < iterations; i += 1) {
    for (const [label, mb] of [['idle session', 0], ['512 MB held', 512]] as const) {
      const sandbox = await Sandbox.create({ url: a.url, token: 'bench', contract: { version: 1, resources: { memoryMb: 1024 } } });
      const id = sandbox.id;
      if (mb > 0) {
        await sandbox.files.write('/workspace/hold.py', holder(mb));
        await sandbox.commands.run('nohup python3 /workspace/hold.py >/dev/null 2>&1 & while [ ! -f /tmp/held ]; do sleep 0.1; done');
      }
      await sandbox.suspend();
      const first = lastAudit(a, id, 'session.suspended')['uploaded'] as Transfer;
      // Warm: the node that suspended it, its chunk cache (the local copy) intact.
      const warmMs = await timed(() => sandbox.commands.run(['true']));
      if (mb > 0) await sandbox.commands.run('touch /tmp/churn; while [ -e /tmp/churn ]; do sleep 0.05; done');
      await sandbox.suspend();
      const second = lastAudit(a, id, 'session.suspended')['uploaded'] as Transfer;
      const snapshotId = String(lastAudit(a, id, 'session.suspended')['snapshotId']);
      // Cold: another data dir on the bucket, which has neither the memory image nor the disk.
      b.services.store.insertSession(a.services.sessions.get(id));
      for (const snapshot of a.services.store.listSnapshots({ sessionId: id })) b.services.store.insertSnapshot(snapshot);
      const elsewhere = await Sandbox.connect(id, { url: b.url, token: 'bench' });
      const coldMs = await timed(() => elsewhere.commands.run(['true']));
      const fetched = lastAudit(b, id, 'session.resumed')['fetched'] as { memory: Transfer; disk: Transfer } | undefined;
      const floorMs = warmMs + (await rawFetch(snapshotId));
      const samples = results.get(label) ?? [];
      samples.push({
        firstUpload: first?.bytes ?? 0,
        secondUpload: second?.bytes ?? 0,
        secondReused: second?.reusedChunks ?? 0,
        warmMs,
        coldMs,
        coldFetched: (fetched?.memory?.bytes ?? 0) + (fetched?.disk?.bytes ?? 0),
        floorMs,
      });
      results.set(label, samples);
      await b.services.sessions.terminate(id);
      // A's copy names the same (now deleted) snapshots: only its machine and disk are left to remove.
      await a.services.sessions.terminate(id).catch(() => undefined);
    }
  }
  const lines = [
    `### Snapshots in object storage, ${iterations} iterations (s3rver on loopback)`,
    '',
    '| session | 1st suspend uploads (MB) | 2nd suspend uploads (MB) | 2nd / 1st | resume warm → first output (ms) | resume cold → first output (ms) | floor: warm + raw GET (ms) | cold / floor | fetched cold (MB) |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [label, samples] of results) {
    const p50 = (pick: (sample: Sample) => number): number => quantile(samples.map(pick), 0.5);
    lines.push(
      `| ${label} | ${(p50((s) => s.firstUpload) / MB).toFixed(1)} | ${(p50((s) => s.secondUpload) / MB).toFixed(1)} | ${(p50((s) => s.secondUpload / s.firstUpload) * 100).toFixed(0)}% | ${p50((s) => s.warmMs).toFixed(0)} | ${p50((s) => s.coldMs).toFixed(0)} | ${p50((s) => s.floorMs).toFixed(0)} | ${p50((s) => s.coldMs / s.floorMs).toFixed(2)}× | ${(p50((s) => s.coldFetched) / MB).toFixed(1)} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n\n(p50 of each column; the 512 MB case rewrites 10% of its memory between the two suspends, the idle one nothing)\n`);
} catch (error) {
  process.stderr.write(`benchmark failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
} finally {
  for (const server of [a, b]) {
    for (const session of server.services.sessions.list()) {
      if (session.state !== 'terminated') await server.services.sessions.terminate(session.id).catch(() => undefined);
    }
    await server.close();
  }
  s3.destroy();
  storage.stdin?.end();
  await new Promise((resolve) => storage.once('exit', resolve));
  rmSync(work, { recursive: true, force: true });
}
