/**
 * `sandbox.desktop`: the screen and the input of a desktop session (an image
 * built with `airlock images build --desktop`). Every screenshot and action
 * is a tool call through the airlock: authorized by the session's policies
 * (action `desktop.screenshot` / `desktop.act`), held for a human where they
 * say so, and audited with a thumbnail of the screen.
 */
import type { Connection } from './connection.js';
import type { Approvals } from './approvals.js';
import { base64ToBytes, outcomeError } from './outcome.js';
import type { ToolCallOutcome } from './types.js';

/** One desktop action, as the API takes it (`POST /v1/sessions/ID/desktop/actions`). */
export type DesktopAction =
  | { action: 'click'; x: number; y: number; button?: 'left' | 'middle' | 'right'; count?: 1 | 2 | 3; modifiers?: string }
  | { action: 'double_click'; x: number; y: number; modifiers?: string }
  | { action: 'right_click'; x: number; y: number; modifiers?: string }
  | { action: 'move'; x: number; y: number }
  | { action: 'drag'; x: number; y: number; toX: number; toY: number }
  | { action: 'scroll'; x: number; y: number; dy?: number; dx?: number }
  | { action: 'type'; text: string }
  | { action: 'key'; keys: string; holdMs?: number }
  | { action: 'wait'; ms: number }
  | { action: 'mouse_down'; button?: 'left' | 'middle' | 'right' }
  | { action: 'mouse_up'; button?: 'left' | 'middle' | 'right' }
  | { action: 'cursor_position' };

/** What an action returns. */
export interface DesktopActionResult {
  action: DesktopAction['action'];
  /** where the pointer is after the action (absent for `wait`) */
  pointer?: { x: number; y: number };
  callId: string;
  /** how long the action waited for a person to hand the desktop back */
  takeoverWaitMs?: number;
}

/** A screenshot: PNG bytes and the screen's size. */
export interface Screenshot {
  png: Uint8Array;
  width: number;
  height: number;
  callId: string;
}

/** Options of every desktop call. */
export interface DesktopCallOptions {
  /** wait for a human when policy asks (default true); false throws ApprovalPendingError */
  waitForApproval?: boolean;
  /** called once when the call is held for approval */
  onApprovalRequired?: (approvalId: string) => void;
}

/** A takeover of the desktop by a person. */
export interface TakeoverInfo {
  id: string;
  by: string;
  startedAt: string;
  endedAt: string | null;
  frames: number;
  inputEvents: number;
  recording: string;
}

/** Screen and input of one session. */
export class Desktop {
  constructor(
    private readonly connection: Connection,
    private readonly sessionId: string,
    private readonly approvals: Approvals,
  ) {}

  /** The whole screen as PNG. */
  async screenshot(options: DesktopCallOptions = {}): Promise<Screenshot> {
    const response = await this.connection.send('POST', this.path('/screenshot'), {});
    if (response.status === 200) {
      const size = /^(\d+)x(\d+)$/.exec(response.headers.get('x-airlock-screen') ?? '');
      return {
        png: new Uint8Array(await response.arrayBuffer()),
        width: Number(size?.[1] ?? 0),
        height: Number(size?.[2] ?? 0),
        callId: response.headers.get('x-airlock-call-id') ?? '',
      };
    }
    const outcome = await this.settle((await response.json()) as ToolCallOutcome, options);
    return { png: base64ToBytes(String(outcome.result['png'])), width: Number(outcome.result['width']), height: Number(outcome.result['height']), callId: outcome.callId };
  }

  /** Left click at (x, y). */
  click(x: number, y: number, options: DesktopCallOptions & { button?: 'left' | 'middle' | 'right'; count?: 1 | 2 | 3; modifiers?: string } = {}): Promise<DesktopActionResult> {
    const { button, count, modifiers, ...call } = options;
    return this.act({ action: 'click', x, y, ...(button ? { button } : {}), ...(count ? { count } : {}), ...(modifiers ? { modifiers } : {}) }, call);
  }

