/**
 * The live view of a desktop session (issue 18, item 3): noVNC over the
 * WebSocket `/v1/sessions/ID/desktop/vnc` (same origin; the login cookie
 * authenticates it, the server's Origin guard refuses other sites). The view
 * is view-only, and the server enforces it: input reaches the desktop only
 * through a takeover, during which the agent's desktop actions wait (reason
 * TAKEOVER) and the person's input and frames of the screen are recorded.
 * noVNC is loaded only when a desktop is shown.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, sessionPath } from '../api-client';

/** The takeover in progress, as the server describes it. */
interface TakeoverInfo {
  id: string;
  by: string;
  startedAt: string;
  frames: number;
  inputEvents: number;
  recording: string;
}

/** What GET /v1/sessions/ID/desktop answers. */
interface DesktopInfo {
  /** the session has a display (a desktop image on a session machine) */
  available: boolean;
  width: number;
  height: number;
  takeover: TakeoverInfo | null;
}

/** The URL of a session's live view on this origin, with input for a takeover. */
export function liveViewUrl(sessionId: string, takeoverId?: string): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const query = takeoverId === undefined ? '' : `?takeover=${encodeURIComponent(takeoverId)}`;
  return `${scheme}//${location.host}${sessionPath(sessionId, '/desktop/vnc')}${query}`;
}

/** The desktop's place on a session's page: the live view of a session that has a display, a note otherwise. */
export function DesktopPanel({ sessionId }: { sessionId: string }) {
  const [info, setInfo] = useState<DesktopInfo | null>(null);
  const [mine, setMine] = useState<TakeoverInfo | null>(null);
  const [error, setError] = useState<string | null>(null);

  const refresh = () =>
    api<DesktopInfo>('GET', sessionPath(sessionId, '/desktop')).then(setInfo, (failure: unknown) => setError(describe(failure)));
  useEffect(() => {
    void refresh();
  }, [sessionId]);

  const takeOver = async () => {
    try {
      const takeover = await api<TakeoverInfo>('POST', sessionPath(sessionId, '/desktop/takeover'), {});
      setMine(takeover);
      await refresh();
    } catch (failure) {
      setError(describe(failure));
    }
  };
  const handBack = async () => {
    try {
      await api('DELETE', sessionPath(sessionId, '/desktop/takeover'));
      setMine(null);
      await refresh();
    } catch (failure) {
      setError(describe(failure));
    }
  };

  const other = info?.takeover && info.takeover.id !== mine?.id ? info.takeover : null;
  if (info && !info.available) {
    return (
      <p class="muted small" data-testid="desktop">
        This session has no display. Desktop sessions start from an image built with <code>airlock images build --desktop</code>.
      </p>
    );
  }
  return (
    <div class="desktop-panel" data-testid="desktop">
      <p class="muted small">
        {info ? `${info.width}×${info.height}. ` : ''}
        {mine ? 'You have the desktop: your mouse and keys reach it, the agent waits, and this is recorded.' : 'View only: the agent drives this desktop through the airlock.'}
        {other ? ` Taken over by ${other.by} since ${new Date(other.startedAt).toLocaleTimeString()}.` : ''}
      </p>
      <div class="desktop-actions">
        {mine ? (
          <button type="button" class="primary" data-testid="desktop-hand-back" onClick={() => void handBack()}>
            Hand back to the agent
          </button>
        ) : (
          <button type="button" data-testid="desktop-take-over" disabled={other !== null || info === null} onClick={() => void takeOver()}>
            Take over
          </button>
        )}
      </div>
      {error && <p class="error small">{error}</p>}
      {info && <LiveView key={mine?.id ?? 'view-only'} sessionId={sessionId} takeoverId={mine?.id} onEnded={(why) => setError(why)} />}
    </div>
  );
}

/** One noVNC connection; a new one for each takeover, so the server knows which viewer may send input. */
function LiveView({ sessionId, takeoverId, onEnded }: { sessionId: string; takeoverId: string | undefined; onEnded(why: string): void }) {
  const host = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState('connecting…');
  useEffect(() => {
    let rfb: { disconnect(): void } | null = null;
    let disposed = false;
    void import('@novnc/novnc').then(({ default: RFB }) => {
      if (disposed || !host.current) return;
      const client = new RFB(host.current, liveViewUrl(sessionId, takeoverId), { shared: true });
      client.viewOnly = takeoverId === undefined;
      client.scaleViewport = true;
      client.resizeSession = false;
      client.background = '#202124';
      client.addEventListener('connect', () => setStatus(takeoverId === undefined ? 'live, view only' : 'live, your input goes through'));
      client.addEventListener('disconnect', () => {
        setStatus('disconnected');
        if (!disposed) onEnded('The live view closed (the session may have been suspended or has no desktop); reload to watch again.');
      });
      rfb = client;
    });
    return () => {
      disposed = true;
      rfb?.disconnect();
    };
  }, [sessionId, takeoverId]);
  return (
    <div>
      <div class="desktop-view" ref={host} data-testid="desktop-view" />
      <p class="muted small" data-testid="desktop-status">
        {status}
      </p>
    </div>
  );
}

function describe(failure: unknown): string {
  return failure instanceof ApiError ? `${failure.code}: ${failure.message}` : String(failure);
}
