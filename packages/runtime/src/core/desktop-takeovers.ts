/**
 * A person taking over a session's desktop from its agent. While a takeover
 * lasts, the agent's desktop actions wait (reason TAKEOVER) and only the
 * person's live view may send input; the takeover is recorded: frames of the
 * screen a few times a second and every input event the person sent, kept
 * with the session's thumbnails and linked from the audit
 * (`desktop.takeover-started` / `desktop.takeover-ended`).
 *
 * Takeovers live in the server's memory (their frames on disk): a restart
 * of the control plane hands every desktop back, and the audit then has a
 * `desktop.takeover-started` without its end (docs/desktop.md, known limits).
 */
import { EventEmitter } from 'node:events';
import { AirlockError } from './errors.js';
import { newId } from './ids.js';
import type { Store } from './store.js';
import type { AuditLog } from '../audit/audit-log.js';
import type { ThumbnailStore } from './screen-thumbnails.js';
import { encodePng, shrink, type ScreenPixels } from './screen-image.js';
import { systemClock, type Clock } from './clock.js';

/** One input event a person sent through the live view during a takeover. */
export interface TakeoverInputEvent {
  /** milliseconds since the takeover began */
  atMs: number;
  kind: 'pointer' | 'key';
  /** pointer: x, y and the button mask; key: the X keysym and whether it went down */
  x?: number;
  y?: number;
  buttons?: number;
  keysym?: number;
  down?: boolean;
}

/** A takeover and its recording. */
export interface Takeover {
  id: string;
  sessionId: string;
  by: string;
  startedAt: string;
  endedAt: string | null;
  /** names of the recorded frames (PNG, in the thumbnail store), with when each was taken */
  frames: { name: string; atMs: number }[];
  inputEvents: TakeoverInputEvent[];
  /** true when the recording stopped early at its bounds (frames or events) */
  truncated: boolean;
}

/** Options of the takeover service. */
export interface DesktopTakeoversOptions {
  store: Store;
  audit: AuditLog;
  frames: ThumbnailStore;
  /** the screen of a session now */
  capture: (sessionId: string) => Promise<ScreenPixels>;
  clock?: Clock;
  /** between frames; default 500 ms (2 a second) */
  frameIntervalMs?: number;
}

/** Most frames and input events one recording keeps. */
export const MAX_TAKEOVER_FRAMES = 1200;
/** Most input events one recording keeps. */
export const MAX_TAKEOVER_EVENTS = 20_000;
/** Largest side of a recorded frame, in pixels. */
export const TAKEOVER_FRAME_MAX_SIDE = 640;
/** Takeovers kept in memory per session after they end, newest last. */
const ENDED_KEPT = 20;

/** Takes desktops over and hands them back. */
export class DesktopTakeovers {
  private readonly active = new Map<string, { takeover: Takeover; started: number; timer: NodeJS.Timeout | undefined; capturing: Promise<void> }>();
  private readonly ended = new Map<string, Takeover[]>();
  private readonly events = new EventEmitter();
  private readonly clock: Clock;
  private readonly intervalMs: number;

  constructor(private readonly options: DesktopTakeoversOptions) {
    this.clock = options.clock ?? systemClock;
    this.intervalMs = options.frameIntervalMs ?? 500;
    this.events.setMaxListeners(0);
  }

  /** The session's takeover in progress, if any. */
  current(sessionId: string): Takeover | undefined {
    return this.active.get(sessionId)?.takeover;
  }

  /** A takeover of the session, in progress or among the last ended ones; NOT_FOUND otherwise. */
  get(sessionId: string, takeoverId: string): Takeover {
    const found = this.current(sessionId)?.id === takeoverId ? this.current(sessionId) : this.ended.get(sessionId)?.find((takeover) => takeover.id === takeoverId);
    if (!found) throw new AirlockError('NOT_FOUND', `takeover ${takeoverId} of session ${sessionId} is not known to this server (recordings are kept in memory for the last ${ENDED_KEPT} takeovers)`, { details: { takeoverId } });
    return found;
  }

