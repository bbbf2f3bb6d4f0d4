import { describe, it, afterEach, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { coreFixture, type CoreFixture } from '../../support/core-fixture.js';
import { ToolPipeline } from '../../../src/core/tool-pipeline.js';
import { parseTraceparent, type SpanRecord, type TraceContext } from '../../../src/core/tracer.js';
import { tracerFromEnvironment, tracerOf } from '../../../src/telemetry/otel-tracer.js';
import { LifecycleSpans } from '../../../src/telemetry/lifecycle-spans.js';

describe('tracing of tool calls', () => {
  let fx: CoreFixture;
  let spans: { span: SpanRecord; parent: TraceContext | undefined }[];
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
      tracer: { record: (span, parent) => spans.push({ span, parent }) },
    });
    fx.approvals.setExecutor((call, decision) => pipeline.runApproved(call, decision));
  });
  afterEach(() => fx.close());

  const guardrailOf = (span: SpanRecord | undefined): SpanRecord => {
    const child = span?.children?.[0];
    assert.ok(child, 'an apply_guardrail child');
    assert.equal(child.name, 'apply_guardrail airlock');
    assert.equal(child.kind, 'internal');
    assert.equal(child.attributes['gen_ai.operation.name'], 'apply_guardrail');
    assert.equal(child.attributes['gen_ai.security.target.type'], 'tool_call');
    return child;
  };

  it("records execute_tool with its apply_guardrail child, in the caller's trace", async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    const trace = parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    assert.ok(trace);
    const outcome = await pipeline.submit(session.id, 'exec', { argv: ['echo', 'x'] }, { trace });
    assert.equal(spans.length, 1);
    const { span, parent } = spans[0] ?? assert.fail('no span');
    assert.deepEqual(parent, trace);
    assert.equal(span.name, 'execute_tool exec');
    assert.equal(span.kind, 'internal');
    assert.equal(span.attributes['gen_ai.operation.name'], 'execute_tool');
    assert.equal(span.attributes['gen_ai.tool.name'], 'exec');
    assert.equal(span.attributes['gen_ai.tool.call.id'], outcome.callId);
    assert.equal(span.attributes['airlock.session.id'], session.id);
    assert.equal(span.attributes['airlock.decision'], undefined, 'the decision rides on apply_guardrail');
    assert.equal(span.status, 'ok');
    assert.ok(span.startTimeMs <= span.endTimeMs);
    const guard = guardrailOf(span);
    assert.equal(guard.attributes['gen_ai.security.decision.type'], 'allow');
    assert.equal(guard.attributes['gen_ai.security.policy.id'], 'p-allow');
    assert.equal(guard.attributes['gen_ai.security.target.id'], outcome.callId);
    assert.ok(span.startTimeMs <= guard.startTimeMs && guard.endTimeMs <= span.endTimeMs, 'the guardrail lies within the call');

    fx.authorizer.decide = () => 'deny';
    await pipeline.submit(session.id, 'exec', { argv: ['rm', 'x'] });
    const denied = spans[1];
    assert.equal(denied?.span.status, 'error');
    assert.equal(denied?.span.attributes['error.type'], 'POLICY_DENIED');
    assert.equal(denied?.parent, undefined, 'no trace context: a new trace');
    const deniedGuard = guardrailOf(denied?.span);
    assert.equal(deniedGuard.attributes['gen_ai.security.decision.type'], 'deny');
    assert.equal(deniedGuard.attributes['gen_ai.security.decision.reason'], 'scripted deny');
    assert.equal(deniedGuard.status, 'ok', 'a deny is the guardian working, not an error');
  });

  it('records who approved a held call and how long it waited', async () => {
    const session = await fx.sessions.create({ contract: fx.contract() });
    fx.authorizer.decide = (context) => (context.programs.includes('tar') ? 'ask' : 'allow');
    const waiting = pipeline.submit(session.id, 'exec', { argv: ['tar', 'cf', 'x.tar', '.'] }, { approvalWaitMs: 30_000 });
    let pending = await fx.approvals.list({ pendingOnly: true });
    for (let tries = 0; pending.length === 0 && tries < 500; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      pending = await fx.approvals.list({ pendingOnly: true });
    }
    const approval = pending[0] ?? assert.fail('no approval requested');
    await fx.approvals.decide(approval.id, 'approve', 'alice', null);
    const outcome = await waiting;
    assert.equal(outcome.status, 'completed');
    await fx.approvals.drain();
    assert.equal(spans.length, 1, 'one span for a call its caller waited on');
    const guard = guardrailOf(spans[0]?.span);
    assert.equal(guard.attributes['gen_ai.security.decision.type'], 'allow');
    assert.equal(guard.attributes['airlock.policy.decision'], 'ask');
    assert.equal(guard.attributes['airlock.approval.decided_by'], 'alice');
    assert.equal(guard.attributes['airlock.approval.id'], approval.id);
    assert.equal(typeof guard.attributes['airlock.approval.wait_ms'], 'number');

    // Not waited for: the call returns held, and its guardrail says so.
    const held = await pipeline.submit(session.id, 'exec', { argv: ['tar', 'cf', 'y.tar', '.'] });
    assert.equal(held.status, 'pending-approval');
    const heldGuard = guardrailOf(spans.at(-1)?.span);
    assert.equal(heldGuard.attributes['gen_ai.security.decision.type'], 'ask');
    assert.equal(heldGuard.attributes['airlock.approval.state'], 'pending');

    // Approved after its caller left: the run gets a span of its own, in a trace of its own.
    await fx.approvals.decide(held.approvalId, 'approve', 'bob', null);
    await fx.approvals.drain();
    for (let tries = 0; spans.length < 3 && tries < 500; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    const later = spans[2] ?? assert.fail('no span for the call approved later');
    assert.equal(later.parent, undefined);
    assert.equal(later.span.attributes['gen_ai.tool.call.id'], held.callId);
    assert.equal(later.span.attributes['airlock.call.status'], 'completed');
    const laterGuard = guardrailOf(later.span);
    assert.equal(laterGuard.attributes['gen_ai.security.decision.type'], 'allow');
    assert.equal(laterGuard.attributes['airlock.approval.decided_by'], 'bob');
  });

  it('ignores malformed trace context and keeps the sampled flag', () => {
    for (const header of [
      undefined,
      '',
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7',
    ]) {
      assert.equal(parseTraceparent(header), undefined, String(header));
    }
    assert.equal(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00')?.sampled, false);
  });
});

