/**
 * The E2B-compatible API (issue 23) beside Airlock's own SDK, on one
 * in-process server and the same kind of session: `commands.run('true')` and
 * a 4 KiB write + read, through the `e2b` client (E2B_API_URL and
 * E2B_SANDBOX_URL at `/e2b`) and through `@airlock/sdk` (`/v1`),
 * interleaved, p50 and p99 and their ratio (aim ≤ 1.2×).
 * Needs root, runsc and the debian-bookworm image (taken from
 * /var/tmp/airlock-test/images when AIRLOCK_IMAGES_DIR is not set).
 * Usage: npx tsx bench/e2b.bench.ts [samples=50]
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Sandbox as E2bSandbox } from 'e2b';
import { Sandbox } from '@airlock/sdk';
import { startServer } from '@airlock/runtime';
import { loadAverage, quantile, timed } from './stats.js';

const samples = Math.max(20, Number.parseInt(process.argv[2] ?? '50', 10));
const WARM_UP = 5;
const AWAKE = { version: 1, idle: { suspendAfterSeconds: 600, keepAwake: true } };

if (!process.env['AIRLOCK_IMAGES_DIR'] && existsSync('/var/tmp/airlock-test/images')) process.env['AIRLOCK_IMAGES_DIR'] = '/var/tmp/airlock-test/images';
const work = mkdtempSync('/var/tmp/airlock-bench-e2b-');
const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench', warmPool: 0 });
try {
  const key = (await server.services.tokens.create({ tenant: 'default', role: 'operator', name: 'bench-e2b', e2b: true }, 'bench')).secret;
  const e2bOptions = { apiKey: key, apiUrl: `${server.url}/e2b`, sandboxUrl: `${server.url}/e2b` };
  const own = await Sandbox.create({ url: server.url, token: 'bench', contract: AWAKE });
  const e2b = await E2bSandbox.create('base', { ...e2bOptions, timeoutMs: 3_600_000 });
  await e2b.setTimeout(3_600_000);
  const content = 'a'.repeat(4096);
  const rows = new Map<string, number[]>();
  const add = (name: string, value: number) => void (rows.get(name) ?? rows.set(name, []).get(name))?.push(value);
  const before = loadAverage();
  for (let i = 0; i < WARM_UP + samples; i++) {
    const ownRun = await timed(() => own.commands.run('true'));
    const e2bRun = await timed(() => e2b.commands.run('true'));
    const ownFiles = await timed(async () => {
      await own.files.write('/workspace/bench-4k', content);
      if ((await own.files.read('/workspace/bench-4k')).length !== 4096) throw new Error('short read');
    });
    const e2bFiles = await timed(async () => {
      await e2b.files.write('/workspace/bench-4k', content);
      if ((await e2b.files.read('/workspace/bench-4k')).length !== 4096) throw new Error('short read');
    });
    if (i < WARM_UP) continue;
    add('own:run', ownRun);
    add('e2b:run', e2bRun);
    add('own:files', ownFiles);
    add('e2b:files', e2bFiles);
  }
  const line = (what: string, ownKey: string, e2bKey: string) => {
    const a = rows.get(ownKey) ?? [];
    const b = rows.get(e2bKey) ?? [];
    const cell = (values: number[], q: number) => quantile(values, q).toFixed(1);
    return `| ${what} | ${cell(a, 0.5)} | ${cell(a, 0.99)} | ${cell(b, 0.5)} | ${cell(b, 0.99)} | ${(quantile(b, 0.5) / quantile(a, 0.5)).toFixed(2)}× | ${(quantile(b, 0.99) / quantile(a, 0.99)).toFixed(2)}× |`;
  };
  console.log(`### E2B API vs Airlock's SDK: ${samples} samples each, interleaved (after ${WARM_UP} warm-up rounds); load ${before} → ${loadAverage()}`);
  console.log('');
  console.log('| what | /v1 p50 (ms) | /v1 p99 | /e2b p50 | /e2b p99 | ratio p50 | ratio p99 |');
  console.log('|---|---|---|---|---|---|---|');
  console.log(line("commands.run('true')", 'own:run', 'e2b:run'));
  console.log(line('4 KiB write + read', 'own:files', 'e2b:files'));
  await e2b.kill();
  await own.kill();
} finally {
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
