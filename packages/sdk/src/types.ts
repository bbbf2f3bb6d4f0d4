/**
 * Shapes of the API's answers, as the SDK exposes them. Every type the server
 * sends is an alias of the types generated from its OpenAPI document
 * (./generated/openapi.ts); only client-side shapes are written here.
 */
import type { components } from './generated/openapi.js';

type Schemas = components['schemas'];

/** A session as the server shows it. */
export type SessionInfo = Schemas['Session'];
/** A policy decision, as recorded. */
export type PolicyDecision = Schemas['PolicyDecision'];
/** Timing of a call in milliseconds. */
export type CallTiming = Schemas['CallTiming'];
/** The outcome of a tool call. */
export type ToolCallOutcome = Schemas['ToolCallOutcome'];
/** A directory entry. */
export type FileInfo = Schemas['FileInfo'];
/** An approval request. */
export type ApprovalInfo = Schemas['Approval'];
/** One audit record. */
export type AuditRecord = Schemas['AuditRecord'];
/** Result of verifying an audit chain. */
export type AuditVerification = Schemas['AuditVerification'];
/** Result of verifying every chain at once: the failed ones, and those the database lost. */
export type AuditReport = Schemas['AuditReport'];
/** A snapshot: memory, processes and (unless taken at suspend) disk of a session at one instant. */
export type SnapshotInfo = Schemas['Snapshot'];
/** A fork branch that was not created, or failed, with its cause. */
export type ForkBranchFailure = Schemas['ForkBranchFailure'];
/** What the server answers to a fork: the snapshot, and each branch in index order. */
export type ForkResult = Schemas['ForkResult'];

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

