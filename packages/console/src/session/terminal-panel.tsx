/**
 * TAKEOVER TERMINAL (issue 15, item 6): the place on a session's page.
 *
 * While a person holds the terminal, the agent's calls wait with the reason
 * TAKEOVER. `GET /v1/sessions/ID/terminal` says whether this session can have
 * one (a machine on a driver with PTYs); when it answers 200, "Take over"
 * opens the terminal (terminal-view.tsx), else the panel says why not.
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
          {availability === null ? 'Asking the server…' : `Not available for this session (${availability}).`}
        </p>
      )}
    </div>
  );
}
