/**
 * Issue 17's figures: boot (create → first output), exec round trip,
 * suspend, resume (→ first output) and fork into 3 branches (snapshot
 * included, until every branch answered) for the microvm driver, beside the
 * same operations on gVisor, through the SDK against one in-process server,
 * on the Debian image; and each fork branch's host memory (PSS of its
 * sandbox processes) against its guest's RAM. Under software emulation
 * (TCG, the only accelerator on hosts whose KVM cannot run a stock guest)
 * absolute microVM times are far slower than they would be under KVM.
 * Usage: npx tsx bench/microvm.bench.ts [iterations, default 3]
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer } from '@airlock/runtime';
import { Sandbox } from '@airlock/sdk';
import { quantile, timed } from './stats.js';

const iterations = Number.parseInt(process.argv[2] ?? '3', 10);
const work = mkdtempSync('/var/tmp/airlock-bench-microvm-');
const MEMORY_MB = 512;
const CONTRACT = { version: 1, resources: { memoryMb: MEMORY_MB }, idle: { keepAwake: true, suspendAfterSeconds: 3600 } };
const MB = 1024 * 1024;

/** PSS (bytes) of the host processes whose command line mentions `marker`. */
function pssOf(marker: string): number {
  let pss = 0;
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(marker)) continue;
      pss += Number(/^Pss:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      // the process went away
    }
  }
  return pss;
}

const server = await startServer({ dataDir: join(work, 'data'), host: '127.0.0.1', port: 0, token: 'bench' });
const connection = { url: server.url, token: 'bench' };
const figures: Record<string, Record<string, number[]>> = { gvisor: {}, microvm: {} };
const record = (driver: string, operation: string, ms: number): void => {
  (figures[driver] as Record<string, number[]>)[operation] ??= [];
  (figures[driver] as Record<string, number[]>)[operation]?.push(ms);
};

try {
  for (let i = 0; i < iterations; i += 1) {
    for (const driver of ['gvisor', 'microvm']) {
      let sandbox: Sandbox | undefined;
      record(driver, 'create → first output', await timed(async () => {
        sandbox = await Sandbox.create({ ...connection, contract: { ...CONTRACT, sandbox: driver } });
        await sandbox.commands.run('echo ready');
      }));
      const s = sandbox as Sandbox;
      for (let k = 0; k < 10; k += 1) record(driver, 'exec `true` round trip', await timed(() => s.commands.run(['true'])));
      record(driver, 'suspend', await timed(() => s.suspend()));
      record(driver, 'resume → first output', await timed(async () => {
        await s.resume();
        await s.commands.run(['true']);
      }));
      let branches: Sandbox[] = [];
      record(driver, 'fork into 3 (running parent, until all answered)', await timed(async () => {
        branches = await s.fork({ count: 3 });
        await Promise.all(branches.map((branch) => branch.commands.run(['true'])));
      }));
      for (const branch of branches) {
        const info = await branch.getInfo();
        record(driver, 'PSS per branch (MB)', pssOf(info.sandboxId ?? 'none') / MB);
        await branch.kill();
      }
      await s.kill();
    }
  }
  const lines = [
    `| operation | gVisor p50 | microvm (${process.env['AIRLOCK_BENCH_ACCELERATOR'] ?? 'TCG'}) p50 | ratio | gVisor max | microvm max | n |`,
    '|---|---|---|---|---|---|---|',
  ];
  for (const operation of Object.keys(figures['microvm'] ?? {})) {
    const gvisor = figures['gvisor']?.[operation] ?? [];
    const microvm = figures['microvm']?.[operation] ?? [];
    const unit = operation.includes('(MB)') ? '' : ' ms';
    lines.push(
      `| ${operation} | ${quantile(gvisor, 0.5).toFixed(1)}${unit} | ${quantile(microvm, 0.5).toFixed(1)}${unit} | ${(quantile(microvm, 0.5) / quantile(gvisor, 0.5)).toFixed(2)}× | ${Math.max(...gvisor).toFixed(1)} | ${Math.max(...microvm).toFixed(1)} | ${microvm.length} |`,
    );
  }
  process.stdout.write(`guest RAM ${MEMORY_MB} MB; load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n\n${lines.join('\n')}\n`);
} finally {
  await server.close();
  rmSync(work, { recursive: true, force: true });
}
