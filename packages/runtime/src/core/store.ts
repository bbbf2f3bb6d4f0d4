/**
 * The persistence port of the control plane. Synchronous on purpose: the
 * embedded store (SQLite) commits in microseconds, and a synchronous commit
 * makes "recorded before the effect it allows" trivially true at every call
 * site. See docs/decisions/0002-synchronous-store.md.
 */
import type { SessionRecord, SessionState } from './session.js';
import type { AuditRecord, AuditAppend } from '../audit/audit-record.js';
import type { ApprovalRecord, ApprovalState } from './approval.js';
import type { SnapshotRecord } from './snapshot.js';

/** Filters for listing sessions. */
export interface SessionQuery {
  states?: SessionState[];
  tenant?: string;
}

/** Durable state of the control plane. Every write is committed when the call returns. */
export interface Store {
  /** Runs `work` in one transaction: all of its writes commit together or none do. */
  transaction<T>(work: () => T): T;

  insertSession(session: SessionRecord): void;
  getSession(id: string): SessionRecord | undefined;
  updateSession(session: SessionRecord): void;
  listSessions(query?: SessionQuery): SessionRecord[];

  /** Appends to the session's hash chain (sessionId '' is the system chain). */
  appendAudit(entry: AuditAppend): AuditRecord;
  listAudit(sessionId: string, options?: { afterSeq?: number; limit?: number; types?: string[] }): AuditRecord[];
  /** The chain head as recorded beside the chain: detects removal of the last records. */
  auditHead(sessionId: string): { seq: number; hash: string };

  insertApproval(approval: ApprovalRecord): void;
  getApproval(id: string): ApprovalRecord | undefined;
  /** Moves an approval from `from` to its new state atomically; false when it was not in `from`. */
  transitionApproval(id: string, from: ApprovalState, next: ApprovalRecord): boolean;
  listApprovals(query?: { sessionId?: string; states?: ApprovalState[] }): ApprovalRecord[];

  insertSnapshot(snapshot: SnapshotRecord): void;
  getSnapshot(id: string): SnapshotRecord | undefined;
  updateSnapshot(snapshot: SnapshotRecord): void;
  listSnapshots(query?: { sessionId?: string }): SnapshotRecord[];

  close(): void;
}
