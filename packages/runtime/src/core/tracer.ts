/**
 * The tracing port: finished spans as values, parented to the caller's trace
 * when the call carried a W3C `traceparent`. The core builds them with the
 * OpenTelemetry GenAI names (`execute_tool {tool}` with its `apply_guardrail`
 * child); an adapter (telemetry/otel-tracer) hands them to the OpenTelemetry
 * SDK, which gives them their ids and exports them.
 */

/** Attribute values a span carries. */
export type SpanAttributes = Record<string, string | number | boolean | string[]>;

/** A finished span, with its finished children. */
export interface SpanRecord {
  name: string;
  /** 'internal' per the GenAI conventions for execute_tool and apply_guardrail */
  kind: 'internal' | 'server';
  startTimeMs: number;
  endTimeMs: number;
  attributes: SpanAttributes;
  /** 'error' when the operation failed or was refused */
  status: 'ok' | 'error';
  statusMessage?: string;
  children?: SpanRecord[];
}

/** Receives finished spans. */
export interface Tracer {
  /** records `span` (and its children) in `parent`'s trace, or in a new trace */
  record(span: SpanRecord, parent?: TraceContext): void;
}

/** A parsed W3C trace context. */
export interface TraceContext {
  traceId: string;
  parentSpanId: string;
  /** the caller's sampled flag */
  sampled: boolean;
}

/** Parses a `traceparent` header (version 00); undefined when absent or malformed. */
export function parseTraceparent(header: string | undefined): TraceContext | undefined {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec((header ?? '').trim());
  if (!match || /^0+$/.test(match[1] ?? '') || /^0+$/.test(match[2] ?? '')) return undefined;
  return { traceId: match[1] ?? '', parentSpanId: match[2] ?? '', sampled: (Number.parseInt(match[3] ?? '0', 16) & 1) === 1 };
}
