/**
 * Sessions and approvals as they are now, kept current by the event stream:
 * loaded once, then updated change by change, reloaded after a reconnect.
 * Pages read it through `useLiveStore`.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from './api-client';
import { LiveEvents, type StreamStatus } from './live-events';
import type { ApprovalInfo, SessionInfo } from './api-types';

/** A snapshot of what the console knows. */
export interface LiveState {
  sessions: Map<string, SessionInfo>;
  approvals: Map<string, ApprovalInfo>;
  loaded: boolean;
  status: StreamStatus;
  downSince: number | null;
  loadError: string | null;
}

let state: LiveState = { sessions: new Map(), approvals: new Map(), loaded: false, status: 'connecting', downSince: null, loadError: null };
const listeners = new Set<() => void>();
let events: LiveEvents | null = null;
let reloading: Promise<void> | null = null;
/** a reload was asked for while one was in flight: its answer may predate what was asked about */
let reloadAgain = false;
/** bumped at log out, so an answer still in flight never refills a logged-out console */
let generation = 0;
let scheduled = false;

function update(change: Partial<LiveState>): void {
  state = { ...state, ...change };
  // Many events can land in one tick (a fork of 8): render once.
  if (scheduled) return;
  scheduled = true;
  queueMicrotask(() => {
    scheduled = false;
    for (const listener of listeners) listener();
  });
}

/** Reloads both lists from the API; asked again while loading, it loads once more after. */
export function reload(): Promise<void> {
  if (reloading) {
    reloadAgain = true;
    return reloading;
  }
  const started = generation;
  reloading = (async () => {
    try {
      const [sessions, approvals] = await Promise.all([
        api<{ sessions: SessionInfo[] }>('GET', '/v1/sessions'),
        api<{ approvals: ApprovalInfo[] }>('GET', '/v1/approvals'),
      ]);
      if (started !== generation) return;
      // bench/console-first-paint splits the time to the list's first paint at this mark.
      performance.mark('airlock:sessions-loaded');
      update({
        sessions: new Map(sessions.sessions.map((session) => [session.id, session])),
        approvals: new Map(approvals.approvals.map((approval) => [approval.id, approval])),
        loaded: true,
        loadError: null,
      });
    } catch (error) {
      update({ loadError: (error as Error).message });
    } finally {
      reloading = null;
      if (reloadAgain) {
        reloadAgain = false;
        void reload();
      }
    }
  })();
  return reloading;
}

/** Starts the stream (once, after login). */
export function startLiveStore(): void {
  if (events) return;
  events = new LiveEvents('/v1/events', {
    onSession: (session) => update({ sessions: new Map(state.sessions).set(session.id, session) }),
    onApproval: (approval) => update({ approvals: new Map(state.approvals).set(approval.id, approval) }),
    onResync: () => void reload(),
    onStatus: (status, downSince) => update({ status, downSince }),
  });
  // Load at once rather than after the stream is up: the first paint should not wait for both in turn.
  // The stream's ready event reloads again, so a change between this answer and the stream is not lost.
  void reload();
}

/** Stops the stream and forgets everything (log out). */
export function stopLiveStore(): void {
  generation += 1;
  reloadAgain = false;
  events?.close();
  events = null;
  state = { sessions: new Map(), approvals: new Map(), loaded: false, status: 'connecting', downSince: null, loadError: null };
}

/** Records a session the page got from an action's answer, before its event arrives. */
export function rememberSession(session: SessionInfo): void {
  update({ sessions: new Map(state.sessions).set(session.id, session) });
}

/** Records an approval the page got from an action's answer. */
export function rememberApproval(approval: ApprovalInfo): void {
  update({ approvals: new Map(state.approvals).set(approval.id, approval) });
}

/** The live state; re-renders the component on every change. */
export function useLiveStore(): LiveState {
  const [current, setCurrent] = useState(state);
  useEffect(() => {
    const listener = () => setCurrent(state);
    listeners.add(listener);
    setCurrent(state);
    return () => void listeners.delete(listener);
  }, []);
  return current;
}
