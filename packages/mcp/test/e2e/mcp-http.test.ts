/**
 * MCP over streamable HTTP on the Airlock server (/mcp and
 * /v1/sessions/:id/mcp) with the official MCP client, against a real server
 * and gVisor: tools, files, commands, a denial, approvals (while the call
 * waits, and pending then await_approval), argument errors, session choice,
 * the bearer token, a cancelled call, and snapshot / fork where the contract
 * allows them. The 2025-11-25 transport (origin checks, resumable streams,
 * JSON-RPC errors) is in mcp-transport.test.ts; progress, structured output
 * and resources in mcp-tools-resources.test.ts.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Sandbox } from '@airlock/sdk';
import { CONTRACT, TestInstallation, textOf, waitFor } from '../support/mcp-test-kit.js';

let installation: TestInstallation;
let sandbox: Sandbox;
const clients: Client[] = [];

async function connect(path: string, options: { elicitation?: boolean; headers?: Record<string, string> } = {}): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const transport = new StreamableHTTPClientTransport(new URL(`${installation.url}${path}`), {
    requestInit: { headers: { authorization: `Bearer ${installation.token}`, ...options.headers } },
  });
  const client = new Client({ name: 'airlock-http-test', version: '1.0.0' }, options.elicitation ? { capabilities: { elicitation: {} } } : {});
  clients.push(client);
  await client.connect(transport);
  return { client, transport };
}

before(async () => {
  installation = await TestInstallation.start();
  const contract = JSON.parse(readFileSync(CONTRACT, 'utf8')) as unknown;
  sandbox = await Sandbox.create({ url: installation.url, token: installation.token, contract });
});
after(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await installation?.destroy();
});

describe('MCP at /v1/sessions/:id/mcp', () => {
  let client: Client;
  before(async () => {
    ({ client } = await connect(`/v1/sessions/${sandbox.id}/mcp`));
  });

  it('lists the tools and serves the session of the path', async () => {
    const { tools } = await client.listTools();
    assert.equal(tools.length, 10);
    assert.match(client.getInstructions() ?? '', new RegExp(`session ${sandbox.id}`));
  });

  it('writes and reads a file, and runs a command', async () => {
    const written = await client.callTool({ name: 'write', arguments: { path: 'http/hello.txt', content: 'hello over http\n' } });
    assert.equal(textOf(written), 'wrote 16 bytes to /workspace/http/hello.txt');
    assert.match(textOf(await client.callTool({ name: 'read', arguments: { path: 'http/hello.txt' } })), /1\thello over http$/);
    assert.equal(textOf(await client.callTool({ name: 'bash', arguments: { command: 'wc -c < http/hello.txt' } })), '16\n[exit code 0]');
  });

  it('returns a denial as a tool error with the code and the policy reason', async () => {
    const result = await client.callTool({ name: 'bash', arguments: { command: 'rm -rf /workspace/http' } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^POLICY_DENIED: policy policy1 forbids exec: command runs rm/);
  });

  it('returns a held call as pending with its approval id; await_approval returns the result once approved', async () => {
    const held = await client.callTool({ name: 'bash', arguments: { command: 'tar cf /tmp/h.tar -C /workspace http && echo archived' } });
    const approvalId = (held.structuredContent as { approvalId?: string }).approvalId ?? '';
    assert.match(textOf(held), new RegExp(`^APPROVAL_PENDING: .*\\(approval ${approvalId}\\).*policy2 requires approval[\\s\\S]*airlock approvals approve ${approvalId}[\\s\\S]*await_approval`));
    const stillPending = await client.callTool({ name: 'await_approval', arguments: { approval_id: approvalId, timeout: 0.5 } });
    assert.match(textOf(stillPending), /^APPROVAL_PENDING/);
    await sandbox.approvals.approve(approvalId, { by: 'test-human' });
    assert.equal(textOf(await client.callTool({ name: 'await_approval', arguments: { approval_id: approvalId } })), 'archived\n[exit code 0]');
  });

  it('returns wrong-shaped arguments as a tool error naming the field and what was expected', async () => {
    const result = await client.callTool({ name: 'bash', arguments: { command: 'true', timeout: 'soon' } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^INVALID_ARGUMENTS: invalid arguments for bash: timeout: expected a number, got a string\nNothing ran/);
    assert.equal((result.structuredContent as { field?: string }).field, 'timeout');
  });
});

describe('MCP at /mcp', () => {
  it('holds a call while it waits for a confirmation, and runs it when a human approves through the API', async () => {
    const asked: string[] = [];
    let withdrawn = false;
    const { client } = await connect(`/mcp?session=${sandbox.id}`, { elicitation: true });
    // A person who never answers in the client: the approval comes through the API instead.
    client.setRequestHandler(ElicitRequestSchema, (request, extra) => {
      asked.push(request.params.message);
      return new Promise((resolve) =>
        extra.signal.addEventListener('abort', () => {
          withdrawn = true;
          resolve({ action: 'cancel' });
        }),
      );
    });
    const call = client.callTool({ name: 'bash', arguments: { command: 'tar cf /tmp/w.tar /etc/hostname 2>/dev/null && echo waited' } });
    const approval = await waitFor(async () => (await sandbox.approvals.list())[0], 'the approval to appear');
    await waitFor(() => (asked.length > 0 ? true : undefined), 'the confirmation request');
    assert.match(asked[0] ?? '', new RegExp(approval.id));
    await sandbox.approvals.approve(approval.id, { by: 'test-human', reason: 'approved elsewhere' });
    assert.equal(textOf(await call), 'waited\n[exit code 0]');
    await waitFor(() => (withdrawn ? true : undefined), 'the confirmation to be withdrawn', 5000);
    assert.equal((await sandbox.approvals.get(approval.id)).state, 'executed');
  });

  it('takes the session from X-Airlock-Session', async () => {
    const { client } = await connect('/mcp', { headers: { 'x-airlock-session': sandbox.id } });
    assert.match(client.getInstructions() ?? '', new RegExp(`session ${sandbox.id}`));
  });

  it('without a session, creates one that ends with the MCP session', async () => {
    const { client, transport } = await connect('/mcp');
    const created = /session (ses_\w+)/.exec(client.getInstructions() ?? '')?.[1] ?? '';
    assert.notEqual(created, sandbox.id);
    assert.equal(textOf(await client.callTool({ name: 'bash', arguments: { command: 'echo fresh' } })), 'fresh\n[exit code 0]');
    await transport.terminateSession();
    const other = await Sandbox.connect(created, { url: installation.url, token: installation.token });
    await waitFor(async () => ((await other.getInfo()).state === 'terminated' ? true : undefined), 'the created session to be terminated', 20_000);
  });

  it('refuses an unknown session, and requests without the bearer token', async () => {
    await assert.rejects(connect('/v1/sessions/ses_missing/mcp'), /SESSION_NOT_FOUND/);
    const response = await fetch(`${installation.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    assert.equal(response.status, 401);
  });

  it('stops the command of a call the client cancels (notifications/cancelled)', async () => {
    const { client } = await connect(`/mcp?session=${sandbox.id}`);
    const cancel = new AbortController();
    const call = client.callTool({ name: 'bash', arguments: { command: 'sleep 8; touch /workspace/late-http' } }, undefined, { signal: cancel.signal }).catch((error: unknown) => error);
    const running = "grep -l 'late[-]http' /proc/[0-9]*/cmdline 2>/dev/null | wc -l";
    await waitFor(async () => ((await sandbox.commands.run(running)).stdout.trim() !== '0' ? true : undefined), 'the command to run');
    cancel.abort('the user pressed stop');
    assert.ok((await call) instanceof Error);
    const record = await waitFor(
      async () => (await sandbox.audit()).find((r) => r.type === 'tool-call.completed' && r.data['aborted'] === true && JSON.stringify(r.data).includes('late-http')),
      'the aborted call in the audit log',
      15_000,
    );
    assert.equal(record.data['exitCode'], 137);
    // No process of the command is left to create the file later (its own command line names it; grep's does not match).
    assert.equal((await sandbox.commands.run(running)).stdout, '0\n');
    assert.doesNotMatch((await sandbox.commands.run('ls /workspace')).stdout, /late-http/);
  });
});

