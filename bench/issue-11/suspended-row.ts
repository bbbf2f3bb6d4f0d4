/**
 * Row 10 of issue 11's Targets: how many suspended sessions one host holds.
 * Creates N real sessions through the SDK (a few at a time), runs a command
 * in each and suspends it, then reports host RAM (`free -m`) before and
 * after, the server's CPU while idle, how many of the sessions' sandboxes
 * still run (must be 0), and the disk each suspended session takes. Slow on
 * purpose; the last row, skippable with --only.
 */
import { execFileSync } from 'node:child_process';
import { Sandbox } from '@airlock/sdk';
import { sleep, type BenchContext } from './bench-context.js';
import { figure, measureRow, type RowResult } from './row-result.js';

const CONCURRENCY = 3;
const IDLE_WINDOW_MS = 10_000;
const TARGET_SESSIONS = 1000;

/** `free -m`'s Mem line: used and available MiB. */
function memory(): { usedMb: number; availableMb: number } {
  const line =
    execFileSync('free', ['-m'])
      .toString()
      .split('\n')
      .find((entry) => entry.startsWith('Mem:')) ?? '';
  const fields = line.split(/\s+/).slice(1).map(Number);
  return { usedMb: fields[1] ?? Number.NaN, availableMb: fields[5] ?? Number.NaN };
}

/** KiB under `dir`: allocated blocks, and apparent size. */
function diskKib(dir: string): { allocated: number; apparent: number } {
  const size = (args: string[]) =>
    Number(
      execFileSync('du', ['-sk', ...args, dir])
        .toString()
        .split('\t')[0],
    );
  return { allocated: size([]), apparent: size(['--apparent-size']) };
}

/** CPU seconds this process (the server runs in it) used per second over an idle window. */
async function idleCpu(): Promise<number> {
  const before = process.cpuUsage();
  await sleep(IDLE_WINDOW_MS);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1e6 / (IDLE_WINDOW_MS / 1000);
}

/** Host processes of runsc (sandboxes, gofers), counted from ps. */
function runscProcesses(): number {
  return execFileSync('ps', ['-eo', 'comm'])
    .toString()
    .split('\n')
    .filter((name) => name.startsWith('runsc') || name === 'exe').length;
}

