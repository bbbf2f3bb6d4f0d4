/**
 * Hashing and verification of the audit chain. The hash covers every field
 * of a record except its own hash, over a canonical JSON encoding (keys
 * sorted), chained through `prevHash`.
 */
import { createHash } from 'node:crypto';
import type { AuditRecord } from './audit-record.js';

/** Hash of the (empty) chain before its first record. */
export const GENESIS_HASH = '0'.repeat(64);

/** JSON with object keys sorted, so that equal values always hash equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The hash a record must carry. */
export function hashRecord(record: Omit<AuditRecord, 'hash'>): string {
  const body = canonicalJson({
    sessionId: record.sessionId,
    seq: record.seq,
    at: record.at,
    type: record.type,
    data: record.data,
    prevHash: record.prevHash,
  });
  return createHash('sha256').update(body).digest('hex');
}

/** Outcome of verifying a chain. */
export interface ChainVerification {
  ok: boolean;
  records: number;
  /** first problem found, with the seq where it was found */
  problem?: { seq: number; kind: 'edited' | 'removed' | 'reordered' | 'truncated' | 'foreign'; message: string };
}

/** Verifies a session's records (in stored order) against the chain head kept beside them. */
export function verifyChain(
  sessionId: string,
  records: AuditRecord[],
  head: { seq: number; hash: string },
): ChainVerification {
  let prevHash = GENESIS_HASH;
  let expectedSeq = 1;
  for (const record of records) {
    if (record.sessionId !== sessionId) {
      return fail(records.length, record.seq, 'foreign', `record ${record.seq} belongs to session ${record.sessionId}`);
    }
    if (record.seq !== expectedSeq) {
      const kind = record.seq > expectedSeq ? 'removed' : 'reordered';
      return fail(records.length, record.seq, kind, `expected record ${expectedSeq}, found ${record.seq}`);
    }
    if (record.prevHash !== prevHash) {
      return fail(records.length, record.seq, 'reordered', `record ${record.seq} does not follow record ${record.seq - 1}`);
    }
    if (hashRecord(record) !== record.hash) {
      return fail(records.length, record.seq, 'edited', `record ${record.seq} (${record.type}) was altered after it was written`);
    }
    prevHash = record.hash;
    expectedSeq += 1;
  }
  const lastSeq = expectedSeq - 1;
  if (head.seq !== lastSeq || head.hash !== (lastSeq === 0 ? GENESIS_HASH : prevHash)) {
    return fail(records.length, lastSeq + 1, 'truncated', `the chain ends at record ${lastSeq} but ${head.seq} were written`);
  }
  return { ok: true, records: records.length };
}

function fail(
  records: number,
  seq: number,
  kind: NonNullable<ChainVerification['problem']>['kind'],
  message: string,
): ChainVerification {
  return { ok: false, records, problem: { seq, kind, message } };
}
