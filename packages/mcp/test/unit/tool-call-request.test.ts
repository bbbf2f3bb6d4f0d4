/**
 * tools/call params and their errors (2025-11-25, SEP-1303): malformed
 * requests and unknown tools are protocol errors; wrong arguments of a known
 * tool are tool results with isError whose text names the field and what was
 * expected. And every structured result matches its tool's outputSchema.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv-provider.js';
import { checkToolCall, listedTools, outputSchemaOf, TOOL_ARGUMENTS, type AirlockToolName } from '@airlock/mcp';

function protocolErrorOf(params: unknown): { code: number; message: string; data: { field?: string } } {
  try {
    checkToolCall(params);
  } catch (error) {
    return error as { code: number; message: string; data: { field?: string } };
  }
  throw new Error('expected a protocol error');
}

function invalidText(name: string, args: unknown): { text: string; field: unknown; structured: Record<string, unknown> } {
  const checked = checkToolCall({ name, arguments: args });
  assert.equal(checked.kind, 'invalid-arguments');
  if (checked.kind !== 'invalid-arguments') throw new Error('unreachable');
  assert.equal(checked.result.isError, true);
  const structured = checked.result.structuredContent as Record<string, unknown>;
  return { text: (checked.result.content[0] as { text: string }).text, field: structured['field'], structured };
}

describe('checkToolCall', () => {
  it('answers requests that are not a call of one of its tools with -32602 naming the field', () => {
    assert.deepEqual([protocolErrorOf(undefined).code, protocolErrorOf(undefined).data.field], [-32602, 'params']);
    assert.deepEqual([protocolErrorOf({ arguments: {} }).code, protocolErrorOf({ arguments: {} }).data.field], [-32602, 'name']);
    assert.equal(protocolErrorOf({ name: 7 }).data.field, 'name');
    const unknown = protocolErrorOf({ name: 'format_disk', arguments: {} });
    assert.equal(unknown.code, -32602);
    assert.match(unknown.message, /^unknown tool "format_disk"; the tools are bash, read, /);
    assert.equal(protocolErrorOf({ name: 'bash', arguments: 'ls' }).data.field, 'arguments');
    assert.equal(protocolErrorOf({ name: 'bash', arguments: [] }).data.field, 'arguments');
  });

  it('returns wrong arguments of a known tool as an isError result naming the field and what was expected', () => {
    const wrongType = invalidText('bash', { command: 'true', timeout: 'soon' });
    assert.equal(wrongType.text, "INVALID_ARGUMENTS: invalid arguments for bash: timeout: expected a number, got a string\nNothing ran. Fix the arguments (see the tool's input schema) and call bash again.");
    assert.equal(wrongType.field, 'timeout');
    assert.equal(wrongType.structured['code'], 'INVALID_ARGUMENTS');
    assert.match(invalidText('read', {}).text, /path: required: expected a string/);
    assert.match(invalidText('edit', { file_path: 'a', old_string: 'x', new_string: 'y' }).text, /file_path: not an argument of edit \(its arguments are path, old_string, new_string, replace_all\)/);
    assert.match(invalidText('fork', { count: 1.5 }).text, /count: count must be a whole number/);
    assert.match(invalidText('grep', { pattern: 'x', limit: 0 }).text, /limit: .*>=1/);
    assert.equal(invalidText('await_approval', { approval_id: 'nope' }).field, 'approval_id');
  });

  it('passes valid arguments through, parsed', () => {
    const checked = checkToolCall({ name: 'bash', arguments: { command: 'ls', timeout: 5 } });
    assert.deepEqual(checked, { kind: 'call', tool: 'bash', input: { command: 'ls', timeout: 5 } });
    assert.deepEqual(checkToolCall({ name: 'ls' }), { kind: 'call', tool: 'ls', input: {} });
  });
});

describe('outputSchema', () => {
  const validator = new AjvJsonSchemaValidator();
  const valid = (tool: AirlockToolName, structured: unknown) => validator.getValidator(outputSchemaOf(tool))(structured).valid;
  const refusal = { status: 'refused', code: 'POLICY_DENIED', message: 'no', policyIds: ['policy1'], reason: 'because' };
  const pending = { status: 'pending-approval', approvalId: 'apr_1' };

  it('is declared by every listed tool, as an object schema without a $schema dialect', () => {
    for (const tool of listedTools(new Set(['exec', 'files.read', 'files.write', 'files.edit', 'files.list', 'snapshot', 'fork']))) {
      assert.equal(tool.outputSchema.type, 'object', tool.name);
      assert.equal(tool.outputSchema['$schema'], undefined);
    }
  });

  it("accepts each tool's own result, a refusal and a pending approval, and nothing else", () => {
    const own: Record<AirlockToolName, unknown> = {
      bash: { exitCode: 0, stdout: 'hi\n', stderr: '', timedOut: false },
      read: { path: '/workspace/a', firstLine: 1, lastLine: 2, totalLines: 2 },
      write: { path: '/workspace/a', bytes: 3 },
      edit: { path: '/workspace/a', replacements: 1 },
      ls: { path: '/workspace', entries: [{ name: 'a', type: 'file', size: 3, mode: '644', modifiedAt: 'x' }] },
      glob: { matches: ['/workspace/a'], total: 1 },
      grep: { matches: 2 },
      snapshot: { snapshotId: 'snap_1', name: null, contents: ['memory', 'disk'], sizeBytes: 10 },
      fork: { snapshotId: 'snap_1', branches: [{ index: 0, sessionId: 'ses_1', state: 'running' }, { index: 1, sessionId: null, error: { code: 'X', message: 'y' } }] },
      computer: { width: 1280, height: 800 },
      await_approval: { exitCode: 0, stdout: '', stderr: '', timedOut: false },
    };
    assert.equal(valid('computer', { x: 3, y: 4 }), true, 'cursor_position');
    assert.equal(valid('await_approval', { action: 'click', pointer: { x: 1, y: 2 } }), true, 'a released desktop action');
    for (const tool of Object.keys(TOOL_ARGUMENTS) as AirlockToolName[]) {
      assert.equal(valid(tool, own[tool]), true, `${tool}: its own result`);
      assert.equal(valid(tool, refusal), true, `${tool}: a refusal`);
      assert.equal(valid(tool, pending), true, `${tool}: pending`);
      assert.equal(valid(tool, { something: 'else' }), false, `${tool}: anything else`);
    }
    assert.equal(valid('bash', { exitCode: '0', stdout: '', stderr: '', timedOut: false }), false);
    assert.equal(valid('write', { path: '/workspace/a' }), false);
  });
});
