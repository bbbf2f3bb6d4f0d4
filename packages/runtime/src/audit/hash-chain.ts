/**
 * Hashing and verification of the audit chain. A record's hash covers every
 * field but itself, over a canonical JSON encoding (keys sorted), chained
 * through `prevHash`. New records are keyed: HMAC-SHA256 under the audit key,
 * which lives outside the database, so that someone who can only write the
 * database cannot recompute a chain after editing it. Chains written before
 * keys existed carry plain SHA-256 hashes and verify as "integrity only".
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { AuditHead, AuditRecord } from './audit-record.js';

/** Hash of the (empty) chain before its first record. */
export const GENESIS_HASH = '0'.repeat(64);

/** Prefix of keyed hashes; a hash without it is a legacy, unkeyed SHA-256. */
export const KEYED_PREFIX = 'hmac-sha256:';

/** A chain head signed with the audit key, as kept outside the database and exported. */
export interface SignedHead extends AuditHead {
  sessionId: string;
  /** HMAC-SHA256 over session, seq and hash under the audit key */
  signature: string;
}

/** JSON with object keys sorted, so that equal values always hash equally. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

function recordBody(record: Omit<AuditRecord, 'hash'>): string {
  return canonicalJson({
    sessionId: record.sessionId,
    seq: record.seq,
    at: record.at,
    type: record.type,
    data: record.data,
    prevHash: record.prevHash,
  });
}

/** The legacy, unkeyed hash of a record (plain SHA-256): integrity only. */
export function hashRecord(record: Omit<AuditRecord, 'hash'>): string {
  return createHash('sha256').update(recordBody(record)).digest('hex');
}

/** The keyed hash of a record: `hmac-sha256:<hex>` under `key`. */
export function keyedHash(record: Omit<AuditRecord, 'hash'>, key: Uint8Array): string {
  return `${KEYED_PREFIX}${createHmac('sha256', key).update(recordBody(record)).digest('hex')}`;
}

/** True for hashes made with a key. */
export function isKeyed(hash: string): boolean {
  return hash.startsWith(KEYED_PREFIX);
}

/** A short public name of a key, stored in the database so that servers sharing it agree on the key. */
export function keyId(key: Uint8Array): string {
  return createHmac('sha256', key).update('airlock-audit-key-id').digest('hex').slice(0, 16);
}

/** Signs a chain head with the audit key. */
export function signHead(key: Uint8Array, sessionId: string, head: AuditHead): SignedHead {
  return { sessionId, seq: head.seq, hash: head.hash, signature: headSignature(key, sessionId, head) };
}