/** Creates and suspends `options.suspended` sessions, measures, then kills them all. */
export function suspendedRow(context: BenchContext): Promise<RowResult> {
  const target = `≥ ${TARGET_SESSIONS}, 0 RAM and 0 CPU each`;
  return measureRow('suspended', 'sessions suspended on one host', target, async () => {
    const wanted = context.options.suspended;
    const dataDir = context.server.layout.root;
    const ramBefore = memory();
    const diskBefore = diskKib(dataDir);
    const cpuBefore = await idleCpu();
    const runscBefore = runscProcesses();
    const serverRssBefore = process.memoryUsage().rss;
    const ids: string[] = [];
    const perSession: number[] = [];
    const failures: string[] = [];
    let next = 0;
    const started = performance.now();
    const worker = async (): Promise<void> => {
      // Ctrl-C stops the workers too: the killing of the sessions must not race new ones (measured: it did).
      while (next < wanted && !context.interrupted) {
        next += 1;
        const began = performance.now();
        try {
          const sandbox = await Sandbox.create(context.connection);
          ids.push(sandbox.id);
          await sandbox.commands.run(['true']);
          await sandbox.suspend();
          perSession.push(performance.now() - began);
        } catch (error) {
          failures.push(error instanceof Error ? error.message : String(error));
        }
        if ((perSession.length + failures.length) % 25 === 0) process.stderr.write(`  suspended: ${perSession.length}/${wanted} (${failures.length} failed)\n`);
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      const createSeconds = (performance.now() - started) / 1000;
      // The old sandboxes of the suspends are torn down in the background (core/sandbox-teardowns.ts): the
      // idle figures are taken once the driver lists none of them any more (the first window after a burst of
      // 60 suspends measured 16% of a core, the next ones 0.2-0.4%).
      const teardownStarted = performance.now();
      for (;;) {
        const left = (await context.driver.list()).filter((listing) => listing.sessionId !== undefined && ids.includes(listing.sessionId)).length;
        if (left === 0 || performance.now() - teardownStarted > 300_000) break;
        await sleep(1_000);
      }
      const teardownSeconds = (performance.now() - teardownStarted) / 1000;
      await sleep(5_000);
      const sessions = await context.server.services.sessions.list();
      const ours = new Set(ids);
      const suspended = sessions.filter((session) => ours.has(session.id) && session.state === 'suspended').length;
      const listings = await context.driver.list();
      const sandboxesOfOurs = listings.filter(
        (listing) => listing.sessionId !== undefined && ours.has(listing.sessionId) && (listing.status === 'running' || listing.status === 'paused'),
      ).length;
      const ramAfter = memory();
      const diskAfter = diskKib(dataDir);
      const cpuAfter = await idleCpu();
      const runscAfter = runscProcesses();
      const serverRssAfter = process.memoryUsage().rss;
      const perSessionKib = (diskAfter.allocated - diskBefore.allocated) / Math.max(1, suspended);
      const ramPerSessionMb = (ramAfter.usedMb - ramBefore.usedMb) / Math.max(1, suspended);
      return {
        operation: 'sessions suspended on one host',
        target,
        unit: 'sessions',
        airlock: figure('suspended sessions', [suspended]),
        floor: undefined,
        otherFloors: [],
        met: wanted < TARGET_SESSIONS ? undefined : suspended >= TARGET_SESSIONS && sandboxesOfOurs === 0,
        notes: [
          `${suspended} of ${wanted} asked suspended in ${createSeconds.toFixed(0)} s (${CONCURRENCY} at a time; create + \`true\` + suspend p50 ${(figure('', perSession).p50 / 1000).toFixed(1)} s each)${failures.length ? `; ${failures.length} failed: ${failures[0]}` : ''}; their old sandboxes were all torn down ${teardownSeconds.toFixed(0)} s after the last suspend`,
          `sandboxes of these sessions running or paused: ${sandboxesOfOurs} (all sandboxes the driver lists: ${listings.length}, warm pool included); runsc processes on the host (other work included) ${runscBefore} before, ${runscAfter} after`,
          `host RAM used (free -m): ${ramBefore.usedMb} MiB before, ${ramAfter.usedMb} MiB after (${ramPerSessionMb.toFixed(2)} MiB per session; other work on the host moves this too); the server's RSS ${(serverRssBefore / 2 ** 20).toFixed(0)} → ${(serverRssAfter / 2 ** 20).toFixed(0)} MiB`,
          `server CPU while idle: ${(cpuBefore * 100).toFixed(2)}% of a core before, ${(cpuAfter * 100).toFixed(2)}% after (${IDLE_WINDOW_MS / 1000} s windows)`,
          `disk per suspended session: ${(perSessionKib / 1024).toFixed(1)} MiB allocated (${((diskAfter.apparent - diskBefore.apparent) / Math.max(1, suspended) / 1024).toFixed(1)} MiB apparent)`,
          wanted < TARGET_SESSIONS ? `not judged: the run asked ${wanted} sessions (--suspended), the target is ${TARGET_SESSIONS}` : '',
        ].filter((note) => note !== ''),
        details: {
          wanted,
          suspended,
          failures,
          createSeconds,
          teardownSeconds,
          perSessionMs: perSession,
          ramBefore,
          ramAfter,
          diskBeforeKib: diskBefore,
          diskAfterKib: diskAfter,
          cpuIdleBefore: cpuBefore,
          cpuIdleAfter: cpuAfter,
          sandboxesOfOurs,
          sandboxesListed: listings.length,
          runscBefore,
          runscAfter,
          serverRssBefore,
          serverRssAfter,
        },
      };
    } finally {
      const killStarted = performance.now();
      let index = 0;
      const killer = async (): Promise<void> => {
        while (index < ids.length) {
          const id = ids[index++] as string;
          await context.server.services.sessions.terminate(id).catch(() => undefined);
        }
      };
      await Promise.all(Array.from({ length: 4 }, killer));
      process.stderr.write(`  killed ${ids.length} sessions in ${((performance.now() - killStarted) / 1000).toFixed(0)} s\n`);
    }
  });
}
