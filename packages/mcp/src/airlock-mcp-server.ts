/**
 * The MCP server of one Airlock session, on the official SDK's low-level
 * `Server`. Tools and the workspace as resources; everything they do goes
 * through the Airlock API, and this file never decides anything about policy.
 *
 * `tools/call` and the `resources/*` requests that carry params are served
 * by the fallback handler rather than `setRequestHandler`, because the SDK
 * checks their params first and answers a mismatch with -32603 and a raw
 * validator dump; here a malformed request is -32602 naming the field, and
 * arguments that do not fit a tool are a tool error the model can read.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import {
  EmptyResultSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  type CallToolResult,
  type JSONRPCRequest,
  type RequestId,
  type Result,
  type ServerNotification,
  type ServerRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { listedTools } from './tool-definitions.js';
import { handleTool } from './tool-handlers.js';
import { checkToolCall } from './tool-call-request.js';
import { confirmationMessage, settleHeldCall, type Confirm, type ConfirmationAnswer } from './approval-flow.js';
import { OutputProgress } from './output-progress.js';
import { WorkspaceResources, type ListingLimits, type SettleHeldRead } from './workspace-resources.js';
import { ResourceSubscriptions } from './resource-subscriptions.js';
import { protocolError } from './protocol-error.js';
import type { SessionCalls } from './session-calls.js';
import { startToolCallSpan } from './tool-call-tracing.js';

/** Version reported to MCP clients. */
export const AIRLOCK_MCP_VERSION = '0.1.0';

/** Options of an Airlock MCP server. */
export interface AirlockMcpServerOptions {
  calls: SessionCalls;
  /** when the client cannot confirm, how long a held call waits for a decision made elsewhere (default 0: return pending at once) */
  approvalWaitMs?: number;
  /** how often the session is looked at while resources are subscribed (default 2,000 ms) */
  subscriptionPollMs?: number;
  /** bounds of one `resources/list` page */
  listingLimits?: ListingLimits;
}

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

const CONFIRMATION_SCHEMA = {
  type: 'object' as const,
  properties: {
    approve: { type: 'boolean' as const, title: 'Approve', description: 'run this call once', default: true },
    reason: { type: 'string' as const, title: 'Reason', description: 'recorded in the audit log' },
  },
  required: ['approve'],
};

/** One MCP server bound to one session; connect `server` to a transport. */
export class AirlockMcpServer {
  /** the SDK server to connect to a transport */
  readonly server: Server;
  private readonly inflight = new Map<RequestId, AbortController>();
  private readonly resources: WorkspaceResources;
  private readonly subscriptions: ResourceSubscriptions;
  private pinged = false;

