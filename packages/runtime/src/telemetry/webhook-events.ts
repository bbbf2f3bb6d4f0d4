/**
 * What a webhook says about an audit record: the lifecycle events of issue
 * 24 (session state changes with their reason and who asked, approvals,
 * takeovers, snapshots), made from the committed audit records alone, so
 * that an event exists exactly when its record does. Payloads carry ids,
 * names and reasons, never a file's contents, an environment value or a
 * secret: an approval's arguments are summarized (strings cut short, keys
 * that hold contents or environments dropped).
 */
import type { AuditRecord } from '../audit/audit-record.js';
import type { ApprovalRecord } from '../core/approval.js';

/** The JSON body of a webhook (Standard Webhooks' `type`, `timestamp`, `data`). */
export interface WebhookEvent {
  type: string;
  timestamp: string;
  data: Record<string, unknown> & { sessionId: string; tenant: string; seq: number };
}

/** Every event type a webhook can carry. */
export const WEBHOOK_EVENT_TYPES: readonly string[] = [
  'session.created',
  'session.running',
  'session.paused',
  'session.suspended',
  'session.resumed',
  'session.failed',
  'session.degraded',
  'session.restarted',
  'session.terminated',
  'session.forked',
  'session.moved',
  'approval.requested',
  'approval.decided',
  'takeover.started',
  'takeover.ended',
  'snapshot.created',
];

/** Audit record type → event type and the state it leaves the session in. */
const SESSION_EVENTS: Record<string, { type: string; state?: string }> = {
  'session.created': { type: 'session.created', state: 'creating' },
  'session.started': { type: 'session.running', state: 'running' },
  'session.paused': { type: 'session.paused', state: 'paused' },
  'session.suspended': { type: 'session.suspended', state: 'suspended' },
  'session.unpaused': { type: 'session.resumed', state: 'running' },
  'session.resumed': { type: 'session.resumed', state: 'running' },
  'session.failed': { type: 'session.failed', state: 'failed' },
  'session.degraded': { type: 'session.degraded', state: 'degraded' },
  'session.restarted': { type: 'session.restarted', state: 'running' },
  'session.terminated': { type: 'session.terminated', state: 'terminated' },
  'session.forked': { type: 'session.forked', state: 'creating' },
  'session.node-lost': { type: 'session.moved' },
  'session.lease-taken': { type: 'session.moved' },
};

/** What a wake's `wokenBy` or a pause's `reason` says, in the webhook's vocabulary. */
const REASONS: Record<string, string> = {
  manual: 'api',
  idle: 'idle',
  drain: 'drain',
  call: 'call',
  port: 'port',
  'keep-awake': 'keep_awake',
  takeover: 'takeover',
  'owner draining': 'drain',
};

/** Keys of tool arguments that hold contents or environments: never in a payload. */
const WITHHELD_ARGUMENTS = new Set(['content', 'contents', 'data', 'env', 'environment', 'stdin', 'text', 'new_string', 'old_string', 'edits', 'secrets']);
const SUMMARY_CHARS = 200;

/** Audit record types that make an event (a tool call's records make none). */
const EVENT_SOURCES = new Set([
  ...Object.keys(SESSION_EVENTS),
  'session.reconciled',
  'approval.requested',
  'approval.granted',
  'approval.denied',
  'approval.expired',
  'takeover.started',
  'takeover.ended',
  'snapshot.created',
]);

/** Whether records of this type can make an event: the outbox spends nothing on the others. */
export function makesWebhookEvent(type: string): boolean {
  return EVENT_SOURCES.has(type);
}

