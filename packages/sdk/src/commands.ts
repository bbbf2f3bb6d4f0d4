/** `sandbox.commands`: run commands on the session, streamed, through the airlock. */
import type { Connection } from './connection.js';
import type { Approvals } from './approvals.js';
import { AirlockApiError } from './errors.js';
import { base64ToBytes, bytesToBase64, outcomeError } from './outcome.js';
import type { CommandResult, ToolCallOutcome } from './types.js';

/** Options of `commands.run`. */
export interface RunOptions {
  onStdout?: (data: string) => void;
  onStderr?: (data: string) => void;
  /** raw bytes instead of text */
  onStdoutBytes?: (data: Uint8Array) => void;
  onStderrBytes?: (data: Uint8Array) => void;
  timeoutMs?: number;
  cwd?: string;
  envs?: Record<string, string>;
  stdin?: string | Uint8Array;
  /** run in a fresh sandbox over the session's disk instead of its machine */
  ephemeral?: boolean;
  /** start the command and return at once; it keeps running in the session */
  background?: boolean;
  /** wait for a human when policy asks (default true); false throws ApprovalPendingError */
  waitForApproval?: boolean;
  /** called once when the call is held for approval */
  onApprovalRequired?: (approvalId: string) => void;
  signal?: AbortSignal;
  /** W3C trace context of the caller: the call's `execute_tool` span becomes its child */
  traceparent?: string;
}

/** A process started with `commands.detach`. */
export interface DetachedProcess {
  /** its pid inside the machine */
  pid: number;
  /** where its stdout and stderr go, inside the machine */
  logPath: string;
  callId: string;
}

/** Runs commands. */
export class Commands {
  constructor(
    private readonly connection: Connection,
    private readonly sessionId: string,
    private readonly approvals: Approvals,
  ) {}