describe('tracing configuration from the environment', () => {
  it('is off with nothing configured, or when turned off', () => {
    assert.equal(tracerFromEnvironment({}), undefined);
    assert.equal(tracerFromEnvironment({ OTEL_SERVICE_NAME: 'x' }), undefined);
    assert.equal(tracerFromEnvironment({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318', OTEL_TRACES_EXPORTER: 'none' }), undefined);
    assert.equal(tracerFromEnvironment({ AIRLOCK_OTLP_ENDPOINT: 'http://127.0.0.1:4318/v1/traces', OTEL_SDK_DISABLED: 'true' }), undefined);
  });

  it('is on with an endpoint, standard or older', async () => {
    for (const env of [
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' },
      { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' },
      { AIRLOCK_OTLP_ENDPOINT: 'http://127.0.0.1:4318/v1/traces' },
    ]) {
      const tracer = tracerFromEnvironment(env);
      assert.ok(tracer, JSON.stringify(env));
      await tracer.shutdown();
    }
  });

  it('refuses what it cannot do, naming the variable', () => {
    assert.throws(
      () => tracerFromEnvironment({ OTEL_TRACES_EXPORTER: 'zipkin' }),
      (error: Error & { code?: string }) => error.code === 'INVALID_ARGUMENTS' && /OTEL_TRACES_EXPORTER/.test(error.message),
    );
    assert.throws(() => tracerFromEnvironment({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://x', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), /OTEL_EXPORTER_OTLP_PROTOCOL/);
    // A protocol set for other programs does not matter while tracing is off.
    assert.equal(tracerFromEnvironment({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }), undefined);
  });
});

describe('lifecycle operations as spans', () => {
  it('spans an operation from its first audit record to its last, failures as errors', () => {
    const recorded: SpanRecord[] = [];
    const lifecycle = new LifecycleSpans({ record: (span) => recorded.push(span) });
    const record = (type: string, at: string, data: Record<string, unknown> = {}) =>
      lifecycle.recordAudit({ sessionId: 'ses_1', seq: 0, at, type, data, prevHash: '', hash: '' });
    record('session.resume-started', '2026-01-01T00:00:00.000Z');
    record('tool-call.authorized', '2026-01-01T00:00:00.100Z');
    record('session.resumed', '2026-01-01T00:00:00.250Z');
    record('session.created', '2026-01-01T00:00:01.000Z');
    record('session.failed', '2026-01-01T00:00:02.000Z', { operation: 'create', code: 'DRIVER_FAILED', message: 'runsc failed' });
    assert.equal(recorded.length, 2);
    const [resumed, failed] = recorded;
    assert.equal(resumed?.name, 'resume session');
    assert.equal(resumed?.endTimeMs - (resumed?.startTimeMs ?? 0), 250);
    assert.equal(resumed?.attributes['airlock.session.id'], 'ses_1');
    assert.equal(resumed?.status, 'ok');
    assert.equal(failed?.name, 'create session');
    assert.equal(failed?.status, 'error');
    assert.equal(failed?.attributes['error.type'], 'DRIVER_FAILED');
  });
});

describe('a collector that never answers', () => {
  it('holds the tracer shutdown for its bound only, and never a call', async () => {
    // A listener that accepts and never answers: an export to it hangs until its timeout.
    const { createServer } = await import('node:net');
    const sockets: import('node:net').Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    // Timeouts far beyond the test's patience: without the bound, the shutdown would wait for them.
    const saved = { export: process.env['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'], batch: process.env['OTEL_BSP_EXPORT_TIMEOUT'] };
    process.env['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'] = '600000';
    process.env['OTEL_BSP_EXPORT_TIMEOUT'] = '600000';
    const tracer = tracerFromEnvironment({}, { endpoint: `http://127.0.0.1:${port}/v1/traces` });
    for (const [name, value] of [
      ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', saved.export],
      ['OTEL_BSP_EXPORT_TIMEOUT', saved.batch],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    assert.ok(tracer);
    tracer.record({ name: 'execute_tool exec', kind: 'internal', startTimeMs: Date.now() - 5, endTimeMs: Date.now(), attributes: {}, status: 'ok' });
    let patience: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      tracer.shutdown(300).then(() => 'stopped'),
      new Promise((resolve) => (patience = setTimeout(() => resolve('hung'), 15_000))),
    ]);
    clearTimeout(patience);
    assert.equal(stopped, 'stopped');
    // Answered at last, so that the exporter neither retries nor keeps the process alive.
    for (const socket of sockets) socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}');
    silent.close();
  });
});

describe('a collector that refuses spans', () => {
  it('is reported through onError, not thrown at a call', async () => {
    const { createServer } = await import('node:http');
    const refusing = createServer((request, response) => {
      request.resume();
      request.on('end', () => response.writeHead(400, { 'content-type': 'application/json' }).end('{"message":"no"}'));
    });
    await new Promise<void>((resolve) => refusing.listen(0, '127.0.0.1', resolve));
    const address = refusing.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const errors: unknown[] = [];
    // The batch goes out on its schedule (shortened here), as in a running server.
    const delay = process.env['OTEL_BSP_SCHEDULE_DELAY'];
    process.env['OTEL_BSP_SCHEDULE_DELAY'] = '20';
    const tracer = tracerOf({ exporter: 'otlp', url: `http://127.0.0.1:${port}/v1/traces` }, { onError: (error) => errors.push(error) });
    if (delay === undefined) delete process.env['OTEL_BSP_SCHEDULE_DELAY'];
    else process.env['OTEL_BSP_SCHEDULE_DELAY'] = delay;
    tracer.record({ name: 'execute_tool exec', kind: 'internal', startTimeMs: Date.now() - 5, endTimeMs: Date.now(), attributes: {}, status: 'ok' });
    for (let tries = 0; errors.length === 0 && tries < 500; tries++) await new Promise((resolve) => setTimeout(resolve, 20));
    await tracer.shutdown();
    refusing.closeAllConnections();
    await new Promise<void>((resolve) => refusing.close(() => resolve()));
    assert.ok(errors.length > 0, 'the failed export was reported');
  });
});
