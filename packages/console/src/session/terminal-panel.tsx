/**
 * TAKEOVER TERMINAL: the place reserved for it (issue 15, item 6).
 *
 * The terminal will be xterm.js (`@xterm/xterm`) over a WebSocket to a PTY
 * inside the session's machine; while a person holds it, the agent's calls
 * wait with the reason TAKEOVER. The PTY is being added to the sandbox
 * driver, so this panel only asks the server whether the terminal exists
 * (GET /v1/sessions/:id/terminal answers 501 NOT_AVAILABLE until then) and
 * says so. There is deliberately no fake terminal here.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, sessionPath } from '../api-client';

/** The terminal's place on a session's page. */
export function TerminalPanel({ sessionId }: { sessionId: string }) {
  const [availability, setAvailability] = useState<string | null>(null);
  useEffect(() => {
    api('GET', sessionPath(sessionId, '/terminal')).then(
      () => setAvailability('available'),
      (error: unknown) => setAvailability(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)),
    );
  }, [sessionId]);
  return (
    <div class="terminal-placeholder" data-testid="terminal">
      <p>
        <strong>Takeover terminal</strong>: a shell in this session's machine, recorded in the audit, with the agent's calls held while you type.
      </p>
      <p class="muted small" data-testid="terminal-availability">
        {availability === null ? 'Asking the server…' : availability === 'available' ? 'Available.' : `Not available on this server yet (${availability}).`}
      </p>
    </div>
  );
}