/** True when the head's signature was made with `key`. */
export function headSignedBy(key: Uint8Array, head: SignedHead): boolean {
  const expected = Buffer.from(headSignature(key, head.sessionId, head), 'hex');
  const given = Buffer.from(head.signature, 'hex');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function headSignature(key: Uint8Array, sessionId: string, head: AuditHead): string {
  return createHmac('sha256', key).update(`airlock-audit-head\n${sessionId}\n${head.seq}\n${head.hash}`).digest('hex');
}

/** What verification found wrong, at the first record where it shows. */
export type ChainProblemKind = 'edited' | 'removed' | 'reordered' | 'truncated' | 'foreign' | 'forged' | 'empty' | 'unverifiable';

/** Outcome of verifying a chain. */
export interface ChainVerification {
  ok: boolean;
  records: number;
  /** keyed: every record carries an HMAC; legacy: none does (integrity only); mixed: legacy records, then keyed ones */
  authenticity: 'keyed' | 'legacy' | 'mixed' | 'none';
  /** the head kept outside the database that the chain was checked against, if any */
  anchoredSeq: number | null;
  /** a sentence on what the result means, e.g. for legacy chains */
  note?: string;
  /** first problem found, with the seq where it was found */
  problem?: { seq: number; kind: ChainProblemKind; message: string };
}

/** What a chain is verified against. */
export interface ChainEvidence {
  /** the head recorded in the database beside the chain */
  storedHead: AuditHead;
  /** the audit key; without it keyed records cannot be checked */
  key?: Uint8Array | undefined;
  /** the head kept outside the database (already checked to be signed with the key) */
  anchor?: AuditHead | undefined;
  /** a session always has records: an empty chain of an existing session means they were deleted */
  mustHaveRecords?: boolean;
}

/** Verifies a session's records (in stored order) against the heads kept beside and outside the database. */
export function verifyChain(sessionId: string, records: AuditRecord[], evidence: ChainEvidence): ChainVerification {
  const { storedHead, key, anchor } = evidence;
  const anchoredSeq = anchor ? anchor.seq : null;
  let keyedCount = 0;
  const fail = (seq: number, kind: ChainProblemKind, message: string): ChainVerification => ({
    ok: false,
    records: records.length,
    authenticity: authenticityOf(keyedCount, records.length),
    anchoredSeq,
    problem: { seq, kind, message },
  });
  if (records.length === 0 && (evidence.mustHaveRecords || (anchor && anchor.seq > 0))) {
    const written = anchor && anchor.seq > 0 ? `, but the head kept outside the database says ${anchor.seq} were written` : '';
    return fail(1, 'empty', `the chain has no records at all${written}: they were deleted`);
  }
  let prevHash = GENESIS_HASH;
  let expectedSeq = 1;
  for (const record of records) {
    if (record.sessionId !== sessionId) {
      return fail(record.seq, 'foreign', `record ${record.seq} belongs to session ${record.sessionId}`);
    }
    if (record.seq !== expectedSeq) {
      const kind = record.seq > expectedSeq ? 'removed' : 'reordered';
      const message =
        kind === 'removed' ? `record ${expectedSeq} is missing (the next one found is ${record.seq})` : `expected record ${expectedSeq}, found ${record.seq}`;
      return fail(expectedSeq, kind, message);
    }
    if (record.prevHash !== prevHash) {
      return fail(record.seq, 'reordered', `record ${record.seq} does not follow record ${record.seq - 1}`);
    }
    if (isKeyed(record.hash)) {
      if (!key) return fail(record.seq, 'unverifiable', `record ${record.seq} is keyed and no audit key was given to check it`);
      if (keyedHash(record, key) !== record.hash) {
        return fail(record.seq, 'edited', `record ${record.seq} (${record.type}) was altered after it was written, or rewritten without the audit key`);
      }
      keyedCount += 1;
    } else {
      if (keyedCount > 0) {
        return fail(record.seq, 'forged', `record ${record.seq} (${record.type}) is unkeyed after keyed records: it was written without the audit key`);
      }
      if (hashRecord(record) !== record.hash) {
        return fail(record.seq, 'edited', `record ${record.seq} (${record.type}) was altered after it was written`);
      }
    }
    if (anchor && record.seq === anchor.seq && record.hash !== anchor.hash) {
      return fail(record.seq, 'forged', `record ${record.seq} differs from the head kept outside the database: the chain was rewritten`);
    }
    prevHash = record.hash;
    expectedSeq += 1;
  }
  const lastSeq = expectedSeq - 1;
  if (anchor && anchor.seq > lastSeq) {
    return fail(
      lastSeq + 1,
      'truncated',
      `the chain ends at record ${lastSeq}, but the head kept outside the database says ${anchor.seq} were written: records ${lastSeq + 1}–${anchor.seq} are missing`,
    );
  }
  if (storedHead.seq !== lastSeq || storedHead.hash !== (lastSeq === 0 ? GENESIS_HASH : prevHash)) {
    return fail(lastSeq + 1, 'truncated', `the chain ends at record ${lastSeq} but ${storedHead.seq} were written`);
  }
  const authenticity = authenticityOf(keyedCount, records.length);
  const legacy = records.length - keyedCount;
  const note =
    authenticity === 'legacy'
      ? 'legacy unkeyed chain: integrity only, not authenticity'
      : authenticity === 'mixed'
        ? `records 1–${legacy} predate the audit key (integrity only, not authenticity); records ${legacy + 1}–${lastSeq} are keyed`
        : undefined;
  return { ok: true, records: records.length, authenticity, anchoredSeq, ...(note ? { note } : {}) };
}

function authenticityOf(keyed: number, total: number): ChainVerification['authenticity'] {
  if (total === 0) return 'none';
  if (keyed === total) return 'keyed';
  return keyed === 0 ? 'legacy' : 'mixed';
}
