/** The webhook outbox in the PostgreSQL store: endpoints, scan marks and deliveries, inside a transaction. */
import type { WebhookStore } from '../../core/store.js';
import type { WebhookDeliveryRecord, WebhookEndpointRecord } from '../../core/webhook.js';
import type { Queryable } from './postgres-reads.js';

/** The tables of the webhook outbox (migration v4). */
export const POSTGRES_WEBHOOK_MIGRATION = `
  CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    record JSON NOT NULL
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
    record JSON NOT NULL,
    UNIQUE (endpoint_id, session_id, seq)
  );
  CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(state, next_attempt_at);
  `;

/** Webhook outbox over a transaction's client. */
export class PostgresWebhooks implements WebhookStore {
  constructor(private readonly db: Queryable) {}

  async insertEndpoint(endpoint: WebhookEndpointRecord): Promise<void> {
    await this.db.query('INSERT INTO webhook_endpoints (id, created_at, record) VALUES ($1, $2, $3::json)', [
      endpoint.id,
      endpoint.createdAt,
      JSON.stringify(endpoint),
    ]);
  }

  async updateEndpoint(endpoint: WebhookEndpointRecord): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE webhook_endpoints SET record = $1::json WHERE id = $2', [JSON.stringify(endpoint), endpoint.id]);
    return rowCount === 1;
  }

  async deleteEndpoint(id: string): Promise<boolean> {
    await this.db.query('DELETE FROM webhook_deliveries WHERE endpoint_id = $1', [id]);
    const { rowCount } = await this.db.query('DELETE FROM webhook_endpoints WHERE id = $1', [id]);
    return rowCount === 1;
  }

  async getEndpoint(id: string): Promise<WebhookEndpointRecord | undefined> {
    const { rows } = await this.db.query<{ record: WebhookEndpointRecord }>('SELECT record FROM webhook_endpoints WHERE id = $1', [id]);
    return rows[0]?.record;
  }

  async listEndpoints(): Promise<WebhookEndpointRecord[]> {
    const { rows } = await this.db.query<{ record: WebhookEndpointRecord }>('SELECT record FROM webhook_endpoints ORDER BY created_at, id');
    return rows.map((row) => row.record);
  }

  async scanMark(sessionId: string): Promise<number> {
    const { rows } = await this.db.query<{ seq: number }>('SELECT seq FROM webhook_scan_marks WHERE session_id = $1', [sessionId]);
    return rows[0]?.seq ?? 0;
  }

  async advanceScanMark(sessionId: string, seq: number): Promise<void> {
    await this.db.query(
      'INSERT INTO webhook_scan_marks (session_id, seq) VALUES ($1, $2) ON CONFLICT (session_id) DO UPDATE SET seq = greatest(webhook_scan_marks.seq, excluded.seq)',
      [sessionId, seq],
    );
  }

  async insertDelivery(delivery: WebhookDeliveryRecord): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'INSERT INTO webhook_deliveries (id, endpoint_id, session_id, seq, state, next_attempt_at, lease_owner, lease_until, record) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::json) ON CONFLICT DO NOTHING',
      [
        delivery.id,
        delivery.endpointId,
        delivery.sessionId,
        delivery.seq,
        delivery.state,
        delivery.nextAttemptAt,
        delivery.leaseOwner,
        delivery.leaseUntil,
        JSON.stringify(delivery),
      ],
    );
    return rowCount === 1;
  }

  async getDelivery(id: string): Promise<WebhookDeliveryRecord | undefined> {
    const { rows } = await this.db.query<{ record: WebhookDeliveryRecord }>('SELECT record FROM webhook_deliveries WHERE id = $1', [id]);
    return rows[0]?.record;
  }

  async listDueDeliveries(now: string, limit: number): Promise<WebhookDeliveryRecord[]> {
    const { rows } = await this.db.query<{ record: WebhookDeliveryRecord }>(
      `SELECT d.record FROM webhook_deliveries d
       WHERE d.state = 'pending' AND d.next_attempt_at <= $1 AND d.lease_until <= $1
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.endpoint_id = d.endpoint_id AND e.session_id = d.session_id AND e.state = 'pending' AND e.seq < d.seq)
       ORDER BY d.next_attempt_at, d.session_id, d.seq LIMIT $2`,
      [now, limit],
    );
    return rows.map((row) => row.record);
  }

  async claimDelivery(id: string, owner: string, now: string, leaseUntil: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2,
         record = (record::jsonb || jsonb_build_object('leaseOwner', $1::text, 'leaseUntil', $2::text))::json
       WHERE id = $3 AND state = 'pending' AND lease_until <= $4`,
      [owner, leaseUntil, id, now],
    );
    return rowCount === 1;
  }

  async finishAttempt(delivery: WebhookDeliveryRecord, heldBy: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE webhook_deliveries SET state = $1, next_attempt_at = $2, lease_owner = $3, lease_until = $4, record = $5::json WHERE id = $6 AND lease_owner = $7',
      [delivery.state, delivery.nextAttemptAt, delivery.leaseOwner, delivery.leaseUntil, JSON.stringify(delivery), delivery.id, heldBy],
    );
    return rowCount === 1;
  }

  async countDeliveries(endpointId: string): Promise<Record<string, number>> {
    const { rows } = await this.db.query<{ state: string; n: string }>(
      'SELECT state, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1 GROUP BY state',
      [endpointId],
    );
    return Object.fromEntries(rows.map((row) => [row.state, Number(row.n)]));
  }
}
