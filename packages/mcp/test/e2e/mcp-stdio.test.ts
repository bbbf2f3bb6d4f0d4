/**
 * `airlock mcp` over stdio with the official MCP client, against a real
 * server and gVisor: tools, files, commands, a denial with its reason, an
 * approval through elicitation, tool errors for wrong-shaped arguments,
 * progress while a command runs, the workspace as resources, and cleanup
 * when the client goes away.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, McpError, type ElicitResult } from '@modelcontextprotocol/sdk/types.js';
import { Sandbox } from '@airlock/sdk';
import { AIRLOCK_BIN, CONTRACT, TestInstallation, definedEnv, textOf, waitFor } from '../support/mcp-test-kit.js';

let installation: TestInstallation;
before(async () => {
  installation = await TestInstallation.start();
});
after(async () => {
  await installation?.destroy();
});

describe('airlock mcp over stdio', () => {
  let client: Client;
  let sessionId: string;
  let answer: (message: string) => ElicitResult = () => ({ action: 'cancel' });
  const asked: string[] = [];

  before(async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [AIRLOCK_BIN, 'mcp', '--contract', CONTRACT], env: definedEnv(installation.env), stderr: 'ignore' });
    client = new Client({ name: 'airlock-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params.message);
      return answer(request.params.message);
    });
    await client.connect(transport);
    sessionId = /session (ses_\w+)/.exec(client.getInstructions() ?? '')?.[1] ?? '';
    assert.match(sessionId, /^ses_/);
  });
  after(async () => {
    await client?.close();
  });

  it('lists the tools with schemas and annotations', async () => {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((tool) => tool.name).sort(), ['await_approval', 'bash', 'edit', 'fork', 'glob', 'grep', 'ls', 'read', 'snapshot', 'write']);
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    assert.equal(byName.get('fork')?.annotations?.destructiveHint, false);
    assert.deepEqual(byName.get('fork')?.inputSchema.required, ['count']);
    assert.equal(byName.get('read')?.annotations?.readOnlyHint, true);
    assert.equal(byName.get('bash')?.annotations?.destructiveHint, true);
    assert.deepEqual(byName.get('edit')?.inputSchema.required, ['path', 'old_string', 'new_string']);
    assert.ok(byName.get('bash')?.inputSchema.properties?.['timeout']);
  });

  it('writes, reads line ranges, and edits exactly', async () => {
    const written = await client.callTool({ name: 'write', arguments: { path: 'notes/a.txt', content: 'one\ntwo\nthree\ntwo\n' } });
    assert.equal(written.isError, undefined, textOf(written));
    const read = await client.callTool({ name: 'read', arguments: { path: '/workspace/notes/a.txt', offset: 2, limit: 2 } });
    assert.match(textOf(read), /^\s+2\ttwo\n\s+3\tthree\n\[lines 2-3 of 4/);
    const ambiguous = await client.callTool({ name: 'edit', arguments: { path: 'notes/a.txt', old_string: 'two', new_string: '2' } });
    assert.equal(ambiguous.isError, true);
    assert.match(textOf(ambiguous), /^EDIT_AMBIGUOUS: .*2 times.*replace_all/);
    const all = await client.callTool({ name: 'edit', arguments: { path: 'notes/a.txt', old_string: 'two', new_string: '2', replace_all: true } });
    assert.match(textOf(all), /replaced 2 occurrences/);
    assert.match(textOf(await client.callTool({ name: 'read', arguments: { path: 'notes/a.txt' } })), /1\tone\n\s+2\t2\n\s+3\tthree\n\s+4\t2$/);
  });

  it('runs a command and returns its output and exit code', async () => {
    const result = await client.callTool({ name: 'bash', arguments: { command: 'echo out; echo err >&2; exit 3', timeout: 30 } });
    assert.equal(textOf(result), 'out\n[stderr]\nerr\n[exit code 3]');
    assert.deepEqual(result.structuredContent, { exitCode: 3, stdout: 'out\n', stderr: 'err\n', timedOut: false });
  });

  it('lists, globs and greps through the airlock', async () => {
    assert.match(textOf(await client.callTool({ name: 'ls', arguments: {} })), /^notes\/$/m);
    assert.equal(textOf(await client.callTool({ name: 'glob', arguments: { pattern: '**/*.txt' } })), '/workspace/notes/a.txt');
    assert.equal(textOf(await client.callTool({ name: 'grep', arguments: { pattern: 'THR', ignore_case: true, include: '*.txt' } })), '/workspace/notes/a.txt:3:three');
  });

  it('returns a denial as a tool error with the code and the policy reason', async () => {
    const result = await client.callTool({ name: 'bash', arguments: { command: 'ls && rm -rf /workspace/notes' } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^POLICY_DENIED: policy policy1 forbids exec: command runs rm/);
    assert.match(textOf(result), /policies: policy1/);
    assert.match(textOf(await client.callTool({ name: 'read', arguments: { path: 'notes/a.txt' } })), /three/, 'nothing was deleted');
  });

  it('asks the user through elicitation, records the answer through the API, and runs the call once', async () => {
    answer = () => ({ action: 'accept', content: { approve: true, reason: 'backup is fine' } });
    const result = await client.callTool({ name: 'bash', arguments: { command: 'tar cf /tmp/n.tar -C /workspace notes && echo archived' } });
    assert.equal(textOf(result), 'archived\n[exit code 0]');
    assert.match(asked.at(-1) ?? '', /holds this call for your approval \(apr_\w+\)[\s\S]*tar cf[\s\S]*policy2 requires approval/);
    const sandbox = await Sandbox.connect(sessionId, { url: installation.url, token: installation.token });
    const [approval] = (await sandbox.approvals.list({ all: true })).filter((a) => a.call.tool === 'exec');
    assert.equal(approval?.state, 'executed');
    // The decider is the token the MCP server authenticated with, not the client name it labels itself with (docs/security.md).
    assert.equal(approval?.decidedBy, 'token:admin');
    assert.equal(approval?.decisionReason, 'backup is fine');
  });

  it('refuses the call when the user declines', async () => {
    answer = () => ({ action: 'decline' });
    const result = await client.callTool({ name: 'bash', arguments: { command: 'tar cf /tmp/m.tar /workspace; touch /workspace/declined-ran' } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^APPROVAL_DENIED: a human denied this call/);
    assert.match(textOf(await client.callTool({ name: 'ls', arguments: { path: '/workspace' } })), /^(?![\s\S]*declined-ran)/);
  });

  it('returns wrong-shaped arguments as a tool error naming the field; an unknown tool is a protocol error', async () => {
    const wrongType = await client.callTool({ name: 'read', arguments: { path: 5 } });
    assert.equal(wrongType.isError, true);
    assert.match(textOf(wrongType), /^INVALID_ARGUMENTS: invalid arguments for read: path: expected a string, got a number/);
    assert.equal((wrongType.structuredContent as { field?: string }).field, 'path');
    const misspelt = await client.callTool({ name: 'edit', arguments: { file_path: 'a', old_string: 'x', new_string: 'y' } });
    assert.equal(misspelt.isError, true);
    assert.match(textOf(misspelt), /path: required: expected a string; file_path: not an argument of edit \(its arguments are path, old_string, new_string, replace_all\)/);
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), (error: unknown) => {
      assert.ok(error instanceof McpError);
      assert.equal(error.code, -32602);
      assert.match(error.message, /unknown tool "nope"/);
      return true;
    });
  });

  it('streams a command\'s output as progress notifications while it runs', async () => {
    const updates: { progress: number; message?: string }[] = [];
    const call = client.callTool({ name: 'bash', arguments: { command: 'for i in 1 2 3; do echo step$i; sleep 1; done' } }, undefined, {
      onprogress: (update) => updates.push({ progress: update.progress, ...(update.message === undefined ? {} : { message: update.message }) }),
    });
    await call;
    // The first notification holds only the first line: it was sent while the command still ran.
    assert.equal(updates[0]?.message, 'step1\n');
    assert.equal(textOf(await call), 'step1\nstep2\nstep3\n[exit code 0]');
    assert.equal(updates.map((update) => update.message).join(''), 'step1\nstep2\nstep3\n');
    assert.ok(updates.every((update, index) => index === 0 || update.progress > (updates[index - 1] as { progress: number }).progress), 'progress increases');
  });

  it('serves the workspace as resources', async () => {
    const { resources } = await client.listResources();
    assert.ok(resources.some((resource) => resource.uri === 'airlock://workspace/notes/a.txt' && resource.name === 'notes/a.txt'));
    const read = await client.readResource({ uri: 'airlock://workspace/notes/a.txt' });
    assert.deepEqual(read.contents, [{ uri: 'airlock://workspace/notes/a.txt', mimeType: 'text/plain', text: 'one\n2\nthree\n2\n' }]);
  });

  it('terminates the session it created when the client disconnects', async () => {
    await client.close();
    const sandbox = await Sandbox.connect(sessionId, { url: installation.url, token: installation.token });
    await waitFor(async () => ((await sandbox.getInfo()).state === 'terminated' ? true : undefined), 'the session to be terminated', 20_000);
  });
});

