/**
 * The embedded store: one SQLite file in the data dir, WAL journal with
 * synchronous=FULL so that a write acknowledged to a client survives a crash
 * of the server or of the host. Two connections: transactions run one at a
 * time on the writer (BEGIN IMMEDIATE, queued in this process), and reads
 * outside a transaction go to the reader, which only ever sees committed data.
 */
import Database from 'better-sqlite3';
import type { Store, StoreChange, StoreSetting, StoreTransaction, SessionQuery, AuditQuery, ApprovalQuery } from '../../core/store.js';
import type { SessionRecord } from '../../core/session.js';
import type { ApprovalRecord, ApprovalState } from '../../core/approval.js';
import type { SnapshotRecord } from '../../core/snapshot.js';
import type { NodeRecord, NodeState } from '../../core/cluster-node.js';
import type { AuditHead, AuditRecord } from '../../audit/audit-record.js';
import { AirlockError } from '../../core/errors.js';
import { ChangeListeners, CommitEffects, outermost } from '../store-changes.js';
import { SqliteReads } from './sqlite-reads.js';
import { MIGRATIONS } from './schema.js';
import type { ApiTokenRecord, TenantRecord } from '../../core/tenancy.js';
import { SqliteTenancyWrites } from './sqlite-tenancy.js';
import { SqliteWebhooks } from './sqlite-webhooks.js';

/** Store on better-sqlite3. */
export class SqliteStore implements Store {
  readonly kind = 'sqlite' as const;
  private readonly writer: Database.Database;
  private readonly reader: Database.Database;
  private readonly writerReads: SqliteReads;
  private readonly readerReads: SqliteReads;
  private readonly listeners = new ChangeListeners();
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(path: string) {
    try {
      this.writer = open(path);
      this.migrate();
      this.reader = open(path);
    } catch (error) {
      if (error instanceof AirlockError) throw error;
      throw new AirlockError('INVALID_CONFIGURATION', `cannot open the database at ${path}: check the data dir is writable (${(error as Error).message})`, {
        cause: error,
      });
    }
    this.writerReads = new SqliteReads(this.writer);
    this.readerReads = new SqliteReads(this.reader);
  }

  private migrate(): void {
    const version = this.writer.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new AirlockError('INVALID_CONFIGURATION', `the database schema (v${version}) is newer than this Airlock (v${MIGRATIONS.length}); upgrade Airlock`);
    }
    for (let index = version; index < MIGRATIONS.length; index += 1) {
      this.writer.transaction(() => {
        this.writer.exec(MIGRATIONS[index] ?? '');
        this.writer.pragma(`user_version = ${index + 1}`);
      })();
    }
  }

  transaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<T> {
    return outermost(async () => {
      const run = this.queue.then(() => this.runTransaction(work));
      this.queue = run.catch(() => undefined);
      const { result, effects } = await run;
      effects.committed(this.listeners);
      return result;
    });
  }

  private async runTransaction<T>(work: (tx: StoreTransaction) => Promise<T>): Promise<{ result: T; effects: CommitEffects }> {
    if (this.closed) throw new AirlockError('INTERNAL', 'the store is closed');
    const effects = new CommitEffects();
    const tx = new SqliteTransaction(this.writer, this.writerReads, effects);
    this.writer.prepare('BEGIN IMMEDIATE').run();
    try {
      const result = await work(tx);
      tx.finish();
      this.writer.prepare('COMMIT').run();
      return { result, effects };
    } catch (error) {
      tx.finish();
      if (this.writer.inTransaction) this.writer.prepare('ROLLBACK').run();
      throw error;
    }
  }

  watch(listener: (change: StoreChange) => void): () => void {
    return this.listeners.add(listener);
  }

  getSession(id: string): Promise<SessionRecord | undefined> {
    return this.readerReads.getSession(id);
  }
  listSessions(query?: SessionQuery): Promise<SessionRecord[]> {
    return this.readerReads.listSessions(query);
  }
  listAudit(sessionId: string, query?: AuditQuery): Promise<AuditRecord[]> {
    return this.readerReads.listAudit(sessionId, query);
  }
  auditHead(sessionId: string): Promise<AuditHead> {
    return this.readerReads.auditHead(sessionId);
  }
  listAuditedSessions(): Promise<string[]> {
    return this.readerReads.listAuditedSessions();
  }
  getApproval(id: string): Promise<ApprovalRecord | undefined> {
    return this.readerReads.getApproval(id);
  }
  listApprovals(query?: ApprovalQuery): Promise<ApprovalRecord[]> {
    return this.readerReads.listApprovals(query);
  }
  getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    return this.readerReads.getSnapshot(id);
  }
  listSnapshots(query?: { sessionId?: string }): Promise<SnapshotRecord[]> {
    return this.readerReads.listSnapshots(query);
  }
  getSetting(name: StoreSetting): Promise<string | undefined> {
    return this.readerReads.getSetting(name);
  }
  listNodes(): Promise<NodeRecord[]> {
    return this.readerReads.listNodes();
  }
  getNode(id: string): Promise<NodeRecord | undefined> {
    return this.readerReads.getNode(id);
  }
  getToken(id: string): Promise<ApiTokenRecord | undefined> {
    return this.readerReads.getToken(id);
  }
  findTokenBySecretHash(secretHash: string): Promise<ApiTokenRecord | undefined> {
    return this.readerReads.findTokenBySecretHash(secretHash);
  }
  listTokens(): Promise<ApiTokenRecord[]> {
    return this.readerReads.listTokens();
  }
  getTenant(name: string): Promise<TenantRecord | undefined> {
    return this.readerReads.getTenant(name);
  }
  listTenants(): Promise<TenantRecord[]> {
    return this.readerReads.listTenants();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    this.reader.close();
    this.writer.close();
  }
}

