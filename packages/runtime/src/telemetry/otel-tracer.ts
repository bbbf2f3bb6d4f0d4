/**
 * The tracing port on the OpenTelemetry JS SDK: spans the core built as
 * values become SDK spans with their own start and end times, parented to the
 * caller's `traceparent`, batched and exported over OTLP/HTTP (JSON). The
 * standard `OTEL_*` variables configure it (endpoint, headers, service name,
 * resource attributes, sampler, batching); `AIRLOCK_OTLP_ENDPOINT`, the older
 * variable, is a full traces URL. With nothing configured there is no tracer
 * at all, so the pipeline pays nothing.
 */
import { DiagLogLevel, ROOT_CONTEXT, SpanKind, diag, SpanStatusCode, TraceFlags, trace, type Context, type Tracer as SdkTracer } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ConsoleSpanExporter, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { AirlockError } from '../core/errors.js';
import type { SpanRecord, TraceContext, Tracer } from '../core/tracer.js';

/** The instrumentation scope of Airlock's spans. */
export const TRACER_NAME = '@airlock/runtime';

/** Where spans go and what the service is called. */
export interface OtelTracerOptions {
  exporter: SpanExporter;
  serviceName?: string;
  serviceVersion?: string;
  /** told when spans cannot be exported (a collector down or refusing): the SDK's own errors */
  onError?: (error: unknown) => void;
}

/** Tracer that hands spans to the OpenTelemetry SDK. */
export class OtelTracer implements Tracer {
  private readonly provider: BasicTracerProvider;
  private readonly tracer: SdkTracer;
  private readonly global: boolean;
  private readonly diagnosing: boolean;

  constructor(options: OtelTracerOptions) {
    const base = resourceFromAttributes({
      [ATTR_SERVICE_NAME]: options.serviceName ?? 'airlock',
      ...(options.serviceVersion ? { [ATTR_SERVICE_VERSION]: options.serviceVersion } : {}),
    });
    // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win over the defaults.
    const resource = base.merge(detectResources({ detectors: [envDetector] }));
    this.provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(options.exporter)] });
    this.tracer = this.provider.getTracer(TRACER_NAME, options.serviceVersion);
    // Global for the MCP server's `tools/call` spans (packages/mcp uses the API alone); the first tracer of a process wins.
    this.global = trace.setGlobalTracerProvider(this.provider);
    const onError = options.onError;
    // The SDK reports failed exports to its diagnostic logger; without one they would pass unseen.
    this.diagnosing =
      onError !== undefined &&
      diag.setLogger(
        {
          error: (message: string, ...args: unknown[]) =>
            onError(new Error([message, ...args.map((arg) => (arg instanceof Error ? arg.message : String(arg)))].join(' '))),
          warn: () => undefined,
          info: () => undefined,
          debug: () => undefined,
          verbose: () => undefined,
        },
        { logLevel: DiagLogLevel.ERROR, suppressOverrideMessage: true },
      );
  }

  record(span: SpanRecord, parent?: TraceContext): void {
    try {
      this.start(span, parent ? remoteParent(parent) : ROOT_CONTEXT);
    } catch {
      // Tracing never fails a call.
    }
  }

  /** Exports what is queued. */
  async flush(): Promise<void> {
    await this.provider.forceFlush().catch(() => undefined);
  }

  /** Exports what is queued and stops; a collector that does not answer holds the server's stop for at most `boundMs`. */
  async shutdown(boundMs = 5000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((resolve) => (timer = setTimeout(resolve, boundMs)));
    try {
      await Promise.race([this.provider.shutdown().catch(() => undefined), bound]);
    } finally {
      clearTimeout(timer);
      if (this.global) trace.disable();
      if (this.diagnosing) diag.disable();
    }
  }

  private start(record: SpanRecord, parent: Context): void {
    const span = this.tracer.startSpan(
      record.name,
      { kind: record.kind === 'server' ? SpanKind.SERVER : SpanKind.INTERNAL, startTime: new Date(record.startTimeMs), attributes: record.attributes },
      parent,
    );
    span.setStatus(
      record.status === 'error'
        ? { code: SpanStatusCode.ERROR, ...(record.statusMessage ? { message: record.statusMessage } : {}) }
        : { code: SpanStatusCode.OK },
    );
    const context = trace.setSpan(parent, span);
    for (const child of record.children ?? []) this.start(child, context);
    span.end(new Date(record.endTimeMs));
  }
}