describe('a stdio client that disconnects mid-command', () => {
  it('has its command killed, and leaves a session given with --session running', async () => {
    const sandbox = await Sandbox.create({ url: installation.url, token: installation.token });
    const transport = new StdioClientTransport({ command: process.execPath, args: [AIRLOCK_BIN, 'mcp', '--session', sandbox.id], env: definedEnv(installation.env), stderr: 'ignore' });
    const client = new Client({ name: 'airlock-test', version: '1.0.0' });
    await client.connect(transport);
    const call = client.callTool({ name: 'bash', arguments: { command: 'sleep 8; touch /workspace/late' } }).catch((error: unknown) => error);
    const running = "grep -l 'workspace/lat[e]' /proc/[0-9]*/cmdline 2>/dev/null | wc -l";
    await waitFor(async () => ((await sandbox.commands.run(running)).stdout.trim() !== '0' ? true : undefined), 'the command to run');
    await client.close();
    assert.ok((await call) instanceof Error);
    const record = await waitFor(async () => (await sandbox.audit()).find((r) => r.type === 'tool-call.completed' && r.data['aborted'] === true), 'the aborted call in the audit log', 15_000);
    assert.equal(record.data['exitCode'], 137);
    // No process of the command is left to create the file later.
    assert.equal((await sandbox.commands.run(running)).stdout, '0\n');
    assert.doesNotMatch((await sandbox.commands.run('ls /workspace')).stdout, /^late$/m);
    assert.equal((await sandbox.getInfo()).state, 'running');
  });
});
