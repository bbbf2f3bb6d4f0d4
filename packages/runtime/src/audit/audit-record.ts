/**
 * One record of the tamper-evident audit log. Records of a session form a
 * hash chain: each carries the hash of the previous one, so that an edited,
 * removed or reordered record breaks verification. Since keys were added the
 * hash is an HMAC-SHA256 under a key kept outside the database
 * (`hmac-sha256:<hex>`); older records carry a plain SHA-256 (`<hex>`).
 */

/** What a caller appends; the audit log assigns seq, time and hashes. */
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

/** Where a chain ends: its last record's seq and hash (seq 0 and the genesis hash when empty). */
export interface AuditHead {
  seq: number;
  hash: string;
}
