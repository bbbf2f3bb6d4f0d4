/**
 * The metrics read off audit records: lifecycle operations timed from their
 * first record to their last, calls by decision and outcome, and labels that
 * stay bounded whatever a record carries (no ids, tools from the fixed list,
 * tenants only when asked for).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AirlockMetrics } from '../../../src/telemetry/airlock-metrics.js';
import type { AuditRecord } from '../../../src/audit/audit-record.js';
import type { Store } from '../../../src/core/store.js';
import type { SessionRecord } from '../../../src/core/session.js';

/** Only what the metrics read of a store. */
function storeOf(sessions: Partial<SessionRecord>[]): Store {
  return {
    listSessions: async () => sessions,
    listApprovals: async () => [],
    getSession: async (id: string) => sessions.find((session) => session.id === id),
  } as unknown as Store;
}

let seq = 0;
function record(sessionId: string, type: string, at: string, data: Record<string, unknown> = {}): AuditRecord {
  seq += 1;
  return { sessionId, seq, at, type, data, prevHash: '', hash: '' };
}

function sampleOf(text: string, line: string): number | undefined {
  const found = text.split('\n').find((candidate) => candidate.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('AirlockMetrics', () => {
  it('times a create from session.created to session.started, and a failed resume by its failure', async () => {
    const metrics = new AirlockMetrics({ store: storeOf([]) }, { processMetrics: false });
    metrics.recordAudit(record('ses_a', 'session.created', '2026-12-06T00:00:00.000Z', { tenant: 'acme' }));
    metrics.recordAudit(record('ses_a', 'session.started', '2026-12-06T00:00:00.300Z'));
    metrics.recordAudit(record('ses_a', 'session.resume-started', '2026-12-06T00:01:00.000Z'));
    metrics.recordAudit(record('ses_a', 'session.resume-failed', '2026-12-06T00:01:02.000Z'));
    const text = (await metrics.exposition()).body;
    assert.equal(sampleOf(text, 'airlock_session_operation_seconds_count{operation="create",outcome="ok"}'), 1);
    assert.equal(sampleOf(text, 'airlock_session_operation_seconds_sum{operation="create",outcome="ok"}'), 0.3);
    assert.equal(sampleOf(text, 'airlock_session_operation_seconds_count{operation="resume",outcome="failed"}'), 1);
    assert.equal(sampleOf(text, 'airlock_session_operation_seconds_bucket{le="1",operation="resume",outcome="failed"}'), 0);
  });

  it('counts decisions and outcomes per tool, and a tool name it does not know is "other", never the raw value', async () => {
    const metrics = new AirlockMetrics({ store: storeOf([]) }, { processMetrics: false });
    const call = (tool: string) => ({ 'gen_ai.tool.name': tool, 'gen_ai.tool.call.id': `call_${seq}` });
    metrics.recordAudit(record('ses_a', 'tool-call.authorized', '2026-12-06T00:00:00Z', call('exec')));
    metrics.recordAudit(record('ses_a', 'tool-call.completed', '2026-12-06T00:00:01Z', { ...call('exec'), timing: { queuedMs: 2, runMs: 40, totalMs: 50 } }));
    metrics.recordAudit(record('ses_a', 'tool-call.denied', '2026-12-06T00:00:02Z', call('exec')));
    metrics.recordAudit(record('ses_a', 'tool-call.held', '2026-12-06T00:00:03Z', call('files.write')));
    metrics.recordAudit(record('ses_a', 'tool-call.refused', '2026-12-06T00:00:04Z', { ...call('exec'), code: 'BUDGET_EXCEEDED' }));
    metrics.recordAudit(record('ses_a', 'tool-call.denied', '2026-12-06T00:00:05Z', call('ses_secret_id"} 1\nfake')));
    const text = (await metrics.exposition()).body;
    assert.equal(sampleOf(text, 'airlock_tool_call_decisions_total{tool="exec",decision="allow"}'), 1);
    assert.equal(sampleOf(text, 'airlock_tool_call_decisions_total{tool="exec",decision="deny"}'), 1);
    assert.equal(sampleOf(text, 'airlock_tool_call_decisions_total{tool="files.write",decision="ask"}'), 1);
    assert.equal(sampleOf(text, 'airlock_tool_call_decisions_total{tool="other",decision="deny"}'), 1);
    assert.equal(sampleOf(text, 'airlock_tool_calls_total{tool="exec",outcome="completed"}'), 1);
    assert.equal(sampleOf(text, 'airlock_budget_refusals_total{code="BUDGET_EXCEEDED"}'), 1);
    assert.equal(sampleOf(text, 'airlock_tool_call_seconds_sum{tool="exec",phase="run"}'), 0.04);
    assert.doesNotMatch(text, /ses_secret_id|ses_a\b|call_\d/);
  });

  it('labels with tenants only when asked, looking up a session it did not see created', async () => {
    const sessions = [{ id: 'ses_old', tenant: 'initech', state: 'running' as const, driver: 'gvisor' }];
    const plain = new AirlockMetrics({ store: storeOf(sessions) }, { processMetrics: false });
    plain.recordAudit(record('ses_old', 'tool-call.authorized', '2026-12-06T00:00:00Z', { 'gen_ai.tool.name': 'exec' }));
    const plainText = (await plain.exposition()).body;
    assert.doesNotMatch(plainText, /initech/);
    assert.equal(sampleOf(plainText, 'airlock_sessions{state="running",driver="gvisor"}'), 1);

    const labelled = new AirlockMetrics({ store: storeOf(sessions) }, { processMetrics: false, tenantLabels: true });
    labelled.recordAudit(record('ses_old', 'tool-call.authorized', '2026-12-06T00:00:00Z', { 'gen_ai.tool.name': 'exec' }));
    await new Promise((resolve) => setImmediate(resolve));
    const text = (await labelled.exposition()).body;
    assert.equal(sampleOf(text, 'airlock_tool_call_decisions_total{tool="exec",decision="allow",tenant="initech"}'), 1);
    assert.equal(sampleOf(text, 'airlock_sessions{state="running",driver="gvisor",tenant="initech"}'), 1);
  });

  it('times a decided approval, and ignores one still pending', async () => {
    const metrics = new AirlockMetrics({ store: storeOf([]) }, { processMetrics: false });
    const base = { id: 'apr_1', sessionId: 'ses_a', call: {}, policyIds: [], reason: '', expiresAt: '', decidedBy: null, decisionReason: null };
    metrics.recordApproval({ ...base, state: 'pending', createdAt: '2026-12-06T00:00:00Z', decidedAt: null } as never);
    metrics.recordApproval({ ...base, state: 'approved', createdAt: '2026-12-06T00:00:00Z', decidedAt: '2026-12-06T00:00:42Z' } as never);
    const text = (await metrics.exposition()).body;
    assert.equal(sampleOf(text, 'airlock_approval_decision_seconds_sum{decision="approved"}'), 42);
    assert.equal(sampleOf(text, 'airlock_approval_decision_seconds_count{decision="pending"}'), undefined);
  });

  it('reads the oldest approval waiting and the nodes by liveness at scrape time', async () => {
    const store = {
      listSessions: async () => [],
      listApprovals: async () => [{ createdAt: new Date(Date.now() - 90_000).toISOString() }, { createdAt: new Date(Date.now() - 5_000).toISOString() }],
      listNodes: async () => [
        { state: 'active', heartbeatAt: new Date().toISOString() },
        { state: 'active', heartbeatAt: new Date(Date.now() - 60_000).toISOString() },
      ],
    } as unknown as Store;
    const standalone = new AirlockMetrics({ store }, { processMetrics: false });
    const alone = (await standalone.exposition()).body;
    assert.ok((sampleOf(alone, 'airlock_approval_oldest_pending_seconds') ?? 0) >= 89);
    assert.doesNotMatch(alone, /^airlock_cluster_nodes\{/m, 'no node figures outside a cluster');
    const clustered = new AirlockMetrics({ store, nodeLeaseMs: () => 15_000 }, { processMetrics: false });
    const text = (await clustered.exposition()).body;
    assert.equal(sampleOf(text, 'airlock_cluster_nodes{liveness="active"}'), 1);
    assert.equal(sampleOf(text, 'airlock_cluster_nodes{liveness="lost"}'), 1);
    assert.equal(sampleOf(text, 'airlock_cluster_nodes{liveness="draining"}'), 0);
  });
});
