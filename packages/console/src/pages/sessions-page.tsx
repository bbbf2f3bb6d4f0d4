/**
 * Every session, live: state, mode, image, tenant, age, tool calls, CPU and
 * memory, filtered by state, tenant and text, with the lifecycle actions.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import type { SessionInfo } from '../api-types';
import type { LiveState } from '../live-store';
import { StateBadge } from '../components/state-badge';
import { SessionActions } from '../components/session-actions';
import { age, formatBytes, formatCpu } from '../format';
import { followLink } from '../router';

const STATES = ['running', 'paused', 'suspended', 'degraded', 'creating', 'failed', 'terminated'] as const;
/** Rows rendered at first; more on request, so a store of thousands opens at once. */
const PAGE_ROWS = 200;

/** The sessions list. */
export function SessionsPage({ live }: { live: LiveState }) {
  const [state, setState] = useState<string>('live');
  const [tenant, setTenant] = useState<string>('');
  const [text, setText] = useState('');
  const [shown, setShown] = useState(PAGE_ROWS);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 5000);
    return () => window.clearInterval(timer);
  }, []);
  useEffect(() => {
    // The first paint of the loaded list is what bench/console-first-paint measures: the frame after it is committed.
    if (live.loaded) requestAnimationFrame(() => setTimeout(() => performance.mark('airlock:sessions-rendered'), 0));
  }, [live.loaded]);

  const all = useMemo(() => [...live.sessions.values()].sort((a, b) => b.createdAt.localeCompare(a.createdAt)), [live.sessions]);
  const tenants = useMemo(() => [...new Set(all.map((session) => session.tenant))].sort(), [all]);
  const matching = useMemo(() => {
    const needle = text.trim().toLowerCase();
    return all.filter((session) => {
      if (state === 'live' && (session.state === 'terminated' || session.state === 'failed')) return false;
      if (state !== 'live' && state !== '' && session.state !== state) return false;
      if (tenant !== '' && session.tenant !== tenant) return false;
      if (needle === '') return true;
      return [session.id, session.image.name, session.tenant, session.principal, session.state, session.mode].some((field) => field.toLowerCase().includes(needle));
    });
  }, [all, state, tenant, text]);
  const counts = useMemo(() => {
    const byState: Record<string, number> = {};
    for (const session of all) byState[session.state] = (byState[session.state] ?? 0) + 1;
    return byState;
  }, [all]);

  return (
    <section>
      <div class="page-head">
        <h1>Sessions</h1>
        <p class="muted" data-testid="session-counts">
          {all.length} sessions · {STATES.filter((name) => counts[name]).map((name) => `${counts[name]} ${name}`).join(' · ') || 'none yet'}
        </p>
      </div>
      <div class="filters" role="search">
        <label>
          State{' '}
          <select value={state} onChange={(event) => setState((event.target as HTMLSelectElement).value)} data-testid="filter-state">
            <option value="live">live (not ended)</option>
            <option value="">all</option>
            {STATES.map((name) => (
              <option value={name}>{name}</option>
            ))}
          </select>
        </label>
        <label>
          Tenant{' '}
          <select value={tenant} onChange={(event) => setTenant((event.target as HTMLSelectElement).value)} data-testid="filter-tenant">
            <option value="">all</option>
            {tenants.map((name) => (
              <option value={name}>{name}</option>
            ))}
          </select>
        </label>
        <label class="grow">
          Search{' '}
          <input type="search" placeholder="id, image, tenant, principal" value={text} onInput={(event) => setText((event.target as HTMLInputElement).value)} data-testid="filter-text" />
        </label>
      </div>
      {!live.loaded ? <p class="muted">Loading sessions…</p> : null}
      {live.loadError ? <p class="form-error">{live.loadError}</p> : null}
      {live.loaded && matching.length === 0 ? (
        <p class="empty" data-testid="no-sessions">
          {all.length === 0 ? 'No sessions yet. Create one with `airlock sessions create`; it appears here at once.' : 'No session matches these filters.'}
        </p>
      ) : null}
      {matching.length > 0 ? (
        <div class="table-wrap">
          <table class="sessions" data-testid="sessions-table">
            <thead>
              <tr>
                <th>Session</th>
                <th>State</th>
                <th class="hide-narrow">Mode</th>
                <th class="hide-narrow">Image</th>
                <th>Tenant</th>
                <th>Age</th>
                <th class="num">Calls</th>
                <th class="num hide-narrow">CPU</th>
                <th class="num hide-narrow">Memory</th>
                <th class="hide-narrow">Actions</th>
              </tr>
            </thead>
            <tbody>
              {matching.slice(0, shown).map((session) => (
                <SessionRow key={session.id} session={session} now={now} />
              ))}
            </tbody>
          </table>
          {matching.length > shown ? (
            <button type="button" class="more" onClick={() => setShown(shown + PAGE_ROWS * 5)}>
              Show more ({matching.length - shown} not shown)
            </button>
          ) : null}
        </div>
      ) : null}
    </section>
  );
}

function SessionRow({ session, now }: { session: SessionInfo; now: number }) {
  const href = `/sessions/${encodeURIComponent(session.id)}`;
  // Actions are built when a row asks for them: a thousand rows of five buttons and their state would slow the first paint.
  const [acting, setActing] = useState(false);
  return (
    <tr data-session-id={session.id} data-state={session.state}>
      <td>
        <a href={href} onClick={(event) => followLink(event, href)} class="mono">
          {session.id}
        </a>
        {session.lineage ? <span class="muted small"> fork of {session.lineage.parentSessionId}</span> : null}
      </td>
      <td>
        <StateBadge session={session} />
      </td>
      <td class="hide-narrow">{session.mode}</td>
      <td class="hide-narrow">{session.image.name}</td>
      <td>{session.tenant}</td>
      <td>{age(session.createdAt, now)}</td>
      <td class="num">{session.meters.toolCalls}</td>
      <td class="num hide-narrow">{formatCpu(session.meters.cpuSeconds)}</td>
      <td class="num hide-narrow" title="peak memory">
        {formatBytes(session.meters.peakMemoryBytes)}
      </td>
      <td class="hide-narrow">
        {acting ? (
          <SessionActions session={session} compact />
        ) : (
          <button type="button" class="small" onClick={() => setActing(true)} aria-label={`actions of ${session.id}`} data-testid="row-actions">
            Actions…
          </button>
        )}
      </td>
    </tr>
  );
}