  /** Starts a takeover by `by`; INVALID_STATE when someone already holds the desktop. */
  async begin(sessionId: string, by: string): Promise<Takeover> {
    const holder = this.current(sessionId);
    if (holder) {
      throw new AirlockError('INVALID_STATE', `the desktop of session ${sessionId} is already taken over by ${holder.by} (takeover ${holder.id}); wait until it is handed back`, {
        details: { sessionId, takeoverId: holder.id, by: holder.by },
      });
    }
    const takeover: Takeover = { id: newId('tko'), sessionId, by, startedAt: this.clock.now().toISOString(), endedAt: null, frames: [], inputEvents: [], truncated: false };
    const entry = { takeover, started: Date.now(), timer: undefined as NodeJS.Timeout | undefined, capturing: Promise.resolve() };
    this.active.set(sessionId, entry);
    await this.options.audit.appendNow(this.options.store, { sessionId, type: 'desktop.takeover-started', data: { takeoverId: takeover.id, by } });
    const tick = () => {
      entry.capturing = this.recordFrame(entry).finally(() => {
        if (this.active.get(sessionId) === entry) entry.timer = setTimeout(tick, this.intervalMs);
      });
    };
    tick();
    return takeover;
  }

  /** Hands the desktop back: waiting agent actions go on. INVALID_STATE when there is no takeover (or another one). */
  async end(sessionId: string, takeoverId?: string): Promise<Takeover> {
    const entry = this.active.get(sessionId);
    if (!entry || (takeoverId !== undefined && entry.takeover.id !== takeoverId)) {
      throw new AirlockError('INVALID_STATE', `the desktop of session ${sessionId} is not taken over${takeoverId ? ` by takeover ${takeoverId}` : ''}; nothing to hand back`, {
        details: { sessionId, ...(takeoverId ? { takeoverId } : {}) },
      });
    }
    this.active.delete(sessionId);
    clearTimeout(entry.timer);
    await entry.capturing;
    const takeover = entry.takeover;
    takeover.endedAt = this.clock.now().toISOString();
    const kept = [...(this.ended.get(sessionId) ?? []), takeover].slice(-ENDED_KEPT);
    this.ended.set(sessionId, kept);
    await this.options.audit.appendNow(this.options.store, {
      sessionId,
      type: 'desktop.takeover-ended',
      data: {
        takeoverId: takeover.id,
        by: takeover.by,
        frames: takeover.frames.length,
        inputEvents: takeover.inputEvents.length,
        truncated: takeover.truncated,
        recording: `/v1/sessions/${sessionId}/desktop/takeovers/${takeover.id}`,
      },
    });
    this.events.emit(`handed-back:${sessionId}`);
    return takeover;
  }

  /** Records one input event of the person holding the desktop. */
  recordInput(sessionId: string, event: Omit<TakeoverInputEvent, 'atMs'>): void {
    const entry = this.active.get(sessionId);
    if (!entry) return;
    if (entry.takeover.inputEvents.length >= MAX_TAKEOVER_EVENTS) {
      entry.takeover.truncated = true;
      return;
    }
    entry.takeover.inputEvents.push({ atMs: Date.now() - entry.started, ...event });
  }

  /** Resolves at once when nobody holds the desktop, else when it is handed back; `onWaiting` hears about the wait first. */
  async waitForHandBack(sessionId: string, options: { signal?: AbortSignal; onWaiting?: (reason: 'TAKEOVER') => void } = {}): Promise<void> {
    if (!this.active.has(sessionId)) return;
    options.onWaiting?.('TAKEOVER');
    await new Promise<void>((resolve, reject) => {
      const name = `handed-back:${sessionId}`;
      const done = () => {
        options.signal?.removeEventListener('abort', aborted);
        resolve();
      };
      const aborted = () => {
        this.events.off(name, done);
        reject(new AirlockError('INVALID_REQUEST', `the caller went away while the desktop of session ${sessionId} was taken over`));
      };
      this.events.once(name, done);
      options.signal?.addEventListener('abort', aborted, { once: true });
    });
  }

  /** Hands back every desktop (server shutdown). */
  async close(): Promise<void> {
    for (const sessionId of [...this.active.keys()]) await this.end(sessionId).catch(() => undefined);
  }

  private async recordFrame(entry: { takeover: Takeover; started: number }): Promise<void> {
    const { takeover } = entry;
    if (takeover.frames.length >= MAX_TAKEOVER_FRAMES) {
      takeover.truncated = true;
      return;
    }
    try {
      const screen = await this.options.capture(takeover.sessionId);
      const atMs = Date.now() - entry.started;
      const name = `${takeover.id}-${String(takeover.frames.length).padStart(5, '0')}`;
      await this.options.frames.put(takeover.sessionId, name, await encodePng(shrink(screen, TAKEOVER_FRAME_MAX_SIDE, TAKEOVER_FRAME_MAX_SIDE)));
      takeover.frames.push({ name, atMs });
    } catch {
      // A frame that could not be taken (the machine asleep, a slow capture) is a gap in the recording, not a failure.
    }
  }
}
