/**
 * A person taking over a session through a terminal: a shell on a PTY inside
 * the session's machine (the driver's `openTerminal`). While a takeover
 * lasts, every tool call of the session waits before it runs (reason
 * TAKEOVER, audited as `tool-call.waiting`) and goes on when the person hands
 * back. The whole terminal session is recorded as asciicast v2 and linked
 * from the audit (`takeover.started` / `takeover.ended`, with the person's
 * identity and the recording's sha256).
 *
 * Bounds: one takeover per session at a time; it ends when the shell exits,
 * when its holder hands back (closes the socket), when a suspend, snapshot,
 * fork or terminate needs the machine, or when the server stops. Takeovers
 * live in the server's memory: after a crash nothing stays held (the audit
 * then has a `takeover.started` without its end).
 */
import { EventEmitter } from 'node:events';
import { AirlockError, isAirlockError, toAirlockError } from './errors.js';
import { newId } from './ids.js';
import type { Store } from './store.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { SessionService } from './session-service.js';
import type { SandboxTerminal } from './sandbox-driver.js';
import type { SessionRecord } from './session.js';
import type { TerminalRecordings } from './terminal-recordings.js';
import { AsciicastRecorder } from './asciicast-recorder.js';
import { systemClock, type Clock } from './clock.js';

/** The shell a takeover runs: bash when the image has it, else sh; a login shell, in the workspace. */
export const TAKEOVER_SHELL = ['/bin/sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -l; else exec sh -l; fi'];
/** The environment the shell gets besides the agent's own. */
export const TAKEOVER_ENVIRONMENT: Record<string, string> = { TERM: 'xterm-256color', LANG: 'C.UTF-8' };
/** Smallest and largest terminal side accepted, in characters. */
export const TERMINAL_SIZE_LIMITS = { min: 1, maxColumns: 1000, maxRows: 500 } as const;

/** A takeover as the API shows it. */
export interface TerminalTakeover {
  id: string;
  sessionId: string;
  /** the person: `console:NAME` or `token:NAME` */
  by: string;
  /** the program it came through (`console`, `cli`, `sdk`, …) as the client said */
  client: string;
  startedAt: string;
  /** where the recording is downloaded */
  recording: string;
}

/** Why a takeover ended. */
export type TakeoverEndReason = 'exited' | 'handed-back' | 'machine-stopped' | 'server-stopped' | 'failed';

/** How a takeover ended. */
export interface TerminalEnd {
  reason: TakeoverEndReason;
  /** the shell's exit code, when it exited */
  exitCode: number | null;
  /** what went wrong, for `failed` */
  error?: AirlockError;
}

/** An open takeover terminal, as its holder drives it. */
export interface OpenTerminal {
  readonly takeover: TerminalTakeover;
  /** Sends keystrokes (recorded as input). */
  write(bytes: Uint8Array): void;
  resize(rows: number, columns: number): void;
  /** Hears the terminal's output (recorded as output); output before the first listener is kept for it. */
  onOutput(listener: (chunk: Buffer) => void): void;
  /** Stops reading the shell's output until `resume` (a slow reader). */
  pause(): void;
  resume(): void;
  /** Settles once the takeover ended and its end is in the audit. */
  readonly ended: Promise<TerminalEnd>;
  /** Hands the session back: ends the shell and waits for the end. */
  handBack(): Promise<TerminalEnd>;
}

/** What opening a terminal needs. */
export interface OpenTerminalRequest {
  by: string;
  client: string;
  rows: number;
  columns: number;
}

/** Collaborators of the takeover service. */
export interface TerminalTakeoversOptions {
  store: Store;
  audit: AuditLog;
  sessions: SessionService;
  recordings: TerminalRecordings;
  clock?: Clock;
}

/** One takeover in progress. */
interface ActiveTakeover {
  takeover: TerminalTakeover;
  /** ends the shell, telling why; `onlyIfOpen`: leave a takeover whose shell is still opening alone (its own wake-up) */
  stop(reason: TakeoverEndReason, onlyIfOpen?: boolean): void;
  /** true once it is being ended (its shell stopping, its end being audited) */
  ending(): boolean;
  ended: Promise<TerminalEnd>;
}

/** Opens takeover terminals and holds the session's calls while one lasts. */
export class TerminalTakeovers {
  private readonly active = new Map<string, ActiveTakeover>();
  private readonly events = new EventEmitter();
  private readonly clock: Clock;

  constructor(private readonly options: TerminalTakeoversOptions) {
    this.clock = options.clock ?? systemClock;
    this.events.setMaxListeners(0);
    // A terminal would otherwise hold a suspend, snapshot, fork or terminate off for as long as it is open.
    options.sessions.locks.whenExclusiveWaits((sessionId) => this.active.get(sessionId)?.stop('machine-stopped', true));
  }

