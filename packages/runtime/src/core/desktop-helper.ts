/**
 * The host's side of the desktop helper (desktop-helper-script.ts): runs a
 * desktop command through the helper of the session's machine, starting the
 * helper there on first use, and falls back to running the program when the
 * machine has no helper (no python3 or libxdo, no display, an old image).
 * A connection is kept between requests (opening one through the agent costs
 * 2-10 ms), never while a lifecycle operation wants the machine.
 * Whatever the helper says is parsed like any sandbox output: a bounded
 * header, a bounded body, a deadline.
 */
import type { Duplex } from 'node:stream';
import { promisify } from 'node:util';
import { inflate as inflateCallback } from 'node:zlib';
import { AirlockError, isAirlockError } from './errors.js';
import type { SandboxDriver, SandboxHandle } from './sandbox-driver.js';
import type { CollectedOutput, DesktopRunner } from './desktop-operations.js';
import { DESKTOP_HELPER_PORT, DESKTOP_HELPER_SCRIPT } from './desktop-helper-script.js';

const inflate = promisify(inflateCallback);

/** Largest answer header accepted from a helper. */
const MAX_HEADER_BYTES = 64 * 1024;
/** Largest output accepted: a screen dump of the largest screen `decodeXwd` reads, at 32 bits a pixel, with its header. */
const MAX_OUTPUT_BYTES = 7680 * 4320 * 4 + 4096;
/** Time the helper may take beyond the command's own timeout (a busy machine). */
const ANSWER_GRACE_MS = 5_000;
const START_TIMEOUT_MS = 20_000;
/** After a machine had no helper to give, the next try to start one waits this long (the image may simply have none). */
const RETRY_AFTER_MS = 60_000;
/** Machines remembered as having no helper (bounded: entries of ended machines must not pile up). */
const MAX_REMEMBERED = 1024;
/** An unused connection to a helper is closed after this long. */
const IDLE_CLOSE_MS = 10_000;
/** Unused connections kept per machine (calls at once each need their own). */
const MAX_IDLE_PER_MACHINE = 4;

/** One parsed answer of a helper. */
type HelperAnswer = { kind: 'unsupported' } | { kind: 'ran'; output: CollectedOutput };

/** Runs desktop commands through the helpers of sessions' machines. */
export class DesktopHelpers {
  /** sandbox id → when a helper could not be had there */
  private readonly missing = new Map<string, number>();
  /** sandbox id → a start in progress (two calls at once start one helper) */
  private readonly starting = new Map<string, Promise<boolean>>();
  /** sandbox id → connections to its helper between requests, and the session they belong to */
  private readonly idle = new Map<string, { sessionId: string; streams: Map<Duplex, () => void> }>();
  private readonly now: () => number;
  private readonly answerGraceMs: number;
  private readonly mayKeep: (sessionId: string) => boolean;

  /**
   * `mayKeep` says whether a connection may stay open after a request: not
   * while a lifecycle operation wants the machine (an open stream stops the
   * agent from parking for a checkpoint); `closeIdle` closes the kept ones.
   */
  constructor(options: { now?: () => number; answerGraceMs?: number; mayKeep?: (sessionId: string) => boolean } = {}) {
    this.now = options.now ?? Date.now;
    this.answerGraceMs = options.answerGraceMs ?? ANSWER_GRACE_MS;
    this.mayKeep = options.mayKeep ?? (() => true);
  }

  /** Closes the unused connections to the helpers of a session's machines (before a suspend, snapshot, fork or terminate). */
  closeIdle(sessionId: string): void {
    for (const [sandboxId, kept] of this.idle) {
      if (kept.sessionId !== sessionId) continue;
      this.idle.delete(sandboxId);
      for (const stream of kept.streams.keys()) stream.destroy();
    }
  }

  /** A runner that asks the machine's helper first and runs the program through `fallback` when there is none, or when the helper does not know the command. */
  runner(driver: SandboxDriver, handle: SandboxHandle, fallback: DesktopRunner): DesktopRunner {
    return async (request) => {
      const asked = { argv: request.argv, ...(request.shrinkTo === undefined ? {} : { shrink: request.shrinkTo }) };
      const deadlineMs = request.timeoutMs + this.answerGraceMs;
      const kept = this.takeIdle(handle.sandboxId);
      let stream = kept ?? (await this.open(driver, handle, request.env));
      if (!stream) return fallback(request);
      let answer: HelperAnswer;
      try {
        try {
          answer = await exchange(stream, asked, deadlineMs);
        } catch (error) {
          // A kept connection that ends before a single byte of answer lost its helper while idle (killed between
          // the calls, its end not seen yet): that helper never read the request, so it goes once to a new one.
          if (!kept || !isAirlockError(error) || error.details['answered'] !== false) throw error;
          stream.destroy();
          stream = await this.open(driver, handle, request.env);
          if (!stream) return fallback(request);
          answer = await exchange(stream, asked, deadlineMs);
        }
      } catch (error) {
        // The request may have run in part (a half-typed text): no second try by another way; the next call starts afresh.
        stream?.destroy();
        this.remember(handle.sandboxId);
        throw error;
      }
      this.keep(handle, stream);
      return answer.kind === 'ran' ? answer.output : fallback(request);
    };
  }

