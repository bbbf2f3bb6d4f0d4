/**
 * Errors of the SDK. `AirlockApiError` carries the server's stable code;
 * subclasses exist for the codes callers branch on. Errors raised locally
 * (no server reachable) are `AirlockConnectionError`, distinct from errors
 * the server sent.
 */

/** An error answered by the server, rebuilt from its code. */
export class AirlockApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown>;

  constructor(code: string, message: string, status: number, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'AirlockApiError';
    this.code = code;
    this.status = status;
    this.details = details;
  }
}

/** The policy refused the call; `decision` says which policies and why. */
export class PolicyDeniedError extends AirlockApiError {
  override readonly name = 'PolicyDeniedError';
  /** the decision: `{ decision, policyIds, reason, enforced }` */
  get decision(): Record<string, unknown> | undefined {
    return this.details['decision'] as Record<string, unknown> | undefined;
  }
}

/** A human denied the call, or nobody approved it in time. */
export class ApprovalDeniedError extends AirlockApiError {
  override readonly name = 'ApprovalDeniedError';
}

/** The call waits for a human; approve it with `approvals.approve(approvalId)`. */
export class ApprovalPendingError extends AirlockApiError {
  override readonly name = 'ApprovalPendingError';
  get approvalId(): string {
    return String(this.details['approvalId'] ?? '');
  }
}

/** The runaway breaker or a budget stopped the call. */
export class GuardError extends AirlockApiError {
  override readonly name = 'GuardError';
}

/** The session does not exist. */
export class SessionNotFoundError extends AirlockApiError {
  override readonly name = 'SessionNotFoundError';
}

/**
 * Some branches of a fork were not created. `created` holds those that were
 * (they run: use them or kill them), `failures` each other branch's cause.
 */
export class ForkError<Branch = unknown> extends AirlockApiError {
  override readonly name = 'ForkError';
  constructor(
    message: string,
    readonly created: Branch[],
    readonly failures: { index: number; sessionId: string | null; error: { code: string; message: string } }[],
  ) {
    super(failures[0]?.error.code ?? 'INTERNAL', message, 201, { failures });
  }
}

/** The server could not be reached (after retries for idempotent requests). */
export class AirlockConnectionError extends Error {
  override readonly name = 'AirlockConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Rebuilds the right error class from a server error body. */
export function errorFromBody(status: number, body: unknown): AirlockApiError {
  const error = (body as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | undefined)?.error;
  const code = error?.code ?? 'INTERNAL';
  const message = error?.message ?? `the server answered ${status}`;
  const details = error?.details ?? {};
  switch (code) {
    case 'POLICY_DENIED':
      return new PolicyDeniedError(code, message, status, details);
    case 'APPROVAL_DENIED':
    case 'APPROVAL_EXPIRED':
      return new ApprovalDeniedError(code, message, status, details);
    case 'RUNAWAY_DETECTED':
    case 'BUDGET_EXCEEDED':
      return new GuardError(code, message, status, details);
    case 'SESSION_NOT_FOUND':
      return new SessionNotFoundError(code, message, status, details);
    default:
      return new AirlockApiError(code, message, status, details);
  }
}
