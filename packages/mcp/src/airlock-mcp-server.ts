/**
 * The MCP server of one Airlock session, on the official SDK's low-level
 * `Server`: we validate arguments ourselves so that wrong-shaped arguments
 * are a JSON-RPC error (-32602) naming the field, which `McpServer` would
 * fold into a tool result. Everything the tools do goes through the Airlock
 * API; this file never decides anything about policy.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, EmptyResultSchema, ErrorCode, ListToolsRequestSchema, type CallToolResult, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_ARGUMENTS, listedTools, type AirlockToolName } from './tool-definitions.js';
import { handleTool } from './tool-handlers.js';
import { confirmationMessage, settleHeldCall, type Confirm, type ConfirmationAnswer } from './approval-flow.js';
import type { SessionCalls } from './session-calls.js';

/** Version reported to MCP clients. */
export const AIRLOCK_MCP_VERSION = '0.1.0';

/** Options of an Airlock MCP server. */
export interface AirlockMcpServerOptions {
  calls: SessionCalls;
  /** when the client cannot confirm, how long a held call waits for a decision made elsewhere (default 0: return pending at once) */
  approvalWaitMs?: number;
}

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
  private pinged = false;

  constructor(private readonly options: AirlockMcpServerOptions) {
    const sessionId = options.calls.sessionId;
    this.server = new Server(
      { name: 'airlock', title: 'Airlock', version: AIRLOCK_MCP_VERSION },
      {
        capabilities: { tools: {} },
        instructions: [
          `Tools run on Airlock session ${sessionId}: an isolated machine whose files live under /workspace.`,
          'Every call passes the session policy. A denied call returns an error with its code and the policy reason: do not retry it unchanged.',
          'A call held for a human either asks the user to confirm, or returns APPROVAL_PENDING with an approval id: then call await_approval with that id.',
        ].join('\n'),
      },
    );
    this.server.setRequestHandler(ListToolsRequestSchema, async (_request, extra) => ({ tools: listedTools(await options.calls.allowedTools(extra.signal)) }));
    this.server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const name = request.params.name;
      if (!Object.hasOwn(TOOL_ARGUMENTS, name)) {
        throw protocolError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}; the tools are ${Object.keys(TOOL_ARGUMENTS).join(', ')}`, { field: 'name' });
      }
      const tool = name as AirlockToolName;
      const parsed = TOOL_ARGUMENTS[tool].safeParse(request.params.arguments ?? {});
      if (!parsed.success) {
        const errors = parsed.error.issues.map((issue) => ({ field: issue.path.length > 0 ? issue.path.join('.') : '(arguments)', message: issue.message }));
        throw protocolError(ErrorCode.InvalidParams, `invalid arguments for ${tool}: ${errors.map((e) => `${e.field}: ${e.message}`).join('; ')}`, {
          tool,
          field: errors[0]?.field,
          errors,
        });
      }
      // Our own controller, so that the HTTP endpoint can abort the calls of a request whose connection dropped.
      const controller = new AbortController();
      const abort = () => controller.abort();
      extra.signal.addEventListener('abort', abort, { once: true });
      if (extra.signal.aborted) controller.abort();
      this.inflight.set(extra.requestId, controller);
      const clientName = this.server.getClientVersion()?.name ?? 'client';
      const confirm = this.canConfirm() ? this.confirmer(extra.requestId) : undefined;
      try {
        return await handleTool(tool, parsed.data, {
          calls: options.calls,
          signal: controller.signal,
          settle: (pending, airlockTool, args) =>
            settleHeldCall(
              { calls: options.calls, confirm, decidedBy: `mcp:${clientName}`, approvalWaitMs: options.approvalWaitMs ?? 0, signal: controller.signal },
              pending,
              confirmationMessage(sessionId, airlockTool, args, pending.decision.reason, pending.approvalId),
            ),
        });
      } catch (error) {
        return failureResult(error, controller.signal.aborted);
      } finally {
        extra.signal.removeEventListener('abort', abort);
        this.inflight.delete(extra.requestId);
      }
    });
  }

  /** Aborts the tool calls of these JSON-RPC requests (their client went away); their commands are killed. */
  abortRequests(ids: readonly RequestId[]): void {
    for (const id of ids) this.inflight.get(id)?.abort();
  }

  /** Aborts every call in flight and closes the transport. */
  async close(): Promise<void> {
    for (const controller of this.inflight.values()) controller.abort();
    await this.server.close();
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

/**
 * A JSON-RPC error for the SDK to send as is. Not `McpError`: its message
 * already carries "MCP error -32602:", which the client adds a second time.
 */
function protocolError(code: number, message: string, data: Record<string, unknown>): Error {
  return Object.assign(new Error(message), { code, data });
}

function failureResult(error: unknown, aborted: boolean): CallToolResult {
  const code = (error as { code?: unknown }).code;
  const message = aborted ? 'the call was cancelled; a command it started was stopped' : error instanceof Error ? error.message : String(error);
  return { content: [{ type: 'text', text: `${typeof code === 'string' ? code : aborted ? 'CANCELLED' : 'INTERNAL'}: ${message}` }], isError: true };
}
