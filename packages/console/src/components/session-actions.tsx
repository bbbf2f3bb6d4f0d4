/**
 * What a person can do to a session: suspend, resume, fork, snapshot,
 * terminate. Terminate destroys the machine, its disk and memory images, so it
 * asks first; the others keep everything. Each shows its progress (waking a
 * machine can take seconds) and any refusal with its reason.
 */
import { useState } from 'preact/hooks';
import { api, sessionPath } from '../api-client';
import type { SessionInfo } from '../api-types';
import { rememberSession } from '../live-store';
import { BusyNote } from './busy-note';
import { ConfirmDialog } from './confirm-dialog';
import { ErrorBanner } from './error-banner';
import { navigate } from '../router';

type Dialog = 'terminate' | 'fork' | 'snapshot' | null;

/** Action buttons for one session. */
export function SessionActions({ session, compact = false }: { session: SessionInfo; compact?: boolean }) {
  const [busy, setBusy] = useState<{ label: string; since: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [dialog, setDialog] = useState<Dialog>(null);
  const [forkCount, setForkCount] = useState('2');
  const [snapshotName, setSnapshotName] = useState('');
  const [made, setMade] = useState<string | null>(null);

  const live = session.state !== 'terminated' && session.pendingOperation !== 'terminate';
  const hasMachine = session.mode === 'machine';
  const canSuspend = hasMachine && (session.state === 'running' || session.state === 'paused');
  const canResume = hasMachine && (session.state === 'suspended' || session.state === 'paused');
  const canSnapshot = hasMachine && (session.state === 'running' || session.state === 'paused' || session.state === 'suspended');
  const canTerminate = live && session.state !== 'creating';
  // A degraded machine (silent) or a failed one (its disk kept) gets a fresh machine on the same disk.
  const canRestart = hasMachine && (session.state === 'degraded' || session.state === 'failed') && session.pendingOperation === null;

  async function run(label: string, work: () => Promise<void>): Promise<void> {
    setDialog(null);
    setError(null);
    setMade(null);
    setBusy({ label, since: Date.now() });
    try {
      await work();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(null);
    }
  }

  const lifecycle = (verb: 'suspend' | 'resume' | 'restart', label: string) =>
    run(label, async () => rememberSession(await api<SessionInfo>('POST', sessionPath(session.id, `/${verb}`))));

  return (
    <div class={`actions ${compact ? 'actions-compact' : ''}`} data-session={session.id}>
      <div class="action-buttons">
        <button type="button" disabled={!canSuspend || busy !== null} onClick={() => void lifecycle('suspend', 'Suspending: saving memory and processes…')}>
          Suspend
        </button>
        <button
          type="button"
          disabled={!canResume || busy !== null}
          onClick={() => void lifecycle('resume', session.state === 'suspended' ? 'Waking: restoring the memory image…' : 'Waking…')}
        >
          Resume
        </button>
        {canRestart ? (
          <button type="button" disabled={busy !== null} onClick={() => void lifecycle('restart', 'Restarting: a fresh machine on the same disk…')}>
            Restart
          </button>
        ) : null}
        <button type="button" disabled={!canSnapshot || busy !== null} onClick={() => setDialog('snapshot')}>
          Snapshot
        </button>
        <button type="button" disabled={!canSnapshot || busy !== null} onClick={() => setDialog('fork')}>
          Fork
        </button>
        <button type="button" class="danger-outline" disabled={!canTerminate || busy !== null} onClick={() => setDialog('terminate')}>
          Terminate
        </button>
      </div>
      {busy ? <BusyNote label={busy.label} since={busy.since} /> : null}
      {made ? <span class="made">{made}</span> : null}
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
      {dialog === 'terminate' ? (
        <ConfirmDialog
          title={`Terminate ${session.id}?`}
          confirmLabel="Terminate"
          destructive
          onCancel={() => setDialog(null)}
          onConfirm={() => void run('Terminating…', async () => rememberSession(await api<SessionInfo>('DELETE', sessionPath(session.id))))}
        >
          <p>Its machine, its disk and its memory images are destroyed. This cannot be undone; the audit log is kept.</p>
        </ConfirmDialog>
      ) : null}
      {dialog === 'fork' ? (
        <ConfirmDialog
          title={`Fork ${session.id}`}
          confirmLabel="Fork"
          onCancel={() => setDialog(null)}
          onConfirm={() =>
            void run(`Forking into ${forkCount} branches…`, async () => {
              const result = await api<{ branches: ({ id: string } | { sessionId: string | null; error: { message: string } })[] }>('POST', sessionPath(session.id, '/fork'), { count: Number(forkCount) });
              const made = result.branches.filter((branch): branch is SessionInfo => 'id' in branch);
              for (const branch of made) rememberSession(branch);
              setMade(`${made.length} of ${result.branches.length} branches made`);
            })
          }
        >
          <p>Each branch is a new session with its own disk and identity, from this session as it is now.</p>
          <label>
            Branches <input type="number" min="1" max="64" value={forkCount} onInput={(event) => setForkCount((event.target as HTMLInputElement).value)} />
          </label>
        </ConfirmDialog>
      ) : null}
      {dialog === 'snapshot' ? (
        <ConfirmDialog
          title={`Snapshot ${session.id}`}
          confirmLabel="Take snapshot"
          onCancel={() => setDialog(null)}
          onConfirm={() =>
            void run('Taking a snapshot: memory, processes and disk…', async () => {
              const snapshot = await api<{ id: string }>('POST', sessionPath(session.id, '/snapshots'), snapshotName.trim() ? { name: snapshotName.trim() } : {});
              setMade(`snapshot ${snapshot.id} taken`);
            })
          }
        >
          <p>Memory, processes and disk at one instant; the session keeps running.</p>
          <label>
            Name (optional) <input type="text" maxLength={128} value={snapshotName} onInput={(event) => setSnapshotName((event.target as HTMLInputElement).value)} />
          </label>
        </ConfirmDialog>
      ) : null}
      {compact ? null : (
        <p class="hint">
          Suspend saves memory and processes and frees the host; the next call or Resume wakes it. {session.state === 'terminated' ? <a href="/" onClick={(event) => (event.preventDefault(), navigate('/'))}>Back to sessions</a> : null}
        </p>
      )}
    </div>
  );
}
