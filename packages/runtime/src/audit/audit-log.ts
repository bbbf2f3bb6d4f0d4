/**
 * The audit log: computes each record's place in its session's chain (seq,
 * previous hash, keyed hash) inside the caller's transaction, so that a
 * record and the change it describes commit together. Stores only keep what
 * this computes. Once a transaction committed, the new heads go to the
 * anchor: a copy kept outside the database, so that deleting or truncating
 * records there is found.
 */
import type { AuditAppend, AuditHead, AuditRecord } from './audit-record.js';
import { keyedHash, signHead, headSignedBy, verifyChain, type ChainVerification, type SignedHead } from './hash-chain.js';
import type { Store, StoreTransaction } from '../core/store.js';
import type { Clock } from '../core/clock.js';
import { AirlockError } from '../core/errors.js';

/** Chain heads kept outside the database (implemented on the host by `AuditHeadFile`). */
export interface AuditAnchor {
  /** Records that these heads were committed; called after commit, in commit order. */
  advance(heads: SignedHead[]): void;
  /** The last head recorded for a session, if any. */
  headOf(sessionId: string): SignedHead | undefined;
  /** Every chain a head was recorded for (the system chain '' included). */
  chains(): string[];
}

/** Collaborators of the audit log. */
export interface AuditLogOptions {
  /** the audit key; chains are keyed with it (HMAC-SHA256) */
  key: Uint8Array;
  /** where heads are kept outside the database; none in unit tests that do not need it */
  anchor?: AuditAnchor;
  clock: Clock;
}

/** What `exportChain` yields: every record, then the head signed with the key. */
export type AuditExportLine = ({ kind: 'record' } & AuditRecord) | ({ kind: 'head'; anchoredSeq: number | null } & SignedHead);

/** The system chain: token, tenant and secret records, about no session. */
export const SYSTEM_CHAIN = '';

/** One chain of an installation-wide check (`verifyAll`). */
export interface ChainReport extends ChainVerification {
  /** the session; '' for the system chain */
  sessionId: string;
  /** the head file outside the database names this chain, and the database holds none of it (records, head, session) */
  missing: boolean;
}

/** What `verifyAll` found: every chain checked, those that failed, and those the database lost. */
export interface AuditReport {
  ok: boolean;
  /** chains checked: every one in the database, and every one the head file names */
  chains: number;
  /** the chains that failed, missing ones included, in session order */
  failed: ChainReport[];
  /** ids of the chains the database lost ('' for the system chain) */
  missing: string[];
}

/** Chains verified at once by `verifyAll`. */
const VERIFY_ALL_WIDTH = 8;

/** Appends to and verifies session chains. */
export class AuditLog {
  private readonly key: Uint8Array;
  private readonly anchor: AuditAnchor | undefined;
  private readonly clock: Clock;
  // Heads appended by each open transaction, handed to the anchor once it commits.
  private readonly pending = new WeakMap<StoreTransaction, Map<string, AuditHead>>();

  constructor(options: AuditLogOptions) {
    this.key = options.key;
    this.anchor = options.anchor;
    this.clock = options.clock;
  }

  /** Appends one record to its session's chain inside `tx`. */
  async append(tx: StoreTransaction, entry: AuditAppend): Promise<AuditRecord> {
    const head = await tx.lockAuditHead(entry.sessionId);
    const unsigned = {
      sessionId: entry.sessionId,
      seq: head.seq + 1,
      at: this.clock.now().toISOString(),
      type: entry.type,
      data: entry.data,
      prevHash: head.hash,
    };
    const record: AuditRecord = { ...unsigned, hash: keyedHash(unsigned, this.key) };
    await tx.insertAuditRecord(record);
    this.remember(tx, record);
    return record;
  }

  /** Appends one record in a transaction of its own. */
  async appendNow(store: Store, entry: AuditAppend): Promise<AuditRecord> {
    return store.transaction((tx) => this.append(tx, entry));
  }

  /** The head kept outside the database for a session, when its signature holds. */
  anchoredHead(sessionId: string): { head?: SignedHead; problem?: string } {
    const head = this.anchor?.headOf(sessionId);
    if (!head) return {};
    if (!headSignedBy(this.key, head))
      return { problem: `the head kept outside the database for ${sessionId || 'the system chain'} is not signed with this server's audit key` };
    return { head };
  }

