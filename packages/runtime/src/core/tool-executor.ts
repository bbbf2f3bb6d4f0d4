/**
 * The execute and check steps of the pipeline: runs an authorized call on the
 * session (its machine, or a fresh per-call sandbox) and shapes the result
 * (bounded output, valid encoding, timing).
 */
import { AirlockError } from './errors.js';
import type { AuthorizationContext } from './authorizer.js';
import type { ExecRequest, SandboxHandle } from './sandbox-driver.js';
import type { SessionService } from './session-service.js';
import type { SessionRecord } from './session.js';
import type { ToolCall } from './tool-call.js';
import type { DesktopTools } from './desktop-tools.js';
import type { DesktopAction } from './desktop-action-schema.js';
import { decodeContent, type ToolArguments } from './tool-schemas.js';
import { FileOperations } from './file-operations.js';
import { OutputCollector, encodeOutput } from './output-collector.js';
import { DETACHED_LOG_DIR } from './detached-command.js';
import { newId } from './ids.js';
import type { LineageTools } from './lineage-tools.js';
import type { CallTiming } from './tool-call-outcome.js';
import type { WakeReason } from './machine-hibernation.js';

/** Timing of a call (defined with the outcome it is part of). */
export type { CallTiming };

/** Longest a per-call command may run when the contract does not say (`perCall.maxSeconds`). */
export const DEFAULT_PER_CALL_MAX_SECONDS = 600;

/** Where a call's output goes while it runs. */
export interface ExecutionStreams {
  signal?: AbortSignal;
  /** told when the call has to wait before it can run (a desktop taken over by a person) */
  onWaiting?: (reason: 'TAKEOVER') => void;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
}

/** Runs tools on sessions. */
export class ToolExecutor {
  constructor(
    private readonly sessions: SessionService,
    private readonly lineage: LineageTools,
    private readonly desktop: DesktopTools,
  ) {}

  /** File operations through the session's driver. */
  private filesOf(session: SessionRecord): FileOperations {
    return new FileOperations(this.sessions.driverOf(session));
  }

  /** The canonical path as the session's sandbox resolves it. */
  async canonicalPath(session: SessionRecord, lexicalPath: string, followLast: boolean, wake: WakeReason): Promise<string> {
    const { result } = await this.onSession(session, wake, (handle) => this.filesOf(session).canonical(handle, lexicalPath, followLast));
    return result;
  }

