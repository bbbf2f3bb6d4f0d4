/**
 * The desktop tools: `desktop.screenshot` (the screen as PNG) and
 * `desktop.act` (one mouse or keyboard action). The pipeline asks `observe`
 * before it authorizes an action: the focused window's title goes into the
 * Cedar context, and a thumbnail of the screen as the agent is about to act
 * on it is kept for the audit. An action waits while a person has taken the
 * desktop over (reason TAKEOVER), and runs once it is handed back.
 */
import { createHash } from 'node:crypto';
import { AirlockError, isAirlockError } from './errors.js';
import type { SandboxHandle } from './sandbox-driver.js';
import type { SessionService } from './session-service.js';
import type { SessionRecord } from './session.js';
import type { WakeReason } from './machine-hibernation.js';
import { actionPoints, type DesktopAction } from './desktop-action-schema.js';
import { DesktopOperations, VNC_PORT, type DesktopRunner } from './desktop-operations.js';
import type { Duplex } from 'node:stream';
import { encodePng, shrink, type ScreenPixels } from './screen-image.js';
import { THUMBNAIL_MAX_SIDE, type ThumbnailReference, type ThumbnailStore } from './screen-thumbnails.js';
import type { DesktopTakeovers } from './desktop-takeovers.js';
import { desktopSize } from './desktop-size.js';
import { DesktopHelpers } from './desktop-helper.js';

/** What the pipeline learns about the screen before it decides on a desktop call. */
export interface DesktopObservation {
  windowTitle: string;
  /** the screen before the call, as kept for the audit (absent for screenshots, whose result is the screen) */
  thumbnail: ThumbnailReference | null;
}

/** Runs the desktop tools of sessions. */
export class DesktopTools {
  /** open live-view streams per session, closed when a lifecycle operation needs the machine to itself */
  private readonly liveViews = new Map<string, Set<Duplex>>();
  /** screens observed for screenshot calls awaiting their decision, by call id */
  private readonly observedScreens = new Map<string, ScreenPixels>();
  /** the persistent X helpers of machines, which answer desktop commands without starting a program each */
  private readonly helpers: DesktopHelpers;

  constructor(
    private readonly sessions: SessionService,
    private readonly thumbnails: ThumbnailStore,
    readonly takeovers: DesktopTakeovers,
  ) {
    this.helpers = new DesktopHelpers({ mayKeep: (sessionId) => !sessions.locks.exclusiveWanted(sessionId) });
    // A connection kept open to the desktop helper would stop the agent from parking for a checkpoint.
    sessions.locks.whenExclusiveRequested((sessionId) => this.helpers.closeIdle(sessionId));
    // A viewer would otherwise hold a suspend, snapshot or terminate off for as long as it watches.
    sessions.locks.whenExclusiveWaits((sessionId) => {
      for (const stream of this.liveViews.get(sessionId) ?? []) stream.destroy();
    });
  }

  /** INVALID_ARGUMENTS when a point of the action lies outside the session's screen. */
  checkOnScreen(session: SessionRecord, action: DesktopAction): void {
    const { width, height } = desktopSize(session);
    for (const point of actionPoints(action)) {
      if (point.x >= width || point.y >= height) {
        throw new AirlockError('INVALID_ARGUMENTS', `(${point.x}, ${point.y}) is off the screen, which is ${width}×${height}: x runs 0–${width - 1}, y 0–${height - 1}`, {
          details: { field: point.x >= width ? 'x' : 'y', width, height },
        });
      }
    }
  }

  /**
   * The focused window's title and the screen now, read at once (two commands
   * in parallel). An action keeps the screen as its thumbnail; a screenshot
   * keeps it for `screenshot` to return if the call is allowed (the pixels
   * leave the server only then; a refused call's are dropped with `forget`).
   */
  async observe(session: SessionRecord, callId: string, purpose: 'action' | 'screenshot', wake?: WakeReason): Promise<DesktopObservation> {
    return this.onMachine(session, wake, async (desktop) => {
      // An action keeps only a thumbnail of the screen: a smaller dump will do.
      const [windowTitle, screen] = await Promise.all([desktop.focusedWindowTitle(), desktop.capture(purpose === 'action' ? THUMBNAIL_MAX_SIDE : undefined)]);
      if (purpose === 'screenshot') {
        this.rememberScreen(callId, screen);
        return { windowTitle, thumbnail: null };
      }
      return { windowTitle, thumbnail: await this.keepThumbnail(session.id, callId, screen) };
    });
  }

  /** Drops what `observe` kept for a call that will not run (refused, or held for a human). */
  forget(callId: string): void {
    this.observedScreens.delete(callId);
  }

  /** The whole screen as PNG (as observed for this call's decision, else taken now); its thumbnail is kept for the audit. */
  async screenshot(session: SessionRecord, callId: string): Promise<{ result: Record<string, unknown>; resumeMs: number }> {
    const started = Date.now();
    const observed = this.observedScreens.get(callId);
    this.observedScreens.delete(callId);
    const { result: screen, resumeMs } = observed
      ? { result: observed, resumeMs: 0 }
      : await this.sessions.withMachine(session.id, (handle) => this.operations(handle).capture());
    // The PNG deflates on the thread pool while the thumbnail is shrunk here.
    const [png, thumbnail] = await Promise.all([encodePng(screen), this.keepThumbnail(session.id, callId, screen)]);
    return {
      resumeMs,
      result: {
        width: screen.width,
        height: screen.height,
        png: png.toString('base64'),
        bytes: png.length,
        sha256: sha256(png),
        thumbnail,
        captureMs: Date.now() - started,
      },
    };
  }