  /** Verifies a session's chain against the heads beside and outside the database. */
  async verify(store: Store, sessionId: string, options: { mustHaveRecords: boolean }): Promise<ChainVerification> {
    const [records, storedHead] = await Promise.all([store.listAudit(sessionId), store.auditHead(sessionId)]);
    const anchored = this.anchoredHead(sessionId);
    if (anchored.problem) {
      return { ok: false, records: records.length, authenticity: 'none', anchoredSeq: null, problem: { seq: 0, kind: 'forged', message: anchored.problem } };
    }
    return verifyChain(sessionId, records, { storedHead, key: this.key, anchor: anchored.head, mustHaveRecords: options.mustHaveRecords });
  }

  /** Verifies the system chain (tokens, tenants, secrets); it may be empty on a fresh installation. */
  async verifySystem(store: Store): Promise<ChainVerification> {
    return this.verify(store, SYSTEM_CHAIN, { mustHaveRecords: false });
  }

  /**
   * Verifies every chain: the system chain, every session's (a session always has records), and every
   * chain the head file outside the database names, so that one the database lost whole (records, head
   * and session deleted) is reported as missing instead of going unseen.
   */
  async verifyAll(store: Store): Promise<AuditReport> {
    const [audited, sessions] = await Promise.all([store.listAuditedSessions(), store.listSessions()]);
    const known = new Set(sessions.map((session) => session.id));
    const ids = [...new Set([SYSTEM_CHAIN, ...audited, ...known, ...(this.anchor?.chains() ?? [])])].sort();
    const reports: ChainReport[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < ids.length) {
        const sessionId = ids[next++] ?? '';
        const result = await this.verify(store, sessionId, { mustHaveRecords: known.has(sessionId) });
        const missing = !result.ok && result.records === 0 && !known.has(sessionId) && (this.anchor?.headOf(sessionId)?.seq ?? 0) > 0;
        reports.push({ sessionId, ...result, missing });
      }
    };
    await Promise.all(Array.from({ length: Math.min(VERIFY_ALL_WIDTH, ids.length) }, worker));
    const failed = reports.filter((report) => !report.ok).sort((a, b) => a.sessionId.localeCompare(b.sessionId));
    return { ok: failed.length === 0, chains: ids.length, failed, missing: failed.filter((report) => report.missing).map((report) => report.sessionId) };
  }

  /**
   * Every record of a session, then its head signed with the key (the anchored one's seq beside it).
   * A chain shorter than the head kept outside the database is refused (AUDIT_CHAIN_TRUNCATED): a
   * signed head over what is left would vouch for the shortened chain.
   */
  async exportChain(store: Store, sessionId: string): Promise<AuditExportLine[]> {
    const records = await store.listAudit(sessionId);
    const last = records.at(-1);
    const anchoredSeq = this.anchoredHead(sessionId).head?.seq ?? 0;
    if (anchoredSeq > (last?.seq ?? 0)) {
      const chain = sessionId === SYSTEM_CHAIN ? 'the system chain' : `the chain of session ${sessionId}`;
      const verify = sessionId === SYSTEM_CHAIN ? 'airlock audit verify --system' : `airlock audit verify ${sessionId}`;
      throw new AirlockError(
        'AUDIT_CHAIN_TRUNCATED',
        `${chain} ends at record ${last?.seq ?? 0}, but the head kept outside the database says ${anchoredSeq} were written: its tail was deleted, so no head is signed for it; \`${verify}\` shows what is missing`,
        { details: { sessionId, seq: last?.seq ?? 0, anchoredSeq } },
      );
    }
    const head = signHead(this.key, sessionId, last ? { seq: last.seq, hash: last.hash } : await store.auditHead(sessionId));
    return [
      ...records.map((record) => ({ kind: 'record' as const, ...record })),
      { kind: 'head', ...head, anchoredSeq: this.anchoredHead(sessionId).head?.seq ?? null },
    ];
  }

  /** Anchors heads that exist before any keyed append (e.g. legacy chains when the key is first made). */
  anchorExisting(heads: { sessionId: string; head: AuditHead }[]): void {
    const fresh = heads.filter(({ sessionId, head }) => head.seq > 0 && (this.anchor?.headOf(sessionId)?.seq ?? 0) < head.seq);
    if (fresh.length > 0) this.anchor?.advance(fresh.map(({ sessionId, head }) => signHead(this.key, sessionId, head)));
  }

  private remember(tx: StoreTransaction, record: AuditRecord): void {
    if (!this.anchor) return;
    let heads = this.pending.get(tx);
    if (!heads) {
      const created = new Map<string, AuditHead>();
      heads = created;
      this.pending.set(tx, created);
      tx.afterCommit(() => {
        this.anchor?.advance([...created].map(([sessionId, head]) => signHead(this.key, sessionId, head)));
      });
    }
    heads.set(record.sessionId, { seq: record.seq, hash: record.hash });
  }
}