  /** Runs `command` (a shell string, or an argv list) and returns its result; non-zero exit codes are results, not errors. */
  async run(command: string | string[], options: RunOptions = {}): Promise<CommandResult> {
    const body: Record<string, unknown> = {
      ...(typeof command === 'string' ? { command: options.background ? `nohup sh -c ${shellQuote(command)} >/dev/null 2>&1 &` : command } : { argv: command }),
      stream: true,
    };
    if (options.cwd) body['cwd'] = options.cwd;
    if (options.envs) body['env'] = options.envs;
    if (options.timeoutMs) body['timeoutMs'] = options.timeoutMs;
    if (options.ephemeral) body['ephemeral'] = true;
    if (options.stdin !== undefined) {
      if (typeof options.stdin === 'string') body['stdin'] = options.stdin;
      else {
        body['stdin'] = bytesToBase64(options.stdin);
        body['stdinEncoding'] = 'base64';
      }
    }
    const response = await this.connection.send('POST', `/v1/sessions/${encodeURIComponent(this.sessionId)}/exec`, body, {
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.traceparent ? { headers: { traceparent: options.traceparent } } : {}),
    });
    let outcome: ToolCallOutcome;
    if (response.status === 202) {
      const pending = (await response.json()) as ToolCallOutcome & { status: 'pending-approval' };
      if (options.waitForApproval === false) throw outcomeError(pending);
      options.onApprovalRequired?.(pending.approvalId);
      outcome = await this.approvals.waitForOutcome(pending.approvalId);
      if (outcome.status === 'completed') replayOutput(outcome, options);
    } else {
      outcome = await this.readStream(response, options);
    }
    if (outcome.status !== 'completed') throw outcomeError(outcome);
    const result = outcome.result;
    return {
      exitCode: Number(result['exitCode']),
      stdout: decodeField(result, 'stdout'),
      stderr: decodeField(result, 'stderr'),
      stdoutTruncated: Boolean(result['stdoutTruncated']),
      stderrTruncated: Boolean(result['stderrTruncated']),
      timedOut: Boolean(result['timedOut']),
      aborted: Boolean(result['aborted']),
      callId: outcome.callId,
      decision: outcome.decision,
      timing: outcome.timing,
    };
  }

  /**
   * Starts a long-running process (a dev server, a database) on the session machine and
   * returns at once; it keeps running between calls and across suspend and resume.
   */
  async detach(command: string | string[], options: Pick<RunOptions, 'cwd' | 'envs' | 'signal'> = {}): Promise<DetachedProcess> {
    const body: Record<string, unknown> = { ...(typeof command === 'string' ? { command } : { argv: command }), detach: true };
    if (options.cwd) body['cwd'] = options.cwd;
    if (options.envs) body['env'] = options.envs;
    const { body: outcome } = await this.connection.json<ToolCallOutcome>('POST', `/v1/sessions/${encodeURIComponent(this.sessionId)}/exec`, body, options.signal ? { signal: options.signal } : {});
    // A start held for approval is not waited for: it throws ApprovalPendingError with the approval id.
    if (outcome.status !== 'completed') throw outcomeError(outcome);
    const result = outcome.result;
    if (result['detached'] !== true || typeof result['pid'] !== 'number') {
      throw new AirlockApiError('INVALID_ARGUMENTS', `the command did not start: ${decodeField(result, 'stderr').trim() || `exit code ${String(result['exitCode'])}`}`, 400, { exitCode: result['exitCode'] });
    }
    return { pid: result['pid'], logPath: String(result['logPath']), callId: outcome.callId };
  }

  private async readStream(response: Response, options: RunOptions): Promise<ToolCallOutcome> {
    if (!(response.headers.get('content-type') ?? '').includes('ndjson')) return (await response.json()) as ToolCallOutcome;
    const reader = response.body?.getReader();
    if (!reader) throw new AirlockApiError('INTERNAL', 'the server sent an empty stream', 500);
    const decoder = new TextDecoder();
    let buffered = '';
    let outcome: ToolCallOutcome | undefined;
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buffered += decoder.decode(value, { stream: true });
      let newline = buffered.indexOf('\n');
      while (newline >= 0) {
        const line = buffered.slice(0, newline);
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf('\n');
        if (!line.trim()) continue;
        const event = JSON.parse(line) as { type: string; data?: string; outcome?: ToolCallOutcome; error?: { code: string; message: string; details?: Record<string, unknown> } };
        if (event.type === 'stdout' && event.data !== undefined) emit(event.data, options.onStdout, options.onStdoutBytes);
        else if (event.type === 'stderr' && event.data !== undefined) emit(event.data, options.onStderr, options.onStderrBytes);
        else if (event.type === 'outcome') outcome = event.outcome;
        else if (event.type === 'error' && event.error) throw new AirlockApiError(event.error.code, event.error.message, 500, event.error.details ?? {});
      }
      if (done) break;
    }
    if (!outcome) throw new AirlockApiError('INTERNAL', 'the stream ended before the command finished; the server may have restarted', 502);
    return outcome;
  }
}

const textDecoder = new TextDecoder();

function emit(data: string, onText?: (text: string) => void, onBytes?: (bytes: Uint8Array) => void): void {
  const bytes = base64ToBytes(data);
  onBytes?.(bytes);
  onText?.(textDecoder.decode(bytes));
}

function replayOutput(outcome: ToolCallOutcome & { status: 'completed' }, options: RunOptions): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const text = decodeField(outcome.result, stream);
    if (!text) continue;
    const bytes = new TextEncoder().encode(text);
    if (stream === 'stdout') {
      options.onStdoutBytes?.(bytes);
      options.onStdout?.(text);
    } else {
      options.onStderrBytes?.(bytes);
      options.onStderr?.(text);
    }
  }
}

function decodeField(result: Record<string, unknown>, field: 'stdout' | 'stderr'): string {
  const data = String(result[field] ?? '');
  return result[`${field}Encoding`] === 'base64' ? textDecoder.decode(base64ToBytes(data)) : data;
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