function remoteParent(parent: TraceContext): Context {
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: parent.traceId,
    spanId: parent.parentSpanId,
    traceFlags: parent.sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });
}

/** What the environment asks of tracing. */
export interface TracingEnvironment {
  [name: string]: string | undefined;
}

/** Where spans go, as the environment asks: checked before the server starts anything, built once it runs. */
export type TracingPlan = { exporter: 'otlp'; url?: string } | { exporter: 'console' };

/**
 * What the environment asks of tracing, or undefined when it is off:
 * `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none` turn it off; an
 * endpoint (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `AIRLOCK_OTLP_ENDPOINT` or `endpoint`) or `OTEL_TRACES_EXPORTER=otlp|console`
 * turns it on. Throws INVALID_ARGUMENTS naming the variable for what it cannot do.
 */
export function tracingPlan(env: TracingEnvironment, options: { endpoint?: string } = {}): TracingPlan | undefined {
  if ((env['OTEL_SDK_DISABLED'] ?? '').trim().toLowerCase() === 'true') return undefined;
  const exporters = (env['OTEL_TRACES_EXPORTER'] ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter((name) => name !== '');
  const unknown = exporters.filter((name) => name !== 'otlp' && name !== 'console' && name !== 'none');
  if (unknown.length > 0) {
    throw new AirlockError('INVALID_ARGUMENTS', `OTEL_TRACES_EXPORTER=${unknown.join(',')} is not supported; use otlp, console or none`, {
      details: { field: 'OTEL_TRACES_EXPORTER' },
    });
  }
  if (exporters.includes('none')) return undefined;
  const standard = env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'] || env['OTEL_EXPORTER_OTLP_ENDPOINT'];
  // An endpoint given in code wins; the older variable yields to the standard ones.
  const url = options.endpoint || (standard ? undefined : env['AIRLOCK_OTLP_ENDPOINT']) || undefined;
  const wanted = exporters.length > 0 ? exporters : url || standard ? ['otlp'] : [];
  if (!wanted.includes('otlp')) return wanted.includes('console') ? { exporter: 'console' } : undefined;
  const protocolVariable = env['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL'] ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = env[protocolVariable];
  if (protocol && protocol !== 'http/json') {
    throw new AirlockError('INVALID_ARGUMENTS', `${protocolVariable}=${protocol} is not supported for traces; set it to http/json or leave it unset`, {
      details: { field: protocolVariable },
    });
  }
  return url ? { exporter: 'otlp', url } : { exporter: 'otlp' };
}

/** The tracer of a plan. */
export function tracerOf(plan: TracingPlan, options: { serviceVersion?: string; onError?: (error: unknown) => void } = {}): OtelTracer {
  const exporter =
    plan.exporter === 'otlp'
      ? // Without a URL the SDK's exporter reads the OTEL_EXPORTER_OTLP_* variables itself (endpoint, headers, timeout).
        new OTLPTraceExporter(plan.url ? { url: plan.url } : {})
      : new ConsoleSpanExporter();
  return new OtelTracer({
    exporter,
    ...(options.serviceVersion ? { serviceVersion: options.serviceVersion } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
  });
}

/** The tracer the environment configures (`tracingPlan`), or undefined when tracing is off. */
export function tracerFromEnvironment(env: TracingEnvironment, options: { endpoint?: string; serviceVersion?: string } = {}): OtelTracer | undefined {
  const plan = tracingPlan(env, options.endpoint ? { endpoint: options.endpoint } : {});
  return plan ? tracerOf(plan, options.serviceVersion ? { serviceVersion: options.serviceVersion } : {}) : undefined;
}