function open(path: string): Database.Database {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  return db;
}

/** The writer connection inside BEGIN IMMEDIATE: every other transaction of this process waits. */
class SqliteTransaction implements StoreTransaction {
  private open = true;
  private readonly tenancy = new SqliteTenancyWrites((sql, ...params) => this.run(sql, ...params));
  readonly webhooks = new SqliteWebhooks(
    (sql) => this.reads.statement(sql),
    (sql, ...params) => this.run(sql, ...params),
  );

  constructor(
    private readonly db: Database.Database,
    private readonly reads: SqliteReads,
    private readonly effects: CommitEffects,
  ) {}

  /** Ends the object's life: a transaction object kept past its end must not write. */
  finish(): void {
    this.open = false;
  }

  private run(sql: string, ...params: unknown[]): Database.RunResult {
    if (!this.open) throw new AirlockError('INTERNAL', 'this transaction already ended; open a new one');
    return this.reads.statement(sql).run(...params);
  }

  getSession(id: string): Promise<SessionRecord | undefined> {
    return this.reads.getSession(id);
  }
  lockSession(id: string): Promise<SessionRecord | undefined> {
    // BEGIN IMMEDIATE already holds the database's write lock.
    return this.reads.getSession(id);
  }
  listSessions(query?: SessionQuery): Promise<SessionRecord[]> {
    return this.reads.listSessions(query);
  }
  listAudit(sessionId: string, query?: AuditQuery): Promise<AuditRecord[]> {
    return this.reads.listAudit(sessionId, query);
  }
  auditHead(sessionId: string): Promise<AuditHead> {
    return this.reads.auditHead(sessionId);
  }
  lockAuditHead(sessionId: string): Promise<AuditHead> {
    return this.reads.auditHead(sessionId);
  }
  listAuditedSessions(): Promise<string[]> {
    return this.reads.listAuditedSessions();
  }
  getApproval(id: string): Promise<ApprovalRecord | undefined> {
    return this.reads.getApproval(id);
  }
  listApprovals(query?: ApprovalQuery): Promise<ApprovalRecord[]> {
    return this.reads.listApprovals(query);
  }
  getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    return this.reads.getSnapshot(id);
  }
  listSnapshots(query?: { sessionId?: string }): Promise<SnapshotRecord[]> {
    return this.reads.listSnapshots(query);
  }
  getSetting(name: StoreSetting): Promise<string | undefined> {
    return this.reads.getSetting(name);
  }
  listNodes(): Promise<NodeRecord[]> {
    return this.reads.listNodes();
  }
  getNode(id: string): Promise<NodeRecord | undefined> {
    return this.reads.getNode(id);
  }
  getToken(id: string): Promise<ApiTokenRecord | undefined> {
    return this.reads.getToken(id);
  }
  findTokenBySecretHash(secretHash: string): Promise<ApiTokenRecord | undefined> {
    return this.reads.findTokenBySecretHash(secretHash);
  }
  listTokens(): Promise<ApiTokenRecord[]> {
    return this.reads.listTokens();
  }
  getTenant(name: string): Promise<TenantRecord | undefined> {
    return this.reads.getTenant(name);
  }
  listTenants(): Promise<TenantRecord[]> {
    return this.reads.listTenants();
  }
  insertToken(token: ApiTokenRecord): Promise<void> {
    return this.tenancy.insertToken(token);
  }
  updateToken(token: ApiTokenRecord): Promise<boolean> {
    return this.tenancy.updateToken(token);
  }
  putTenant(tenant: TenantRecord): Promise<void> {
    return this.tenancy.putTenant(tenant);
  }

  async insertSession(session: SessionRecord): Promise<void> {
    this.run(
      'INSERT INTO sessions (id, state, tenant, created_at, version, owner, record) VALUES (?, ?, ?, ?, ?, ?, ?)',
      session.id,
      session.state,
      session.tenant,
      session.createdAt,
      session.version,
      session.owner,
      JSON.stringify(session),
    );
  }

  async replaceSession(next: SessionRecord): Promise<boolean> {
    const result = this.run(
      "UPDATE sessions SET state = ?, tenant = ?, version = ?, owner = ?, record = ? WHERE id = ? AND version = ? AND coalesce(json_extract(record, '$.epoch'), 0) <= ?",
      next.state,
      next.tenant,
      next.version,
      next.owner,
      JSON.stringify(next),
      next.id,
      next.version - 1,
      next.epoch ?? 0,
    );
    return result.changes === 1;
  }

  async insertAuditRecord(record: AuditRecord): Promise<void> {
    this.run(
      'INSERT INTO audit_records (session_id, seq, at, type, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
      record.sessionId,
      record.seq,
      record.at,
      record.type,
      JSON.stringify(record.data),
      record.prevHash,
      record.hash,
    );
    this.run(
      'INSERT INTO audit_heads (session_id, seq, hash) VALUES (?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash',
      record.sessionId,
      record.seq,
      record.hash,
    );
    this.effects.change({ kind: 'audit', sessionId: record.sessionId, firstSeq: record.seq, seq: record.seq });
  }

  async insertApproval(approval: ApprovalRecord): Promise<void> {
    this.run(
      'INSERT INTO approvals (id, session_id, state, created_at, record) VALUES (?, ?, ?, ?, ?)',
      approval.id,
      approval.sessionId,
      approval.state,
      approval.createdAt,
      JSON.stringify(approval),
    );
    this.effects.change({ kind: 'approval', approvalId: approval.id, sessionId: approval.sessionId, state: approval.state });
  }

  async transitionApproval(id: string, from: ApprovalState, next: ApprovalRecord): Promise<boolean> {
    const result = this.run('UPDATE approvals SET state = ?, record = ? WHERE id = ? AND state = ?', next.state, JSON.stringify(next), id, from);
    if (result.changes !== 1) return false;
    this.effects.change({ kind: 'approval', approvalId: id, sessionId: next.sessionId, state: next.state });
    return true;
  }

  async insertSnapshot(snapshot: SnapshotRecord): Promise<void> {
    this.run(
      'INSERT INTO snapshots (id, session_id, created_at, record) VALUES (?, ?, ?, ?)',
      snapshot.id,
      snapshot.sessionId,
      snapshot.createdAt,
      JSON.stringify(snapshot),
    );
  }

  async updateSnapshot(snapshot: SnapshotRecord): Promise<void> {
    this.run('UPDATE snapshots SET record = ? WHERE id = ?', JSON.stringify(snapshot), snapshot.id);
  }

  async setSetting(name: StoreSetting, value: string): Promise<void> {
    this.run('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value', name, value);
  }

  async putNode(node: NodeRecord): Promise<void> {
    this.run(
      'INSERT INTO nodes (id, state, heartbeat_at, record) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET state = excluded.state, heartbeat_at = excluded.heartbeat_at, record = excluded.record',
      node.id,
      node.state,
      node.heartbeatAt,
      JSON.stringify(node),
    );
  }

  async touchNode(id: string, heartbeatAt: string): Promise<boolean> {
    return this.run('UPDATE nodes SET heartbeat_at = ? WHERE id = ?', heartbeatAt, id).changes === 1;
  }

  async setNodeState(id: string, state: NodeState): Promise<boolean> {
    return this.run('UPDATE nodes SET state = ? WHERE id = ?', state, id).changes === 1;
  }

  afterCommit(callback: () => void): void {
    this.effects.afterCommit(callback);
  }
}
