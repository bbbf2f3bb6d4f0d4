/** Webhook signing (Standard Webhooks 1.0, checked with the `standardwebhooks` package), the retry schedule, and what an event says. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, signWebhook, webhookBackoffMs } from '../../../src/telemetry/webhook-signature.js';
import { summarizeArguments, webhookEventOf } from '../../../src/telemetry/webhook-events.js';
import { webhookEventMatches } from '../../../src/core/webhook.js';
import type { AuditRecord } from '../../../src/audit/audit-record.js';

function record(type: string, data: Record<string, unknown>, seq = 3): AuditRecord {
  return { sessionId: 'ses_1', seq, at: '2026-01-01T00:00:00.000Z', type, data, prevHash: 'a', hash: 'b' } as AuditRecord;
}

describe('webhook signatures', () => {
  it('verify with the standardwebhooks library, and fail for another body or secret', () => {
    const secret = newWebhookSecret();
    assert.match(secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
    const body = JSON.stringify({ type: 'session.created', timestamp: new Date().toISOString(), data: { sessionId: 'ses_1' } });
    const headers = signWebhook(secret, 'msg_1', Math.floor(Date.now() / 1000), body);
    assert.match(headers['webhook-signature'] ?? '', /^v1,[A-Za-z0-9+/]+=*$/);
    assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
    assert.throws(() => new Webhook(secret).verify(`${body} `, headers));
    assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers));
  });
});

describe('webhook retries', () => {
  it('double from the first delay and stop at the cap', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 5].map((attempts) => webhookBackoffMs(attempts, 5_000, 3_600_000)),
      [5_000, 10_000, 20_000, 40_000, 80_000],
    );
    assert.equal(webhookBackoffMs(20, 5_000, 3_600_000), 3_600_000);
    assert.equal(webhookBackoffMs(10_000, 5_000, 3_600_000), 3_600_000);
  });
});

describe('webhook events', () => {
  it('say why a state changed and who asked', () => {
    assert.deepEqual(webhookEventOf(record('session.paused', { reason: 'idle' }), 'acme')?.data, {
      sessionId: 'ses_1',
      tenant: 'acme',
      seq: 3,
      state: 'paused',
      reason: 'idle',
      by: 'airlock',
    });
    assert.equal(webhookEventOf(record('session.suspended', { reason: 'manual' }), 'acme')?.data['reason'], 'api');
    assert.equal(webhookEventOf(record('session.suspended', { reason: 'manual', by: 'console:ops' }), 'acme')?.data['reason'], 'console');
    assert.equal(webhookEventOf(record('session.suspended', { reason: 'drain', by: 'airlock' }), 'acme')?.data['reason'], 'drain');
    assert.equal(webhookEventOf(record('session.terminated', { by: 'token:ops' }), 'acme')?.data['by'], 'token:ops');
    assert.equal(webhookEventOf(record('session.unpaused', { wokenBy: 'call' }), 'acme')?.type, 'session.resumed');
    assert.deepEqual(webhookEventOf(record('session.restarted', { by: 'ops' }), 'acme')?.data['by'], 'ops');
    assert.equal(webhookEventOf(record('session.node-lost', { node: 'n1' }), 'acme')?.data['reason'], 'node_lost');
    assert.equal(webhookEventOf(record('session.lease-taken', { reason: 'owner draining' }), 'acme')?.data['reason'], 'drain');
    assert.equal(webhookEventOf(record('tool-call.completed', {}), 'acme'), undefined);
    assert.deepEqual(webhookEventOf(record('takeover.started', { takeoverId: 'tko_1', by: 'token:ops', rows: 24 }), 'acme')?.data, {
      sessionId: 'ses_1',
      tenant: 'acme',
      seq: 3,
      takeoverId: 'tko_1',
      by: 'token:ops',
    });
    assert.equal(
      webhookEventOf(record('snapshot.created', { snapshotId: 'snap_1', name: 'prepared', reason: 'manual' }), 'acme')?.data['snapshotId'],
      'snap_1',
    );
    assert.equal(webhookEventOf(record('approval.expired', { approvalId: 'apr_1' }), 'acme')?.data['by'], 'airlock');
    assert.equal(webhookEventOf(record('session.forked', { parentSessionId: 'ses_0' }), 'acme')?.type, 'session.forked');
    assert.equal(webhookEventOf(record('session.failed', { operation: 'call', code: 'SANDBOX_DIED' }), 'acme')?.data['reason'], 'machine_died');
    assert.equal(webhookEventOf(record('session.failed', { operation: 'resume', code: 'X' }), 'acme')?.data['reason'], 'resume_failed');
    const settled = webhookEventOf(record('session.reconciled', { outcome: 'failed', interrupted: 'create' }), 'acme');
    assert.deepEqual([settled?.type, settled?.data['reason'], settled?.data['by']], ['session.failed', 'server_restart', 'airlock']);
  });

  it('summarize arguments without contents or environments', () => {
    const summary = summarizeArguments({ command: 'x'.repeat(500), path: '/a', content: 'secret file', env: { TOKEN: 'v' }, timeoutMs: 5 });
    assert.equal(summary['content'], '[withheld]');
    assert.equal(summary['env'], '[withheld]');
    assert.equal((summary['command'] as string).length, 201);
    assert.equal(summary['timeoutMs'], 5);
    assert.ok(!JSON.stringify(summary).includes('secret file'));
  });

  it('match patterns', () => {
    assert.ok(webhookEventMatches(['session.*'], 'session.created'));
    assert.ok(webhookEventMatches(['*'], 'approval.decided'));
    assert.ok(!webhookEventMatches(['session.*'], 'approval.decided'));
    assert.ok(!webhookEventMatches(['session.created'], 'session.createdx'));
  });
});
