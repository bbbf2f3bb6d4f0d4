/**
 * Issue 24's tracing, end to end: a real `airlock serve` (gVisor), configured
 * by the standard OTEL_* variables only, exports to an OTLP/HTTP collector on
 * loopback; an allowed, a denied and an approved call sent with a
 * `traceparent` arrive as `execute_tool exec` spans in that trace, each with
 * an `apply_guardrail` child carrying the decision.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { TestInstallation, freePort } from '../support/test-installation.js';

const CONTRACT = JSON.parse(
  readFileSync(fileURLToPath(new URL('../../../../../examples/contracts/no-rm-approve-tar.json', import.meta.url)), 'utf8'),
) as unknown;
const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';

/** A span as OTLP/HTTP JSON carries it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes: { key: string; value: Record<string, unknown> }[];
}

function attribute(span: OtlpSpan, key: string): unknown {
  const value = span.attributes.find((entry) => entry.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
}

describe('tracing of a real airlock serve into an OTLP collector', () => {
  let collector: Server;
  let installation: TestInstallation;
  const spans: OtlpSpan[] = [];
  let headers: Record<string, string> = {};

  before(async () => {
    collector = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        if (request.method === 'POST' && request.url === '/v1/traces') {
          const payload = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
          for (const resource of payload.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => collector.listen(port, '127.0.0.1', resolve));
    installation = await TestInstallation.start({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_SERVICE_NAME: 'airlock-e2e', OTEL_BSP_SCHEDULE_DELAY: '200' },
    });
    headers = { authorization: `Bearer ${installation.token}`, 'content-type': 'application/json' };
  });
  after(async () => {
    await installation?.destroy();
    await new Promise<void>((resolve) => collector.close(() => resolve()));
  });

  const exec = async (sessionId: string, argv: string[], parentSpanId: string, extra: Record<string, unknown> = {}) => {
    const response = await fetch(`${installation.url}/v1/sessions/${sessionId}/exec`, {
      method: 'POST',
      headers: { ...headers, traceparent: `00-${TRACE_ID}-${parentSpanId}-01` },
      body: JSON.stringify({ argv, ...extra }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  const guardrailUnder = async (parentSpanId: string): Promise<{ call: OtlpSpan; guard: OtlpSpan }> => {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const call = spans.find((span) => span.parentSpanId === parentSpanId);
      const guard = call && spans.find((span) => span.parentSpanId === call.spanId);
      if (call && guard) return { call, guard };
      if (Date.now() > deadline)
        assert.fail(`no execute_tool span with its guardrail under ${parentSpanId}; received ${JSON.stringify(spans.map((span) => span.name))}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  };

  it('sees execute_tool with its apply_guardrail decision for an allowed, a denied and an approved call', async () => {
    const created = await fetch(`${installation.url}/v1/sessions`, { method: 'POST', headers, body: JSON.stringify({ contract: CONTRACT }) });
    assert.equal(created.status, 201);
    const sessionId = ((await created.json()) as { id: string }).id;
    try {
      const allowed = await exec(sessionId, ['ls', '/workspace'], '00f067aa0ba90011');
      assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
      const denied = await exec(sessionId, ['rm', '-rf', '/workspace'], '00f067aa0ba90012');
      assert.equal(denied.status, 403, JSON.stringify(denied.body));
      const waiting = exec(sessionId, ['tar', 'cf', '/tmp/w.tar', '/workspace'], '00f067aa0ba90013', { approvalWaitSeconds: 120 });
      const deadline = Date.now() + 30_000;
      let approvalId: string | undefined;
      while (!approvalId) {
        const listed = (await (await fetch(`${installation.url}/v1/approvals?sessionId=${sessionId}`, { headers })).json()) as {
          approvals?: { id: string; state: string }[];
        };
        approvalId = listed.approvals?.find((approval) => approval.state === 'pending')?.id;
        if (!approvalId && Date.now() > deadline) assert.fail('the held call asked for no approval');
        if (!approvalId) await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.equal((await fetch(`${installation.url}/v1/approvals/${approvalId}/approve`, { method: 'POST', headers, body: '{}' })).status, 200);
      const approved = await waiting;
      assert.equal(approved.status, 200, JSON.stringify(approved.body));

      const allow = await guardrailUnder('00f067aa0ba90011');
      assert.equal(allow.call.name, 'execute_tool exec');
      assert.equal(allow.call.traceId, TRACE_ID);
      assert.equal(allow.guard.name, 'apply_guardrail airlock');
      assert.equal(attribute(allow.guard, 'gen_ai.security.decision.type'), 'allow');
      const deny = await guardrailUnder('00f067aa0ba90012');
      assert.equal(attribute(deny.call, 'error.type'), 'POLICY_DENIED');
      assert.equal(attribute(deny.guard, 'gen_ai.security.decision.type'), 'deny');
      assert.equal(typeof attribute(deny.guard, 'gen_ai.security.policy.id'), 'string');
      const ask = await guardrailUnder('00f067aa0ba90013');
      assert.equal(attribute(ask.guard, 'gen_ai.security.decision.type'), 'allow');
      assert.equal(attribute(ask.guard, 'airlock.policy.decision'), 'ask');
      assert.equal(attribute(ask.guard, 'airlock.approval.id'), approvalId);
      assert.equal(typeof attribute(ask.guard, 'airlock.approval.decided_by'), 'string');
    } finally {
      await fetch(`${installation.url}/v1/sessions/${sessionId}`, { method: 'DELETE', headers: { authorization: headers['authorization'] ?? '' } });
    }
  });
});
