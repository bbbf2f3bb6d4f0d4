import { TENANCY_MIGRATION } from './sqlite-tenancy.js';
import { WEBHOOK_MIGRATION } from './sqlite-webhooks.js';

/** Migrations of the SQLite store, applied in order; the index + 1 is the schema version. */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    tenant TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
  );
  CREATE INDEX sessions_state ON sessions(state);
  CREATE TABLE audit_records (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at TEXT NOT NULL,
    type TEXT NOT NULL,
    data TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
  ) WITHOUT ROWID;
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
    record TEXT NOT NULL
  );
  CREATE INDEX approvals_state ON approvals(state);
  CREATE TABLE snapshots (
    id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    record TEXT NOT NULL
  );
  CREATE INDEX snapshots_session ON snapshots(session_id);
  `,
  // v2: compare-and-set versions, owners (the server that manages a session), settings.
  `
  ALTER TABLE sessions ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT '';
  CREATE INDEX sessions_owner ON sessions(owner);
  CREATE INDEX approvals_session ON approvals(session_id);
  CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );
  `,
  // v3: API tokens with tenants and roles, tenant settings (quotas).
  TENANCY_MIGRATION,
  // v4: nodes sharing the store (issue 14): each registers itself and renews a heartbeat.
  `
  CREATE TABLE nodes (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL,
    record TEXT NOT NULL
  );
  `,
  // v5: the webhook outbox (issue 24): endpoints, per-session scan marks, deliveries.
  WEBHOOK_MIGRATION,
];
