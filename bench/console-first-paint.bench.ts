/**
 * Time to first paint of the console's sessions page with 1,000 sessions in
 * the store (issue 15): a real server, its SQLite store seeded with 1,000
 * session records, Debian's Chromium headless, a logged-in browser loading `/`
 * afresh each run. Prints the API answer time and the shell's first paint
 * beside the list's, so the cost of the page itself is visible.
 * Usage: npx tsx bench/console-first-paint.bench.ts [runs] (needs `npm run build` and chromium)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startServer, SqliteStore } from '@airlock/runtime';
import { quantile } from './stats.js';

const runs = Number.parseInt(process.argv[2] ?? '10', 10);
const SESSIONS = 1000;
const TOKEN = 'bench-console-token-0123456789';
const work = mkdtempSync('/var/tmp/airlock-bench-console-');
const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: TOKEN });

/** A session record as the store keeps it: suspended (so it is in the default "live" view), with meters. */
function seededSession(index: number): Record<string, unknown> {
  const created = new Date(Date.now() - (SESSIONS - index) * 60_000).toISOString();
  const id = `ses_bench${String(index).padStart(11, '0')}`;
  return {
    id,
    state: index % 10 === 0 ? 'terminated' : 'suspended',
    pendingOperation: null,
    mode: index % 7 === 0 ? 'per-call' : 'machine',
    tenant: ['acme', 'globex', 'initech', 'umbrella'][index % 4],
    principal: `agent-${index % 13}`,
    imageName: 'debian-bookworm',
    imageDigest: 'sha256:bench',
    contractVersion: 1,
    contract: { version: 1, identity: { tenant: 'acme', principal: 'agent', objective: `task ${index}` }, tools: ['exec', 'files.read'] },
    resources: { cpus: 1, memoryMb: 512, diskMb: 2048, maxProcesses: 256 },
    sandbox: null,
    generation: 1,
    resumeSnapshotId: `snap_bench${index}`,
    lineage: index % 5 === 0 && index > 0 ? { parentSessionId: `ses_bench${String(index - 1).padStart(11, '0')}`, snapshotId: `snap_bench${index - 1}`, branchIndex: 0 } : null,
    failure: null,
    createdAt: created,
    updatedAt: created,
    stateSince: created,
    lastActivityAt: created,
    meters: { toolCalls: index * 3, cpuSeconds: index / 10, peakMemoryBytes: 50_000_000 + index * 1000, memoryByteSeconds: 0, cpuSecondsClosed: 0, runningSeconds: 60, pausedSeconds: 5, suspendedSeconds: 100, diskBytes: 1_000_000, snapshotBytes: 2_000_000 },
    guard: { failures: {}, tripped: null },
  };
}

// A second connection to the server's database (WAL): the server lists sessions from it on every request.
const seeder = new SqliteStore(server.layout.database);
seeder.transaction(() => {
  for (let index = 0; index < SESSIONS; index += 1) seeder.insertSession(seededSession(index) as never);
});
seeder.close();

const profile = mkdtempSync('/var/tmp/airlock-bench-chromium-');
const context = await chromium.launchPersistentContext(profile, {
  executablePath: '/usr/bin/chromium',
  headless: true,
  viewport: { width: 1280, height: 900 },
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
const api: number[] = [];
const shell: number[] = [];
const list: number[] = [];
const loaded: number[] = [];
let bytes = 0;
try {
  const login = context.pages()[0] ?? (await context.newPage());
  await login.goto(server.url);
  await login.fill('#token', TOKEN);
  await login.click('button[type=submit]');
  await login.waitForSelector('[data-testid=sessions-table]');
  await login.close();
  for (let run = 0; run < runs + 1; run += 1) {
    const page = await context.newPage();
    await page.goto(server.url);
    await page.waitForFunction(() => performance.getEntriesByName('airlock:sessions-rendered').length > 0, undefined, { timeout: 60_000 });
    const figures = await page.evaluate(() => {
      const sessions = performance.getEntriesByType('resource').find((entry) => entry.name.endsWith('/v1/sessions')) as PerformanceResourceTiming | undefined;
      return {
        api: sessions ? sessions.responseEnd : Number.NaN,
        bytes: sessions?.encodedBodySize ?? 0,
        shell: performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
        list: performance.getEntriesByName('airlock:sessions-rendered')[0]?.startTime ?? Number.NaN,
        loaded: performance.getEntriesByName('airlock:sessions-loaded')[0]?.startTime ?? Number.NaN,
        rows: document.querySelectorAll('[data-testid=sessions-table] tbody tr').length,
      };
    });
    await page.close();
    if (run === 0) continue; // the first load fills the browser's cache of the hashed assets
    api.push(figures.api);
    shell.push(figures.shell);
    list.push(figures.list);
    loaded.push(figures.loaded);
    bytes = figures.bytes;
    if (figures.rows === 0) throw new Error('the sessions table rendered no rows');
  }
  const line = (label: string, samples: number[]) => `| ${label} | ${quantile(samples, 0.5).toFixed(1)} | ${quantile(samples, 0.99).toFixed(1)} | ${samples.length} |`;
  process.stdout.write(
    [
      `### Console: sessions page with ${SESSIONS} sessions in the store`,
      '',
      '| from navigation start to | p50 (ms) | p99 (ms) | n |',
      '|---|---|---|---|',
      line(`GET /v1/sessions answered (${(bytes / 1024).toFixed(0)} KiB)`, api),
      line('first contentful paint (the console shell)', shell),
      line('both lists in the page (parsed, before render)', loaded),
      line('sessions list painted (first 200 rows of 900 live)', list),
      '',
    ].join('\n') + '\n',
  );
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
