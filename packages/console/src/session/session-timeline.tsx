/**
 * A session's life as a bar of states over time (running / paused /
 * suspended / failed), drawn from the audit records that changed its state,
 * with each change and its cause listed below.
 */
import type { SessionInfo, StreamedAuditRecord } from '../api-types';
import { formatDuration, formatInstant } from '../format';

/** One stretch of time in one state. */
interface Stretch {
  state: string;
  from: number;
  to: number;
}

/** One change of state and why. */
interface Change {
  at: string;
  state: string;
  type: string;
  cause: string | null;
}

/** The state changes among a session's audit records. */
export function stateChanges(records: StreamedAuditRecord[]): Change[] {
  const changes: Change[] = [];
  for (const record of records) {
    const state = record.data['state'];
    if (typeof state !== 'string' || !record.type.startsWith('session.')) continue;
    const cause = [record.data['reason'], record.data['message'], record.data['cause'], (record.data['failure'] as { message?: string } | undefined)?.message].find((value) => typeof value === 'string') as string | undefined;
    changes.push({ at: record.at, state, type: record.type, cause: cause ?? null });
  }
  return changes;
}

/** The timeline of a session. */
export function SessionTimeline({ session, records, now }: { session: SessionInfo; records: StreamedAuditRecord[]; now: number }) {
  const changes = stateChanges(records);
  const start = Date.parse(session.createdAt);
  const end = session.state === 'terminated' || session.state === 'failed' ? Date.parse(session.stateSince) : now;
  const stretches: Stretch[] = [];
  let current = { state: 'creating', from: start };
  for (const change of changes) {
    const at = Date.parse(change.at);
    if (change.state === current.state) continue;
    stretches.push({ ...current, to: at });
    current = { state: change.state, from: at };
  }
  stretches.push({ ...current, to: Math.max(end, current.from) });
  const span = Math.max(1, end - start);
  return (
    <div class="timeline" data-testid="timeline">
      <div class="timeline-bar" role="img" aria-label={`states over ${formatDuration(span / 1000)}`}>
        {stretches
          .filter((stretch) => stretch.to > stretch.from || stretches.length === 1)
          .map((stretch) => (
            <span
              class={`timeline-stretch state-${stretch.state}`}
              style={{ width: `${Math.max(0.5, ((stretch.to - stretch.from) / span) * 100)}%` }}
              title={`${stretch.state} for ${formatDuration((stretch.to - stretch.from) / 1000)}`}
            />
          ))}
      </div>
      <div class="timeline-legend muted small">
        <span>{formatInstant(session.createdAt)}</span>
        <span>{session.state === 'terminated' || session.state === 'failed' ? formatInstant(session.stateSince) : 'now'}</span>
      </div>
      <ol class="timeline-changes">
        {changes
          .slice(-12)
          .reverse()
          .map((change) => (
            <li>
              <span class={`badge state-${change.state}`}>{change.state}</span> <span class="muted small">{formatInstant(change.at)}</span> <code class="small">{change.type}</code>
              {change.cause ? <span class="cause"> · {change.cause}</span> : null}
            </li>
          ))}
      </ol>
      {session.failure ? (
        <p class="form-error" data-testid="failure">
          Failed: {session.failure.code}: {session.failure.message}
        </p>
      ) : null}
    </div>
  );
}