/** The event an audit record stands for, or undefined when it stands for none. */
export function webhookEventOf(record: AuditRecord, tenant: string, approval?: ApprovalRecord): WebhookEvent | undefined {
  const data = record.data;
  const base = { sessionId: record.sessionId, tenant, seq: record.seq };
  const text = (key: string): string | undefined => (typeof data[key] === 'string' ? (data[key] as string) : undefined);
  const session = SESSION_EVENTS[record.type];
  if (session) {
    const { reason, by } = sessionReason(record);
    const extra: Record<string, unknown> = {};
    if (session.state) extra['state'] = session.state;
    for (const key of ['snapshotId', 'code', 'message', 'node', 'operation', 'parentSessionId', 'branchIndex'])
      if (data[key] !== undefined) extra[key] = data[key];
    return { type: session.type, timestamp: record.at, data: { ...base, ...extra, reason, by } };
  }
  if (record.type === 'session.reconciled') {
    // A restarted server found the session mid-operation and settled it.
    const outcome = text('outcome');
    const type =
      outcome === 'failed' ? 'session.failed' : outcome === 'running' ? 'session.running' : outcome === 'suspended' ? 'session.suspended' : undefined;
    if (!type || !outcome) return undefined;
    return {
      type,
      timestamp: record.at,
      data: { ...base, state: outcome, reason: 'server_restart', by: 'airlock', ...(data['code'] === undefined ? {} : { code: data['code'] }) },
    };
  }
  switch (record.type) {
    case 'approval.requested':
      return {
        type: 'approval.requested',
        timestamp: record.at,
        data: {
          ...base,
          approvalId: text('approvalId') ?? null,
          tool: text('gen_ai.tool.name') ?? null,
          arguments: approval && 'arguments' in approval.call ? summarizeArguments(approval.call.arguments) : {},
          policyIds: Array.isArray(data['policyIds']) ? data['policyIds'] : [],
          reason: text('reason') ?? null,
          expiresAt: approval?.expiresAt ?? null,
          link: `/sessions/${record.sessionId}`,
        },
      };
    case 'approval.granted':
    case 'approval.denied':
    case 'approval.expired':
      return {
        type: 'approval.decided',
        timestamp: record.at,
        data: {
          ...base,
          approvalId: text('approvalId') ?? null,
          decision: record.type.slice('approval.'.length),
          by: record.type === 'approval.expired' ? 'airlock' : (text('decidedBy') ?? null),
          reason: text('reason') ?? null,
        },
      };
    case 'takeover.started':
    case 'takeover.ended':
      return { type: record.type, timestamp: record.at, data: { ...base, takeoverId: text('takeoverId') ?? null, by: text('by') ?? null } };
    case 'snapshot.created':
      return {
        type: 'snapshot.created',
        timestamp: record.at,
        data: { ...base, snapshotId: text('snapshotId') ?? null, name: text('name') ?? null, reason: text('reason') ?? null },
      };
    default:
      return undefined;
  }
}

/** Why a session's state changed, and who asked (a token's name, `airlock` for the server's own doing, null when the record does not say). */
function sessionReason(record: AuditRecord): { reason: string; by: string | null } {
  const data = record.data;
  const said = (key: string): string | undefined => (typeof data[key] === 'string' ? (data[key] as string) : undefined);
  const by = said('by') ?? null;
  // A person in the web console acts through a console login; anyone else through a token.
  const asked = by?.startsWith('console:') ? 'console' : 'api';
  switch (record.type) {
    case 'session.paused':
    case 'session.suspended': {
      const stated = REASONS[said('reason') ?? ''] ?? said('reason') ?? 'api';
      const reason = stated === 'api' ? asked : stated;
      return { reason, by: by ?? (reason === 'api' || reason === 'console' ? null : 'airlock') };
    }
    case 'session.unpaused':
    case 'session.resumed':
      return { reason: REASONS[said('wokenBy') ?? ''] ?? said('wokenBy') ?? 'call', by };
    case 'session.failed':
      // A call that found its machine gone is a machine that died; otherwise the operation that failed.
      return {
        reason: said('reason') ?? (said('operation') && said('operation') !== 'call' ? `${said('operation')}_failed` : 'machine_died'),
        by: by ?? 'airlock',
      };
    case 'session.degraded':
      return { reason: 'agent_unresponsive', by: 'airlock' };
    case 'session.node-lost':
      return { reason: 'node_lost', by: 'airlock' };
    case 'session.lease-taken':
      return { reason: REASONS[said('reason') ?? ''] ?? 'node_lost', by: 'airlock' };
    case 'session.started':
      return { reason: said('reason') ?? 'api', by: by ?? 'airlock' };
    default:
      return { reason: said('reason') ?? asked, by };
  }
}

/** Top-level arguments of a call, strings cut to 200 characters, contents and environments left out. */
export function summarizeArguments(args: Record<string, unknown>): Record<string, unknown> {
  const summary: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    if (WITHHELD_ARGUMENTS.has(key)) {
      summary[key] = '[withheld]';
    } else if (typeof value === 'string') {
      summary[key] = value.length > SUMMARY_CHARS ? `${value.slice(0, SUMMARY_CHARS)}…` : value;
    } else if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
      summary[key] = value;
    } else if (Array.isArray(value) && value.every((item) => typeof item === 'string')) {
      summary[key] = (value as string[]).slice(0, 20).map((item) => (item.length > SUMMARY_CHARS ? `${item.slice(0, SUMMARY_CHARS)}…` : item));
    } else {
      summary[key] = '[omitted]';
    }
  }
  return summary;
}
