/**
 * What the desktop tools run inside the session's machine: `xdotool` for the
 * focused window's title and for input, `xwd` for the screen's pixels. The
 * machine's desktop helper answers them without starting the programs
 * (desktop-helper.ts); without a helper each is one short command that
 * leaves nothing behind (one agent round trip, ADR 0012). Failures that
 * mean "there is no display here" become DESKTOP_UNAVAILABLE with the fix.
 */
import { AirlockError } from './errors.js';
import type { ExecOutcome } from './sandbox-driver.js';
import type { DesktopAction } from './desktop-action-schema.js';
import { decodeXwd, type ScreenPixels } from './screen-image.js';

/** Output of a command collected in memory. */
export interface CollectedOutput extends ExecOutcome {
  stdout: Buffer;
  stderr: Buffer;
}

/** One desktop command for a machine. */
export interface DesktopRequest {
  argv: string[];
  env: Record<string, string>;
  timeoutMs: number;
  /** for a screen dump: a smaller one will do, down to this many pixels on its longer side (a runner may ignore it) */
  shrinkTo?: number;
}

/** Runs one command in the session's machine with the given environment and collects its output. */
export type DesktopRunner = (request: DesktopRequest) => Promise<CollectedOutput>;

/** The X display every desktop image runs (docs/desktop.md); its processes get `DISPLAY=:0`. */
export const DISPLAY = ':0';
/** TCP port of the display's VNC server on the machine's own loopback (never on the host's network). */
export const VNC_PORT = 5900;

const XDOTOOL = '/usr/bin/xdotool';
const XWD = '/usr/bin/xwd';
const ENV = { DISPLAY, PATH: '/usr/local/bin:/usr/bin:/bin' };
const TIMEOUT_MS = 30_000;
/** xdotool's pause between typed characters: fast, yet slow enough for browsers to keep every key. */
const TYPE_DELAY_MS = 12;
const BUTTONS = { left: '1', middle: '2', right: '3' } as const;

/** Where the pointer is, after an action. */
export interface PointerPosition {
  x: number;
  y: number;
}

/** The desktop commands of one session's machine. */
export class DesktopOperations {
  constructor(private readonly run: DesktopRunner) {}

  /** The title of the focused window, or "" when no window has the focus. */
  async focusedWindowTitle(): Promise<string> {
    const output = await this.command([XDOTOOL, 'getactivewindow', 'getwindowname'], TIMEOUT_MS, true);
    if (output.exitCode !== 0) return '';
    return output.stdout.toString('utf8').replace(/\n$/, '');
  }

  /** The whole screen's pixels; with `shrinkTo`, possibly fewer of them (every n-th), still at least that many on the longer side. */
  async capture(shrinkTo?: number): Promise<ScreenPixels> {
    const output = await this.command([XWD, '-root', '-silent', '-display', DISPLAY], TIMEOUT_MS, false, shrinkTo);
    return decodeXwd(output.stdout);
  }

