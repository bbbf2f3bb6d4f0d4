/**
 * A node as both stores keep it: the record as JSON, with the columns the
 * store changes on their own (state, heartbeat) taking precedence.
 */
import type { NodeRecord, NodeState } from '../core/cluster-node.js';

/** The columns a node is read from. */
export interface NodeRow {
  /** JSON text (SQLite) or an already decoded value (PostgreSQL json) */
  record: string | Record<string, unknown>;
  state: string;
  heartbeat_at: string;
}

/** The node a row holds. */
export function nodeFromRow(row: NodeRow): NodeRecord {
  const record = (typeof row.record === 'string' ? JSON.parse(row.record) : row.record) as NodeRecord;
  record.state = row.state as NodeState;
  record.heartbeatAt = row.heartbeat_at;
  return record;
}
