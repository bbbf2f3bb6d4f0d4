/**
 * The tracing port: one span per tool call, named `execute_tool {tool}`
 * with OpenTelemetry GenAI attributes, parented to the caller's trace when
 * the call carried a W3C `traceparent`.
 */

/** A finished span of one tool call. */
export interface ToolCallSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeMs: number;
  endTimeMs: number;
  attributes: Record<string, string | number | boolean | string[]>;
  /** 'error' when the call failed or was refused */
  status: 'ok' | 'error';
  statusMessage?: string;
}

/** Receives finished spans. */
export interface Tracer {
  record(span: ToolCallSpan): void;
}

/** A parsed W3C trace context. */
export interface TraceContext {
  traceId: string;
  parentSpanId: string;
}

/** Parses a `traceparent` header (version 00); undefined when absent or malformed. */
export function parseTraceparent(header: string | undefined): TraceContext | undefined {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/.exec((header ?? '').trim());
  if (!match || /^0+$/.test(match[1] ?? '') || /^0+$/.test(match[2] ?? '')) return undefined;
  return { traceId: match[1] ?? '', parentSpanId: match[2] ?? '' };
}
