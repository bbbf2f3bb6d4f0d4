/**
 * Reads of the PostgreSQL store, over the pool (committed state) or over a
 * transaction's client (its own writes included).
 */
import type { ApprovalQuery, AuditQuery, SessionQuery, StoreReader, StoreSetting } from '../../core/store.js';
import type { SessionRecord } from '../../core/session.js';
import type { ApprovalRecord } from '../../core/approval.js';
import type { SnapshotRecord } from '../../core/snapshot.js';
import type { AuditHead, AuditRecord } from '../../audit/audit-record.js';
import { GENESIS_HASH } from '../../audit/hash-chain.js';
import { sessionFromRow, type SessionRow } from '../session-rows.js';
import type { ApiTokenRecord, TenantRecord } from '../../core/tenancy.js';
import { PostgresTenancyReads } from './postgres-tenancy.js';

/** What runs a query: the pool, or one client inside a transaction. */
export interface Queryable {
  query<Row extends object>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }>;
}

interface AuditRow {
  session_id: string;
  seq: number;
  at: string;
  type: string;
  data: Record<string, unknown>;
  prev_hash: string;
  hash: string;
}

/** Reads over one queryable. */
export class PostgresReads implements StoreReader {
  /** tokens and tenants (their writes too, used by the transaction) */
  protected readonly tenancy: PostgresTenancyReads;

  constructor(protected readonly db: Queryable) {
    this.tenancy = new PostgresTenancyReads(db);
  }

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

  async getSession(id: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.db.query<SessionRow>('SELECT record, version, owner FROM sessions WHERE id = $1', [id]);
    return rows[0] ? sessionFromRow(rows[0]) : undefined;
  }

  async listSessions(query: SessionQuery = {}): Promise<SessionRecord[]> {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (query.states && query.states.length > 0) {
      params.push(query.states);
      clauses.push(`state = ANY($${params.length}::text[])`);
    }
    if (query.tenant !== undefined) {
      params.push(query.tenant);
      clauses.push(`tenant = $${params.length}`);
    }
    if (query.owner !== undefined) {
      params.push(query.owner);
      clauses.push(`owner = $${params.length}`);
    }
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const { rows } = await this.db.query<SessionRow>(`SELECT record, version, owner FROM sessions ${where} ORDER BY created_at, id`, params);
    return rows.map(sessionFromRow);
  }

  async listAudit(sessionId: string, query: AuditQuery = {}): Promise<AuditRecord[]> {
    const params: unknown[] = [sessionId, query.afterSeq ?? 0];
    let typeClause = '';
    if (query.types && query.types.length > 0) {
      params.push(query.types);
      typeClause = `AND type = ANY($${params.length}::text[])`;
    }
    let limit = '';
    if (query.limit !== undefined && query.limit >= 0) {
      params.push(query.limit);
      limit = `LIMIT $${params.length}`;
    }
    const { rows } = await this.db.query<AuditRow>(
      `SELECT session_id, seq, at, type, data, prev_hash, hash FROM audit_records WHERE session_id = $1 AND seq > $2 ${typeClause} ORDER BY seq ${limit}`,
      params,
    );
    return rows.map((row) => ({
      sessionId: row.session_id,
      seq: row.seq,
      at: row.at,
      type: row.type,
      data: row.data,
      prevHash: row.prev_hash,
      hash: row.hash,
    }));
  }

  async auditHead(sessionId: string): Promise<AuditHead> {
    const { rows } = await this.db.query<AuditHead>('SELECT seq, hash FROM audit_heads WHERE session_id = $1', [sessionId]);
    return rows[0] && rows[0].seq > 0 ? rows[0] : { seq: 0, hash: GENESIS_HASH };
  }

  async listAuditedSessions(): Promise<string[]> {
    const { rows } = await this.db.query<{ session_id: string }>('SELECT session_id FROM audit_heads WHERE seq > 0 ORDER BY session_id');
    return rows.map((row) => row.session_id);
  }

  async getApproval(id: string): Promise<ApprovalRecord | undefined> {
    const { rows } = await this.db.query<{ record: ApprovalRecord }>('SELECT record FROM approvals WHERE id = $1', [id]);
    return rows[0]?.record;
  }

  async listApprovals(query: ApprovalQuery = {}): Promise<ApprovalRecord[]> {
    const clauses: string[] = [];
    const params: unknown[] = [];
    if (query.sessionId !== undefined) {
      params.push(query.sessionId);
      clauses.push(`session_id = $${params.length}`);
    }
    if (query.states && query.states.length > 0) {
      params.push(query.states);
      clauses.push(`state = ANY($${params.length}::text[])`);
    }
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const { rows } = await this.db.query<{ record: ApprovalRecord }>(`SELECT record FROM approvals ${where} ORDER BY created_at, id`, params);
    return rows.map((row) => row.record);
  }

  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    const { rows } = await this.db.query<{ record: SnapshotRecord }>('SELECT record FROM snapshots WHERE id = $1', [id]);
    return rows[0]?.record;
  }

  async listSnapshots(query: { sessionId?: string } = {}): Promise<SnapshotRecord[]> {
    const { rows } =
      query.sessionId === undefined
        ? await this.db.query<{ record: SnapshotRecord }>('SELECT record FROM snapshots ORDER BY created_at, id')
        : await this.db.query<{ record: SnapshotRecord }>('SELECT record FROM snapshots WHERE session_id = $1 ORDER BY created_at, id', [query.sessionId]);
    return rows.map((row) => row.record);
  }

  async getSetting(name: StoreSetting): Promise<string | undefined> {
    const { rows } = await this.db.query<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name]);
    return rows[0]?.value;
  }
}
