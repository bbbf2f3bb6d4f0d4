import { POSTGRES_WEBHOOK_MIGRATION } from './postgres-webhooks.js';
import { POSTGRES_TENANCY_MIGRATION } from './postgres-tenancy.js';

/**
 * Migrations of the PostgreSQL store, applied in order at start under an
 * advisory lock (two servers starting at once apply each exactly once);
 * the index + 1 is the schema version recorded in `airlock_migrations`.
 * Records are `json` (kept as written: the audit chain hashes exact values)
 * and times are ISO text, as in the SQLite store.
 */
export const POSTGRES_MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    state TEXT NOT NULL,
    tenant TEXT NOT NULL,
    created_at TEXT NOT NULL,
    version INTEGER NOT NULL,
    record JSON NOT NULL
  );
  CREATE INDEX sessions_owner ON sessions(owner);
  CREATE INDEX sessions_state ON sessions(state);
  CREATE TABLE audit_records (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    data JSON NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
  );
  CREATE TABLE audit_heads (
    session_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
  );
  CREATE TABLE approvals (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record JSON NOT NULL
  );
  CREATE INDEX approvals_state ON approvals(state);
  CREATE INDEX approvals_session ON approvals(session_id);
  CREATE TABLE snapshots (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record JSON NOT NULL
  );
  CREATE INDEX snapshots_session ON snapshots(session_id);
  CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // v2: API tokens with tenants and roles, tenant settings (quotas).
  POSTGRES_TENANCY_MIGRATION,
  // v3: nodes sharing the store (issue 14): each registers itself and renews a heartbeat.
  `
  CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    record JSON NOT NULL
  );
  `,
  // v4: the webhook outbox (issue 24): endpoints, per-session scan marks, deliveries.
  POSTGRES_WEBHOOK_MIGRATION,
];