  /** Carries out one action (except `wait`, which needs no machine) and returns where the pointer is then. */
  async perform(action: Exclude<DesktopAction, { action: 'wait' }>): Promise<PointerPosition> {
    // The pointer's position is read first or last in the same xdotool run: one command per action.
    const where = ['getmouselocation', '--shell'];
    let argv: string[];
    let timeoutMs = TIMEOUT_MS;
    switch (action.action) {
      case 'click':
      case 'double_click':
      case 'right_click': {
        const button = action.action === 'right_click' ? BUTTONS.right : action.action === 'click' ? BUTTONS[action.button] : BUTTONS.left;
        const count = action.action === 'double_click' ? 2 : action.action === 'click' ? action.count : 1;
        const held = action.modifiers === undefined ? [] : [action.modifiers];
        argv = [
          'mousemove', String(action.x), String(action.y),
          ...(held.length > 0 ? ['keydown', ...held] : []),
          'click', '--repeat', String(count), '--delay', '80', button,
          ...(held.length > 0 ? ['keyup', ...held] : []),
          ...where,
        ];
        break;
      }
      case 'move':
        argv = ['mousemove', String(action.x), String(action.y), ...where];
        break;
      case 'drag': {
        // A move half-way lets programs that watch for motion (most drag-and-drop) see a drag, not a jump.
        const middle = [String(Math.round((action.x + action.toX) / 2)), String(Math.round((action.y + action.toY) / 2))];
        argv = ['mousemove', String(action.x), String(action.y), 'mousedown', '1', 'mousemove', ...middle, 'mousemove', String(action.toX), String(action.toY), 'mouseup', '1', ...where];
        break;
      }
      case 'scroll': {
        const wheel = (notches: number, negative: string, positive: string) => (notches === 0 ? [] : ['click', '--repeat', String(Math.abs(notches)), '--delay', '20', notches < 0 ? negative : positive]);
        argv = ['mousemove', String(action.x), String(action.y), ...wheel(action.dy, '4', '5'), ...wheel(action.dx, '6', '7'), ...where];
        break;
      }
      case 'type':
        // `type` takes every remaining argument as text, so the pointer is read before it.
        argv = [...where, 'type', '--delay', String(TYPE_DELAY_MS), '--', action.text];
        timeoutMs = TIMEOUT_MS + action.text.length * TYPE_DELAY_MS * 4;
        break;
      case 'key': {
        const combinations = action.keys.split(' ');
        argv =
          action.holdMs === undefined
            ? [...where, 'key', '--delay', '20', '--', ...combinations]
            : [...where, 'keydown', ...combinations, 'sleep', (action.holdMs / 1000).toFixed(3), 'keyup', ...combinations];
        timeoutMs = TIMEOUT_MS + (action.holdMs ?? 0);
        break;
      }
      case 'mouse_down':
      case 'mouse_up':
        argv = [action.action === 'mouse_down' ? 'mousedown' : 'mouseup', BUTTONS[action.button], ...where];
        break;
      case 'cursor_position':
        argv = where;
        break;
    }
    const output = await this.command([XDOTOOL, ...argv], timeoutMs);
    return pointerFrom(output.stdout.toString('utf8'));
  }

  /** Runs a desktop command; a missing display or program is DESKTOP_UNAVAILABLE, any other failure DRIVER_FAILED. */
  private async command(argv: string[], timeoutMs: number, tolerateFailure = false, shrinkTo?: number): Promise<CollectedOutput> {
    const output = await this.run({ argv, env: ENV, timeoutMs, ...(shrinkTo === undefined ? {} : { shrinkTo }) });
    const stderr = output.stderr.toString('utf8').trim();
    if (output.exitCode !== 0 && /open display|not found|no such file|executable file/i.test(stderr + (output.exitCode === 127 ? ' not found' : ''))) {
      throw new AirlockError(
        'DESKTOP_UNAVAILABLE',
        `this session has no desktop (${stderr.split('\n')[0] || `${argv[0]} exited with ${output.exitCode}`}); create the session with \`--image debian-bookworm-desktop\` (built by \`airlock images build --desktop\`)`,
        { details: { program: argv[0], exitCode: output.exitCode } },
      );
    }
    if (output.exitCode !== 0 && !tolerateFailure) {
      throw new AirlockError('DRIVER_FAILED', `${argv[0]} failed in the session's machine with exit code ${output.exitCode}: ${stderr.slice(0, 500) || 'no message'}`, {
        details: { program: argv[0], exitCode: output.exitCode, timedOut: output.timedOut },
      });
    }
    return output;
  }
}

/** Parses `xdotool getmouselocation --shell` output (X=.., Y=..) found anywhere in `text`. */
export function pointerFrom(text: string): PointerPosition {
  const x = /^X=(\d+)$/m.exec(text)?.[1];
  const y = /^Y=(\d+)$/m.exec(text)?.[1];
  if (x === undefined || y === undefined) {
    throw new AirlockError('DRIVER_FAILED', `xdotool did not report the pointer's position (got ${JSON.stringify(text.slice(0, 200))})`);
  }
  return { x: Number(x), y: Number(y) };
}
