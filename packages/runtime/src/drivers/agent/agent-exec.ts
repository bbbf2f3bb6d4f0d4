/**
 * One command through the agent: streams its output, feeds its stdin,
 * enforces the timeout and the abort signal by killing its process group,
 * and always answers the caller, even when the agent stops answering.
 */
import { AirlockError } from '../../core/errors.js';
import type { ExecOutcome, ExecRequest } from '../../core/sandbox-driver.js';
import { Channel, ExecFlag, MessageType, Tag } from './agent-protocol.js';
import type { AgentConnection } from './agent-connection.js';
import { FieldWriter } from './frame-codec.js';

/** The exit status reported for a command that Airlock killed (128 + SIGKILL). */
export const KILLED_EXIT_CODE = 137;
/** How long after its kill a command's end may take before the agent is suspected. */
const KILL_GRACE_MS = 5_000;
/** How long the agent may take to start a command before it is suspected. */
const START_GRACE_MS = 10_000;
const SIGKILL = 9;

/** What exec needs besides the request. */
export interface AgentExecOptions {
  /** RLIMIT_NPROC of the command (the session's process limit); 0 leaves the agent's */
  processLimit: number;
  /**
   * Called when the agent is late (no start, or no end after a kill): the
   * driver checks and revives it (e.g. a stopped pid 1). Resolves true when
   * the agent answers again.
   */
  revive: () => Promise<boolean>;
}

/** The outcome, plus the pid of a detached command. */
export interface AgentExecOutcome extends ExecOutcome {
  pid?: number;
}

/** Validates what the protocol cannot carry, before anything is sent. */
export function checkExecRequest(request: Pick<ExecRequest, 'argv' | 'cwd' | 'env'>): void {
  if (request.argv.length === 0 || request.argv.some((arg) => arg.includes('\0')) || request.cwd.includes('\0')) {
    throw new AirlockError('INVALID_ARGUMENTS', 'argv must have at least one element and no argument may contain NUL');
  }
  for (const [name, value] of Object.entries(request.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name) || value.includes('\0')) {
      throw new AirlockError('INVALID_ARGUMENTS', `invalid environment variable ${JSON.stringify(name)}: names are letters, digits and '_', values have no NUL`);
    }
  }
}

/** The EXEC request's fields. */
export function execFields(request: ExecRequest, options: { processLimit: number; pty?: { rows: number; columns: number } }): Buffer {
  checkExecRequest(request);
  const fields = new FieldWriter();
  for (const arg of request.argv) fields.string(Tag.ARG, arg);
  for (const [name, value] of Object.entries(request.env)) fields.string(Tag.ENV, `${name}=${value}`);
  fields.string(Tag.CWD, request.cwd);
  let flags = 0;
  if (request.detach) {
    flags |= ExecFlag.DETACH;
    if (request.detach.logPath) fields.string(Tag.LOG_PATH, request.detach.logPath);
  } else if (options.pty) {
    flags |= ExecFlag.PTY;
    fields.int(Tag.ROWS, options.pty.rows).int(Tag.COLUMNS, options.pty.columns);
  } else if (request.stdin !== undefined && request.stdin.length > 0) {
    flags |= ExecFlag.STDIN;
  }
  fields.int(Tag.EXEC_FLAGS, flags);
  if (options.processLimit > 0) fields.int(Tag.PROCESS_LIMIT, options.processLimit);
  return fields.finish();
}

/** Runs `request` through `connection` to its end. */
export async function execThroughAgent(connection: AgentConnection, request: ExecRequest, options: AgentExecOptions): Promise<AgentExecOutcome> {
  const begun = performance.now();
  let startMs: number | undefined;
  let pid: number | undefined;
  const stream = connection.request(MessageType.EXEC, execFields(request, { processLimit: options.processLimit }), { operation: 'running' }, {
    onData: (channel, chunk) => (channel === Channel.OUTPUT ? request.onStdout : request.onStderr)?.(chunk),
    onMessage: (type, fields) => {
      if (type !== MessageType.STARTED) return;
      startMs = Math.round(performance.now() - begun);
      pid = fields.int(Tag.PID, 0);
    },
  });
  if (request.stdin !== undefined && request.stdin.length > 0 && !request.detach) {
    void stream.write(request.stdin).then(() => stream.endInput());
  }

  let stopReason: 'timeout' | 'abort' | undefined;
  const timers: NodeJS.Timeout[] = [];
  let gaveUp: (() => void) | undefined;
  const givenUp = new Promise<'given-up'>((resolve) => (gaveUp = () => resolve('given-up')));
  const stop = (reason: 'timeout' | 'abort'): void => {
    if (stopReason || stream.finished) return;
    stopReason = reason;
    stream.control(MessageType.SIGNAL, new FieldWriter().int(Tag.SIGNAL, SIGKILL).finish());
    timers.push(
      setTimeout(() => {
        // The agent did not report the end of a killed command: maybe it is stopped. Revive it once, then give up.
        void options.revive().then((answering) => {
          if (answering) stream.control(MessageType.SIGNAL, new FieldWriter().int(Tag.SIGNAL, SIGKILL).finish());
          timers.push(setTimeout(() => gaveUp?.(), answering ? KILL_GRACE_MS : 0));
        });
      }, KILL_GRACE_MS),
    );
  };
  const onAbort = (): void => stop('abort');
  timers.push(setTimeout(() => stop('timeout'), Math.max(1, request.timeoutMs)));
  if (request.signal?.aborted) stop('abort');
  else request.signal?.addEventListener('abort', onAbort, { once: true });
  // Not started in time: the agent may be stopped (kill -STOP 1); revive it or fail the call.
  timers.push(
    setTimeout(() => {
      if (startMs !== undefined || stream.finished || stopReason) return;
      void options.revive().then((answering) => {
        if (!answering && !stream.finished && startMs === undefined) gaveUp?.();
      });
    }, START_GRACE_MS),
  );

  try {
    const ended = await Promise.race([stream.done, givenUp]);
    const durationMs = Math.round(performance.now() - begun);
    if (ended === 'given-up') {
      stream.cancel();
      if (stopReason) return { exitCode: KILLED_EXIT_CODE, timedOut: stopReason === 'timeout', aborted: stopReason === 'abort', durationMs, ...(startMs === undefined ? {} : { startMs }) };
      throw new AirlockError('SANDBOX_NOT_ANSWERING', `the agent in ${connection.label} did not start the command within ${START_GRACE_MS} ms and does not answer`, {
        details: { reason: 'exec-timeout' },
      });
    }
    const { type, fields } = ended;
    const exitCode = type === MessageType.OK ? 0 : fields.int(Tag.EXIT_CODE);
    if (type === MessageType.OK) pid = fields.int(Tag.PID, pid ?? 0);
    return {
      exitCode: stopReason ? KILLED_EXIT_CODE : exitCode,
      timedOut: stopReason === 'timeout',
      aborted: stopReason === 'abort',
      durationMs,
      ...(startMs === undefined ? {} : { startMs }),
      ...(request.detach && type === MessageType.OK && pid ? { pid } : {}),
    };
  } finally {
    for (const timer of timers) clearTimeout(timer);
    request.signal?.removeEventListener('abort', onAbort);
  }
}