  /** Double click at (x, y). */
  doubleClick(x: number, y: number, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    return this.act({ action: 'double_click', x, y }, options);
  }

  /** Right click at (x, y). */
  rightClick(x: number, y: number, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    return this.act({ action: 'right_click', x, y }, options);
  }

  /** Moves the pointer to (x, y). */
  move(x: number, y: number, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    return this.act({ action: 'move', x, y }, options);
  }

  /** Drags with the left button from (fromX, fromY) to (toX, toY). */
  drag(fromX: number, fromY: number, toX: number, toY: number, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    return this.act({ action: 'drag', x: fromX, y: fromY, toX, toY }, options);
  }

  /** Scrolls at (x, y) by `dy` wheel notches (positive down) and `dx` (positive right). */
  scroll(x: number, y: number, dy: number, dx = 0, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    return this.act({ action: 'scroll', x, y, dy, dx }, options);
  }

  /** Types text into the focused window. */
  type(text: string, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    return this.act({ action: 'type', text }, options);
  }

  /** Presses keys in xdotool syntax: `ctrl+l`, `Return`, several separated by spaces; `holdMs` holds them. */
  key(keys: string, options: DesktopCallOptions & { holdMs?: number } = {}): Promise<DesktopActionResult> {
    const { holdMs, ...call } = options;
    return this.act({ action: 'key', keys, ...(holdMs === undefined ? {} : { holdMs }) }, call);
  }

  /** Waits `ms` milliseconds (a tool call too: audited, and it waits out a takeover). */
  wait(ms: number, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    return this.act({ action: 'wait', ms }, options);
  }

  /** Where the pointer is. */
  async cursorPosition(options: DesktopCallOptions = {}): Promise<{ x: number; y: number }> {
    const result = await this.act({ action: 'cursor_position' }, options);
    return result.pointer ?? { x: 0, y: 0 };
  }

  /** Any one action. */
  async act(action: DesktopAction, options: DesktopCallOptions = {}): Promise<DesktopActionResult> {
    const response = await this.connection.send('POST', this.path('/actions'), action);
    const outcome = await this.settle((await response.json()) as ToolCallOutcome, options);
    const result = outcome.result as { action: DesktopAction['action']; pointer?: { x: number; y: number }; takeoverWaitMs?: number };
    return { ...result, callId: outcome.callId };
  }

  /** Takes the desktop over: the agent's actions wait until `handBack`; the live view of this takeover may send input. */
  async takeOver(by?: string): Promise<TakeoverInfo> {
    return (await this.connection.json<TakeoverInfo>('POST', this.path('/takeover'), by === undefined ? {} : { by })).body;
  }

  /** Hands the desktop back to the agent. */
  async handBack(): Promise<TakeoverInfo> {
    return (await this.connection.json<TakeoverInfo>('DELETE', this.path('/takeover'))).body;
  }

  /** The URL of the live view (a WebSocket carrying VNC; bearer-authenticated), optionally with input for a takeover. */
  liveViewUrl(takeoverId?: string): string {
    const base = this.connection.url.replace(/^http/, 'ws');
    return `${base}${this.path('/vnc')}${takeoverId === undefined ? '' : `?takeover=${encodeURIComponent(takeoverId)}`}`;
  }

  private async settle(outcome: ToolCallOutcome, options: DesktopCallOptions): Promise<ToolCallOutcome & { status: 'completed' }> {
    let settled = outcome;
    if (settled.status === 'pending-approval' && options.waitForApproval !== false) {
      options.onApprovalRequired?.(settled.approvalId);
      settled = await this.approvals.waitForOutcome(settled.approvalId);
    }
    if (settled.status !== 'completed') throw outcomeError(settled);
    return settled;
  }

  private path(suffix: string): string {
    return `/v1/sessions/${encodeURIComponent(this.sessionId)}/desktop${suffix}`;
  }
}
