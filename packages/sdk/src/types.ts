/** Shapes of the API's answers, as the SDK exposes them. */

/** A session as the server shows it. */
export interface SessionInfo {
  id: string;
  state: 'creating' | 'running' | 'paused' | 'suspended' | 'terminated' | 'failed';
  mode: 'machine' | 'per-call';
  image: { name: string; digest: string };
  tenant: string;
  principal: string;
  contractVersion: number;
  sandboxId: string | null;
  snapshotId: string | null;
  lineage: { parentSessionId: string; snapshotId: string; branchIndex: number } | null;
  failure: { code: string; message: string } | null;
  guard: { tripped: { callKey: string; at: string; count: number } | null };
  createdAt: string;
  updatedAt: string;
  meters: Record<string, number>;
  [key: string]: unknown;
}

/** A policy decision, as recorded. */
export interface PolicyDecision {
  decision: 'allow' | 'deny' | 'ask';
  policyIds: string[];
  reason: string;
  errors: string[];
  enforced: boolean;
}

/** Timing of a call in milliseconds. */
export interface CallTiming {
  queuedMs: number;
  resumeMs: number;
  runMs: number;
  totalMs: number;
}

/** The outcome of a tool call. */
export type ToolCallOutcome =
  | { status: 'completed'; callId: string; tool: string; result: Record<string, unknown>; decision: PolicyDecision; timing: CallTiming }
  | { status: 'refused'; callId: string; tool: string; error: { code: string; message: string; details: Record<string, unknown> }; decision: PolicyDecision | null }
  | { status: 'pending-approval'; callId: string; tool: string; approvalId: string; decision: PolicyDecision };

/** The result of a command. */
export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  timedOut: boolean;
  aborted: boolean;
  callId: string;
  decision: PolicyDecision;
  timing: CallTiming;
}

/** A directory entry. */
export interface FileInfo {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mode: string;
  modifiedAt: string;
  target?: string;
}

/** An approval request. */
export interface ApprovalInfo {
  id: string;
  sessionId: string;
  state: 'pending' | 'approved' | 'denied' | 'expired' | 'executed';
  call: { id: string; sessionId: string; tool: string; arguments: Record<string, unknown>; receivedAt: string };
  policyIds: string[];
  reason: string;
  createdAt: string;
  expiresAt: string;
  decidedAt: string | null;
  decidedBy: string | null;
  decisionReason: string | null;
  outcome?: ToolCallOutcome;
}

/** One audit record. */
export interface AuditRecord {
  sessionId: string;
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
  prevHash: string;
  hash: string;
}

/** Result of verifying an audit chain. */
export interface AuditVerification {
  sessionId: string;
  ok: boolean;
  records: number;
  problem?: { seq: number; kind: string; message: string };
}