  constructor(private readonly options: AirlockMcpServerOptions) {
    const sessionId = options.calls.sessionId;
    this.server = new Server(
      {
        name: 'airlock',
        title: 'Airlock',
        version: AIRLOCK_MCP_VERSION,
        description: 'Tools and files of one Airlock session: an isolated machine where every call passes the session policy and is audited.',
      },
      {
        capabilities: { tools: {}, resources: { subscribe: true } },
        instructions: [
          `Tools run on Airlock session ${sessionId}: an isolated machine whose files live under /workspace.`,
          'Every call passes the session policy. A denied call returns an error with its code and the policy reason: do not retry it unchanged.',
          'A call held for a human either asks the user to confirm, or returns APPROVAL_PENDING with an approval id: then call await_approval with that id.',
          'The files under /workspace are also resources (airlock://workspace/{path}); reading them passes the same policy.',
        ].join('\n'),
      },
    );
    this.resources = new WorkspaceResources(options.calls, options.listingLimits);
    this.subscriptions = new ResourceSubscriptions({
      calls: options.calls,
      notify: (uri) => this.server.sendResourceUpdated({ uri }),
      ...(options.subscriptionPollMs === undefined ? {} : { intervalMs: options.subscriptionPollMs }),
    });
    this.server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({ tools: listedTools(await options.calls.allowedTools(extra.signal)) }));
    this.server.setRequestHandler(ListResourcesRequestSchema, async (request, extra) => this.resources.list(request.params?.cursor, extra.signal));
    this.server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => this.resources.templates());
    this.server.fallbackRequestHandler = async (request, extra) => this.dispatch(request, extra);
  }

  /** True while a tool call runs (an HTTP session with one is not idle, even with no connection open). */
  get busy(): boolean {
    return this.inflight.size > 0;
  }

  /** Aborts every call in flight (their commands are killed), ends subscriptions, and closes the transport. */
  async close(): Promise<void> {
    for (const controller of this.inflight.values()) controller.abort();
    await this.subscriptions.close();
    await this.server.close();
  }

  private async dispatch(request: JSONRPCRequest, extra: Extra): Promise<Result> {
    switch (request.method) {
      case 'tools/call':
        return this.callTool(request.params, extra);
      case 'resources/read':
        return this.resources.read(uriParam(request.params), extra.signal, this.settler(extra.requestId, extra.signal));
      case 'resources/subscribe':
        await this.subscriptions.subscribe(uriParam(request.params), extra.signal);
        return {};
      case 'resources/unsubscribe':
        this.subscriptions.unsubscribe(uriParam(request.params));
        return {};
      default:
        throw protocolError(ErrorCode.MethodNotFound, `Method not found: ${request.method}`, { method: request.method });
    }
  }

  private async callTool(params: unknown, extra: Extra): Promise<CallToolResult> {
    const checked = checkToolCall(params);
    if (checked.kind === 'invalid-arguments') return checked.result;
    // Our own controller: aborted by notifications/cancelled (the SDK aborts extra.signal) or by close(); never by a dropped connection.
    const controller = new AbortController();
    const abort = () => controller.abort();
    extra.signal.addEventListener('abort', abort, { once: true });
    if (extra.signal.aborted) controller.abort();
    this.inflight.set(extra.requestId, controller);
    const progressToken = extra._meta?.progressToken;
    const progress =
      progressToken === undefined || checked.tool !== 'bash'
        ? undefined
        : new OutputProgress({ send: (update) => extra.sendNotification({ method: 'notifications/progress', params: { progressToken, ...update } }) });
    // The server span of this call, in the trace the client sent in params._meta (OpenTelemetry's MCP conventions).
    const traced = startToolCallSpan({ tool: checked.tool, meta: extra._meta, requestId: extra.requestId, sessionId: extra.sessionId });
    let result: CallToolResult | undefined;
    try {
      result = await handleTool(checked.tool, checked.input, {
        calls: this.options.calls.withTraceparent(traced.traceparent),
        signal: controller.signal,
        ...(progress ? { onOutput: (bytes: Uint8Array) => progress.push(bytes) } : {}),
        settle: this.settler(extra.requestId, controller.signal),
      });
      return result;
    } catch (error) {
      result = failureResult(error, controller.signal.aborted);
      return result;
    } finally {
      traced.end(result);
      // Before the result goes out: no progress may follow it.
      await progress?.finish();
      extra.signal.removeEventListener('abort', abort);
      this.inflight.delete(extra.requestId);
    }
  }

  /** How a held call of this request is settled: confirmation in the client, else a bounded wait, else pending. */
  private settler(requestId: RequestId, signal: AbortSignal): SettleHeldRead {
    const sessionId = this.options.calls.sessionId;
    const clientName = this.server.getClientVersion()?.name ?? 'client';
    const confirm = this.canConfirm() ? this.confirmer(requestId) : undefined;
    return (pending, airlockTool, args) =>
      settleHeldCall(
        { calls: this.options.calls, confirm, decidedBy: `mcp:${clientName}`, approvalWaitMs: this.options.approvalWaitMs ?? 0, signal },
        pending,
        confirmationMessage(sessionId, airlockTool, args, pending.decision.reason, pending.approvalId),
      );
  }

  private canConfirm(): boolean {
    return Boolean(this.server.getClientCapabilities()?.elicitation?.form);
  }

  private confirmer(requestId: RequestId): Confirm {
    return async (message, signal): Promise<ConfirmationAnswer> => {
      if (!this.pinged) {
        // The official client ignores the cancellation of request id 0 (`if (!requestId) return`), so a
        // confirmation with id 0 could not be withdrawn when the call is decided elsewhere; a ping takes id 0.
        this.pinged = true;
        await this.server.request({ method: 'ping' }, EmptyResultSchema, { relatedRequestId: requestId, signal, timeout: 10_000 }).catch(() => undefined);
      }
      // Related to the tools/call request, so that over HTTP it travels on that request's stream.
      const answer = await this.server.elicitInput(
        { mode: 'form', message, requestedSchema: CONFIRMATION_SCHEMA },
        { relatedRequestId: requestId, signal, timeout: 24 * 3600 * 1000 },
      );
      if (answer.action === 'cancel') return { verdict: 'dismissed' };
      const reason = typeof answer.content?.['reason'] === 'string' && answer.content['reason'] ? answer.content['reason'] : undefined;
      const verdict = answer.action === 'accept' && answer.content?.['approve'] !== false ? 'approve' : 'deny';
      return reason === undefined ? { verdict } : { verdict, reason };
    };
  }
}

/** The `uri` param of a resources request; -32602 when it is missing. */
function uriParam(params: unknown): string {
  const uri = (params as { uri?: unknown } | undefined)?.uri;
  if (typeof uri !== 'string')
    throw protocolError(ErrorCode.InvalidParams, 'this request needs params.uri, a resource URI such as airlock://workspace/notes.txt', { field: 'uri' });
  return uri;
}

function failureResult(error: unknown, aborted: boolean): CallToolResult {
  const code = (error as { code?: unknown }).code;
  const message = aborted ? 'the call was cancelled; a command it started was stopped' : error instanceof Error ? error.message : String(error);
  return { content: [{ type: 'text', text: `${typeof code === 'string' ? code : aborted ? 'CANCELLED' : 'INTERNAL'}: ${message}` }], isError: true };
}
