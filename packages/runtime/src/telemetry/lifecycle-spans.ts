/**
 * Lifecycle operations as spans: create, resume, suspend, restart, fork and
 * terminate, each from its first audit record to its last (the same records
 * and bounds as the `airlock_session_operation_seconds` histogram), named
 * `{operation} session`, in a trace of its own.
 */
import type { AuditRecord } from '../audit/audit-record.js';
import type { Tracer } from '../core/tracer.js';
import { OPERATION_ENDS, OPERATION_STARTS } from './airlock-metrics.js';

// Operations whose end never came (a crash in between) are forgotten past this many.
const MAX_OPEN_OPERATIONS = 10_000;

/** Turns committed lifecycle audit records into spans. */
export class LifecycleSpans {
  private readonly opened = new Map<string, number>();

  constructor(private readonly tracer: Tracer) {}

  /** Notes one committed audit record. Never throws: it runs on the feed's stack. */
  recordAudit(record: AuditRecord): void {
    const at = Date.parse(record.at);
    if (!Number.isFinite(at)) return;
    const started = OPERATION_STARTS[record.type];
    if (started !== undefined) {
      if (this.opened.size >= MAX_OPEN_OPERATIONS) this.opened.clear();
      this.opened.set(`${record.sessionId} ${started}`, at);
      return;
    }
    const failedOperation = record.type === 'session.failed' ? record.data['operation'] : undefined;
    const ended = typeof failedOperation === 'string' ? { operation: failedOperation, outcome: 'failed' as const } : OPERATION_ENDS[record.type];
    if (ended === undefined) return;
    const key = `${record.sessionId} ${ended.operation}`;
    const began = this.opened.get(key);
    if (began === undefined) return;
    this.opened.delete(key);
    const { code, message } = record.data;
    this.tracer.record({
      name: `${ended.operation} session`,
      kind: 'internal',
      startTimeMs: began,
      endTimeMs: Math.max(at, began),
      attributes: {
        'airlock.session.id': record.sessionId,
        'airlock.operation': ended.operation,
        'airlock.outcome': ended.outcome,
        ...(ended.outcome === 'failed' && typeof code === 'string' ? { 'error.type': code } : {}),
      },
      status: ended.outcome === 'failed' ? 'error' : 'ok',
      ...(ended.outcome === 'failed' && typeof message === 'string' ? { statusMessage: message } : {}),
    });
  }
}
