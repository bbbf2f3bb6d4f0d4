/**
 * TAKEOVER TERMINAL (issue 15, item 6): the place on a session's page.
 *
 * While a person holds the terminal, the agent's calls wait with the reason
 * TAKEOVER. The PTY inside the sandbox is being added to the driver; until a
 * server offers it, `GET /v1/sessions/ID/terminal` answers 501 NOT_AVAILABLE
 * and this panel says so. Once it answers 200, "Take over" opens the
 * terminal (terminal-view.tsx). There is deliberately no fake terminal.
 */
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, sessionPath } from '../api-client';
import { TerminalView } from './terminal-view';

/** The terminal's place on a session's page. */
export function TerminalPanel({ sessionId }: { sessionId: string }) {
  const [availability, setAvailability] = useState<string | null>(null);
  const [open, setOpen] = useState(false);
  useEffect(() => {
    api('GET', sessionPath(sessionId, '/terminal')).then(
      () => setAvailability('available'),
      (error: unknown) => setAvailability(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error)),
    );
  }, [sessionId]);
  if (open) return <TerminalView sessionId={sessionId} onClose={() => setOpen(false)} />;
  return (
    <div class="terminal-placeholder" data-testid="terminal">
      <p>
        <strong>Takeover terminal</strong>: a shell in this session's machine, recorded in the audit, with the agent's calls held while you type.
      </p>
      {availability === 'available' ? (
        <button type="button" class="primary" onClick={() => setOpen(true)}>
          Take over
        </button>
      ) : (
        <p class="muted small" data-testid="terminal-availability">
          {availability === null ? 'Asking the server…' : `Not available on this server yet (${availability}).`}
        </p>
      )}
    </div>
  );
}
