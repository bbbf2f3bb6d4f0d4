/**
 * The MCP server span of a `tools/call`, by OpenTelemetry's MCP conventions:
 * `tools/call {tool}` (SERVER), parented to the `traceparent` the client put
 * in `params._meta`, with `mcp.method.name`, `gen_ai.tool.name` and
 * `gen_ai.operation.name` = `execute_tool`. Spans go to the global tracer
 * provider, which the Airlock server registers when tracing is on; without
 * it the API's no-op tracer only carries the client's context through. The
 * call's HTTP request then carries this span as its parent, so the server's
 * `execute_tool` span nests under it.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, trace, type Context } from '@opentelemetry/api';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

const tracer = trace.getTracer('@airlock/mcp');
const TRACEPARENT = /^00-([\da-f]{32})-([\da-f]{16})-([\da-f]{2})$/;

/** What the tracing of one call needs from its request. */
export interface ToolCallRequest {
  tool: string;
  meta: Record<string, unknown> | undefined;
  requestId: string | number;
  /** the MCP session (Streamable HTTP's session id), when there is one */
  sessionId?: string | undefined;
}

/** A started span: the traceparent the call's HTTP request carries, and how to end it. */
export interface TracedToolCall {
  traceparent: string | undefined;
  end(result: CallToolResult | undefined, error?: unknown): void;
}

/** Starts the server span of one `tools/call`. */
export function startToolCallSpan(request: ToolCallRequest): TracedToolCall {
  const span = tracer.startSpan(
    `tools/call ${request.tool}`,
    {
      kind: SpanKind.SERVER,
      attributes: {
        'mcp.method.name': 'tools/call',
        'gen_ai.tool.name': request.tool,
        'gen_ai.operation.name': 'execute_tool',
        'jsonrpc.request.id': String(request.requestId),
        ...(request.sessionId ? { 'mcp.session.id': request.sessionId } : {}),
      },
    },
    parentOf(request.meta?.['traceparent']),
  );
  const spanContext = span.spanContext();
  const traceparent = trace.isSpanContextValid(spanContext)
    ? `00-${spanContext.traceId}-${spanContext.spanId}-${(spanContext.traceFlags & TraceFlags.SAMPLED).toString(16).padStart(2, '0')}`
    : undefined;
  return {
    traceparent,
    end(result, error) {
      if (error !== undefined || result?.isError) {
        span.setAttribute('error.type', error === undefined ? 'tool_error' : '_OTHER');
        span.setStatus({ code: SpanStatusCode.ERROR, ...(error instanceof Error ? { message: error.message } : {}) });
      }
      span.end();
    },
  };
}

function parentOf(traceparent: unknown): Context {
  const match = typeof traceparent === 'string' ? TRACEPARENT.exec(traceparent) : null;
  if (!match || /^0+$/.test(match[1] ?? '') || /^0+$/.test(match[2] ?? '')) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: match[1] ?? '',
    spanId: match[2] ?? '',
    traceFlags: Number.parseInt(match[3] ?? '0', 16) & TraceFlags.SAMPLED,
    isRemote: true,
  });
}
