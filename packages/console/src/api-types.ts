/**
 * Shapes of what the API answers, from the SDK's types (generated from the
 * server's OpenAPI document), so the console cannot drift from the API.
 */
import type { SessionInfo, ApprovalInfo, AuditRecord, AuditVerification, SnapshotInfo, FileInfo, ToolCallOutcome } from '@airlock/sdk';

export type { SessionInfo, ApprovalInfo, AuditRecord, AuditVerification, SnapshotInfo, FileInfo, ToolCallOutcome };

/** Who is logged in. */
export interface Identity {
  kind: 'token' | 'console';
  tokenId: string;
  tenant: string;
  role: 'admin' | 'operator' | 'approver' | 'agent' | 'metrics';
  name: string;
}

/** The answer of POST /v1/login and GET /v1/whoami. */
export interface LoginInfo {
  identity: Identity;
  csrfToken: string | null;
  expiresAt: string | null;
}

/** A session's lifecycle state. */
export type SessionState = SessionInfo['state'];

/** An audit record as the event stream sends it (without its hashes). */
export type StreamedAuditRecord = Omit<AuditRecord, 'prevHash' | 'hash'> & Partial<Pick<AuditRecord, 'prevHash' | 'hash'>>;
