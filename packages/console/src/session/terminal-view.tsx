/**
 * The takeover terminal itself: xterm.js over a WebSocket to
 * `/v1/sessions/ID/terminal` (same origin, the login cookie authenticates it,
 * the server's Origin guard refuses other sites). The protocol, `airlock.terminal.v1`:
 * binary frames carry terminal bytes both ways; text frames carry JSON
 * control messages, `{"type":"resize","cols","rows"}` from the browser and
 * `{"type":"exit","code"}` or `{"type":"error","code","message"}` from the
 * server. xterm.js is loaded only when a person opens a terminal.
 */
import { useEffect, useRef, useState } from 'preact/hooks';

/** The terminal's size when it opens. */
const COLUMNS = 100;
const ROWS = 28;

/** The URL of a session's terminal WebSocket on this origin. */
export function terminalUrl(sessionId: string): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${scheme}//${location.host}/v1/sessions/${encodeURIComponent(sessionId)}/terminal`;
}

/** What the connection is doing, for the line under the terminal. */
type TerminalStatus = { kind: 'connecting' } | { kind: 'open' } | { kind: 'ended'; why: string };

/** A terminal connected to the session's machine; unmounting hands it back. */
export function TerminalView({ sessionId, onClose }: { sessionId: string; onClose(): void }) {
  const host = useRef<HTMLDivElement>(null);
  const [status, setStatus] = useState<TerminalStatus>({ kind: 'connecting' });

  useEffect(() => {
    let socket: WebSocket | null = null;
    let disposed = false;
    let dispose = () => {};
    void import('@xterm/xterm').then(({ Terminal }) => {
      if (disposed || !host.current) return;
      const terminal = new Terminal({ cols: COLUMNS, rows: ROWS, cursorBlink: true, fontFamily: 'ui-monospace, Menlo, Consolas, monospace', fontSize: 13 });
      terminal.open(host.current);
      terminal.focus();
      const encoder = new TextEncoder();
      socket = new WebSocket(terminalUrl(sessionId), 'airlock.terminal.v1');
      socket.binaryType = 'arraybuffer';
      socket.onopen = () => {
        setStatus({ kind: 'open' });
        socket?.send(JSON.stringify({ type: 'resize', cols: terminal.cols, rows: terminal.rows }));
      };
      socket.onmessage = (event: MessageEvent<ArrayBuffer | string>) => {
        if (typeof event.data !== 'string') return terminal.write(new Uint8Array(event.data));
        const control = JSON.parse(event.data) as { type: string; code?: number | string; message?: string };
        if (control.type === 'exit') setStatus({ kind: 'ended', why: `the shell exited (${String(control.code)})` });
        if (control.type === 'error') setStatus({ kind: 'ended', why: `${String(control.code)}: ${control.message ?? ''}` });
      };
      socket.onclose = (event) => setStatus((current) => (current.kind === 'ended' ? current : { kind: 'ended', why: event.reason || `the connection closed (${event.code})` }));
      const input = terminal.onData((data) => socket?.readyState === WebSocket.OPEN && socket.send(encoder.encode(data)));
      const resize = terminal.onResize(({ cols, rows }) => socket?.readyState === WebSocket.OPEN && socket.send(JSON.stringify({ type: 'resize', cols, rows })));
      dispose = () => {
        input.dispose();
        resize.dispose();
        terminal.dispose();
      };
    });
    return () => {
      disposed = true;
      socket?.close(1000, 'handed back');
      dispose();
    };
  }, [sessionId]);

  return (
    <div class="terminal" data-testid="terminal-view">
      <div ref={host} class="terminal-screen" />
      <div class="terminal-bar">
        <span class="muted small" data-testid="terminal-status">
          {status.kind === 'connecting' ? 'Connecting…' : status.kind === 'open' ? 'You hold the session: the agent’s calls wait until you hand back.' : `Ended: ${status.why}`}
        </span>
        <button type="button" onClick={onClose}>
          Hand back
        </button>
      </div>
    </div>
  );
}