  /** A connection to the machine's helper, started if needed; undefined when the machine has none to give. */
  private async open(driver: SandboxDriver, handle: SandboxHandle, env: Record<string, string>): Promise<Duplex | undefined> {
    const failedAt = this.missing.get(handle.sandboxId);
    if (failedAt !== undefined && this.now() - failedAt < RETRY_AFTER_MS) return undefined;
    const connected = await connectOrUndefined(driver, handle);
    if (connected) return connected;
    let start = this.starting.get(handle.sandboxId);
    if (!start) {
      start = startHelper(driver, handle, env).finally(() => this.starting.delete(handle.sandboxId));
      this.starting.set(handle.sandboxId, start);
    }
    const started = (await start) ? await connectOrUndefined(driver, handle) : undefined;
    if (started) this.missing.delete(handle.sandboxId);
    else this.remember(handle.sandboxId);
    return started;
  }

  private takeIdle(sandboxId: string): Duplex | undefined {
    const kept = this.idle.get(sandboxId);
    for (const [stream, release] of kept?.streams ?? []) {
      kept?.streams.delete(stream);
      release();
      if (!stream.destroyed && stream.writable) return stream;
      stream.destroy();
    }
    return undefined;
  }

  /** Keeps a connection for the machine's next request, or closes it when that may not wait. */
  private keep(handle: SandboxHandle, stream: Duplex): void {
    let kept = this.idle.get(handle.sandboxId);
    if (!this.mayKeep(handle.sessionId) || (kept && kept.streams.size >= MAX_IDLE_PER_MACHINE)) {
      stream.destroy();
      return;
    }
    if (!kept) {
      kept = { sessionId: handle.sessionId, streams: new Map() };
      this.idle.set(handle.sandboxId, kept);
    }
    const streams = kept.streams;
    // A helper says nothing unasked: its end (it was killed) or anything it sends closes the connection at once,
    // so that the next request opens a new one (and starts a helper again) instead of failing on this one.
    const close = () => stream.destroy();
    const timer = setTimeout(close, IDLE_CLOSE_MS);
    timer.unref();
    const forget = () => {
      clearTimeout(timer);
      streams.delete(stream);
      if (streams.size === 0 && this.idle.get(handle.sandboxId)?.streams === streams) this.idle.delete(handle.sandboxId);
    };
    stream.on('data', close).on('end', close).once('close', forget);
    streams.set(stream, () => {
      clearTimeout(timer);
      stream.off('data', close).off('end', close).off('close', forget);
    });
  }

  private remember(sandboxId: string): void {
    this.missing.delete(sandboxId);
    this.missing.set(sandboxId, this.now());
    for (const oldest of this.missing.keys()) {
      if (this.missing.size <= MAX_REMEMBERED) break;
      this.missing.delete(oldest);
    }
  }
}

async function connectOrUndefined(driver: SandboxDriver, handle: SandboxHandle): Promise<Duplex | undefined> {
  try {
    const stream = await driver.connect(handle, DESKTOP_HELPER_PORT);
    // A kept connection can fail while nobody reads it (the machine ended): that must not be an unhandled error.
    stream.on('error', () => undefined);
    return stream;
  } catch (error) {
    if (isAirlockError(error, 'PORT_UNREACHABLE')) return undefined;
    throw error;
  }
}

/** Starts the helper in the machine; true once it listens (it says `ready`, or that one already runs). */
async function startHelper(driver: SandboxDriver, handle: SandboxHandle, env: Record<string, string>): Promise<boolean> {
  const stdout: Buffer[] = [];
  const outcome = await driver.exec(handle, {
    argv: ['/usr/bin/python3', '-c', 'import sys; exec(sys.stdin.read())', env['DISPLAY'] ?? ':0', String(DESKTOP_HELPER_PORT)],
    cwd: '/',
    env,
    stdin: Buffer.from(DESKTOP_HELPER_SCRIPT, 'utf8'),
    timeoutMs: START_TIMEOUT_MS,
    onStdout: (chunk) => stdout.push(chunk),
  });
  const said = Buffer.concat(stdout).toString('utf8').trim();
  return outcome.exitCode === 0 && (said === 'ready' || said === 'already running');
}

/** What the host asks a helper: a command, and for a screen dump how small it may be. */
export interface HelperRequest {
  argv: string[];
  shrink?: number;
}

/** The head of a helper's answer, checked. */
interface AnswerHeader {
  exitCode: number;
  stdoutBytes: number;
  stderr: string;
  /** the output is zlib-compressed and inflates to this many bytes */
  outputBytes?: number;
}

