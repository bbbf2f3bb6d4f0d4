/** The webhook outbox in the SQLite store: endpoints, scan marks and deliveries, all inside a transaction. */
import type Database from 'better-sqlite3';
import type { WebhookStore } from '../../core/store.js';
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from '../../core/webhook.js';

/** The tables of the webhook outbox (migration v5). */
export const WEBHOOK_MIGRATION = `
  CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
  );
  CREATE TABLE webhook_scan_marks (
    session_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL
  );
  CREATE TABLE webhook_deliveries (
    id TEXT PRIMARY KEY,
    endpoint_id TEXT NOT NULL,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    next_attempt_at TEXT NOT NULL,
    lease_owner TEXT NOT NULL,
    lease_until TEXT NOT NULL,
    record TEXT NOT NULL,
    UNIQUE (endpoint_id, session_id, seq)
  );
  CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(state, next_attempt_at);
  `;

type Prepare = (sql: string) => Database.Statement;
type Run = (sql: string, ...params: unknown[]) => Database.RunResult;

/** Webhook outbox over the writer connection inside BEGIN IMMEDIATE. */
export class SqliteWebhooks implements WebhookStore {
  constructor(
    private readonly statement: Prepare,
    private readonly run: Run,
  ) {}

  async insertEndpoint(endpoint: WebhookEndpointRecord): Promise<void> {
    this.run('INSERT INTO webhook_endpoints (id, created_at, record) VALUES (?, ?, ?)', endpoint.id, endpoint.createdAt, JSON.stringify(endpoint));
  }

  async updateEndpoint(endpoint: WebhookEndpointRecord): Promise<boolean> {
    return this.run('UPDATE webhook_endpoints SET record = ? WHERE id = ?', JSON.stringify(endpoint), endpoint.id).changes === 1;
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    this.run('DELETE FROM webhook_deliveries WHERE endpoint_id = ?', id);
    return this.run('DELETE FROM webhook_endpoints WHERE id = ?', id).changes === 1;
  }

  async getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined> {
    const row = this.statement('SELECT record FROM webhook_endpoints WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as WebhookEndpointRecord) : undefined;
  }

  async listEndpoints(): Promise<WebhookEndpointRecord[]> {
    const rows = this.statement('SELECT record FROM webhook_endpoints ORDER BY created_at, id').all() as { record: string }[];
    return rows.map((row) => JSON.parse(row.record) as WebhookEndpointRecord);
  }

  async scanMark(sessionId: string): Promise<number> {
    const row = this.statement('SELECT seq FROM webhook_scan_marks WHERE session_id = ?').get(sessionId) as { seq: number } | undefined;
    return row?.seq ?? 0;
  }

  async advanceScanMark(sessionId: string, seq: number): Promise<void> {
    this.run(
      'INSERT INTO webhook_scan_marks (session_id, seq) VALUES (?, ?) ON CONFLICT(session_id) DO UPDATE SET seq = max(seq, excluded.seq)',
      sessionId,
      seq,
    );
  }

  async insertDelivery(delivery: WebhookDeliveryRecord): Promise<boolean> {
    const result = this.run(
      'INSERT INTO webhook_deliveries (id, endpoint_id, session_id, seq, state, next_attempt_at, lease_owner, lease_until, record) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING',
      delivery.id,
      delivery.endpointId,
      delivery.sessionId,
      delivery.seq,
      delivery.state,
      delivery.nextAttemptAt,
      delivery.leaseOwner,
      delivery.leaseUntil,
      JSON.stringify(delivery),
    );
    return result.changes === 1;
  }

  async getDelivery(id: string): Promise<WebhookDeliveryRecord | undefined> {
    const row = this.statement('SELECT record FROM webhook_deliveries WHERE id = ?').get(id) as { record: string } | undefined;
    return row ? (JSON.parse(row.record) as WebhookDeliveryRecord) : undefined;
  }

  async listDueDeliveries(now: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    const rows = this.statement(
      `SELECT d.record FROM webhook_deliveries d
       WHERE d.state = 'pending' AND d.next_attempt_at <= ? AND d.lease_until <= ?
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = d.endpoint_id AND e.session_id = d.session_id AND e.state = 'pending' AND e.seq < d.seq)
       ORDER BY d.next_attempt_at, d.session_id, d.seq LIMIT ?`,
    ).all(now, now, limit) as { record: string }[];
    return rows.map((row) => JSON.parse(row.record) as WebhookDeliveryRecord);
  }

  async claimDelivery(id: string, owner: string, now: string, leaseUntil: string): Promise<boolean> {
    const current = await this.getDelivery(id);
    if (!current) return false;
    const claimed = { ...current, leaseOwner: owner, leaseUntil };
    return (
      this.run(
        "UPDATE webhook_deliveries SET lease_owner = ?, lease_until = ?, record = ? WHERE id = ? AND state = 'pending' AND lease_until <= ?",
        owner,
        leaseUntil,
        JSON.stringify(claimed),
        id,
        now,
      ).changes === 1
    );
  }

  async finishAttempt(delivery: WebhookDeliveryRecord, heldBy: string): Promise<boolean> {
    return (
      this.run(
        'UPDATE webhook_deliveries SET state = ?, next_attempt_at = ?, lease_owner = ?, lease_until = ?, record = ? WHERE id = ? AND lease_owner = ?',
        delivery.state,
        delivery.nextAttemptAt,
        delivery.leaseOwner,
        delivery.leaseUntil,
        JSON.stringify(delivery),
        delivery.id,
        heldBy,
      ).changes === 1
    );
  }

  async countDeliveries(endpointId: string): Promise<Record<string, number>> {
    const rows = this.statement('SELECT state, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? GROUP BY state').all(endpointId) as {
      state: string;
      n: number;
    }[];
    return Object.fromEntries(rows.map((row) => [row.state, Number(row.n)]));
  }
}