  /** The session's takeover in progress, if any. */
  current(sessionId: string): TerminalTakeover | undefined {
    return this.active.get(sessionId)?.takeover;
  }

  /** Waits for a takeover of the session that is being handed back to finish ending (a client that closes and opens again at once). */
  async settle(sessionId: string): Promise<void> {
    const entry = this.active.get(sessionId);
    if (entry?.ending()) await entry.ended;
  }

  /**
   * Throws what stops a terminal on this session: no session (SESSION_NOT_FOUND),
   * one another server runs (SESSION_NOT_OWNED), no machine (INVALID_STATE), or
   * a driver without PTYs (NOT_AVAILABLE).
   */
  async checkAvailable(sessionId: string): Promise<SessionRecord> {
    // A session another server runs is answered SESSION_NOT_OWNED here, before anything is audited.
    const session = await this.options.sessions.getOwned(sessionId);
    if (session.mode !== 'machine') {
      throw new AirlockError(
        'INVALID_STATE',
        `session ${session.id} runs each call in a fresh sandbox, so it has no machine to open a terminal in; create the session with --mode machine`,
        {
          details: { sessionId: session.id, mode: session.mode },
        },
      );
    }
    if (session.state === 'terminated' || session.state === 'failed') {
      throw new AirlockError('INVALID_STATE', `session ${session.id} is ${session.state}: its machine is gone, so there is no terminal to open`, {
        details: { sessionId: session.id, state: session.state },
      });
    }
    const driver = this.options.sessions.drivers.forSession(session);
    if (!driver.capabilities.terminal) {
      throw new AirlockError(
        'NOT_AVAILABLE',
        `session ${session.id} runs on the ${driver.name} driver, which offers no terminal (its capabilities say terminal: false); use \`airlock exec ${session.id} -- COMMAND\` instead`,
        {
          details: { sessionId: session.id, driver: driver.name, capability: 'terminal' },
        },
      );
    }
    return session;
  }

