/**
 * One held call, with what a person needs to decide: the call, the policy and
 * reason that held it, the session's objective and its recent calls; approve
 * or deny with a note. A decided one shows who decided, when, and the outcome.
 */
import { useEffect, useState } from 'preact/hooks';
import { api } from '../api-client';
import type { ApprovalInfo, AuditRecord } from '../api-types';
import { rememberApproval } from '../live-store';
import { contractOf, describeCall, objectiveOf, recentAudit } from '../session-context';
import { formatInstant } from '../format';
import { followLink } from '../router';
import { ErrorBanner } from './error-banner';

/** A card for one approval. */
export function ApprovalCard({ approval }: { approval: ApprovalInfo }) {
  const [note, setNote] = useState('');
  const [busy, setBusy] = useState<'approve' | 'deny' | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [objective, setObjective] = useState<string | null>(null);
  const [recent, setRecent] = useState<AuditRecord[] | null>(null);
  const pending = approval.state === 'pending';
  const call = approval.call as { id: string; tool: string; arguments: Record<string, unknown>; receivedAt?: string };
  const sessionHref = `/sessions/${encodeURIComponent(approval.sessionId)}`;

  useEffect(() => {
    let gone = false;
    contractOf(approval.sessionId)
      .then((info) => !gone && setObjective(objectiveOf(info.contract)))
      .catch(() => undefined);
    if (pending) {
      recentAudit(approval.sessionId, 40)
        .then((records) => !gone && setRecent(records.filter((record) => record.type === 'tool-call.completed' || record.type === 'tool-call.denied' || record.type === 'tool-call.failed').slice(-5)))
        .catch(() => undefined);
    }
    return () => void (gone = true);
  }, [approval.sessionId, pending]);

  async function decide(verdict: 'approve' | 'deny'): Promise<void> {
    setBusy(verdict);
    setError(null);
    try {
      rememberApproval(await api<ApprovalInfo>('POST', `/v1/approvals/${encodeURIComponent(approval.id)}/${verdict}`, note.trim() ? { reason: note.trim() } : {}));
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(null);
    }
  }

  const outcome = (approval as { outcome?: { status: string; result?: Record<string, unknown>; error?: { code: string; message: string } } }).outcome;
  return (
    <article class={`card approval approval-${approval.state}`} data-approval-id={approval.id} data-state={approval.state}>
      <header class="card-head">
        <span class="tool">{call.tool}</span>
        <span class={`badge approval-state-${approval.state}`}>{approval.state}</span>
        <span class="muted small">{formatInstant(approval.createdAt)}</span>
      </header>
      <pre class="call" data-testid="held-call">
        {describeCall(call.tool, call.arguments)}
      </pre>
      <dl class="facts">
        <dt>Session</dt>
        <dd>
          <a href={sessionHref} class="mono" onClick={(event) => followLink(event, sessionHref)}>
            {approval.sessionId}
          </a>
        </dd>
        <dt>Held by</dt>
        <dd>
          {approval.policyIds.length > 0 ? <code>{approval.policyIds.join(', ')}</code> : 'policy'}
          <div class="reason" data-testid="hold-reason">
            {approval.reason}
          </div>
        </dd>
        {objective ? (
          <>
            <dt>Objective</dt>
            <dd data-testid="objective">{objective}</dd>
          </>
        ) : null}
        {pending && recent && recent.length > 0 ? (
          <>
            <dt>Recent calls</dt>
            <dd>
              <ul class="recent">
                {recent.map((record) => (
                  <li>
                    <span class={`dot dot-${record.type.split('.')[1]}`} /> {String(record.data['gen_ai.tool.name'])}{' '}
                    <span class="mono small">{describeCall(String(record.data['gen_ai.tool.name']), (record.data['arguments'] as Record<string, unknown>) ?? {})}</span>
                  </li>
                ))}
              </ul>
            </dd>
          </>
        ) : null}
        {!pending ? (
          <>
            <dt>Decided</dt>
            <dd data-testid="decided-by">
              {approval.state === 'expired' ? 'expired, nobody decided' : `${approval.decidedBy ?? 'unknown'}`} · {formatInstant(approval.decidedAt)}
              {approval.decisionReason ? <div class="reason">“{approval.decisionReason}”</div> : null}
            </dd>
          </>
        ) : null}
        {outcome ? (
          <>
            <dt>Outcome</dt>
            <dd data-testid="outcome">
              {outcome.status === 'completed' ? `completed${typeof outcome.result?.['exitCode'] === 'number' ? `, exit ${outcome.result['exitCode']}` : ''}` : `${outcome.status}${outcome.error ? `: ${outcome.error.code}` : ''}`}
            </dd>
          </>
        ) : null}
      </dl>
      {pending ? (
        <div class="decide">
          <label class="note">
            Note (recorded with the decision)
            <textarea rows={2} maxLength={4000} value={note} onInput={(event) => setNote((event.target as HTMLTextAreaElement).value)} />
          </label>
          <div class="decide-buttons">
            <button type="button" class="danger" disabled={busy !== null} onClick={() => void decide('deny')}>
              {busy === 'deny' ? 'Denying…' : 'Deny'}
            </button>
            <button type="button" class="primary" disabled={busy !== null} onClick={() => void decide('approve')}>
              {busy === 'approve' ? 'Approving…' : 'Approve'}
            </button>
          </div>
        </div>
      ) : null}
      <ErrorBanner error={error} onDismiss={() => setError(null)} />
    </article>
  );
}
