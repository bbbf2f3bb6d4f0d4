/**
 * What an approver needs to know about a held call's session: its objective
 * (from the contract) and its recent calls (from the audit). Fetched once per
 * session and kept for the page's life.
 */
import { api, sessionPath } from './api-client';
import type { AuditRecord } from './api-types';

/** The contract a session runs under. */
export interface ContractInfo {
  sessionId: string;
  version: number;
  contract: Record<string, unknown>;
}

const contracts = new Map<string, Promise<ContractInfo>>();

/** The contract of a session (cached: a contract version never changes). */
export function contractOf(sessionId: string): Promise<ContractInfo> {
  let found = contracts.get(sessionId);
  if (!found) {
    found = api<ContractInfo>('GET', sessionPath(sessionId, '/contract'));
    found.catch(() => contracts.delete(sessionId));
    contracts.set(sessionId, found);
  }
  return found;
}

/** The objective the contract states, if any. */
export function objectiveOf(contract: Record<string, unknown>): string | null {
  const identity = contract['identity'] as { objective?: unknown; task?: unknown; agent?: unknown } | undefined;
  if (typeof identity?.objective === 'string') return identity.objective;
  if (typeof identity?.task === 'string') return identity.task;
  return null;
}

/** The last `count` audit records of a session. */
export async function recentAudit(sessionId: string, count: number): Promise<AuditRecord[]> {
  const answer = await api<{ records: AuditRecord[] }>('GET', sessionPath(sessionId, `/audit?tail=${count}`));
  return answer.records;
}

/** A one-line description of a call's arguments. */
export function describeCall(tool: string, args: Record<string, unknown>): string {
  if (tool === 'exec') {
    if (typeof args['command'] === 'string') return args['command'];
    if (Array.isArray(args['argv'])) return (args['argv'] as string[]).join(' ');
  }
  if (tool === 'net.connect') return `${String(args['host'])}:${String(args['port'])}`;
  if (typeof args['path'] === 'string') {
    const size = typeof args['contentBytes'] === 'number' ? ` (${args['contentBytes']} bytes)` : typeof args['content'] === 'string' ? ` (${(args['content'] as string).length} characters)` : '';
    return `${args['path']}${size}`;
  }
  if (tool === 'fork') return `count ${String(args['count'])}${args['snapshotId'] ? ` from ${String(args['snapshotId'])}` : ''}`;
  if (tool === 'snapshot') return args['name'] ? `name ${String(args['name'])}` : '';
  return JSON.stringify(args);
}
