/**
 * The `computer` MCP tool: the computer-use tool shape model providers
 * publish (actions `screenshot`, `left_click` with `coordinate`, `type` with
 * `text`, `key`, `scroll` with `scroll_direction` and `scroll_amount`,
 * `mouse_move`, `left_click_drag` with `start_coordinate`, ...), so an agent
 * written for it works unchanged. Each action is an Airlock `desktop.act`
 * call and each screen a `desktop.screenshot` call, authorized and audited
 * like any other; after an action the result carries a fresh screenshot, as
 * the reference implementations do.
 */
import { z } from 'zod';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { CallOutcome } from './session-calls.js';
import { pendingResult, refusalResult } from './tool-results.js';
import type { ToolCallContext } from './tool-handlers.js';

/** The actions of the computer-use tool shape. */
export const COMPUTER_ACTIONS = [
  'screenshot',
  'left_click',
  'right_click',
  'middle_click',
  'double_click',
  'triple_click',
  'mouse_move',
  'left_click_drag',
  'left_mouse_down',
  'left_mouse_up',
  'scroll',
  'type',
  'key',
  'hold_key',
  'wait',
  'cursor_position',
] as const;

const coordinate = z
  .tuple([z.number().int().min(0), z.number().int().min(0)])
  .describe('[x, y] in screen pixels, from the top-left corner');

/** Arguments of `computer`, as providers publish them. */
export const computerArguments = z.strictObject({
  action: z.enum(COMPUTER_ACTIONS).describe('what to do'),
  coordinate: coordinate.optional().describe('[x, y]: where to click, move, scroll, or where a drag ends'),
  start_coordinate: coordinate.optional().describe('[x, y] where left_click_drag starts'),
  text: z.string().max(10_000).optional().describe('text to type; keys for key and hold_key in xdotool syntax (e.g. "ctrl+l", "Return"); keys to hold during a click (e.g. "shift")'),
  scroll_direction: z.enum(['up', 'down', 'left', 'right']).optional(),
  scroll_amount: z.number().int().min(1).max(100).optional().describe('wheel notches to scroll (default 3)'),
  duration: z.number().min(0).max(60).optional().describe('seconds: how long to wait, or to hold the keys'),
});

/** Parsed arguments of `computer`. */
export type ComputerInput = z.output<typeof computerArguments>;

/** What the tool lists. */
export const COMPUTER_DESCRIPTION = {
  title: 'Use the computer',
  description:
    "Sees and drives the session's desktop (a display with Chromium; open pages with the bash tool: `airlock-browser URL`). " +
    'screenshot returns the screen; every other action returns a screenshot taken after it. Coordinates are screen pixels. ' +
    'Runs on the Airlock session machine; the session policy may deny an action or hold it for a human.',
};

/** The Airlock tools `computer` calls. */
export const COMPUTER_CALLS = ['desktop.act', 'desktop.screenshot'] as const;

/** Carries out one `computer` action. */
export async function handleComputer(input: ComputerInput, context: ToolCallContext): Promise<CallToolResult> {
  if (input.action === 'screenshot') return screenshot(context, undefined);
  let action: Record<string, unknown>;
  try {
    action = await toDesktopAction(input, context);
  } catch (error) {
    return { content: [{ type: 'text', text: `INVALID_ARGUMENTS: ${(error as Error).message}` }], isError: true };
  }
  let outcome = await context.calls.submit('desktop.act', action, context.signal);
  let note: string | undefined;
  if (outcome.status === 'pending-approval') ({ outcome, note } = await context.settle(outcome, 'desktop.act', action));
  if (outcome.status !== 'completed') return notCompleted(outcome, note);
  const pointer = outcome.result['pointer'] as { x: number; y: number } | undefined;
  if (input.action === 'cursor_position') return { content: [{ type: 'text', text: `X=${pointer?.x ?? 0},Y=${pointer?.y ?? 0}` }], structuredContent: { ...(pointer ?? {}) } };
  return screenshot(context, `${input.action} done${pointer ? `; the pointer is at (${pointer.x}, ${pointer.y})` : ''}.`);
}

