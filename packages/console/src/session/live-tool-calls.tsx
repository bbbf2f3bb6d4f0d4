/**
 * Tool calls of a session as they happen: each call's audit records folded
 * into one row (received → authorized / held / denied → started → completed
 * or failed), updated live from the event stream.
 */
import type { StreamedAuditRecord } from '../api-types';
import { describeCall } from '../session-context';
import { formatInstant, truncate } from '../format';

/** One call and where it is. */
interface CallRow {
  callId: string;
  tool: string;
  args: Record<string, unknown>;
  at: string;
  stage: string;
  detail: string | null;
}

const STAGES: Record<string, string> = {
  'tool-call.authorized': 'authorized',
  'tool-call.decided': 'authorized',
  'tool-call.held': 'held',
  'tool-call.denied': 'denied',
  'tool-call.rejected': 'rejected',
  'tool-call.refused': 'refused',
  'tool-call.started': 'running',
  'tool-call.completed': 'completed',
  'tool-call.failed': 'failed',
  'approval.granted': 'approved',
  'approval.denied': 'denied by a person',
  'approval.expired': 'expired',
};

/** Folds audit records into calls, newest first. */
export function foldCalls(records: StreamedAuditRecord[]): CallRow[] {
  const calls = new Map<string, CallRow>();
  for (const record of records) {
    const callId = record.data['gen_ai.tool.call.id'];
    const stage = STAGES[record.type];
    if (typeof callId !== 'string' || !stage) continue;
    const existing = calls.get(callId);
    const tool = String(record.data['gen_ai.tool.name'] ?? existing?.tool ?? '?');
    const detail =
      record.type === 'tool-call.completed' && typeof record.data['exitCode'] === 'number'
        ? `exit ${record.data['exitCode']}`
        : typeof record.data['reason'] === 'string' && record.data['reason'] !== ''
          ? String(record.data['reason'])
          : typeof record.data['message'] === 'string'
            ? String(record.data['message'])
            : (existing?.detail ?? null);
    calls.set(callId, {
      callId,
      tool,
      args: (record.data['arguments'] as Record<string, unknown> | undefined) ?? existing?.args ?? {},
      at: existing?.at ?? record.at,
      stage,
      detail,
    });
  }
  return [...calls.values()].reverse();
}

/** The live calls panel. */
export function LiveToolCalls({ records }: { records: StreamedAuditRecord[] }) {
  const calls = foldCalls(records).slice(0, 30);
  if (calls.length === 0) return <p class="muted" data-testid="tool-calls">No tool calls yet. They appear here as the agent makes them.</p>;
  return (
    <ul class="calls" data-testid="tool-calls">
      {calls.map((call) => (
        <li data-call-id={call.callId} data-stage={call.stage}>
          <span class={`badge stage-${call.stage.split(' ')[0]}`}>{call.stage}</span> <code>{call.tool}</code>{' '}
          <span class="mono small">{truncate(describeCall(call.tool, call.args), 120)}</span>
          <span class="muted small"> · {formatInstant(call.at)}</span>
          {call.detail ? <div class="muted small">{truncate(call.detail, 200)}</div> : null}
        </li>
      ))}
    </ul>
  );
}
