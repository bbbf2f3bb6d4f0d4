/** Which MCP tools a session's contract lets the server offer, and their schemas. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TOOL_ARGUMENTS, listedTools } from '@airlock/mcp';

const names = (allowed: string[]) => listedTools(new Set(allowed)).map((tool) => tool.name).sort();

describe('listedTools', () => {
  it('offers a tool only when the contract allows every Airlock tool it calls', () => {
    assert.deepEqual(names(['exec']), ['await_approval', 'bash', 'glob', 'grep']);
    assert.deepEqual(names(['files.read', 'files.list']), ['await_approval', 'ls', 'read']);
    assert.deepEqual(names(['snapshot']), ['await_approval', 'snapshot']);
    assert.deepEqual(names([]), ['await_approval']);
    assert.deepEqual(names(['desktop.act']), ['await_approval'], 'computer needs both desktop tools');
    assert.deepEqual(names(['desktop.act', 'desktop.screenshot']), ['await_approval', 'computer']);
    assert.deepEqual(names(['exec', 'files.read', 'files.write', 'files.edit', 'files.list', 'snapshot', 'fork', 'desktop.act', 'desktop.screenshot']), Object.keys(TOOL_ARGUMENTS).sort());
  });

  it('takes the computer-use tool shape: action with coordinate, text, scroll direction and amount', () => {
    const [computer] = listedTools(new Set(['desktop.act', 'desktop.screenshot']));
    assert.deepEqual(computer?.inputSchema['required'], ['action']);
    const properties = computer?.inputSchema['properties'] as Record<string, { enum?: string[] }>;
    assert.deepEqual(Object.keys(properties).sort(), ['action', 'coordinate', 'duration', 'scroll_amount', 'scroll_direction', 'start_coordinate', 'text']);
    for (const action of ['screenshot', 'left_click', 'type', 'key', 'scroll', 'mouse_move', 'left_click_drag', 'double_click', 'wait', 'cursor_position']) {
      assert.ok(properties['action']?.enum?.includes(action), action);
    }
    assert.equal(TOOL_ARGUMENTS.computer.safeParse({ action: 'left_click', coordinate: [10, 20] }).success, true);
    assert.equal(TOOL_ARGUMENTS.computer.safeParse({ action: 'left_click', coordinate: [10] }).success, false);
    assert.equal(TOOL_ARGUMENTS.computer.safeParse({ action: 'teleport' }).success, false);
  });

  it('describes fork and snapshot as non-destructive, with count required', () => {
    const [fork] = listedTools(new Set(['fork']));
    assert.equal(fork?.name, 'fork');
    assert.equal(fork?.annotations.destructiveHint, false);
    assert.deepEqual(fork?.inputSchema['required'], ['count']);
    assert.equal(TOOL_ARGUMENTS.fork.safeParse({ count: 2.5 }).success, false);
    assert.equal(TOOL_ARGUMENTS.fork.safeParse({ count: 2, snapshot_id: 'nope' }).success, false);
    assert.equal(TOOL_ARGUMENTS.fork.safeParse({ count: 2, snapshot_id: 'snap_abc' }).success, true);
  });
});
