/**
 * What happens to a call the policy holds for a human. When the client can
 * show a confirmation (MCP elicitation), the person answers there and the
 * answer is recorded through the approvals API; meanwhile the approval is
 * watched, so a decision made elsewhere (CLI, API) also ends the wait and
 * withdraws the confirmation. Without elicitation the call waits at most
 * `approvalWaitMs`, then returns a pending result with the approval id.
 */
import type { CallOutcome, SessionCalls } from './session-calls.js';

/** A person's answer to a confirmation request. */
export type ConfirmationAnswer = { verdict: 'approve' | 'deny'; reason?: string } | { verdict: 'dismissed' };

/** Asks the person in the client; rejects if the client cannot. */
export type Confirm = (message: string, signal: AbortSignal) => Promise<ConfirmationAnswer>;

/** How one held call is settled. */
export interface HeldCallContext {
  calls: SessionCalls;
  /** present when the client declared the elicitation capability */
  confirm: Confirm | undefined;
  /** who decided, for the audit log (e.g. `mcp:claude-code`) */
  decidedBy: string;
  /** how long to wait for a decision made elsewhere when the client cannot confirm */
  approvalWaitMs: number;
  /** aborts when the client cancels the call or goes away */
  signal: AbortSignal;
}

/** The settled outcome, with a note for the model when the call is still pending. */
export interface HeldCallResult {
  outcome: CallOutcome;
  note?: string;
}

/** Longest wait on a confirmation; the server expires unanswered approvals before this. */
const CONFIRMATION_WAIT_MS = 24 * 3600 * 1000;

/** Settles a held call: confirmation in the client, else a bounded wait, else pending. */
export async function settleHeldCall(context: HeldCallContext, pending: Extract<CallOutcome, { status: 'pending-approval' }>, summary: string): Promise<HeldCallResult> {
  const { calls, confirm, signal } = context;
  const approvalId = pending.approvalId;
  if (!confirm) {
    if (context.approvalWaitMs <= 0) return { outcome: pending };
    return { outcome: await calls.awaitOutcome(approvalId, context.approvalWaitMs, signal) };
  }
  const watch = new AbortController();
  const stop = () => watch.abort();
  signal.addEventListener('abort', stop, { once: true });
  try {
    const outcome = calls.awaitOutcome(approvalId, CONFIRMATION_WAIT_MS, watch.signal);
    outcome.catch(() => undefined);
    const answer = confirm(summary, watch.signal).then(
      (value) => ({ kind: 'answer' as const, value }),
      (error: unknown) => ({ kind: 'failed' as const, error }),
    );
    const first = await Promise.race([outcome.then((value) => ({ kind: 'outcome' as const, value })), answer]);
    if (first.kind === 'outcome') return { outcome: first.value };
    if (first.kind === 'failed') {
      if (signal.aborted) throw first.error;
      const message = first.error instanceof Error ? first.error.message : String(first.error);
      return { outcome: await calls.awaitOutcome(approvalId, 0, signal), note: `(The client could not show the confirmation: ${message}.)` };
    }
    if (first.value.verdict === 'dismissed') {
      return { outcome: await calls.awaitOutcome(approvalId, 0, signal), note: '(The confirmation was dismissed without a decision; the call stays held.)' };
    }
    await calls.decide(approvalId, first.value.verdict, context.decidedBy, first.value.reason);
    return { outcome: await outcome };
  } finally {
    signal.removeEventListener('abort', stop);
    watch.abort();
  }
}

/** The confirmation text: what would run, on which session, and why the policy asks. */
export function confirmationMessage(sessionId: string, tool: string, args: Record<string, unknown>, reason: string | undefined, approvalId: string): string {
  const what = typeof args['command'] === 'string' ? `command: ${String(args['command'])}` : typeof args['path'] === 'string' ? `path: ${String(args['path'])}` : JSON.stringify(args);
  return [
    `Airlock holds this call for your approval (${approvalId}).`,
    `tool: ${tool}`,
    what,
    `session: ${sessionId}`,
    ...(reason ? [`policy: ${reason}`] : []),
    'Approve to run it once; decline to refuse it.',
  ].join('\n');
}
