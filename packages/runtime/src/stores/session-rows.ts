/**
 * A session as both stores keep it: the record as JSON, with the columns the
 * store itself decides on (version, owner) taking precedence over what the
 * JSON says, and defaults for records written before those fields existed.
 */
import type { SessionRecord } from '../core/session.js';

/** The columns a session is read from. */
export interface SessionRow {
  /** JSON text (SQLite) or an already decoded value (PostgreSQL json) */
  record: string | Record<string, unknown>;
  version: number | string;
  owner: string;
}

/** The session a row holds. */
export function sessionFromRow(row: SessionRow): SessionRecord {
  const record = (typeof row.record === 'string' ? JSON.parse(row.record) : row.record) as SessionRecord;
  record.version = Number(row.version);
  record.owner = row.owner;
  return record;
}
