/**
 * Tool calls on one Airlock session, through the SDK's connection. Every call
 * returns at once with its outcome, including `pending-approval`: the MCP
 * layer decides how to wait (elicitation, or a pending result), and every
 * request carries the call's abort signal, so that a cancelled call takes its
 * command down with it (the server kills a command whose request was aborted).
 */
import { AirlockApiError, type ApprovalInfo, type Connection, type SessionInfo, type ToolCallOutcome } from '@airlock/sdk';

/** A refusal or failure answered by the server, as a value. */
export interface CallRefusal {
  status: 'refused';
  code: string;
  message: string;
  decision: { policyIds?: string[]; reason?: string } | null;
}

/** What a submitted call came to. */
export type CallOutcome = Extract<ToolCallOutcome, { status: 'completed' | 'pending-approval' }> | CallRefusal;

/** Tool calls and approvals of one session. */
export class SessionCalls {
  constructor(
    private readonly connection: Connection,
    /** the session the calls run on */
    readonly sessionId: string,
    /** a W3C `traceparent` the calls carry, so their spans join the caller's trace */
    private readonly traceparent?: string,
  ) {}

  /** These calls, carrying `traceparent` (the MCP request's `params._meta.traceparent`); a malformed value is ignored. */
  withTraceparent(traceparent: unknown): SessionCalls {
    if (typeof traceparent !== 'string' || !/^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/.test(traceparent)) return this;
    return new SessionCalls(this.connection, this.sessionId, traceparent);
  }

  /**
   * Submits a call without waiting for a human; refusals come back as values,
   * transport failures throw. With `onOutput`, an exec streams its output to
   * it while it runs.
   */
  async submit(tool: string, args: Record<string, unknown>, signal?: AbortSignal, onOutput?: (bytes: Uint8Array) => void): Promise<CallOutcome> {
    const init = { ...(signal ? { signal } : {}), ...(this.traceparent ? { headers: { traceparent: this.traceparent } } : {}) };
    try {
      if (tool === 'exec' && onOutput) {
        const response = await this.connection.send('POST', `/v1/sessions/${encodeURIComponent(this.sessionId)}/exec`, { ...args, stream: true }, init);
        return fromOutcome(await readExecStream(response, onOutput));
      }
      const response = await this.connection.send('POST', `/v1/sessions/${encodeURIComponent(this.sessionId)}/tools/${tool}`, args, init);
      return fromOutcome((await response.json()) as ToolCallOutcome);
    } catch (error) {
      if (error instanceof AirlockApiError && error.status < 500) return refusalOf(error);
      throw error;
    }
  }

  /** The session as the API shows it (state, meters); not a tool call, so it neither wakes the machine nor is audited. */
  async info(signal?: AbortSignal): Promise<SessionInfo> {
    return (await this.connection.json<SessionInfo>('GET', `/v1/sessions/${encodeURIComponent(this.sessionId)}`, undefined, signal ? { signal } : {})).body;
  }

  /** The Airlock tools the session's contract allows. */
  async allowedTools(signal?: AbortSignal): Promise<ReadonlySet<string>> {
    const allowed = new Set((await this.info(signal)).tools);
    // The desktop tools fail on a session without a display: not worth offering there.
    if (allowed.has('desktop.act') || allowed.has('desktop.screenshot')) {
      const path = `/v1/sessions/${encodeURIComponent(this.sessionId)}/desktop`;
      const desktop = await this.connection.json<{ available?: boolean }>('GET', path, undefined, signal ? { signal } : {}).then(
        (answer) => answer.body,
        () => ({ available: false }),
      );
      if (desktop.available !== true) for (const tool of ['desktop.act', 'desktop.screenshot']) allowed.delete(tool);
    }
    return allowed;
  }

  /** One approval. */
  async approval(id: string, options: { waitSeconds?: number; signal?: AbortSignal } = {}): Promise<ApprovalInfo> {
    const wait = options.waitSeconds ? `?waitSeconds=${Math.ceil(options.waitSeconds)}` : '';
    const init = options.signal ? { signal: options.signal } : {};
    const approval = (await this.connection.json<ApprovalInfo>('GET', `/v1/approvals/${encodeURIComponent(id)}${wait}`, undefined, init)).body;
    // This endpoint speaks for one session: another session's call, or its output, is none of its business.
    if (approval.sessionId !== this.sessionId) {
      throw new AirlockApiError(
        'APPROVAL_NOT_FOUND',
        `approval ${id} does not exist in session ${this.sessionId}; use an approval id this session's own calls returned`,
        404,
        { approvalId: id },
      );
    }
    return approval;
  }