  /** Executes the call and returns its checked result. `failed` feeds the runaway breaker. */
  async run(
    session: SessionRecord,
    call: ToolCall,
    context: AuthorizationContext,
    streams: ExecutionStreams,
    receivedAt: Date,
    wake: WakeReason,
  ): Promise<{ result: Record<string, unknown>; timing: CallTiming; failed: boolean }> {
    const tool = call.tool;
    const rawArgs = call.arguments;
    const started = Date.now();
    const queuedMs = Math.max(0, started - receivedAt.getTime());
    const finish = (result: Record<string, unknown>, resumeMs: number, runMs: number, failed: boolean, startMs = 0) => ({
      result,
      failed,
      timing: { queuedMs, resumeMs, startMs, runMs, totalMs: Date.now() - receivedAt.getTime() },
    });
    const path = context.path;
    switch (tool) {
      case 'exec': {
        const args = rawArgs as ToolArguments<'exec'>;
        const ephemeral = session.mode === 'per-call' || args.ephemeral;
        if (args.detach && ephemeral) {
          throw new AirlockError('INVALID_ARGUMENTS', `a per-call sandbox ends with its call, so nothing can run detached in it; start services on the machine of a session created with --mode machine`, {
            details: { field: 'detach', sessionId: session.id, mode: session.mode },
          });
        }
        const stdout = new OutputCollector();
        const stderr = new OutputCollector();
        const logPath = args.detach ? `${DETACHED_LOG_DIR}/${newId('proc')}.log` : undefined;
        const argv = args.argv ?? ['/bin/sh', '-c', args.command ?? ''];
        // A per-call sandbox lives at most as long as the contract allows, whatever the call asked for.
        const limitMs = ephemeral ? perCallLimitMs(session) : undefined;
        const timeoutMs = limitMs === undefined ? args.timeoutMs : Math.min(args.timeoutMs, limitMs);
        const request: ExecRequest = {
          argv,
          cwd: context.cwd,
          env: args.env,
          timeoutMs,
          onStdout: (chunk) => {
            stdout.push(chunk);
            streams.onStdout?.(chunk);
          },
          onStderr: (chunk) => {
            stderr.push(chunk);
            streams.onStderr?.(chunk);
          },
        };
        if (args.stdin !== undefined) request.stdin = decodeContent(args.stdin, args.stdinEncoding);
        if (logPath) request.detach = { logPath };
        if (streams.signal) request.signal = streams.signal;
        let resumeMs = 0;
        const outcome = ephemeral
          ? await this.sessions.runEphemeral(session.id, request)
          : await this.sessions.withMachine(session.id, (handle) => this.sessions.drivers.forHandle(handle).exec(handle, request), wake).then((r) => {
              resumeMs = r.resumeMs;
              return r.result;
            });
        const out = encodeOutput(stdout.bytes(), stdout.truncated);
        const err = encodeOutput(stderr.bytes(), stderr.truncated);
        const result = {
          exitCode: outcome.exitCode,
          stdout: out.data,
          stdoutEncoding: out.encoding,
          stdoutTruncated: stdout.truncated,
          stdoutBytes: stdout.total,
          stderr: err.data,
          stderrEncoding: err.encoding,
          stderrTruncated: stderr.truncated,
          stderrBytes: stderr.total,
          timedOut: outcome.timedOut,
          aborted: outcome.aborted,
          mode: ephemeral ? 'per-call' : 'machine',
          ...(limitMs !== undefined && limitMs < args.timeoutMs && outcome.timedOut
            ? { limitedBy: 'contract.perCall.maxSeconds', maxDurationMs: limitMs }
            : {}),
          ...(logPath && outcome.exitCode === 0 ? { detached: true, pid: outcome.pid ?? null, logPath } : {}),
        };
        const startMs = Math.min(outcome.startMs ?? 0, outcome.durationMs);
        return finish(result, resumeMs, outcome.durationMs - startMs, outcome.exitCode !== 0, startMs);
      }
      case 'files.read': {
        const args = rawArgs as ToolArguments<'files.read'>;
        const { result: read, resumeMs } = await this.onSession(session, wake, (handle) => this.filesOf(session).read(handle, path, args.maxBytes));
        const encoded = args.encoding === 'base64' ? { data: read.content.toString('base64'), encoding: 'base64' as const } : encodeOutput(read.content, read.truncated);
        return finish({ path, content: encoded.data, encoding: encoded.encoding, size: read.size, bytes: read.content.length, truncated: read.truncated }, resumeMs, Date.now() - started, false);
      }
      case 'files.write': {
        const args = rawArgs as ToolArguments<'files.write'>;
        const content = decodeContent(args.content, args.encoding);
        const { resumeMs } = await this.onSession(session, wake, (handle) => this.filesOf(session).write(handle, path, content, { createParents: args.createParents }));
        return finish({ path, bytes: content.length }, resumeMs, Date.now() - started, false);
      }
      case 'files.edit': {
        const args = rawArgs as ToolArguments<'files.edit'>;
        const { result: replacements, resumeMs } = await this.onSession(session, wake, async (handle) => {
          const read = await this.filesOf(session).read(handle, path, 64 * 1024 * 1024);
          if (read.truncated) throw new AirlockError('PAYLOAD_TOO_LARGE', `${path} is larger than 64 MiB; edit it with exec instead`, { details: { path } });
          const text = read.content.toString('utf8');
          const count = text.split(args.oldString).length - 1;
          if (count === 0) throw new AirlockError('EDIT_NO_MATCH', `oldString was not found in ${path}; read the file and copy the text exactly`, { details: { path } });
          if (count > 1 && !args.replaceAll) {
            throw new AirlockError('EDIT_AMBIGUOUS', `oldString occurs ${count} times in ${path}; add surrounding lines to make it unique, or pass replaceAll`, { details: { path, occurrences: count } });
          }
          const next = args.replaceAll ? text.split(args.oldString).join(args.newString) : text.replace(args.oldString, () => args.newString);
          await this.filesOf(session).write(handle, path, Buffer.from(next, 'utf8'), { createParents: false });
          return count;
        });
        return finish({ path, replacements }, resumeMs, Date.now() - started, false);
      }
      case 'files.list': {
        const { result: entries, resumeMs } = await this.onSession(session, wake, (handle) => this.filesOf(session).list(handle, path));
        return finish({ path, entries }, resumeMs, Date.now() - started, false);
      }
      case 'files.stat': {
        const { result: info, resumeMs } = await this.onSession(session, wake, (handle) => this.filesOf(session).stat(handle, path));
        return finish({ ...info }, resumeMs, Date.now() - started, false);
      }
      case 'files.remove': {
        const args = rawArgs as ToolArguments<'files.remove'>;
        const { resumeMs } = await this.onSession(session, wake, (handle) => this.filesOf(session).remove(handle, path, args.recursive));
        return finish({ path, removed: true }, resumeMs, Date.now() - started, false);
      }
      case 'files.mkdir': {
        const { resumeMs } = await this.onSession(session, wake, (handle) => this.filesOf(session).mkdir(handle, path));
        return finish({ path, created: true }, resumeMs, Date.now() - started, false);
      }
      case 'snapshot': {
        const result = await this.lineage.snapshot(session, rawArgs as ToolArguments<'snapshot'>);
        return finish(result, 0, Date.now() - started, false);
      }
      case 'fork': {
        const { result, failed } = await this.lineage.fork(session, rawArgs as ToolArguments<'fork'>);
        return finish(result, 0, Date.now() - started, failed);
      }
      case 'desktop.screenshot': {
        const { result, resumeMs } = await this.desktop.screenshot(session, call.id);
        return finish(result, resumeMs, Date.now() - started - resumeMs, false);
      }
      case 'desktop.act': {
        const waiting = { since: 0 };
        const { result, resumeMs } = await this.desktop.act(session, rawArgs as DesktopAction, {
          ...(streams.signal ? { signal: streams.signal } : {}),
          onWaiting: (reason) => {
            waiting.since = Date.now();
            streams.onWaiting?.(reason);
          },
        });
        const waitedMs = waiting.since === 0 ? 0 : Date.now() - waiting.since;
        return finish(waitedMs > 0 ? { ...result, takeoverWaitMs: waitedMs } : result, resumeMs, Date.now() - started - resumeMs, false);
      }
    }
  }

  /**
   * Runs file work on the session: on its machine, or in a fresh sandbox over
   * its disk for per-call sessions and for failed ones (whose machine is gone).
   */
  private async onSession<T>(session: SessionRecord, wake: WakeReason, work: (handle: SandboxHandle) => Promise<T>): Promise<{ result: T; resumeMs: number }> {
    if (session.mode === 'per-call' || session.state === 'failed') {
      return { result: await this.sessions.withScratchSandbox(session.id, work), resumeMs: 0 };
    }
    return this.sessions.withMachine(session.id, (handle) => work(handle), wake);
  }
}

/** The contract's ceiling on a per-call command, in milliseconds (older stored contracts lack the key). */
export function perCallLimitMs(session: Pick<SessionRecord, 'contract'>): number {
  const perCall = session.contract.perCall as { maxSeconds?: number } | undefined;
  return (perCall?.maxSeconds ?? DEFAULT_PER_CALL_MAX_SECONDS) * 1000;
}
