/**
 * Issue 11's benchmark harness: every row of its Targets table in one
 * command, each beside its floor measured in the same run. Prints one table,
 * writes bench/results/issue-11-<UTC date-time>.json and latest.json, draws
 * bench/results/latency.svg and refreshes the table in bench/README.md.
 * Benchmarks print figures; nothing here asserts a timing.
 *
 * Usage: npm run bench -- [--samples N] [--only ROW,...] [--suspended N]
 *        [--slow-samples N] [--fork-rounds N] [--trace-calls N] [--warm-pool N]
 *        npm run bench -- --redraw   (the chart and README table again from latest.json, no measuring)
 * Rows: create, exec, files, wake, resume, suspend, fork, per-call, trace, suspended.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { mountsUnder } from '../packages/runtime/src/drivers/gvisor/index.js';
import { killAll, openContext, type HarnessOptions } from './issue-11/bench-context.js';
import { checkpointRows } from './issue-11/checkpoint-rows.js';
import { forkRow } from './issue-11/fork-row.js';
import { hostFacts } from './issue-11/host-facts.js';
import { latencyChart, type BeforeFile } from './issue-11/latency-chart.js';
import { perCallRows } from './issue-11/per-call-rows.js';
import { markdownTable, refreshReadme, writeResults, type RunReport } from './issue-11/results-report.js';
import type { RowResult } from './issue-11/row-result.js';
import { sessionRows } from './issue-11/session-rows.js';
import { suspendedRow } from './issue-11/suspended-row.js';

const ROWS = ['create', 'exec', 'files', 'wake', 'resume', 'suspend', 'fork', 'per-call', 'trace', 'suspended'];
const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const README = fileURLToPath(new URL('./README.md', import.meta.url));

/** The options from the command line; exits with a usage message on a bad one. */
function parseOptions(argv: string[]): HarnessOptions {
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i += 1) {
    const flag = argv[i] ?? '';
    const [name, inline] = flag.split('=', 2) as [string, string | undefined];
    if (!['--samples', '--only', '--suspended', '--slow-samples', '--fork-rounds', '--trace-calls', '--warm-pool'].includes(name))
      fail(`unknown option ${flag}`);
    const value = inline ?? argv[++i];
    if (value === undefined) fail(`${name} needs a value`);
    values.set(name, value as string);
  }
  const count = (name: string, fallback: number, minimum: number): number => {
    const text = values.get(name);
    if (text === undefined) return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value < minimum) fail(`${name} takes a whole number ≥ ${minimum}, not ${text}`);
    return value;
  };
  const samples = count('--samples', 20, 1);
  const only = (values.get('--only') ?? '')
    .split(',')
    .map((row) => row.trim())
    .filter((row) => row !== '');
  const unknown = only.filter((row) => !ROWS.includes(row));
  if (unknown.length > 0) fail(`--only: unknown row ${unknown.join(', ')}; rows are ${ROWS.join(', ')}`);
  return {
    samples,
    slowSamples: count('--slow-samples', Math.max(3, Math.ceil(samples / 4)), 1),
    forkRounds: count('--fork-rounds', 2, 1),
    traceCalls: count('--trace-calls', 2 * samples, 1),
    suspended: count('--suspended', 1000, 1),
    only,
    warmPool: count('--warm-pool', 2, 0),
  };
}

function fail(message: string): never {
  process.stderr.write(
    `${message}\nusage: npm run bench -- [--samples N] [--only ${ROWS.join(',')}] [--suspended N] [--slow-samples N] [--fork-rounds N] [--trace-calls N] [--warm-pool N]\n`,
  );
  process.exit(2);
}

/** Prints the table, draws the chart and, after a run of every row, refreshes bench/README.md. */
function publish(report: RunReport, partial: boolean): void {
  const table = markdownTable(report);
  process.stdout.write(`\n${table}\n\n`);
  const before = JSON.parse(readFileSync(`${RESULTS_DIR}before.json`, 'utf8')) as BeforeFile;
  const load = report.loadAverage.before[0]?.toFixed(1) ?? '?';
  writeFileSync(
    `${RESULTS_DIR}latency.svg`,
    latencyChart(report.rows, before, `Issue 11: latency per operation, ${report.startedAt.slice(0, 16).replace('T', ' ')} UTC, load ${load}`),
  );
  const readme = !partial && refreshReadme(README, table);
  process.stdout.write(`wrote ${RESULTS_DIR}latency.svg${readme ? ' and the table in bench/README.md' : ''}\n`);
}

if (process.argv[2] === '--redraw') {
  const latest = JSON.parse(readFileSync(`${RESULTS_DIR}latest.json`, 'utf8')) as RunReport;
  publish(latest, latest.rows.length < ROWS.length);
  process.exit(0);
}
const options = parseOptions(process.argv.slice(2));
const wanted = (id: string): boolean => options.only.length === 0 || options.only.includes(id);
const startedAt = new Date().toISOString();
const loadBefore = loadavg().map((value) => Math.round(value * 100) / 100);
const host = hostFacts();
// Short: a per-call sandbox's agent socket path under the data dir must stay under 108 bytes.
const work = mkdtempSync('/var/tmp/ab11-');
const rows: RowResult[] = [];
const context = await openContext(options, work);
// Ctrl-C: no sandbox, mount or loop device may outlive the run.
process.once('SIGINT', () => {
  process.stderr.write('interrupted: killing the sessions and closing the server\n');
  context.interrupted = true;
  void killAll(context)
    .then(() => context.server.close())
    .then(async () => {
      if ((await mountsUnder(work)).length === 0) rmSync(work, { recursive: true, force: true });
    })
    .finally(() => process.exit(130));
});
try {
  rows.push(...(await sessionRows(context, wanted)));
  rows.push(...(await checkpointRows(context, wanted)));
  if (wanted('fork')) rows.push(await forkRow(context));
  rows.push(...(await perCallRows(context, wanted)));
  if (wanted('suspended')) rows.push(await suspendedRow(context));
} finally {
  await killAll(context);
  await context.server.close();
  if ((await mountsUnder(work)).length === 0) rmSync(work, { recursive: true, force: true });
  else process.stderr.write(`mounts left under ${work}; not removed\n`);
}

const report: RunReport = {
  issue: 11,
  startedAt,
  finishedAt: new Date().toISOString(),
  command: `npm run bench -- ${process.argv.slice(2).join(' ')}`.trim(),
  host,
  loadAverage: { before: loadBefore, after: loadavg().map((value) => Math.round(value * 100) / 100) },
  rows,
};
const dated = writeResults(RESULTS_DIR, report);
process.stdout.write(`wrote ${dated} and ${RESULTS_DIR}latest.json\n`);
publish(report, options.only.length > 0);