  /** Opens a shell on a PTY in the session's machine (waking it), and holds the session's calls until the end. */
  async open(sessionId: string, request: OpenTerminalRequest): Promise<OpenTerminal> {
    const session = await this.checkAvailable(sessionId);
    const holder = this.active.get(session.id);
    if (holder) {
      throw new AirlockError(
        'INVALID_STATE',
        `session ${session.id} is already taken over by ${holder.takeover.by} (takeover ${holder.takeover.id}); wait until it is handed back`,
        {
          details: { sessionId: session.id, takeoverId: holder.takeover.id, by: holder.takeover.by },
        },
      );
    }
    const id = newId('tty');
    const startedAt = this.clock.now();
    const takeover: TerminalTakeover = {
      id,
      sessionId: session.id,
      by: request.by,
      client: request.client,
      startedAt: startedAt.toISOString(),
      recording: `/v1/sessions/${encodeURIComponent(session.id)}/terminal/recordings/${id}`,
    };
    // Held from here on: a call arriving while the machine wakes already waits.
    let stopReason: TakeoverEndReason | undefined;
    let finishing = false;
    let terminal: SandboxTerminal | undefined;
    const stop = (reason: TakeoverEndReason, onlyIfOpen = false) => {
      if (onlyIfOpen && !terminal) return;
      stopReason ??= reason;
      terminal?.stream.destroy();
    };
    let settle!: (end: TerminalEnd) => void;
    const ended = new Promise<TerminalEnd>((resolve) => (settle = resolve));
    this.active.set(session.id, { takeover, stop, ending: () => stopReason !== undefined || finishing, ended });

    let recorder: AsciicastRecorder | undefined;
    const finish = async (end: TerminalEnd): Promise<void> => {
      finishing = true;
      const written = recorder ? await recorder.finish().catch(() => undefined) : undefined;
      if (this.active.get(session.id)?.takeover.id === id) this.active.delete(session.id);
      await this.options.audit
        .appendNow(this.options.store, {
          sessionId: session.id,
          type: 'takeover.ended',
          data: {
            takeoverId: id,
            by: takeover.by,
            client: takeover.client,
            reason: end.reason,
            exitCode: end.exitCode,
            ...(end.error ? { code: end.error.code, message: end.error.message } : {}),
            durationMs: Date.now() - startedAt.getTime(),
            recording: takeover.recording,
            ...(written ? { recordingBytes: written.bytes, recordingSha256: written.sha256, recordingTruncated: recorder?.truncated ?? false } : {}),
          },
        })
        .catch(() => undefined);
      this.events.emit(`handed-back:${session.id}`);
      settle(end);
    };

    const listeners: ((chunk: Buffer) => void)[] = [];
    const early: Buffer[] = [];
    let opened!: (value: SandboxTerminal) => void;
    let failedToOpen!: (error: unknown) => void;
    const ready = new Promise<SandboxTerminal>((resolve, reject) => {
      opened = resolve;
      failedToOpen = reject;
    });
    try {
      await this.options.audit.appendNow(this.options.store, {
        sessionId: session.id,
        type: 'takeover.started',
        data: { takeoverId: id, by: takeover.by, client: takeover.client, rows: request.rows, columns: request.columns, recording: takeover.recording },
      });
      const sink = await this.options.recordings.create(session.id, id);
      recorder = new AsciicastRecorder(sink, {
        columns: request.columns,
        rows: request.rows,
        startedAt,
        title: `takeover ${id} of session ${session.id} by ${takeover.by}`,
        env: { ...TAKEOVER_ENVIRONMENT, SHELL: '/bin/bash' },
      });
    } catch (error) {
      await finish({ reason: 'failed', exitCode: null, error: toAirlockError(error) });
      throw error;
    }
    const activeRecorder = recorder;
    const held = this.options.sessions.withMachine(
      session.id,
      async (handle) => {
        if (stopReason) throw new AirlockError('INVALID_STATE', `the takeover of session ${session.id} ended before its terminal opened`);
        const driver = this.options.sessions.drivers.forHandle(handle);
        terminal = await driver.openTerminal(handle, {
          argv: TAKEOVER_SHELL,
          cwd: '/workspace',
          env: TAKEOVER_ENVIRONMENT,
          rows: request.rows,
          columns: request.columns,
        });
        terminal.stream.on('data', (chunk: Buffer) => {
          activeRecorder.output(chunk);
          if (listeners.length === 0) early.push(chunk);
          for (const listener of listeners) listener(chunk);
        });
        terminal.stream.on('error', () => undefined);
        opened(terminal);
        if (stopReason) terminal.stream.destroy();
        const outcome = await terminal.exited.catch(() => undefined);
        return outcome?.exitCode ?? null;
      },
      { reason: 'takeover' },
    );
    held.then(
      ({ result: exitCode }) => finish(stopReason ? { reason: stopReason, exitCode } : { reason: 'exited', exitCode }),
      (error: unknown) => {
        failedToOpen(error);
        const failure = toAirlockError(error, 'DRIVER_FAILED');
        return finish(
          stopReason && !isAirlockError(error, 'SANDBOX_DIED') ? { reason: stopReason, exitCode: null } : { reason: 'failed', exitCode: null, error: failure },
        );
      },
    );
    const shell = await ready;
    return {
      takeover,
      ended,
      write: (bytes) => {
        activeRecorder.input(bytes);
        shell.stream.write(bytes);
      },
      resize: (rows, columns) => {
        activeRecorder.resize(columns, rows);
        shell.resize(rows, columns);
      },
      onOutput: (listener) => {
        listeners.push(listener);
        for (const chunk of early.splice(0)) listener(chunk);
      },
      pause: () => shell.stream.pause(),
      resume: () => shell.stream.resume(),
      handBack: () => {
        stop('handed-back');
        return ended;
      },
    };
  }

  /** The asciicast recording of a takeover of the session; NOT_FOUND when there is none. */
  async recording(sessionId: string, takeoverId: string): Promise<Buffer> {
    const session = await this.options.sessions.get(sessionId);
    const bytes = await this.options.recordings.get(session.id, takeoverId);
    if (!bytes) {
      throw new AirlockError(
        'NOT_FOUND',
        `session ${session.id} has no terminal recording ${takeoverId}; the audit's takeover.started and takeover.ended records name the recordings it has`,
        {
          details: { sessionId: session.id, takeoverId },
        },
      );
    }
    return bytes;
  }

  /** Resolves at once when nobody holds the session, else when it is handed back; `onWaiting` hears about the wait first. */
  async waitForHandBack(sessionId: string, options: { signal?: AbortSignal; onWaiting?: (reason: 'TAKEOVER') => void } = {}): Promise<void> {
    if (!this.active.has(sessionId)) return;
    options.onWaiting?.('TAKEOVER');
    while (this.active.has(sessionId)) {
      await new Promise<void>((resolve, reject) => {
        const name = `handed-back:${sessionId}`;
        const done = () => {
          options.signal?.removeEventListener('abort', aborted);
          resolve();
        };
        const aborted = () => {
          this.events.off(name, done);
          reject(new AirlockError('INVALID_REQUEST', `the caller went away while session ${sessionId} was taken over`));
        };
        this.events.once(name, done);
        options.signal?.addEventListener('abort', aborted, { once: true });
      });
    }
  }

  /** Ends every takeover (server shutdown) and waits until their ends are audited. */
  async close(): Promise<void> {
    const open = [...this.active.values()];
    for (const entry of open) entry.stop('server-stopped');
    await Promise.all(open.map((entry) => entry.ended));
  }
}
