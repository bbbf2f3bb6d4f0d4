/** A session's state as a coloured badge, with the operation in flight if any. */
import type { SessionInfo } from '../api-types';

/** The state of a session, e.g. "running" or "suspended · resume…". */
export function StateBadge({ session }: { session: Pick<SessionInfo, 'state' | 'pendingOperation'> }) {
  return (
    <span class={`badge state-${session.state}`} data-state={session.state}>
      {session.state}
      {session.pendingOperation ? <span class="badge-note"> · {session.pendingOperation}…</span> : null}
    </span>
  );
}
