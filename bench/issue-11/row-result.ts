/** One row of issue 11's Targets table as the harness measured it, and how it is summarized. */
import { loadavg } from 'node:os';
import { quantile } from '../stats.js';

/** A set of samples and their p50/p99. */
export interface Figure {
  label: string;
  p50: number;
  p99: number;
  n: number;
  samples: number[];
}

/** One measured row: Airlock beside its floor, judged against the target. */
export interface RowResult {
  /** the harness's name for the row (`--only` takes these) */
  id: string;
  operation: string;
  /** the target as the issue words it */
  target: string;
  /** unit of the figures: ms, ms per GB held, a ratio, or a count */
  unit: 'ms' | 'ms/GB' | '×' | 'sessions';
  airlock: Figure;
  floor: Figure | undefined;
  /** more floors printed as rows of their own (the cold floor of create) */
  otherFloors: Figure[];
  /** true: met, false: missed, undefined: not judged (the run was shortened) */
  met: boolean | undefined;
  /** why met is what it is, and what the figures mean */
  notes: string[];
  /** raw figures that are not samples (memory, disk, CPU) */
  details: Record<string, unknown>;
  /** load average (1 min) when the row started and ended */
  load: { before: number; after: number };
  seconds: number;
  error?: string;
}

/** p50/p99 of samples under a label. */
export function figure(label: string, samples: number[]): Figure {
  return { label, p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), n: samples.length, samples: samples.map((value) => Math.round(value * 1000) / 1000) };
}

/** The 1-minute load average. */
export function load(): number {
  return loadavg()[0] ?? Number.NaN;
}

/** What a row module returns; the harness adds id, load and time. */
export type RowBody = Omit<RowResult, 'id' | 'load' | 'seconds'>;

/** A measured row, or the error that stopped it. */
export async function measureRow(id: string, operation: string, target: string, measure: () => Promise<RowBody>): Promise<RowResult> {
  const before = load();
  const started = performance.now();
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${id}: ${operation} (load ${before.toFixed(1)})\n`);
  try {
    const body = await measure();
    return { id, ...body, load: { before, after: load() }, seconds: (performance.now() - started) / 1000 };
  } catch (error) {
    process.stderr.write(`${id} failed: ${error instanceof Error ? error.stack : String(error)}\n`);
    return {
      id,
      operation,
      target,
      unit: 'ms',
      airlock: figure('Airlock', []),
      floor: undefined,
      otherFloors: [],
      met: undefined,
      notes: [],
      details: {},
      load: { before, after: load() },
      seconds: (performance.now() - started) / 1000,
      error: error instanceof Error ? error.message : String(error),
    };
  }
}
