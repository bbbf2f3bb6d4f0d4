/** Small statistics for benchmarks: they print figures, never pass or fail. */
import { readFileSync } from 'node:fs';

/** The q-quantile (0..1) of samples, by nearest rank. */
export function quantile(samples: number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? Number.NaN;
}

/** Milliseconds taken by `work`. */
export async function timed(work: () => unknown): Promise<number> {
  const started = process.hrtime.bigint();
  await work();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** One row of a side-by-side table. */
export interface Comparison {
  operation: string;
  airlock: number[];
  floor: number[];
}

/** Prints rows as a Markdown table of p50 (and p99 when there are enough samples) with the ratio. */
export function printComparisons(title: string, rows: Comparison[]): string {
  const lines = [`### ${title}`, '', '| operation | Airlock p50 (ms) | floor p50 (ms) | ratio | Airlock p99 | floor p99 | n |', '|---|---|---|---|---|---|---|'];
  for (const row of rows) {
    const a50 = quantile(row.airlock, 0.5);
    const f50 = quantile(row.floor, 0.5);
    lines.push(`| ${row.operation} | ${a50.toFixed(1)} | ${f50.toFixed(1)} | ${(a50 / f50).toFixed(2)}× | ${quantile(row.airlock, 0.99).toFixed(1)} | ${quantile(row.floor, 0.99).toFixed(1)} | ${row.airlock.length} |`);
  }
  const text = lines.join('\n');
  process.stdout.write(`${text}\n\n`);
  return text;
}

/** One row measured against several floors (each a way of doing the same work with less in between). */
export interface FloorComparison {
  operation: string;
  airlock: number[];
  floors: number[][];
}

/** Prints rows as a Markdown table of p50/p99 of Airlock and of each floor, with Airlock's ratio to each floor's p50. */
export function printFloorComparisons(title: string, floorNames: string[], rows: FloorComparison[]): string {
  const header = ['operation', 'Airlock p50 (ms)', 'Airlock p99', ...floorNames.flatMap((name) => [`${name} p50`, `${name} p99`, `ratio to ${name}`]), 'n'];
  const lines = [`### ${title}`, '', `| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const row of rows) {
    const a50 = quantile(row.airlock, 0.5);
    const cells = [row.operation, a50.toFixed(1), quantile(row.airlock, 0.99).toFixed(1)];
    for (const floor of row.floors) cells.push(quantile(floor, 0.5).toFixed(1), quantile(floor, 0.99).toFixed(1), `${(a50 / quantile(floor, 0.5)).toFixed(2)}×`);
    cells.push(String(row.airlock.length));
    lines.push(`| ${cells.join(' | ')} |`);
  }
  const text = lines.join('\n');
  process.stdout.write(`${text}\n\n`);
  return text;
}

/** The machine's load averages (1, 5, 15 minutes), as `uptime` shows them. */
export function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(', ');
}