  /** Approves or denies; a decision someone else already made is not an error here (the outcome tells). */
  async decide(id: string, verdict: 'approve' | 'deny', by: string, reason?: string): Promise<void> {
    await this.approval(id);
    try {
      await this.connection.json('POST', `/v1/approvals/${encodeURIComponent(id)}/${verdict}`, { by, ...(reason ? { reason } : {}) });
    } catch (error) {
      if (error instanceof AirlockApiError && error.code === 'APPROVAL_ALREADY_DECIDED') return;
      throw error;
    }
  }

  /**
   * Waits until the approval's call ran or was refused, or `timeoutMs` passed
   * (then the outcome is still `pending-approval`), or `signal` aborted (throws).
   */
  async awaitOutcome(id: string, timeoutMs: number, signal?: AbortSignal): Promise<CallOutcome> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const left = (deadline - Date.now()) / 1000;
      const approval = await this.approval(id, { waitSeconds: Math.max(0, Math.min(30, left)), ...(signal ? { signal } : {}) });
      if (approval.state === 'denied') {
        return {
          status: 'refused',
          code: 'APPROVAL_DENIED',
          message: `a human denied this call${approval.decisionReason ? `: ${approval.decisionReason}` : ''}`,
          decision: { policyIds: approval.policyIds, reason: approval.reason },
        };
      }
      if (approval.state === 'expired') {
        return {
          status: 'refused',
          code: 'APPROVAL_EXPIRED',
          message: 'nobody approved this call in time; submit it again',
          decision: { policyIds: approval.policyIds, reason: approval.reason },
        };
      }
      if (approval.state === 'executed' && approval.outcome) return fromOutcome(approval.outcome);
      if (Date.now() >= deadline) {
        return {
          status: 'pending-approval',
          callId: approval.call.id,
          tool: approval.call.tool,
          approvalId: id,
          decision: { decision: 'ask', policyIds: approval.policyIds, reason: approval.reason, errors: [], enforced: true },
        };
      }
    }
  }
}

/** Reads the exec route's NDJSON stream (output lines, then the outcome); a held or refused call answers plain JSON. */
async function readExecStream(response: Response, onOutput: (bytes: Uint8Array) => void): Promise<ToolCallOutcome> {
  if (!(response.headers.get('content-type') ?? '').includes('ndjson') || !response.body) return (await response.json()) as ToolCallOutcome;
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffered = '';
  let outcome: ToolCallOutcome | undefined;
  const take = (line: string) => {
    if (!line.trim()) return;
    const event = JSON.parse(line) as {
      type: string;
      data?: string;
      outcome?: ToolCallOutcome;
      error?: { code: string; message: string; details?: Record<string, unknown> };
    };
    if ((event.type === 'stdout' || event.type === 'stderr') && event.data !== undefined) onOutput(Buffer.from(event.data, 'base64'));
    else if (event.type === 'outcome') outcome = event.outcome;
    else if (event.type === 'error' && event.error) throw new AirlockApiError(event.error.code, event.error.message, 500, event.error.details ?? {});
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (value) buffered += decoder.decode(value, { stream: true });
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      take(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
    if (done) break;
  }
  take(buffered);
  if (!outcome) throw new AirlockApiError('INTERNAL', 'the output stream ended before the command finished; the server may have restarted', 502);
  return outcome;
}

function fromOutcome(outcome: ToolCallOutcome): CallOutcome {
  if (outcome.status !== 'refused') return outcome;
  return { status: 'refused', code: outcome.error.code, message: outcome.error.message, decision: outcome.decision };
}

function refusalOf(error: AirlockApiError): CallRefusal {
  const decision = error.details['decision'] as CallRefusal['decision'] | undefined;
  return { status: 'refused', code: error.code, message: error.message, decision: decision ?? null };
}
