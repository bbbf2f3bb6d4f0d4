/**
 * Progress of something slow: its label and the seconds it has taken so far.
 * Waking a suspended machine restores its memory image and can take seconds;
 * a person should see that it is happening, not a frozen button.
 */
import { useEffect, useState } from 'preact/hooks';

/** Shows `label` with a running count of seconds since `since`. */
export function BusyNote({ label, since }: { label: string; since: number }) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const timer = window.setInterval(() => setNow(Date.now()), 200);
    return () => window.clearInterval(timer);
  }, []);
  return (
    <span class="busy" role="status" aria-live="polite">
      <span class="spinner" aria-hidden="true" />
      {label} <span class="muted">{((now - since) / 1000).toFixed(1)} s</span>
    </span>
  );
}