/** The Airlock `desktop.act` arguments for one computer-use action. */
async function toDesktopAction(input: ComputerInput, context: ToolCallContext): Promise<Record<string, unknown>> {
  const at = async (): Promise<{ x: number; y: number }> => {
    if (input.coordinate) return { x: input.coordinate[0], y: input.coordinate[1] };
    // Providers let a click without coordinate land where the pointer is.
    const outcome = await context.calls.submit('desktop.act', { action: 'cursor_position' }, context.signal);
    if (outcome.status !== 'completed') throw new Error('coordinate is missing and the pointer position could not be read; pass coordinate [x, y]');
    return outcome.result['pointer'] as { x: number; y: number };
  };
  const need = (field: keyof ComputerInput) => {
    if (input[field] === undefined) throw new Error(`${input.action} needs ${field}`);
  };
  const modifiers = input.text ? { modifiers: input.text } : {};
  switch (input.action) {
    case 'left_click':
      return { action: 'click', ...(await at()), ...modifiers };
    case 'right_click':
      return { action: 'click', button: 'right', ...(await at()), ...modifiers };
    case 'middle_click':
      return { action: 'click', button: 'middle', ...(await at()), ...modifiers };
    case 'double_click':
      return { action: 'click', count: 2, ...(await at()), ...modifiers };
    case 'triple_click':
      return { action: 'click', count: 3, ...(await at()), ...modifiers };
    case 'mouse_move':
      need('coordinate');
      return { action: 'move', ...(await at()) };
    case 'left_click_drag':
      need('start_coordinate');
      need('coordinate');
      return { action: 'drag', x: input.start_coordinate?.[0], y: input.start_coordinate?.[1], toX: input.coordinate?.[0], toY: input.coordinate?.[1] };
    case 'left_mouse_down':
      return { action: 'mouse_down', button: 'left' };
    case 'left_mouse_up':
      return { action: 'mouse_up', button: 'left' };
    case 'scroll': {
      const notches = input.scroll_amount ?? 3;
      const direction = input.scroll_direction ?? 'down';
      const vertical = direction === 'up' || direction === 'down';
      const signed = direction === 'up' || direction === 'left' ? -notches : notches;
      return { action: 'scroll', ...(await at()), ...(vertical ? { dy: signed } : { dx: signed }) };
    }
    case 'type':
      need('text');
      return { action: 'type', text: input.text };
    case 'key':
      need('text');
      return { action: 'key', keys: input.text };
    case 'hold_key':
      need('text');
      return { action: 'key', keys: input.text, holdMs: Math.round((input.duration ?? 1) * 1000) };
    case 'wait':
      return { action: 'wait', ms: Math.max(1, Math.round((input.duration ?? 1) * 1000)) };
    case 'cursor_position':
      return { action: 'cursor_position' };
    case 'screenshot':
      throw new Error('screenshot is not an action');
  }
}

/** A screenshot as MCP image content, with `caption` before it. */
async function screenshot(context: ToolCallContext, caption: string | undefined): Promise<CallToolResult> {
  let outcome = await context.calls.submit('desktop.screenshot', {}, context.signal);
  let note: string | undefined;
  if (outcome.status === 'pending-approval') ({ outcome, note } = await context.settle(outcome, 'desktop.screenshot', {}));
  if (outcome.status !== 'completed') {
    const result = notCompleted(outcome, note);
    return caption ? { ...result, content: [{ type: 'text', text: caption }, ...result.content] } : result;
  }
  const { width, height } = outcome.result as { width: number; height: number };
  return {
    content: [
      { type: 'text', text: `${caption ? `${caption} ` : ''}Screen ${width}×${height}:` },
      { type: 'image', data: String(outcome.result['png']), mimeType: 'image/png' },
    ],
    structuredContent: { width, height },
  };
}

function notCompleted(outcome: Exclude<CallOutcome, { status: 'completed' }>, note: string | undefined): CallToolResult {
  if (outcome.status === 'pending-approval') return pendingResult(outcome.approvalId, outcome.decision.reason, note);
  return refusalResult(outcome);
}
