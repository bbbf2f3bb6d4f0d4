/** The harness's outputs: the table it prints, the JSON it writes, and the section of bench/README.md it refreshes. */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { HostFacts } from './host-facts.js';
import type { Figure, RowResult } from './row-result.js';

/** Everything one run measured. */
export interface RunReport {
  issue: 11;
  startedAt: string;
  finishedAt: string;
  command: string;
  host: HostFacts;
  loadAverage: { before: number[]; after: number[] };
  rows: RowResult[];
}

const README_START = '<!-- issue-11-table:start -->';
const README_END = '<!-- issue-11-table:end -->';

/** A figure in the row's unit. */
function cell(value: number, unit: RowResult['unit']): string {
  if (!Number.isFinite(value)) return '—';
  if (unit === '×') return `${value.toFixed(2)}×`;
  if (unit === 'sessions') return value.toFixed(0);
  if (unit === 'ms/GB') return `${value.toFixed(0)} ms/GB`;
  return `${value < 100 ? value.toFixed(1) : value.toFixed(0)} ms`;
}

function verdict(row: RowResult): string {
  if (row.error) return 'failed';
  if (row.met === undefined) return 'not judged';
  return row.met ? 'met' : 'missed';
}

function line(operation: string, target: string, row: RowResult, floor: Figure | undefined, met: string): string {
  const ratio = floor && Number.isFinite(floor.p50) && floor.p50 !== 0 ? `${(row.airlock.p50 / floor.p50).toFixed(2)}×` : '—';
  const p99 = row.airlock.n > 1 ? cell(row.airlock.p99, row.unit) : '—';
  return `| ${operation} | ${target} | ${cell(row.airlock.p50, row.unit)} | ${p99} | ${floor ? cell(floor.p50, row.unit) : '—'} | ${ratio} | ${row.airlock.n} | ${met} |`;
}

/** The Markdown table of a run, with what each floor is and the notes under it. */
export function markdownTable(report: RunReport): string {
  const lines = [
    '| operation | target | Airlock p50 | Airlock p99 | floor p50 | ratio (Airlock ÷ floor) | n | target |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const row of report.rows) {
    if (row.error) {
      lines.push(`| ${row.operation} | ${row.target} | failed: ${row.error.replace(/\|/g, '/').replace(/\s+/g, ' ').slice(0, 160)} | | | | | failed |`);
      continue;
    }
    lines.push(line(row.operation, row.target, row, row.floor, verdict(row)));
    for (const other of row.otherFloors) lines.push(line(`↳ same, against the ${other.label.split(':')[0]}`, '—', row, other, '—'));
  }
  const floors = report.rows.filter((row) => !row.error).flatMap((row) => [row.floor, ...row.otherFloors].filter((floor): floor is Figure => floor !== undefined).map((floor) => `- ${row.operation} — ${floor.label} (p99 ${cell(floor.p99, row.unit)}, n ${floor.n})`));
  const notes = report.rows.flatMap((row) => row.notes.map((note) => `- ${row.operation}: ${note}`));
  const load = (values: number[]) => values.map((value) => value.toFixed(2)).join(' / ');
  return [
    `Run ${report.startedAt} → ${report.finishedAt} (UTC), \`${report.command}\`, commit ${report.host.gitCommit.slice(0, 12)}, ${report.host.cores} cores, kernel ${report.host.kernel}, ${report.host.runsc}; load average (1/5/15 min) ${load(report.loadAverage.before)} before, ${load(report.loadAverage.after)} after.`,
    '',
    ...lines,
    '',
    'Floors (measured in the same run, interleaved with Airlock where the row allows):',
    '',
    ...floors,
    '',
    'Notes:',
    '',
    ...notes,
    ...report.rows.map((row) => `- ${row.operation}: ${row.seconds.toFixed(0)} s, load ${row.load.before.toFixed(1)} → ${row.load.after.toFixed(1)}`),
  ].join('\n');
}

/** Writes bench/results/issue-11-<UTC date-time>.json and bench/results/latest.json; returns the dated path. */
export function writeResults(resultsDir: string, report: RunReport): string {
  mkdirSync(resultsDir, { recursive: true });
  const stamp = report.startedAt.replace(/[:]/g, '').replace(/\.\d+Z$/, 'Z');
  const dated = join(resultsDir, `issue-11-${stamp}.json`);
  const text = `${JSON.stringify(report, null, 2)}\n`;
  writeFileSync(dated, text);
  writeFileSync(join(resultsDir, 'latest.json'), text);
  return dated;
}

/** Replaces the table between the issue 11 markers of bench/README.md (left alone when they are missing). */
export function refreshReadme(readmePath: string, table: string): boolean {
  const text = readFileSync(readmePath, 'utf8');
  const start = text.indexOf(README_START);
  const end = text.indexOf(README_END);
  if (start < 0 || end < start) return false;
  writeFileSync(readmePath, `${text.slice(0, start + README_START.length)}\n${table}\n${text.slice(end)}`);
  return true;
}
