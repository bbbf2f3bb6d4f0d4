/**
 * The one writer of session records. State moves only through `transition`
 * (by the table in session-transitions.ts); everything else (meters, breaker,
 * exposed ports, contract versions…) through `update`. Every write locks the
 * row, checks the table against what is stored now (not what the caller read
 * earlier), and is a compare-and-set on `version`: a concurrent writer is
 * either serialized behind the lock or gets WRITE_CONFLICT, never a lost
 * update. Each write carries its audit record in the same transaction.
 */
import { AirlockError, isAirlockError } from './errors.js';
import { secondsBetween, type Clock } from './clock.js';
import type { Store, StoreTransaction, SessionQuery } from './store.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { SessionRecord } from './session.js';
import { assertTransition, stateAfter, type SessionOperation } from './session-transitions.js';

/** What `update` may change: anything but identity, version, owner and state. */
export type SessionChange = Partial<Omit<SessionRecord, 'id' | 'version' | 'owner' | 'state' | 'pendingOperation' | 'createdAt' | 'updatedAt' | 'stateSince'>>;

/** The audit record of a write: its type and data (the new state is added to transitions). */
export interface SessionAudit {
  type: string;
  data: Record<string, unknown>;
}

/** Options of a write. */
export interface SessionWriteOptions {
  /** write inside this transaction instead of one of its own */
  tx?: StoreTransaction;
}

const MAX_ATTEMPTS = 5;

/** Reads and writes session records. */
export class SessionRecords {
  /** the server (data dir) this process speaks for: sessions it creates are its own */
  readonly owner: string;
  private readonly store: Store;
  private readonly audit: AuditLog;
  private readonly clock: Clock;

  constructor(deps: { store: Store; audit: AuditLog; clock: Clock; owner: string }) {
    this.store = deps.store;
    this.audit = deps.audit;
    this.clock = deps.clock;
    this.owner = deps.owner;
  }

  /** The time of the records' clock. */
  now(): Date {
    return this.clock.now();
  }

  /** The session, or SESSION_NOT_FOUND. */
  async get(id: string, tx?: StoreTransaction): Promise<SessionRecord> {
    const session = await (tx ?? this.store).getSession(id);
    if (!session) throw notFound(id);
    return session;
  }

  /** The session, or undefined. */
  async find(id: string): Promise<SessionRecord | undefined> {
    return this.store.getSession(id);
  }

  /** Sessions, oldest first. */
  async list(query: SessionQuery = {}): Promise<SessionRecord[]> {
    return this.store.listSessions(query);
  }

  /** Stores a new session (state `creating`) with its first audit record. */
  async insert(record: SessionRecord, audit: SessionAudit, options: SessionWriteOptions = {}): Promise<SessionRecord> {
    return this.within(options.tx, async (tx) => {
      await tx.insertSession(record);
      await this.audit.append(tx, { sessionId: record.id, type: audit.type, data: audit.data });
      return record;
    });
  }

  /**
   * Moves the session by `operation`, checked against the stored record.
   * Charges the time spent in the state it leaves, applies `change` and
   * audits `audit` (with the new state) in the same transaction.
   */
  async transition(
    id: string,
    operation: SessionOperation,
    audit: SessionAudit,
    change: SessionChange | ((fresh: SessionRecord) => SessionChange) = {},
    options: SessionWriteOptions = {},
  ): Promise<SessionRecord> {
    return this.write(id, options, (fresh) => {
      assertTransition(fresh, operation);
      const after = stateAfter(fresh, operation);
      const now = this.clock.now();
      const delta = typeof change === 'function' ? change(fresh) : change;
      const next: SessionRecord = { ...fresh, ...delta, ...after };
      if (after.state !== fresh.state) {
        const elapsed = secondsBetween(fresh.stateSince, now);
        const meters = { ...next.meters };
        if (fresh.state === 'running') meters.runningSeconds += elapsed;
        if (fresh.state === 'paused') meters.pausedSeconds += elapsed;
        if (fresh.state === 'suspended') meters.suspendedSeconds += elapsed;
        next.meters = meters;
        next.stateSince = now.toISOString();
      }
      return { next, audit: { type: audit.type, data: { ...audit.data, state: next.state } } };
    });
  }

  /**
   * Changes fields other than the state. `change` sees the stored record and
   * returns the change, or undefined to write nothing (and audit nothing).
   */
  async update(
    id: string,
    change: (fresh: SessionRecord) => SessionChange | undefined,
    audit?: SessionAudit | ((next: SessionRecord, fresh: SessionRecord) => SessionAudit | undefined),
    options: SessionWriteOptions = {},
  ): Promise<SessionRecord> {
    return this.write(id, options, (fresh) => {
      const delta = change(fresh);
      if (delta === undefined) return undefined;
      // Only transitions move the state, whatever a caller's object holds at run time.
      const next: SessionRecord = { ...fresh, ...delta, state: fresh.state, pendingOperation: fresh.pendingOperation };
      const entry = typeof audit === 'function' ? audit(next, fresh) : audit;
      return { next, ...(entry ? { audit: entry } : {}) };
    });
  }

  /** Gives sessions without an owner (written before owners existed) to this server; only right for a store no other server uses. */
  async claimUnowned(): Promise<number> {
    let claimed = 0;
    for (const session of await this.store.listSessions({ owner: '' })) {
      await this.store.transaction(async (tx) => {
        const fresh = await tx.lockSession(session.id);
        if (!fresh || fresh.owner !== '') return;
        if (await tx.replaceSession({ ...fresh, owner: this.owner, version: fresh.version + 1 })) claimed += 1;
      });
    }
    return claimed;
  }

  private async write(
    id: string,
    options: SessionWriteOptions,
    compute: (fresh: SessionRecord) => { next: SessionRecord; audit?: SessionAudit } | undefined,
  ): Promise<SessionRecord> {
    return this.within(options.tx, async (tx) => {
      const fresh = await tx.lockSession(id);
      if (!fresh) throw notFound(id);
      const outcome = compute(fresh);
      if (!outcome) return fresh;
      const next: SessionRecord = { ...outcome.next, id: fresh.id, owner: fresh.owner, version: fresh.version + 1, updatedAt: this.clock.now().toISOString() };
      if (!(await tx.replaceSession(next))) {
        throw new AirlockError('WRITE_CONFLICT', `session ${id} was changed by another writer at the same moment; retry`, {
          details: { sessionId: id, version: fresh.version },
        });
      }
      if (outcome.audit) await this.audit.append(tx, { sessionId: id, type: outcome.audit.type, data: outcome.audit.data });
      return next;
    });
  }

  /** Runs `work` in the caller's transaction, or in its own, retried when a compare-and-set lost. */
  private async within<T>(tx: StoreTransaction | undefined, work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    if (tx) return work(tx);
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await this.store.transaction(work);
      } catch (error) {
        if (!isAirlockError(error, 'WRITE_CONFLICT') || attempt >= MAX_ATTEMPTS) throw error;
      }
    }
  }
}

function notFound(id: string): AirlockError {
  return new AirlockError('SESSION_NOT_FOUND', `session ${id} does not exist; list sessions with \`airlock sessions ls\``, { details: { sessionId: id } });
}
