/**
 * A session's meters with small charts. The API gives totals; the charts
 * are made of the samples this page saw (one per change and one every few
 * seconds), so they start when the page opens.
 */
import type { SessionInfo } from '../api-types';
import { Sparkline, type Sample } from '../components/sparkline';
import { formatBytes, formatCpu, formatDuration } from '../format';

/** Samples of the meters, oldest first. */
export interface MeterHistory {
  cpuRate: Sample[];
  memory: Sample[];
  toolCalls: Sample[];
}

/** Adds the session's meters now to a bounded history. */
export function recordMeters(history: MeterHistory, previous: SessionInfo | null, session: SessionInfo, at: number): MeterHistory {
  const keep = <T,>(list: T[], item: T) => [...list, item].slice(-120);
  let cpuRate = history.cpuRate;
  const last = history.cpuRate[history.cpuRate.length - 1];
  if (previous && last && at > last.at) {
    cpuRate = keep(cpuRate, { at, value: Math.max(0, (session.meters.cpuSeconds - previous.meters.cpuSeconds) / ((at - last.at) / 1000)) });
  } else if (!last) {
    cpuRate = [{ at, value: 0 }];
  }
  return {
    cpuRate,
    memory: keep(history.memory, { at, value: session.meters.peakMemoryBytes }),
    toolCalls: keep(history.toolCalls, { at, value: session.meters.toolCalls }),
  };
}

/** The meters panel. */
export function SessionMeters({ session, history }: { session: SessionInfo; history: MeterHistory }) {
  const meters = session.meters;
  const cpuNow = history.cpuRate[history.cpuRate.length - 1]?.value ?? 0;
  return (
    <div class="meters" data-testid="meters">
      <div class="meter">
        <span class="meter-label">Tool calls</span>
        <span class="meter-value">{meters.toolCalls}</span>
        <Sparkline samples={history.toolCalls} label="tool calls over time" />
      </div>
      <div class="meter">
        <span class="meter-label">CPU</span>
        <span class="meter-value">{formatCpu(meters.cpuSeconds)}</span>
        <span class="muted small">{(cpuNow * 100).toFixed(0)}% of a core now</span>
        <Sparkline samples={history.cpuRate} label="CPU use over time" />
      </div>
      <div class="meter">
        <span class="meter-label">Memory (peak)</span>
        <span class="meter-value">{formatBytes(meters.peakMemoryBytes)}</span>
        <span class="muted small">{formatBytes(meters.timeWeightedMemoryBytes)} time-weighted</span>
        <Sparkline samples={history.memory} label="peak memory over time" />
      </div>
      <div class="meter">
        <span class="meter-label">Disk</span>
        <span class="meter-value">{formatBytes(meters.diskBytes)}</span>
        <span class="muted small">{formatBytes(meters.snapshotBytes)} in snapshots</span>
      </div>
      <div class="meter">
        <span class="meter-label">Time</span>
        <span class="meter-value">{formatDuration(meters.runningSeconds)}</span>
        <span class="muted small">
          running · {formatDuration(meters.pausedSeconds)} paused · {formatDuration(meters.suspendedSeconds)} suspended
        </span>
      </div>
    </div>
  );
}