describe('MCP snapshot and fork', () => {
  it('snapshots the session and forks branches from the snapshot, each with the disk of that moment', async () => {
    const { client } = await connect(`/v1/sessions/${sandbox.id}/mcp`);
    assert.equal(textOf(await client.callTool({ name: 'bash', arguments: { command: 'echo before > /workspace/moment.txt' } })), '[exit code 0]');
    const taken = await client.callTool({ name: 'snapshot', arguments: { name: 'before-change' } });
    assert.equal(taken.isError, undefined, textOf(taken));
    const snapshotId = (taken.structuredContent as { snapshotId?: string }).snapshotId ?? '';
    assert.match(textOf(taken), new RegExp(`^snapshot ${snapshotId} "before-change" taken: memory and disk`));
    assert.equal((await sandbox.snapshots.get(snapshotId)).name, 'before-change');
    await client.callTool({ name: 'bash', arguments: { command: 'echo after > /workspace/moment.txt' } });

    const forked = await client.callTool({ name: 'fork', arguments: { count: 2, snapshot_id: snapshotId } });
    assert.equal(forked.isError, undefined, textOf(forked));
    const branches = (forked.structuredContent as { branches: { index: number; sessionId: string; state: string }[] }).branches;
    assert.deepEqual(branches.map((branch) => branch.index), [0, 1]);
    assert.match(textOf(forked), new RegExp(`^forked 2 of 2 branches from snapshot ${snapshotId}`));
    for (const branch of branches) {
      const copy = await Sandbox.connect(branch.sessionId, { url: installation.url, token: installation.token });
      assert.equal((await copy.files.read('/workspace/moment.txt')).toString(), 'before\n');
      assert.equal((await copy.getInfo()).lineage?.parentSessionId, sandbox.id);
      await copy.kill();
    }
    assert.equal((await sandbox.files.read('/workspace/moment.txt')).toString(), 'after\n', 'the parent runs on unchanged');
    const audited = (await sandbox.audit()).find((record) => record.type === 'tool-call.completed' && record.data['gen_ai.tool.name'] === 'fork');
    assert.deepEqual(audited?.data['branchSessionIds'], branches.map((branch) => branch.sessionId));
  });

  it('returns a fork count that is not a whole number as a tool error naming the field', async () => {
    const { client } = await connect(`/v1/sessions/${sandbox.id}/mcp`);
    const result = await client.callTool({ name: 'fork', arguments: { count: 1.5 } });
    assert.equal(result.isError, true);
    assert.match(textOf(result), /^INVALID_ARGUMENTS: invalid arguments for fork: count: /);
    assert.equal((result.structuredContent as { field?: string }).field, 'count');
  });

  it('does not offer them when the contract leaves them out, and denies a call anyway with the contract\'s reason', async () => {
    const tools = ['exec', 'files.read', 'files.write', 'files.edit', 'files.list'];
    const narrow = await Sandbox.create({ url: installation.url, token: installation.token, contract: { version: 1, tools } });
    try {
      const { client } = await connect(`/v1/sessions/${narrow.id}/mcp`);
      const listed = (await client.listTools()).tools.map((tool) => tool.name).sort();
      assert.deepEqual(listed, ['await_approval', 'bash', 'edit', 'glob', 'grep', 'ls', 'read', 'write']);
      const refused = await client.callTool({ name: 'fork', arguments: { count: 1 } });
      assert.equal(refused.isError, true);
      assert.match(textOf(refused), /^POLICY_DENIED: the tool fork is not in this session's contract \(tools: exec, files.read, files.write, files.edit, files.list\)/);
      assert.equal((await narrow.getInfo()).tools.includes('fork'), false);
    } finally {
      await narrow.kill();
    }
  });
});

