/**
 * Tracing over a real listening server (fake driver, real SQLite) into a
 * real OTLP/HTTP collector on loopback: the OpenTelemetry SDK's exporter
 * posts JSON to /v1/traces, and an allowed, a denied and an approved call,
 * each sent with a `traceparent`, arrive as `execute_tool exec` spans in the
 * caller's trace with an `apply_guardrail` child carrying the decision.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer, type RunningServer } from '../../../src/server.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';
import { DirectoryDisks, StaticImages } from '../../support/core-fixture.js';

const TOKEN = 'otel-http-test-token-0123456789abcdef';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CONTRACT = {
  version: 1,
  identity: { tenant: 'acme', objective: 'trace the calls' },
  policies: [
    'permit(principal, action, resource);',
    '@id("no-rm") forbid(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("rm") };',
    '@id("approve-tar") @approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
  ],
};

/** A span as OTLP/HTTP JSON carries it. */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: { key: string; value: Record<string, unknown> }[];
  status?: { code?: number; message?: string };
}

function attribute(span: OtlpSpan, key: string): unknown {
  const value = span.attributes.find((entry) => entry.key === key)?.value;
  if (!value) return undefined;
  if ('arrayValue' in value) return ((value['arrayValue'] as { values?: { stringValue?: string }[] }).values ?? []).map((item) => item.stringValue);
  return Object.values(value)[0];
}

