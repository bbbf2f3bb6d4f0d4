/**
 * One PostgreSQL transaction on one pooled client. Sessions and chain heads
 * are locked with `SELECT … FOR UPDATE`, so concurrent writers of a session
 * or a chain queue behind each other (across servers too) instead of failing
 * their compare-and-set; a chain head locked once stays known to the
 * transaction, so several appends to one chain cost one lock.
 */
import type pg from 'pg';
import type { StoreSetting, StoreTransaction } from '../../core/store.js';
import type { SessionRecord } from '../../core/session.js';
import type { ApprovalRecord, ApprovalState } from '../../core/approval.js';
import type { SnapshotRecord } from '../../core/snapshot.js';
import type { NodeRecord, NodeState } from '../../core/cluster-node.js';
import type { AuditHead, AuditRecord } from '../../audit/audit-record.js';
import { GENESIS_HASH } from '../../audit/hash-chain.js';
import { AirlockError } from '../../core/errors.js';
import type { CommitEffects } from '../store-changes.js';
import { sessionFromRow, type SessionRow } from '../session-rows.js';
import { PostgresReads, type Queryable } from './postgres-reads.js';
import type { ApiTokenRecord, TenantRecord } from '../../core/tenancy.js';
import { PostgresWebhooks } from './postgres-webhooks.js';

/** A transaction of the PostgreSQL store. */
export class PostgresTransaction extends PostgresReads implements StoreTransaction {
  private readonly life: { open: boolean };
  private readonly heads = new Map<string, AuditHead>();
  readonly webhooks: PostgresWebhooks;

  constructor(
    client: pg.PoolClient,
    private readonly effects: CommitEffects,
  ) {
    const life = { open: true };
    super(guarded(client, life));
    this.life = life;
    this.webhooks = new PostgresWebhooks(this.db);
  }

  /** Ends the object's life: a transaction object kept past its end must not write. */
  finish(): void {
    this.life.open = false;
  }

  async lockSession(id: string): Promise<SessionRecord | undefined> {
    const { rows } = await this.db.query<SessionRow>('SELECT record, version, owner FROM sessions WHERE id = $1 FOR UPDATE', [id]);
    return rows[0] ? sessionFromRow(rows[0]) : undefined;
  }

  async insertSession(session: SessionRecord): Promise<void> {
    await this.db.query('INSERT INTO sessions (id, owner, state, tenant, created_at, version, record) VALUES ($1, $2, $3, $4, $5, $6, $7::json)', [
      session.id,
      session.owner,
      session.state,
      session.tenant,
      session.createdAt,
      session.version,
      JSON.stringify(session),
    ]);
  }

  async replaceSession(next: SessionRecord): Promise<boolean> {
    const { rowCount } = await this.db.query(
      "UPDATE sessions SET owner = $1, state = $2, tenant = $3, version = $4, record = $5::json WHERE id = $6 AND version = $7 AND coalesce((record->>'epoch')::integer, 0) <= $8",
      [next.owner, next.state, next.tenant, next.version, JSON.stringify(next), next.id, next.version - 1, next.epoch ?? 0],
    );
    return rowCount === 1;
  }

  async lockAuditHead(sessionId: string): Promise<AuditHead> {
    const known = this.heads.get(sessionId);
    if (known) return known;
    // One statement locks the head row and returns it; a chain's first append makes the row (seq 0), so racing first appends queue too.
    const { rows } = await this.db.query<AuditHead>(
      'INSERT INTO audit_heads (session_id, seq, hash) VALUES ($1, 0, $2) ON CONFLICT (session_id) DO UPDATE SET session_id = excluded.session_id RETURNING seq, hash',
      [sessionId, GENESIS_HASH],
    );
    const head = rows[0] ?? { seq: 0, hash: GENESIS_HASH };
    this.heads.set(sessionId, head);
    return head;
  }

  async insertAuditRecord(record: AuditRecord): Promise<void> {
    await this.db.query(
      `WITH inserted AS (
         INSERT INTO audit_records (session_id, seq, at, type, data, prev_hash, hash) VALUES ($1, $2, $3, $4, $5::json, $6, $7)
       )
       INSERT INTO audit_heads (session_id, seq, hash) VALUES ($1, $2, $7)
       ON CONFLICT (session_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash`,
      [record.sessionId, record.seq, record.at, record.type, JSON.stringify(record.data), record.prevHash, record.hash],
    );
    this.heads.set(record.sessionId, { seq: record.seq, hash: record.hash });
    this.effects.change({ kind: 'audit', sessionId: record.sessionId, firstSeq: record.seq, seq: record.seq });
  }

  async insertApproval(approval: ApprovalRecord): Promise<void> {
    await this.db.query('INSERT INTO approvals (id, session_id, state, created_at, record) VALUES ($1, $2, $3, $4, $5::json)', [
      approval.id,
      approval.sessionId,
      approval.state,
      approval.createdAt,
      JSON.stringify(approval),
    ]);
    this.effects.change({ kind: 'approval', approvalId: approval.id, sessionId: approval.sessionId, state: approval.state });
  }

  async transitionApproval(id: string, from: ApprovalState, next: ApprovalRecord): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE approvals SET state = $1, record = $2::json WHERE id = $3 AND state = $4', [
      next.state,
      JSON.stringify(next),
      id,
      from,
    ]);
    if (rowCount !== 1) return false;
    this.effects.change({ kind: 'approval', approvalId: id, sessionId: next.sessionId, state: next.state });
    return true;
  }

  async insertSnapshot(snapshot: SnapshotRecord): Promise<void> {
    await this.db.query('INSERT INTO snapshots (id, session_id, created_at, record) VALUES ($1, $2, $3, $4::json)', [
      snapshot.id,
      snapshot.sessionId,
      snapshot.createdAt,
      JSON.stringify(snapshot),
    ]);
  }

  async updateSnapshot(snapshot: SnapshotRecord): Promise<void> {
    await this.db.query('UPDATE snapshots SET record = $1::json WHERE id = $2', [JSON.stringify(snapshot), snapshot.id]);
  }

  async setSetting(name: StoreSetting, value: string): Promise<void> {
    await this.db.query('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [name, value]);
  }

  async putNode(node: NodeRecord): Promise<void> {
    await this.db.query(
      'INSERT INTO nodes (id, state, heartbeat_at, record) VALUES ($1, $2, $3, $4::json) ON CONFLICT (id) DO UPDATE SET state = excluded.state, heartbeat_at = excluded.heartbeat_at, record = excluded.record',
      [node.id, node.state, node.heartbeatAt, JSON.stringify(node)],
    );
  }

  async touchNode(id: string, heartbeatAt: string): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE nodes SET heartbeat_at = $1 WHERE id = $2', [heartbeatAt, id]);
    return rowCount === 1;
  }

  async setNodeState(id: string, state: NodeState): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE nodes SET state = $1 WHERE id = $2', [state, id]);
    return rowCount === 1;
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

  afterCommit(callback: () => void): void {
    this.effects.afterCommit(callback);
  }
}

/** The client, refusing queries once the transaction ended. */
function guarded(client: pg.PoolClient, life: { open: boolean }): Queryable {
  return {
    query: async <Row extends object>(text: string, values?: unknown[]) => {
      if (!life.open) throw new AirlockError('INTERNAL', 'this transaction already ended; open a new one');
      const result = await client.query<Row>(text, values);
      return { rows: result.rows, rowCount: result.rowCount };
    },
  };
}