/** Sends one command to a helper and reads its answer, within `deadlineMs`. */
export async function exchange(stream: Duplex, request: HelperRequest, deadlineMs: number): Promise<HelperAnswer> {
  const answer = await readAnswer(stream, request, deadlineMs);
  if (answer.kind === 'unsupported') return answer;
  const expected = answer.header.outputBytes;
  if (expected === undefined) return { kind: 'ran', output: answer.output };
  let stdout: Buffer;
  try {
    stdout = await inflate(answer.output.stdout, { maxOutputLength: expected });
  } catch (error) {
    throw helperFailed(`compressed output that does not inflate to the ${expected} bytes it announced (${(error as Error).message})`);
  }
  if (stdout.length !== expected) throw helperFailed(`compressed output of ${stdout.length} bytes, not the ${expected} it announced`);
  return { kind: 'ran', output: { ...answer.output, stdout } };
}

function readAnswer(
  stream: Duplex,
  request: HelperRequest,
  deadlineMs: number,
): Promise<{ kind: 'unsupported' } | { kind: 'ran'; output: CollectedOutput; header: AnswerHeader }> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    let header: AnswerHeader | undefined;
    let headerBytes = 0;
    const finish = (error: AirlockError | undefined, answer?: { kind: 'unsupported' } | { kind: 'ran'; output: CollectedOutput; header: AnswerHeader }) => {
      clearTimeout(timer);
      stream.off('data', onData).off('end', onEnd).off('close', onEnd).off('error', onError);
      if (error || !answer) reject(error);
      else resolve(answer);
    };
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      received += chunk.length;
      if (!header) {
        const buffered = chunks.length === 1 ? chunk : Buffer.concat(chunks);
        const newline = buffered.indexOf(0x0a);
        if (newline < 0) {
          if (received > MAX_HEADER_BYTES) finish(helperFailed(`an answer header longer than ${MAX_HEADER_BYTES} bytes`));
          return;
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(buffered.subarray(0, newline).toString('utf8'));
        } catch {
          return finish(helperFailed('an answer header that is not JSON'));
        }
        const checked = checkHeader(parsed);
        if (checked === 'unsupported') return finish(undefined, { kind: 'unsupported' });
        if (typeof checked === 'string') return finish(helperFailed(checked));
        header = checked;
        headerBytes = newline + 1;
        chunks.length = 0;
        chunks.push(buffered.subarray(headerBytes));
      }
      if (received - headerBytes > header.stdoutBytes) return finish(helperFailed(`more output than the ${header.stdoutBytes} bytes it announced`));
      if (received - headerBytes === header.stdoutBytes) {
        const output: CollectedOutput = {
          exitCode: header.exitCode,
          timedOut: false,
          aborted: false,
          durationMs: Date.now() - started,
          stdout: Buffer.concat(chunks),
          stderr: Buffer.from(header.stderr, 'utf8'),
        };
        finish(undefined, { kind: 'ran', output, header });
      }
    };
    const onEnd = () => finish(helperFailed('the connection closed before the whole answer', received > 0));
    const onError = (error: Error) => finish(helperFailed(`the connection failed (${error.message})`));
    const timer = setTimeout(() => finish(helperFailed(`no whole answer within ${deadlineMs} ms`)), deadlineMs);
    stream.on('data', onData).on('end', onEnd).on('close', onEnd).on('error', onError);
    stream.write(`${JSON.stringify(request)}\n`);
  });
}

function checkHeader(value: unknown): AnswerHeader | 'unsupported' | string {
  if (typeof value !== 'object' || value === null) return 'an answer header that is not an object';
  const fields = value as Record<string, unknown>;
  if (fields['unsupported'] === true) return 'unsupported';
  const { exitCode, stdoutBytes, stderr } = fields;
  if (typeof exitCode !== 'number' || !Number.isInteger(exitCode) || exitCode < 0 || exitCode > 255) return 'an answer without an exit code from 0 to 255';
  if (typeof stdoutBytes !== 'number' || !Number.isInteger(stdoutBytes) || stdoutBytes < 0 || stdoutBytes > MAX_OUTPUT_BYTES) {
    return `an answer announcing an output size that is not from 0 to ${MAX_OUTPUT_BYTES} bytes`;
  }
  if (typeof stderr !== 'string') return 'an answer without its error text';
  const { encoding, outputBytes } = fields;
  if (encoding === undefined) return { exitCode, stdoutBytes, stderr: stderr.slice(0, 4000) };
  if (encoding !== 'zlib') return `an answer in an unknown encoding ${JSON.stringify(encoding).slice(0, 40)}`;
  if (typeof outputBytes !== 'number' || !Number.isInteger(outputBytes) || outputBytes < 0 || outputBytes > MAX_OUTPUT_BYTES) {
    return `a compressed answer announcing an output size that is not from 0 to ${MAX_OUTPUT_BYTES} bytes`;
  }
  return { exitCode, stdoutBytes, stderr: stderr.slice(0, 4000), outputBytes };
}

function helperFailed(what: string, answered = true): AirlockError {
  return new AirlockError(
    'DRIVER_FAILED',
    `the desktop helper in the session's machine gave ${what}; the next desktop call starts it again (or runs the programs without it)`,
    {
      details: { helper: true, answered },
    },
  );
}