describe('tracing into an OTLP collector (real server, fake driver)', () => {
  let root: string;
  let collector: Server;
  let server: RunningServer;
  const spans: OtlpSpan[] = [];
  let sessionId = '';
  const serviceNames: unknown[] = [];
  const bearer = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
  const saved = { delay: process.env['OTEL_BSP_SCHEDULE_DELAY'], service: process.env['OTEL_SERVICE_NAME'] };

  before(async () => {
    root = mkdtempSync(join(tmpdir(), 'airlock-otel-'));
    collector = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        if (request.method !== 'POST' || request.url !== '/v1/traces' || !/json/.test(request.headers['content-type'] ?? '')) {
          response.writeHead(404).end();
          return;
        }
        const payload = JSON.parse(body) as { resourceSpans: { resource: { attributes: OtlpSpan['attributes'] }; scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const resource of payload.resourceSpans) {
          serviceNames.push(resource.resource.attributes.find((entry) => entry.key === 'service.name')?.value['stringValue']);
          for (const scope of resource.scopeSpans) spans.push(...scope.spans);
        }
        response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const address = collector.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    // The standard variables configure the SDK: batches go out quickly, under this service name.
    process.env['OTEL_BSP_SCHEDULE_DELAY'] = '50';
    process.env['OTEL_SERVICE_NAME'] = 'airlock-under-test';
    const consoleDir = join(root, 'console');
    mkdirSync(consoleDir, { recursive: true });
    writeFileSync(join(consoleDir, 'index.html'), '<!doctype html><title>console</title>');
    server = await startServer({
      dataDir: join(root, 'data'),
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      driver: new FakeDriver(),
      disks: new DirectoryDisks(join(root, 'disks')),
      images: new StaticImages(),
      consoleDir,
      otlpEndpoint: `http://127.0.0.1:${port}/v1/traces`,
    });
  });

  after(async () => {
    await server?.close();
    await new Promise<void>((resolve) => collector.close(() => resolve()));
    rmSync(root, { recursive: true, force: true });
    for (const [name, value] of [
      ['OTEL_BSP_SCHEDULE_DELAY', saved.delay],
      ['OTEL_SERVICE_NAME', saved.service],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  const exec = async (sessionId: string, argv: string[], parentSpanId: string, extra: Record<string, unknown> = {}) => {
    const response = await fetch(`${server.url}/v1/sessions/${sessionId}/exec`, {
      method: 'POST',
      headers: { ...bearer, traceparent: `00-${TRACE_ID}-${parentSpanId}-01` },
      body: JSON.stringify({ argv, ...extra }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  /** The execute_tool span sent under `parentSpanId`, and its apply_guardrail child, once both arrived. */
  const spansUnder = async (parentSpanId: string): Promise<{ call: OtlpSpan; guard: OtlpSpan }> => {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const call = spans.find((span) => span.parentSpanId === parentSpanId);
      const guard = call && spans.find((span) => span.parentSpanId === call.spanId);
      if (call && guard) return { call, guard };
      if (Date.now() > deadline)
        assert.fail(`no execute_tool span with its guardrail under ${parentSpanId}; received ${JSON.stringify(spans.map((span) => span.name))}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  it('exports allowed, denied and approved calls with their decisions, in the caller trace', async () => {
    const created = await fetch(`${server.url}/v1/sessions`, { method: 'POST', headers: bearer, body: JSON.stringify({ contract: CONTRACT }) });
    assert.equal(created.status, 201);
    sessionId = ((await created.json()) as { id: string }).id;

    const allowed = await exec(sessionId, ['echo', 'hello'], '00f067aa0ba90001');
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
    const denied = await exec(sessionId, ['rm', '-rf', '/workspace'], '00f067aa0ba90002');
    assert.equal(denied.status, 403, JSON.stringify(denied.body));

    // Held: a person approves it through the API while the call waits.
    const waiting = exec(sessionId, ['tar', 'cf', '/tmp/w.tar', '/workspace'], '00f067aa0ba90003', { approvalWaitSeconds: 60 });
    const deadline = Date.now() + 15_000;
    let approvalId: string | undefined;
    while (!approvalId) {
      const listed = (await (await fetch(`${server.url}/v1/approvals?sessionId=${sessionId}`, { headers: bearer })).json()) as {
        approvals?: { id: string; state: string }[];
      };
      approvalId = listed.approvals?.find((approval) => approval.state === 'pending')?.id;
      if (!approvalId && Date.now() > deadline) assert.fail('the held call asked for no approval');
      if (!approvalId) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const decided = await fetch(`${server.url}/v1/approvals/${approvalId}/approve`, { method: 'POST', headers: bearer, body: '{}' });
    assert.equal(decided.status, 200);
    const approved = await waiting;
    assert.equal(approved.status, 200, JSON.stringify(approved.body));

    const allow = await spansUnder('00f067aa0ba90001');
    assert.equal(allow.call.name, 'execute_tool exec');
    assert.equal(allow.call.traceId, TRACE_ID);
    assert.equal(allow.call.kind, 1, 'INTERNAL, per the GenAI conventions for execute_tool');
    assert.equal(attribute(allow.call, 'gen_ai.operation.name'), 'execute_tool');
    assert.equal(attribute(allow.call, 'gen_ai.tool.name'), 'exec');
    assert.equal(attribute(allow.call, 'airlock.session.id'), sessionId);
    assert.equal(allow.guard.name, 'apply_guardrail airlock');
    assert.equal(allow.guard.traceId, TRACE_ID);
    assert.equal(attribute(allow.guard, 'gen_ai.operation.name'), 'apply_guardrail');
    assert.equal(attribute(allow.guard, 'gen_ai.security.decision.type'), 'allow');
    assert.ok(BigInt(allow.call.startTimeUnixNano) <= BigInt(allow.guard.startTimeUnixNano));
    assert.ok(BigInt(allow.guard.endTimeUnixNano) <= BigInt(allow.call.endTimeUnixNano));

    const deny = await spansUnder('00f067aa0ba90002');
    assert.equal(deny.call.status?.code, 2, 'a refused call is an error span');
    assert.equal(attribute(deny.call, 'error.type'), 'POLICY_DENIED');
    assert.equal(attribute(deny.guard, 'gen_ai.security.decision.type'), 'deny');
    assert.equal(attribute(deny.guard, 'gen_ai.security.policy.id'), 'no-rm');
    assert.equal(typeof attribute(deny.guard, 'gen_ai.security.decision.reason'), 'string');

    const ask = await spansUnder('00f067aa0ba90003');
    assert.equal(attribute(ask.guard, 'gen_ai.security.decision.type'), 'allow');
    assert.equal(attribute(ask.guard, 'airlock.policy.decision'), 'ask');
    assert.equal(attribute(ask.guard, 'gen_ai.security.policy.id'), 'approve-tar');
    assert.equal(attribute(ask.guard, 'airlock.approval.id'), approvalId);
    assert.equal(attribute(ask.guard, 'airlock.approval.decided_by'), 'token:admin', 'the approver is who authenticated');
    assert.match(String(attribute(ask.guard, 'airlock.approval.wait_ms')), /^\d+$/);
    assert.ok(serviceNames.includes('airlock-under-test'), 'OTEL_SERVICE_NAME names the service');
    // Lifecycle operations are spans of their own.
    const lifecycleDeadline = Date.now() + 15_000;
    while (!spans.some((span) => span.name === 'create session' && attribute(span, 'airlock.session.id') === sessionId)) {
      if (Date.now() > lifecycleDeadline) assert.fail(`no create session span; received ${JSON.stringify(spans.map((span) => span.name))}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });

  it('spans an MCP tools/call in the trace the client sends in params._meta.traceparent', async () => {
    assert.ok(sessionId, 'the first case made the session');
    const transport = new StreamableHTTPClientTransport(new URL(`${server.url}/v1/sessions/${sessionId}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
    });
    const client = new Client({ name: 'airlock-otel-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      await client.callTool({ name: 'bash', arguments: { command: 'echo traced' }, _meta: { traceparent: `00-${TRACE_ID}-00f067aa0ba90004-01` } });
    } finally {
      await client.close();
    }
    // The MCP server span (SERVER, by the MCP conventions) under the client's, and the call's execute_tool under it.
    const mcp = await spansUnder('00f067aa0ba90004');
    assert.equal(mcp.call.name, 'tools/call bash');
    assert.equal(mcp.call.kind, 2);
    assert.equal(mcp.call.traceId, TRACE_ID);
    assert.equal(attribute(mcp.call, 'mcp.method.name'), 'tools/call');
    assert.equal(attribute(mcp.call, 'gen_ai.operation.name'), 'execute_tool');
    assert.equal(mcp.guard.name, 'execute_tool exec');
    const guard = spans.find((span) => span.parentSpanId === mcp.guard.spanId);
    assert.equal(guard?.name, 'apply_guardrail airlock');
    assert.equal(guard && attribute(guard, 'gen_ai.security.decision.type'), 'allow');
  });
});
