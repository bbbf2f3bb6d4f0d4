/**
 * Exports tool-call spans over OTLP/HTTP (JSON encoding) to a collector,
 * e.g. AIRLOCK_OTLP_ENDPOINT=http://127.0.0.1:4318/v1/traces. Batched, and
 * never in the way of a call: a collector that is down costs dropped spans,
 * counted and logged, not latency.
 */
import type { ToolCallSpan, Tracer } from '../core/tracer.js';

const MAX_BATCH = 256;
const FLUSH_MS = 1000;

/** Tracer that ships spans to an OTLP/HTTP endpoint. */
export class OtlpExporter implements Tracer {
  private queue: ToolCallSpan[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> = Promise.resolve();
  /** spans that could not be delivered */
  dropped = 0;

  constructor(
    private readonly endpoint: string,
    private readonly serviceName = 'airlock',
    private readonly headers: Record<string, string> = {},
  ) {}

  record(span: ToolCallSpan): void {
    this.queue.push(span);
    if (this.queue.length >= MAX_BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /** Sends what is queued; resolves when the collector answered (or failed). */
  async flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.queue;
    this.queue = [];
    if (batch.length === 0) return this.inFlight;
    this.inFlight = this.inFlight.then(async () => {
      try {
        const response = await fetch(this.endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json', ...this.headers },
          body: JSON.stringify(this.payload(batch)),
          signal: AbortSignal.timeout(5000),
        });
        if (!response.ok) this.dropped += batch.length;
        await response.arrayBuffer().catch(() => undefined);
      } catch {
        this.dropped += batch.length;
      }
    });
    return this.inFlight;
  }

  private payload(spans: ToolCallSpan[]): Record<string, unknown> {
    return {
      resourceSpans: [
        {
          resource: { attributes: [attribute('service.name', this.serviceName)] },
          scopeSpans: [
            {
              scope: { name: '@airlock/runtime' },
              spans: spans.map((span) => ({
                traceId: span.traceId,
                spanId: span.spanId,
                ...(span.parentSpanId ? { parentSpanId: span.parentSpanId } : {}),
                name: span.name,
                kind: 2, // SERVER: the agent's client span is the parent
                startTimeUnixNano: `${BigInt(Math.round(span.startTimeMs)) * 1_000_000n}`,
                endTimeUnixNano: `${BigInt(Math.round(span.endTimeMs)) * 1_000_000n}`,
                attributes: Object.entries(span.attributes).map(([key, value]) => attribute(key, value)),
                status: span.status === 'error' ? { code: 2, message: span.statusMessage ?? '' } : { code: 1 },
              })),
            },
          ],
        },
      ],
    };
  }
}

function attribute(key: string, value: string | number | boolean | string[]): Record<string, unknown> {
  if (Array.isArray(value)) return { key, value: { arrayValue: { values: value.map((item) => ({ stringValue: item })) } } };
  if (typeof value === 'boolean') return { key, value: { boolValue: value } };
  if (typeof value === 'number') return { key, value: Number.isInteger(value) ? { intValue: String(value) } : { doubleValue: value } };
  return { key, value: { stringValue: value } };
}
