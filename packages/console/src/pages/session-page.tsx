/**
 * One session: state timeline, meters, contract, lineage, files, tool calls
 * as they happen, and the audit with its verification. Its own event stream
 * (filtered to this session) brings the audit records live.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, sessionPath } from '../api-client';
import type { AuditRecord, SessionInfo, StreamedAuditRecord } from '../api-types';
import { LiveEvents } from '../live-events';
import { rememberSession, type LiveState } from '../live-store';
import { StateBadge } from '../components/state-badge';
import { SessionActions } from '../components/session-actions';
import { ErrorBanner } from '../components/error-banner';
import { SessionTimeline } from '../session/session-timeline';
import { SessionMeters, recordMeters, type MeterHistory } from '../session/session-meters';
import { LineageTree } from '../session/lineage-tree';
import { FilesBrowser } from '../session/files-browser';
import { AuditLog } from '../session/audit-log';
import { LiveToolCalls } from '../session/live-tool-calls';
import { ContractView } from '../session/contract-view';
import { TerminalPanel } from '../session/terminal-panel';
import { DesktopPanel } from '../session/desktop-panel';
import { age } from '../format';

/** Audit records loaded when the page opens (the newest); live ones are added after. */
const LOADED_RECORDS = 2000;

/** The page of one session. */
export function SessionPage({ sessionId, live }: { sessionId: string; live: LiveState }) {
  const fromList = live.sessions.get(sessionId) ?? null;
  const [fetched, setFetched] = useState<SessionInfo | null>(null);
  const [missing, setMissing] = useState<unknown>(null);
  const [records, setRecords] = useState<StreamedAuditRecord[]>([]);
  const [history, setHistory] = useState<MeterHistory>({ cpuRate: [], memory: [], toolCalls: [] });
  const [now, setNow] = useState(Date.now());
  const previous = useRef<SessionInfo | null>(null);
  const session = fromList && (!fetched || fromList.updatedAt >= fetched.updatedAt) ? fromList : fetched;

  useEffect(() => {
    let gone = false;
    const load = async () => {
      try {
        const [view, audit] = await Promise.all([
          api<SessionInfo>('GET', sessionPath(sessionId)),
          api<{ records: AuditRecord[] }>('GET', sessionPath(sessionId, `/audit?tail=${LOADED_RECORDS}`)),
        ]);
        if (gone) return;
        setFetched(view);
        rememberSession(view);
        setRecords(audit.records);
      } catch (error) {
        if (!gone) setMissing(error);
      }
    };
    const stream = new LiveEvents(`/v1/events?sessionId=${encodeURIComponent(sessionId)}`, {
      onSession: (view) => setFetched(view),
      onAudit: (record) => setRecords((list) => (list.some((known) => known.seq === record.seq) ? list : [...list, record])),
      onResync: () => void load(),
    });
    // Meters are sampled by the server on its own schedule; poll them for the charts.
    const poll = window.setInterval(() => {
      setNow(Date.now());
      api<SessionInfo>('GET', sessionPath(sessionId)).then((view) => !gone && setFetched(view), () => undefined);
    }, 5000);
    return () => {
      gone = true;
      stream.close();
      window.clearInterval(poll);
    };
  }, [sessionId]);

  useEffect(() => {
    if (!session) return;
    setHistory((current) => recordMeters(current, previous.current, session, Date.now()));
    previous.current = session;
  }, [session?.updatedAt, session?.meters.cpuSeconds, session?.meters.toolCalls, now]);

  if (!session) {
    if (missing) {
      return (
        <section>
          <h1 class="mono">{sessionId}</h1>
          <ErrorBanner error={missing instanceof ApiError && missing.code === 'SESSION_NOT_FOUND' ? new ApiError(missing.code, `There is no session ${sessionId} on this server.`, 404) : missing} />
        </section>
      );
    }
    return <p class="muted">Loading {sessionId}…</p>;
  }
  return (
    <section class="session-page" data-session-id={session.id}>
      <div class="page-head">
        <h1 class="mono">{session.id}</h1>
        <StateBadge session={session} />
        <span class="muted">
          {session.mode} · {session.image.name} · tenant {session.tenant} · principal {session.principal} · {age(session.createdAt, now)} old
        </span>
      </div>
      <SessionActions session={session} />
      <div class="grid">
        <div class="panel wide">
          <h2>Timeline</h2>
          <SessionTimeline session={session} records={records} now={now} />
        </div>
        <div class="panel wide">
          <h2>Meters</h2>
          <SessionMeters session={session} history={history} />
        </div>
        <div class="panel">
          <h2>Tool calls</h2>
          <LiveToolCalls records={records} />
        </div>
        <div class="panel">
          <h2>Files</h2>
          <FilesBrowser session={session} />
        </div>
        <div class="panel">
          <h2>Contract</h2>
          <ContractView sessionId={session.id} />
        </div>
        <div class="panel">
          <h2>Lineage</h2>
          <LineageTree session={session} sessions={live.sessions} auditLength={records.length} />
        </div>
        <div class="panel wide">
          <h2>Desktop</h2>
          <DesktopPanel sessionId={session.id} />
        </div>
        <div class="panel wide">
          <h2>Terminal</h2>
          <TerminalPanel sessionId={session.id} />
        </div>
        <div class="panel wide">
          <h2>Audit</h2>
          <AuditLog sessionId={session.id} records={records} />
        </div>
      </div>
    </section>
  );
}
