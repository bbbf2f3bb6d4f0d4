/**
 * Reads of the SQLite store over one connection (the reader, or the writer
 * inside a transaction), with statements prepared once.
 */
import type Database from 'better-sqlite3';
import type { StoreReader, StoreSetting, SessionQuery, AuditQuery, ApprovalQuery } from '../../core/store.js';
import type { SessionRecord } from '../../core/session.js';
import type { ApprovalRecord } from '../../core/approval.js';
import type { SnapshotRecord } from '../../core/snapshot.js';
import type { AuditHead, AuditRecord } from '../../audit/audit-record.js';
import { GENESIS_HASH } from '../../audit/hash-chain.js';
import { sessionFromRow, type SessionRow } from '../session-rows.js';
import type { ApiTokenRecord, TenantRecord } from '../../core/tenancy.js';
import { SqliteTenancyReads } from './sqlite-tenancy.js';

interface AuditRow {
  session_id: string;
  seq: number;
  at: string;
  type: string;
  data: string;
  prev_hash: string;
  hash: string;
}

/** Reads over one connection, with statements prepared once. */
export class SqliteReads implements StoreReader {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly tenancy = new SqliteTenancyReads((sql) => this.statement(sql));

  constructor(private readonly db: Database.Database) {}

  getToken(id: string): Promise<ApiTokenRecord | undefined> {
    return this.tenancy.getToken(id);
  }
  findTokenBySecretHash(secretHash: string): Promise<ApiTokenRecord | undefined> {
    return this.tenancy.findTokenBySecretHash(secretHash);
  }
  listTokens(): Promise<ApiTokenRecord[]> {
    return this.tenancy.listTokens();
  }
  getTenant(name: string): Promise<TenantRecord | undefined> {
    return this.tenancy.getTenant(name);
  }
  listTenants(): Promise<TenantRecord[]> {
    return this.tenancy.listTenants();
  }

  /** A prepared statement, cached by its text. */
  statement(sql: string): Database.Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const row = this.statement('SELECT record, version, owner FROM sessions WHERE id = ?').get(id) as SessionRow | undefined;
    return row ? sessionFromRow(row) : undefined;
  }

  async listSessions(query: SessionQuery = {}): Promise<SessionRecord[]> {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (query.states && query.states.length > 0) {
      clauses.push(`state IN (${query.states.map(() => '?').join(',')})`);
      params.push(...query.states);
    }
    if (query.tenant !== undefined) {
      clauses.push('tenant = ?');
      params.push(query.tenant);
    }
    if (query.owner !== undefined) {
      clauses.push('owner = ?');
      params.push(query.owner);
    }
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = this.statement(`SELECT record, version, owner FROM sessions ${where} ORDER BY created_at, id`).all(...params) as SessionRow[];
    return rows.map(sessionFromRow);
  }

  async listAudit(sessionId: string, query: AuditQuery = {}): Promise<AuditRecord[]> {
    const params: unknown[] = [sessionId, query.afterSeq ?? 0];
    let typeClause = '';
    if (query.types && query.types.length > 0) {
      typeClause = `AND type IN (${query.types.map(() => '?').join(',')})`;
      params.push(...query.types);
    }
    params.push(query.limit ?? -1);
    const rows = this.statement(`SELECT * FROM audit_records WHERE session_id = ? AND seq > ? ${typeClause} ORDER BY seq LIMIT ?`).all(...params) as AuditRow[];
    return rows.map((row) => ({
      sessionId: row.session_id,
      seq: row.seq,
      at: row.at,
      type: row.type,
      data: JSON.parse(row.data) as Record<string, unknown>,
      prevHash: row.prev_hash,
      hash: row.hash,
    }));
  }

  async auditHead(sessionId: string): Promise<AuditHead> {
    const row = this.statement('SELECT seq, hash FROM audit_heads WHERE session_id = ?').get(sessionId) as AuditHead | undefined;
    return row ?? { seq: 0, hash: GENESIS_HASH };
  }

  async listAuditedSessions(): Promise<string[]> {
    const rows = this.statement('SELECT DISTINCT session_id FROM audit_records ORDER BY session_id').all() as { session_id: string }[];
    return rows.map((row) => row.session_id);
  }

  async getApproval(id: string): Promise<ApprovalRecord | undefined> {
    const row = this.statement('SELECT record FROM approvals WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as ApprovalRecord) : undefined;
  }

  async listApprovals(query: ApprovalQuery = {}): Promise<ApprovalRecord[]> {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (query.sessionId !== undefined) {
      clauses.push('session_id = ?');
      params.push(query.sessionId);
    }
    if (query.states && query.states.length > 0) {
      clauses.push(`state IN (${query.states.map(() => '?').join(',')})`);
      params.push(...query.states);
    }
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = this.statement(`SELECT record FROM approvals ${where} ORDER BY created_at, id`).all(...params) as { record: string }[];
    return rows.map((row) => JSON.parse(row.record) as ApprovalRecord);
  }

  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    const row = this.statement('SELECT record FROM snapshots WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as SnapshotRecord) : undefined;
  }

  async listSnapshots(query: { sessionId?: string } = {}): Promise<SnapshotRecord[]> {
    const rows = (
      query.sessionId === undefined
        ? this.statement('SELECT record FROM snapshots ORDER BY created_at, id').all()
        : this.statement('SELECT record FROM snapshots WHERE session_id = ? ORDER BY created_at, id').all(query.sessionId)
    ) as { record: string }[];
    return rows.map((row) => JSON.parse(row.record) as SnapshotRecord);
  }

  async getSetting(name: StoreSetting): Promise<string | undefined> {
    const row = this.statement('SELECT value FROM settings WHERE name = ?').get(name) as { value: string } | undefined;
    return row?.value;
  }
}
