/** A small line chart of recent samples, as inline SVG (no chart library). */

/** One sample: when, and the value then. */
export interface Sample {
  at: number;
  value: number;
}

/** Draws `samples` scaled to the box; the last value is labelled by the caller. */
export function Sparkline({ samples, label, width = 160, height = 36 }: { samples: Sample[]; label: string; width?: number; height?: number }) {
  if (samples.length < 2) {
    return (
      <svg class="sparkline" width={width} height={height} role="img" aria-label={`${label}: collecting samples`}>
        <line x1="0" y1={height - 1} x2={width} y2={height - 1} class="sparkline-axis" />
      </svg>
    );
  }
  const first = samples[0]?.at ?? 0;
  const span = Math.max(1, (samples[samples.length - 1]?.at ?? first) - first);
  const top = Math.max(...samples.map((sample) => sample.value), 1e-9);
  const points = samples.map((sample) => `${(((sample.at - first) / span) * (width - 2) + 1).toFixed(1)},${(height - 2 - (sample.value / top) * (height - 4)).toFixed(1)}`).join(' ');
  return (
    <svg class="sparkline" width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={label}>
      <line x1="0" y1={height - 1} x2={width} y2={height - 1} class="sparkline-axis" />
      <polyline points={points} class="sparkline-line" fill="none" />
    </svg>
  );
}
