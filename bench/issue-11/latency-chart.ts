/**
 * The chart of a run as a hand-written SVG: per operation, "before" (the
 * landed code before issue 11, bench/results/before.json), "after" (this
 * run) and the floor, on a log scale, with the target marked.
 */
import type { RowResult } from './row-result.js';

/** One "before" figure and where it came from. */
export interface BeforeFigure {
  p50: number;
  unit: 'ms' | 'ms/GB' | '×';
  source: string;
  /** false when it measured something close to but not the row's operation (the note says what) */
  comparable: boolean;
  note?: string;
}

/** bench/results/before.json. */
export interface BeforeFile {
  description: string;
  rows: Record<string, BeforeFigure | null>;
}

/** Targets in the chart's units (ms, ms/GB), for the rows that have one in ms. */
const TARGETS: Record<string, number> = { create: 50, exec: 20, files: 6, wake: 40, suspend: 1000, fork: 1500, 'per-call': 60 };
const COLORS = { before: '#8c959f', after: '#0969da', floor: '#1a7f37', otherFloor: '#6fdd8b', target: '#cf222e' };
const WIDTH = 1000;
const LABEL_WIDTH = 330;
const PLOT_LEFT = LABEL_WIDTH + 10;
const PLOT_RIGHT = WIDTH - 70;
const BAR = 14;
const GAP = 18;
const TOP = 78;

function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function label(value: number): string {
  if (value >= 1000) return `${(value / 1000).toFixed(value >= 10_000 ? 1 : 2)} s`;
  if (value >= 100) return `${value.toFixed(0)} ms`;
  return `${value.toFixed(1)} ms`;
}

/** The SVG text of the chart of `rows` (those in ms or ms/GB) against `before`. */
export function latencyChart(rows: RowResult[], before: BeforeFile, title: string): string {
  // A failed row keeps its place (with its before bar) so that the chart does not hide it.
  const charted = rows.filter((row) => (row.error !== undefined && before.rows[row.id]?.unit !== '×') || ((row.unit === 'ms' || row.unit === 'ms/GB') && Number.isFinite(row.airlock.p50)));
  const values = charted.flatMap((row) => [row.airlock.p50, row.floor?.p50 ?? Number.NaN, before.rows[row.id]?.p50 ?? Number.NaN, TARGETS[row.id] ?? Number.NaN]).filter((value) => Number.isFinite(value) && value > 0);
  const low = 10 ** Math.floor(Math.log10(Math.min(...values, 1)));
  const high = 10 ** Math.ceil(Math.log10(Math.max(...values, 10)));
  const x = (value: number) => PLOT_LEFT + ((Math.log10(Math.max(value, low)) - Math.log10(low)) / (Math.log10(high) - Math.log10(low))) * (PLOT_RIGHT - PLOT_LEFT);
  const starred = charted.filter((row) => before.rows[row.id]?.comparable === false).length;
  const groupHeight = (row: RowResult) => BAR * (3 + row.otherFloors.length) + GAP;
  const bottom = TOP + charted.reduce((total, row) => total + groupHeight(row), 0);
  const height = bottom + 40 + starred * 15;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${escape(title)}</text>`,
    `<text x="${WIDTH / 2}" y="40" text-anchor="middle" fill="#57606a">p50 per operation, log scale; shorter is faster</text>`,
  ];
  const legend: [string, string][] = [['before (landed code, before issue 11)', COLORS.before], ['after (this run)', COLORS.after], ['floor (same run)', COLORS.floor], ['cold floor', COLORS.otherFloor]];
  let legendX = PLOT_LEFT - 260;
  for (const [name, color] of legend) {
    out.push(`<rect x="${legendX}" y="50" width="12" height="12" fill="${color}"/><text x="${legendX + 16}" y="60">${escape(name)}</text>`);
    legendX += name.length * 6.4 + 36;
  }
  out.push(`<line x1="${legendX}" y1="56" x2="${legendX + 14}" y2="56" stroke="${COLORS.target}" stroke-width="2" stroke-dasharray="3,2"/><text x="${legendX + 18}" y="60">target</text>`);
  for (let tick = low; tick <= high; tick *= 10) {
    out.push(`<line x1="${x(tick)}" y1="${TOP - 6}" x2="${x(tick)}" y2="${bottom}" stroke="#d0d7de"/>`);
    out.push(`<text x="${x(tick)}" y="${bottom + 16}" text-anchor="middle" fill="#57606a">${tick >= 1000 ? `${tick / 1000} s` : `${tick} ms`}</text>`);
  }
  const footnotes: string[] = [];
  let top = TOP;
  for (const row of charted) {
    const previous = before.rows[row.id];
    const star = previous && !previous.comparable ? '*' : '';
    if (star) footnotes.push(`* ${row.operation}: ${previous?.note ?? 'before measured a related operation'}`);
    out.push(`<text x="${LABEL_WIDTH}" y="${top + BAR * 1.5 + 4}" text-anchor="end" font-weight="bold">${escape(row.operation)}</text>`);
    const bars: [string, number | undefined, string][] = [
      ['before', previous?.p50, COLORS.before],
      ['after', row.airlock.p50, COLORS.after],
      ['floor', row.floor?.p50, COLORS.floor],
      ...row.otherFloors.map((other): [string, number, string] => [other.label.split(':')[0] ?? 'floor', other.p50, COLORS.otherFloor]),
    ];
    bars.forEach(([name, value, color], slot) => {
      const y = top + slot * BAR;
      if (value === undefined || !Number.isFinite(value)) {
        const why = row.error && name !== 'before' ? 'failed in this run (see the table)' : 'not measured';
        out.push(`<text x="${PLOT_LEFT + 4}" y="${y + BAR - 3}" fill="${row.error && name !== 'before' ? COLORS.target : '#57606a'}" font-size="11">${name}: ${why}</text>`);
        return;
      }
      const unit = row.unit === 'ms/GB' ? ' per GB' : '';
      out.push(`<rect x="${PLOT_LEFT}" y="${y + 1}" width="${Math.max(1, x(value) - PLOT_LEFT)}" height="${BAR - 2}" fill="${color}"><title>${escape(`${name}: ${label(value)}${unit}`)}</title></rect>`);
      out.push(`<text x="${x(value) + 4}" y="${y + BAR - 3}" font-size="11">${escape(`${label(value)}${unit}${name === 'before' ? star : ''}`)}</text>`);
    });
    const target = TARGETS[row.id];
    if (target !== undefined) out.push(`<line x1="${x(target)}" y1="${top - 2}" x2="${x(target)}" y2="${top + BAR * bars.length + 2}" stroke="${COLORS.target}" stroke-width="2" stroke-dasharray="3,2"/>`);
    top += groupHeight(row);
  }
  footnotes.forEach((note, index) => out.push(`<text x="20" y="${bottom + 36 + index * 15}" fill="#57606a" font-size="11">${escape(note)}</text>`));
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
