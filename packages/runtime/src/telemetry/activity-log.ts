/**
 * Lifecycle events in the server's log: every session state change and every
 * approval, as its audit record or approval says it, with the fields an
 * operator needs to follow a session (never a contract, arguments or output:
 * those can carry what a log must not).
 */
import type { Activity } from '../api/activity-feed.js';
import type { JsonLog } from './json-log.js';

/** Fields of a session record that are safe and useful in a log line. */
const SESSION_FIELDS = ['operation', 'code', 'message', 'reason', 'mode', 'sandbox', 'image', 'tenant', 'by', 'node', 'generation'] as const;

/** Logs one activity when it is a lifecycle event (session state, snapshot, takeover, guard) or an approval. */
export function logActivity(log: JsonLog, activity: Activity): void {
  if (!log.enabled('info')) return;
  if (activity.kind === 'approval') {
    const { approval } = activity;
    log.write('info', `approval.${approval.state}`, {
      approvalId: approval.id,
      sessionId: approval.sessionId,
      tool: approval.call.tool,
      ...(approval.decidedBy === null ? {} : { decidedBy: approval.decidedBy }),
    });
    return;
  }
  const { record } = activity;
  const [noun] = record.type.split('.', 1);
  if (noun !== 'session' && noun !== 'snapshot' && noun !== 'takeover' && noun !== 'guard') return;
  const fields: Record<string, unknown> = { sessionId: record.sessionId, seq: record.seq };
  for (const key of SESSION_FIELDS) {
    const value = record.data[key];
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') fields[key] = value;
  }
  log.write(record.type.endsWith('failed') ? 'warn' : 'info', record.type, fields);
}
