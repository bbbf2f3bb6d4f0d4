/**
 * One record of the tamper-evident audit log. Records of a session form a
 * hash chain: each carries the hash of the previous one, so that an edited,
 * removed or reordered record breaks verification.
 */

/** What a caller appends; the store assigns seq, time and hashes. */
export interface AuditAppend {
  sessionId: string;
  /** `<noun>.<past-verb>`, e.g. `session.created`, `tool-call.denied` */
  type: string;
  data: Record<string, unknown>;
}

/** A record as stored. */
export interface AuditRecord {
  sessionId: string;
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
  prevHash: string;
  hash: string;
}
