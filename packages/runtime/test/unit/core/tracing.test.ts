import { describe, it, afterEach, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { ToolPipeline } from '../../../src/core/tool-pipeline.js';
import { parseTraceparent, type ToolCallSpan } from '../../../src/core/tracer.js';
import { OtlpExporter } from '../../../src/telemetry/otlp-exporter.js';

describe('tracing of tool calls', () => {
  let fx: CoreFixture;
  let spans: ToolCallSpan[];
  let pipeline: ToolPipeline;
  beforeEach(() => {
    fx = coreFixture();
    spans = [];
    pipeline = new ToolPipeline({
      store: fx.store,
      audit: fx.audit,
      sessions: fx.sessions,
      authorizer: fx.authorizer,
      analyzeCommand: (input) => ({ programs: input.argv ?? [], analysable: true, reasons: [] }),
      executor: fx.core.executor,
      approvals: fx.approvals,
      desktop: fx.desktop,
      tracer: { record: (span) => spans.push(span) },
    });
  });
  afterEach(() => fx.close());

  it('records one execute_tool span per call, in the caller\'s trace, with GenAI attributes and the decision', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const trace = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    assert.ok(trace);
    const outcome = await pipeline.submit(session.id, 'exec', { argv: ['echo', 'x'] }, { trace });
    assert.equal(spans.length, 1);
    const span = spans[0];
    assert.ok(span);
    assert.equal(span.name, 'execute_tool exec');
    assert.equal(span.traceId, '4bf92f3577b34da6a3ce929d0e0e4736');
    assert.equal(span.parentSpanId, '00f067aa0ba902b7');
    assert.match(span.spanId, /^[0-9a-f]{16}$/);
    assert.equal(span.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(span.attributes['gen_ai.tool.name'], 'exec');
    assert.equal(span.attributes['gen_ai.tool.call.id'], outcome.callId);
    assert.equal(span.attributes['airlock.session.id'], session.id);
    assert.equal(span.attributes['airlock.decision'], 'allow');
    assert.equal(span.status, 'ok');

    fx.authorizer.decide = () => 'deny';
    await pipeline.submit(session.id, 'exec', { argv: ['rm', 'x'] });
    const denied = spans[1];
    assert.equal(denied?.status, 'error');
    assert.equal(denied?.attributes['error.type'], 'POLICY_DENIED');
    assert.equal(denied?.parentSpanId, undefined, 'no trace context: a new trace');
  });

  it('ignores malformed trace context', () => {
    for (const header of [undefined, '', 'garbage', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7']) {
      assert.equal(parseTraceparent(header), undefined, String(header));
    }
  });
});

describe('OtlpExporter', () => {
  let collector: Server;
  let received: Record<string, unknown>[];
  let url: string;
  beforeEach(async () => {
    received = [];
    collector = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        received.push(JSON.parse(body) as Record<string, unknown>);
        response.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const address = collector.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/v1/traces`;
  });
  afterEach(() => new Promise<void>((resolve) => collector.close(() => resolve())));

  it('ships spans as OTLP/HTTP JSON', async () => {
    const exporter = new OtlpExporter(url);
    exporter.record({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), parentSpanId: 'c'.repeat(16), name: 'execute_tool exec', startTimeMs: 1000, endTimeMs: 1005, attributes: { 'gen_ai.tool.name': 'exec', 'airlock.exit_code': 0, 'airlock.policy_ids': ['p1'] }, status: 'ok' });
    await exporter.flush();
    assert.equal(received.length, 1);
    const span = (received[0] as { resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[] }).resourceSpans[0]?.scopeSpans[0]?.spans[0];
    assert.equal(span?.['name'], 'execute_tool exec');
    assert.equal(span?.['parentSpanId'], 'c'.repeat(16));
    assert.equal(span?.['startTimeUnixNano'], '1000000000');
    assert.deepEqual((span?.['attributes'] as unknown[])[0], { key: 'gen_ai.tool.name', value: { stringValue: 'exec' } });
    assert.equal(exporter.dropped, 0);
  });

  it('drops spans (counted) when the collector is down, without throwing', async () => {
    const exporter = new OtlpExporter('http://127.0.0.1:9/v1/traces');
    exporter.record({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), name: 'execute_tool exec', startTimeMs: 0, endTimeMs: 1, attributes: {}, status: 'ok' });
    await exporter.flush();
    assert.equal(exporter.dropped, 1);
  });
});
