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
    assert.deepEqual(names(['exec', 'files.read', 'files.write', 'files.edit', 'files.list', 'snapshot', 'fork']), Object.keys(TOOL_ARGUMENTS).sort());
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
