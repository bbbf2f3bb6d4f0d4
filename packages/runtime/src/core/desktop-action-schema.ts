/**
 * Arguments of the desktop tools. `desktop.act` takes one action of the
 * kinds below; each kind names only the fields it uses, strictly, so that a
 * misspelt coordinate is an error instead of a click at (0, 0).
 */
import { z } from 'zod';

/** The kinds of `desktop.act`. */
export const DESKTOP_ACTION_KINDS = [
  'click',
  'double_click',
  'right_click',
  'move',
  'drag',
  'scroll',
  'type',
  'key',
  'wait',
  'mouse_down',
  'mouse_up',
  'cursor_position',
] as const;

/** One kind of desktop action. */
export type DesktopActionKind = (typeof DESKTOP_ACTION_KINDS)[number];

/** Longest text one `type` action may send. */
export const MAX_TYPED_CHARACTERS = 10_000;
/** Longest `wait`, and longest a key may be held. */
export const MAX_DESKTOP_WAIT_MS = 60_000;

const coordinate = z.number().int('coordinates are whole pixels').min(0, 'coordinates start at 0 (the top-left corner)').max(16_383);
const button = z.enum(['left', 'middle', 'right']).default('left');

/**
 * Key combinations in xdotool's syntax: keysym names joined by `+`, several
 * combinations separated by spaces (`ctrl+l`, `Return`, `ctrl+shift+t Tab`).
 */
const KEY_COMBINATIONS = /^[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*( [A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*)*$/;
const keys = z
  .string()
  .min(1, 'keys must not be empty')
  .max(256)
  .regex(KEY_COMBINATIONS, 'keys are key names joined by "+", combinations separated by spaces, e.g. "ctrl+l" or "Return" (xdotool key syntax)');
const modifiers = keys.describe('keys held during the click, e.g. "shift" or "ctrl+shift"');

/** Arguments of `desktop.act`: one action. */
export const desktopActArguments = z.discriminatedUnion('action', [
  z.strictObject({ action: z.literal('click'), x: coordinate, y: coordinate, button, count: z.number().int().min(1).max(3).default(1), modifiers: modifiers.optional() }),
  z.strictObject({ action: z.literal('double_click'), x: coordinate, y: coordinate, modifiers: modifiers.optional() }),
  z.strictObject({ action: z.literal('right_click'), x: coordinate, y: coordinate, modifiers: modifiers.optional() }),
  z.strictObject({ action: z.literal('move'), x: coordinate, y: coordinate }),
  z.strictObject({ action: z.literal('drag'), x: coordinate, y: coordinate, toX: coordinate, toY: coordinate }),
  z
    .strictObject({
      action: z.literal('scroll'),
      x: coordinate,
      y: coordinate,
      /** wheel notches, positive down */
      dy: z.number().int().min(-100).max(100).default(0),
      /** wheel notches, positive right */
      dx: z.number().int().min(-100).max(100).default(0),
    })
    .refine((value) => value.dx !== 0 || value.dy !== 0, { message: 'scroll needs dy (down, negative up) or dx (right, negative left)', path: ['dy'] }),
  z.strictObject({
    action: z.literal('type'),
    text: z.string().min(1, 'text must not be empty').max(MAX_TYPED_CHARACTERS, `type at most ${MAX_TYPED_CHARACTERS} characters per action`).refine((value) => !value.includes('\0'), 'text must not contain NUL'),
  }),
  z.strictObject({ action: z.literal('key'), keys, holdMs: z.number().int().min(0).max(MAX_DESKTOP_WAIT_MS).optional() }),
  z.strictObject({ action: z.literal('wait'), ms: z.number().int().min(1).max(MAX_DESKTOP_WAIT_MS) }),
  z.strictObject({ action: z.literal('mouse_down'), button }),
  z.strictObject({ action: z.literal('mouse_up'), button }),
  z.strictObject({ action: z.literal('cursor_position') }),
]);

/** One validated desktop action. */
export type DesktopAction = z.output<typeof desktopActArguments>;

/** Arguments of `desktop.screenshot`: none yet (the whole screen, as PNG). */
export const desktopScreenshotArguments = z.strictObject({});

/** The points of an action that must lie on the screen. */
export function actionPoints(action: DesktopAction): { x: number; y: number }[] {
  if (action.action === 'drag') return [{ x: action.x, y: action.y }, { x: action.toX, y: action.toY }];
  return 'x' in action ? [{ x: action.x, y: action.y }] : [];
}
