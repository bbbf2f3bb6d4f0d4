/**
 * The embedded store: one SQLite file in the data dir, WAL journal with
 * synchronous=FULL so that a write acknowledged to a client survives a crash
 * of the server or of the host.
 */
import Database from 'better-sqlite3';
import type { Store, SessionQuery } from '../../core/store.js';
import type { SessionRecord } from '../../core/session.js';
import type { ApprovalRecord, ApprovalState } from '../../core/approval.js';
import type { SnapshotRecord } from '../../core/snapshot.js';
import type { AuditAppend, AuditRecord } from '../../audit/audit-record.js';
import { GENESIS_HASH, hashRecord } from '../../audit/hash-chain.js';
import { AirlockError } from '../../core/errors.js';
import { MIGRATIONS } from './schema.js';

interface AuditRow {
  session_id: string;
  seq: number;
  at: string;
  type: string;
  data: string;
  prev_hash: string;
  hash: string;
}

/** Store on better-sqlite3. */
export class SqliteStore implements Store {
  private readonly db: Database.Database;

  constructor(path: string) {
    try {
      this.db = new Database(path);
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      this.db.pragma('busy_timeout = 5000');
      this.db.pragma('foreign_keys = ON');
    } catch (error) {
      throw new AirlockError('INTERNAL', `cannot open the database at ${path}: check the data dir is writable`, {
        cause: error,
      });
    }
    this.migrate();
  }

  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new AirlockError(
        'INTERNAL',
        `the database schema (v${version}) is newer than this Airlock (v${MIGRATIONS.length}); upgrade Airlock`,
      );
    }
    for (let index = version; index < MIGRATIONS.length; index += 1) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[index] ?? '');
        this.db.pragma(`user_version = ${index + 1}`);
      })();
    }
  }

  transaction<T>(work: () => T): T {
    return this.db.transaction(work)();
  }

  insertSession(session: SessionRecord): void {
    this.db
      .prepare('INSERT INTO sessions (id, state, tenant, created_at, record) VALUES (?, ?, ?, ?, ?)')
      .run(session.id, session.state, session.tenant, session.createdAt, JSON.stringify(session));
  }

  getSession(id: string): SessionRecord | undefined {
    const row = this.db.prepare('SELECT record FROM sessions WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as SessionRecord) : undefined;
  }

  updateSession(session: SessionRecord): void {
    const result = this.db
      .prepare('UPDATE sessions SET state = ?, record = ? WHERE id = ?')
      .run(session.state, JSON.stringify(session), session.id);
    if (result.changes !== 1) throw new AirlockError('SESSION_NOT_FOUND', `session ${session.id} does not exist`);
  }

  listSessions(query: SessionQuery = {}): SessionRecord[] {
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
    const where = clauses.length > 0 ? `WHERE ${clauses.join(' AND ')}` : '';
    const rows = this.db.prepare(`SELECT record FROM sessions ${where} ORDER BY created_at, id`).all(...params) as {
      record: string;
    }[];
    return rows.map((row) => JSON.parse(row.record) as SessionRecord);
  }

  appendAudit(entry: AuditAppend): AuditRecord {
    return this.db.transaction((): AuditRecord => {
      const head = this.auditHead(entry.sessionId);
      const unsigned = {
        sessionId: entry.sessionId,
        seq: head.seq + 1,
        at: new Date().toISOString(),
        type: entry.type,
        data: entry.data,
        prevHash: head.hash,
      };
      const record: AuditRecord = { ...unsigned, hash: hashRecord(unsigned) };
      this.db
        .prepare(
          'INSERT INTO audit_records (session_id, seq, at, type, data, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)',
        )
        .run(record.sessionId, record.seq, record.at, record.type, JSON.stringify(record.data), record.prevHash, record.hash);
      this.db
        .prepare(
          'INSERT INTO audit_heads (session_id, seq, hash) VALUES (?, ?, ?) ON CONFLICT(session_id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash',
        )
        .run(record.sessionId, record.seq, record.hash);
      return record;
    })();
  }

  listAudit(sessionId: string, options: { afterSeq?: number; limit?: number; types?: string[] } = {}): AuditRecord[] {
    const params: unknown[] = [sessionId, options.afterSeq ?? 0];
    let typeClause = '';
    if (options.types && options.types.length > 0) {
      typeClause = `AND type IN (${options.types.map(() => '?').join(',')})`;
      params.push(...options.types);
    }
    params.push(options.limit ?? -1);
    const rows = this.db
      .prepare(`SELECT * FROM audit_records WHERE session_id = ? AND seq > ? ${typeClause} ORDER BY seq LIMIT ?`)
      .all(...params) as AuditRow[];
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

  auditHead(sessionId: string): { seq: number; hash: string } {
    const row = this.db.prepare('SELECT seq, hash FROM audit_heads WHERE session_id = ?').get(sessionId) as
      | { seq: number; hash: string }
      | undefined;
    return row ?? { seq: 0, hash: GENESIS_HASH };
  }

  insertApproval(approval: ApprovalRecord): void {
    this.db
      .prepare('INSERT INTO approvals (id, session_id, state, created_at, record) VALUES (?, ?, ?, ?, ?)')
      .run(approval.id, approval.sessionId, approval.state, approval.createdAt, JSON.stringify(approval));
  }

  getApproval(id: string): ApprovalRecord | undefined {
    const row = this.db.prepare('SELECT record FROM approvals WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as ApprovalRecord) : undefined;
  }

  transitionApproval(id: string, from: ApprovalState, next: ApprovalRecord): boolean {
    const result = this.db
      .prepare('UPDATE approvals SET state = ?, record = ? WHERE id = ? AND state = ?')
      .run(next.state, JSON.stringify(next), id, from);
    return result.changes === 1;
  }

  listApprovals(query: { sessionId?: string; states?: ApprovalState[] } = {}): ApprovalRecord[] {
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
    const rows = this.db.prepare(`SELECT record FROM approvals ${where} ORDER BY created_at, id`).all(...params) as {
      record: string;
    }[];
    return rows.map((row) => JSON.parse(row.record) as ApprovalRecord);
  }

  insertSnapshot(snapshot: SnapshotRecord): void {
    this.db
      .prepare('INSERT INTO snapshots (id, session_id, created_at, record) VALUES (?, ?, ?, ?)')
      .run(snapshot.id, snapshot.sessionId, snapshot.createdAt, JSON.stringify(snapshot));
  }

  getSnapshot(id: string): SnapshotRecord | undefined {
    const row = this.db.prepare('SELECT record FROM snapshots WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as SnapshotRecord) : undefined;
  }

  updateSnapshot(snapshot: SnapshotRecord): void {
    this.db.prepare('UPDATE snapshots SET record = ? WHERE id = ?').run(JSON.stringify(snapshot), snapshot.id);
  }

  listSnapshots(query: { sessionId?: string } = {}): SnapshotRecord[] {
    const rows = (
      query.sessionId === undefined
        ? this.db.prepare('SELECT record FROM snapshots ORDER BY created_at, id').all()
        : this.db.prepare('SELECT record FROM snapshots WHERE session_id = ? ORDER BY created_at, id').all(query.sessionId)
    ) as { record: string }[];
    return rows.map((row) => JSON.parse(row.record) as SnapshotRecord);
  }

  close(): void {
    this.db.close();
  }
}
