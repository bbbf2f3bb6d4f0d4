/**
 * Supervises one host child (`runsc exec` or `runsc run`) that carries a
 * command: streams its output, feeds stdin, enforces the timeout and the
 * abort signal, and guarantees that the caller is answered. It resolves on
 * the child's 'exit', not on 'close': a background process inside the
 * sandbox may hold the pipes open forever, so after exit the pipes get a
 * short grace to drain and are then destroyed.
 */
import type { ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import type { ExecOutcome, ExecRequest } from '../../core/sandbox-driver.js';

/** How long the pipes may keep delivering output after the child exited. */
const DRAIN_GRACE_MS = 250;
/** After asking the sandbox to kill a command, how long before the host child is SIGKILLed. */
const KILL_GRACE_MS = 3_000;
/** Upper bound for the caller's wait after a kill, whatever the child does. */
const ANSWER_DEADLINE_MS = 10_000;

/** The exit status reported for a command that Airlock killed (128 + SIGKILL). */
export const KILLED_EXIT_CODE = 137;

/** What the supervisor needs besides the child. */
export interface SupervisionOptions {
  request: Omit<ExecRequest, 'argv' | 'cwd' | 'env'>;
  /** kills the command inside the sandbox (and its process group); may be slow or fail */
  killInSandbox: () => Promise<void>;
}

/** The outcome plus the raw exit information, for the driver's dead-sandbox check. */
export interface SupervisedOutcome extends ExecOutcome {
  /** the host signal that ended the child, when it was one */
  hostSignal: NodeJS.Signals | null;
}

/** Runs the child to its end under the request's timeout and abort signal. */
export function superviseCommand(child: ChildProcess, options: SupervisionOptions): Promise<SupervisedOutcome> {
  const { request } = options;
  const started = performance.now();
  let stopReason: 'timeout' | 'abort' | undefined;

  return new Promise<SupervisedOutcome>((resolve, reject) => {
    let settled = false;
    const timers: NodeJS.Timeout[] = [];

    const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      const outcome: SupervisedOutcome = {
        exitCode: stopReason ? KILLED_EXIT_CODE : (code ?? 128 + (signal ? (constants.signals[signal] ?? 9) : 9)),
        timedOut: stopReason === 'timeout',
        aborted: stopReason === 'abort',
        durationMs: Math.round(performance.now() - started),
        hostSignal: signal,
      };
      drainThenDestroy(child).then(() => resolve(outcome), () => resolve(outcome));
    };

    const stop = (reason: 'timeout' | 'abort'): void => {
      if (stopReason || settled) return;
      stopReason = reason;
      // The in-sandbox kill normally makes the child exit; SIGKILL of the host child is the
      // fallback, and a deadline answers the caller even if the child ignores everything.
      void Promise.race([options.killInSandbox().catch(() => undefined), delay(KILL_GRACE_MS)]).then(() => {
        if (!settled && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
      timers.push(setTimeout(() => finish(null, 'SIGKILL'), ANSWER_DEADLINE_MS));
    };
    const onAbort = (): void => stop('abort');

    child.once('error', (error) => {
      if (settled) return;
      settled = true;
      for (const timer of timers) clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.once('exit', (code, signal) => finish(code, signal));

    child.stdout?.on('data', (chunk: Buffer) => request.onStdout?.(chunk));
    child.stderr?.on('data', (chunk: Buffer) => request.onStderr?.(chunk));
    if (child.stdin) {
      // The command may exit without reading its stdin; that EPIPE is not an error of ours.
      child.stdin.on('error', () => undefined);
      child.stdin.end(request.stdin ? Buffer.from(request.stdin) : undefined);
    }

    timers.push(setTimeout(() => stop('timeout'), Math.max(1, request.timeoutMs)));
    if (request.signal?.aborted) stop('abort');
    else request.signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Waits until both output pipes ended or the grace passed, then destroys them. */
async function drainThenDestroy(child: ChildProcess): Promise<void> {
  const streams = [child.stdout, child.stderr].filter((stream) => stream !== null);
  const ended = streams.map(
    (stream) =>
      new Promise<void>((resolve) => {
        if (stream.readableEnded || stream.destroyed) resolve();
        else {
          stream.once('end', resolve);
          stream.once('close', resolve);
        }
      }),
  );
  await Promise.race([Promise.all(ended), delay(DRAIN_GRACE_MS)]);
  for (const stream of streams) stream.destroy();
  child.stdin?.destroy();
}

/** A timer that never keeps the process alive on its own (the child and its pipes do that). */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