  /** Carries out one action, after any takeover of the desktop has ended. */
  async act(session: SessionRecord, action: DesktopAction, options: { signal?: AbortSignal; onWaiting?: (reason: 'TAKEOVER') => void } = {}): Promise<{ result: Record<string, unknown>; resumeMs: number }> {
    await this.takeovers.waitForHandBack(session.id, options);
    if (action.action === 'wait') {
      await sleep(action.ms, options.signal);
      return { result: { action: action.action, waitedMs: action.ms }, resumeMs: 0 };
    }
    const { result: pointer, resumeMs } = await this.sessions.withMachine(session.id, (handle) => this.operations(handle).perform(action));
    return { result: { action: action.action, pointer }, resumeMs };
  }

  /** The screen of a running session's machine, for takeover recordings (no call, no audit of its own). */
  async capture(sessionId: string): Promise<ScreenPixels> {
    return (await this.sessions.withMachine(sessionId, (handle) => this.operations(handle).capture())).result;
  }

  /**
   * Runs `work` with a byte stream to the display's VNC server (the live
   * view), waking the machine first. Holds the session's shared lock while
   * `work` runs, like any call: the machine does not sleep under a viewer;
   * a suspend, snapshot or terminate closes the stream instead of waiting.
   */
  async withDisplayStream<T>(sessionId: string, work: (stream: Duplex) => Promise<T>): Promise<T> {
    requireMachineMode(await this.sessions.getOwned(sessionId));
    const { result } = await this.sessions.withMachine(sessionId, async (handle) => {
      let stream: Duplex;
      try {
        stream = await this.sessions.drivers.forHandle(handle).connect(handle, VNC_PORT);
      } catch (error) {
        if (isAirlockError(error, 'PORT_UNREACHABLE')) {
          throw new AirlockError('DESKTOP_UNAVAILABLE', `session ${sessionId} has no VNC server on its display; create the session with \`--image debian-bookworm-desktop\``, { cause: error, details: { sessionId } });
        }
        throw error;
      }
      const open = this.liveViews.get(sessionId) ?? new Set<Duplex>();
      this.liveViews.set(sessionId, open.add(stream));
      try {
        return await work(stream);
      } finally {
        stream.destroy();
        open.delete(stream);
        if (open.size === 0) this.liveViews.delete(sessionId);
      }
    });
    return result;
  }

  private async onMachine<T>(session: SessionRecord, wake: WakeReason | undefined, work: (desktop: DesktopOperations) => Promise<T>): Promise<T> {
    requireMachineMode(session);
    return (await this.sessions.withMachine(session.id, (handle) => work(this.operations(handle)), wake)).result;
  }

  private operations(handle: SandboxHandle): DesktopOperations {
    const driver = this.sessions.drivers.forHandle(handle);
    const run: DesktopRunner = async (request) => {
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      const outcome = await driver.exec(handle, {
        argv: request.argv,
        cwd: '/',
        env: request.env,
        timeoutMs: request.timeoutMs,
        onStdout: (chunk) => stdout.push(chunk),
        onStderr: (chunk) => stderr.push(chunk),
      });
      return { ...outcome, stdout: Buffer.concat(stdout), stderr: Buffer.concat(stderr) };
    };
    return new DesktopOperations(this.helpers.runner(driver, handle, run));
  }

  private rememberScreen(callId: string, screen: ScreenPixels): void {
    this.observedScreens.set(callId, screen);
    // Bounded: a screen kept for a call that never came to run must not stay.
    for (const stale of this.observedScreens.keys()) {
      if (this.observedScreens.size <= MAX_OBSERVED_SCREENS) break;
      this.observedScreens.delete(stale);
    }
  }

  private async keepThumbnail(sessionId: string, name: string, screen: ScreenPixels): Promise<ThumbnailReference> {
    const small = shrink(screen, THUMBNAIL_MAX_SIDE, THUMBNAIL_MAX_SIDE);
    const png = await encodePng(small);
    await this.thumbnails.put(sessionId, name, png);
    return { name, sha256: sha256(png), bytes: png.length, width: small.width, height: small.height };
  }
}

/** Screens kept between a screenshot's decision and its execution (calls in flight at once, across sessions). */
const MAX_OBSERVED_SCREENS = 16;

/** A desktop lives in a session machine: a per-call session has none that lasts between calls. */
function requireMachineMode(session: SessionRecord): void {
  if (session.mode !== 'machine') {
    throw new AirlockError('DESKTOP_UNAVAILABLE', `session ${session.id} runs each call in a fresh sandbox, so it has no display that lasts; create a desktop session with --mode machine`, {
      details: { sessionId: session.id, mode: session.mode },
    });
  }
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new AirlockError('INVALID_REQUEST', 'the caller went away during the wait'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new AirlockError('INVALID_REQUEST', 'the caller went away during the wait'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
