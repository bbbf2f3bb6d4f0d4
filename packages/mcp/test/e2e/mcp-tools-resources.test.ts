/**
 * Tools and resources over streamable HTTP with the official MCP client,
 * against a real server and gVisor: every tool declares an outputSchema
 * that its structured content matches (the client validates it) and gives
 * the JSON as text too; a long command's output arrives as progress
 * notifications while it runs; the workspace is resources (paged list,
 * read, template, subscriptions), every read through the airlock, so a
 * denied path is refused with the policy's reason.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, ResourceUpdatedNotificationSchema, type JSONRPCMessage, type Resource } from '@modelcontextprotocol/sdk/types.js';
import { Sandbox } from '@airlock/sdk';
import { TestInstallation, textBlocks, textOf, waitFor } from '../support/mcp-test-kit.js';

const CONTRACT = {
  version: 1,
  filesystem: { denyRead: ['/workspace/secret'] },
  policies: [
    'permit(principal, action, resource);',
    '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
  ],
};

let installation: TestInstallation;
let sandbox: Sandbox;
let client: Client;
let transport: StreamableHTTPClientTransport;

before(async () => {
  installation = await TestInstallation.start();
  sandbox = await Sandbox.create({ url: installation.url, token: installation.token, contract: CONTRACT });
  transport = new StreamableHTTPClientTransport(new URL(`${installation.url}/v1/sessions/${sandbox.id}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${installation.token}` } },
  });
  client = new Client({ name: 'airlock-resources-test', version: '1.0.0' });
  await client.connect(transport);
  const setup = await client.callTool({
    name: 'bash',
    arguments: { command: "mkdir -p docs secret deep/a/b many && echo hello > docs/readme.md && printf '\\000\\001' > bin.dat && echo x > deep/a/b/c.txt && for i in $(seq 1 120); do echo $i > many/f$i; done" },
  });
  assert.equal(textOf(setup), '[exit code 0]');
});
after(async () => {
  await client?.close();
  await installation?.destroy();
});

describe('structured output', () => {
  it('declares an outputSchema for every tool; every structured result matches it and is also given as JSON text', async () => {
    // listTools makes the client validate structured content against each outputSchema from now on.
    const { tools } = await client.listTools();
    assert.equal(tools.length, 10);
    for (const tool of tools) assert.equal(tool.outputSchema?.type, 'object', `${tool.name} declares an outputSchema`);
    const results = [
      await client.callTool({ name: 'write', arguments: { path: 'out/a.txt', content: 'alpha\nbeta\n' } }),
      await client.callTool({ name: 'read', arguments: { path: 'out/a.txt' } }),
      await client.callTool({ name: 'edit', arguments: { path: 'out/a.txt', old_string: 'beta', new_string: 'gamma' } }),
      await client.callTool({ name: 'ls', arguments: { path: 'out' } }),
      await client.callTool({ name: 'glob', arguments: { pattern: 'out/*.txt' } }),
      await client.callTool({ name: 'grep', arguments: { pattern: 'gamma', path: 'out' } }),
      await client.callTool({ name: 'bash', arguments: { command: 'echo structured' } }),
      await client.callTool({ name: 'read', arguments: { path: 'secret/key.txt' } }),
      await client.callTool({ name: 'bash', arguments: { command: 'tar cf /tmp/o.tar out' } }),
      await client.callTool({ name: 'bash', arguments: { command: 'true', timeout: 'soon' } }),
    ];
    for (const result of results) {
      assert.ok(result.structuredContent, textOf(result));
      assert.deepEqual(JSON.parse(textBlocks(result).at(-1) ?? ''), result.structuredContent);
    }
    assert.deepEqual(results[0]?.structuredContent, { path: '/workspace/out/a.txt', bytes: 11 });
    assert.equal((results[7]?.structuredContent as { code?: string }).code, 'POLICY_DENIED');
    assert.equal((results[8]?.structuredContent as { status?: string }).status, 'pending-approval');
    assert.equal((results[9]?.structuredContent as { code?: string }).code, 'INVALID_ARGUMENTS');
  });
});

describe('progress', () => {
  it("streams a running command's output as progress notifications on the call's stream", async () => {
    const updates: { progress: number; message?: string }[] = [];
    const result = await client.callTool({ name: 'bash', arguments: { command: 'for i in 1 2 3; do echo build step $i; sleep 1; done' } }, undefined, {
      onprogress: (update) => updates.push({ progress: update.progress, ...(update.message === undefined ? {} : { message: update.message }) }),
    });
    assert.equal(textOf(result), 'build step 1\nbuild step 2\nbuild step 3\n[exit code 0]');
    assert.ok(updates.length >= 2, `several notifications (got ${updates.length})`);
    // The first notification holds only the first line: it was sent while the command still ran.
    assert.equal(updates[0]?.message, 'build step 1\n');
    assert.equal(updates.map((update) => update.message).join(''), 'build step 1\nbuild step 2\nbuild step 3\n');
    assert.ok(updates.every((update, index) => index === 0 || update.progress > (updates[index - 1] as { progress: number }).progress), 'progress increases');
  });

  it('sends no progress to a client that did not ask for it', async () => {
    let notified = 0;
    // Watch the transport itself: the client would drop a progress notification it did not ask for.
    const deliver = transport.onmessage as (message: JSONRPCMessage) => void;
    transport.onmessage = (message: JSONRPCMessage) => {
      if ((message as { method?: string }).method === 'notifications/progress') notified += 1;
      deliver(message);
    };
    try {
      assert.equal(textOf(await client.callTool({ name: 'bash', arguments: { command: 'echo quiet; sleep 1; echo still' } })), 'quiet\nstill\n[exit code 0]');
    } finally {
      transport.onmessage = deliver;
    }
    assert.equal(notified, 0);
  });
});

describe('the workspace as resources', () => {
  it('lists the workspace page by page, leaving out what the policy hides', async () => {
    const listed: Resource[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await client.listResources(cursor === undefined ? {} : { cursor });
      listed.push(...page.resources);
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== undefined && pages < 20);
    assert.ok(pages >= 2, `more than one page (got ${pages})`);
    const uris = listed.map((resource) => resource.uri);
    assert.equal(new Set(uris).size, uris.length, 'no resource twice');
    for (const uri of ['airlock://workspace/docs/readme.md', 'airlock://workspace/bin.dat', 'airlock://workspace/deep/a/b/c.txt', 'airlock://workspace/many/f1', 'airlock://workspace/many/f120']) {
      assert.ok(uris.includes(uri), `${uri} is listed`);
    }
    assert.equal(uris.filter((uri) => uri.startsWith('airlock://workspace/many/')).length, 120);
    assert.equal(uris.some((uri) => uri.includes('secret')), false, 'a denyRead directory is not listed');
    const readme = listed.find((resource) => resource.uri === 'airlock://workspace/docs/readme.md');
    assert.deepEqual([readme?.name, readme?.mimeType, readme?.size], ['docs/readme.md', 'text/markdown', 6]);
  });

  it('reads text and binary files through the airlock, and offers the template', async () => {
    const text = await client.readResource({ uri: 'airlock://workspace/docs/readme.md' });
    assert.deepEqual(text.contents, [{ uri: 'airlock://workspace/docs/readme.md', mimeType: 'text/markdown', text: 'hello\n' }]);
    const binary = await client.readResource({ uri: 'airlock://workspace/bin.dat' });
    assert.deepEqual(binary.contents, [{ uri: 'airlock://workspace/bin.dat', mimeType: 'application/octet-stream', blob: 'AAE=' }]);
    const audited = (await sandbox.audit()).filter((record) => record.type === 'tool-call.completed' && record.data['gen_ai.tool.name'] === 'files.read');
    assert.ok(audited.some((record) => JSON.stringify(record.data).includes('/workspace/docs/readme.md')), 'the read is audited like any files.read');
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.deepEqual(resourceTemplates.map((template) => template.uriTemplate), ['airlock://workspace/{path}']);
  });

  it("refuses a denied path with the policy's reason, a missing file as not found, and a foreign URI as invalid", async () => {
    await assert.rejects(client.readResource({ uri: 'airlock://workspace/secret/key.txt' }), (error: unknown) => {
      assert.ok(error instanceof McpError);
      assert.equal(error.code, -32000);
      assert.match(error.message, /POLICY_DENIED: .*reading \/workspace\/secret\/key\.txt is denied: \/workspace\/secret is listed in filesystem\.denyRead/);
      assert.deepEqual((error.data as { policyIds?: string[] }).policyIds, ['contract.filesystem.denyRead']);
      return true;
    });
    await assert.rejects(client.readResource({ uri: 'airlock://workspace/nothing/here.txt' }), (error: unknown) => error instanceof McpError && error.code === -32002);
    await assert.rejects(client.readResource({ uri: 'file:///etc/passwd' }), (error: unknown) => error instanceof McpError && error.code === -32602 && /airlock:\/\/workspace\/\{path\}/.test(error.message));
    await assert.rejects(client.readResource({ uri: 'airlock://workspace/../etc/passwd' }), (error: unknown) => error instanceof McpError && error.code === -32602);
  });

  it('notifies a subscriber when the file changes, and refuses to subscribe to a denied path', async () => {
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (notification) => {
      updated.push(notification.params.uri);
    });
    const uri = 'airlock://workspace/watched.txt';
    await client.subscribeResource({ uri });
    assert.equal(textOf(await client.callTool({ name: 'bash', arguments: { command: 'echo first > watched.txt' } })), '[exit code 0]');
    await waitFor(() => (updated.includes(uri) ? true : undefined), 'notifications/resources/updated after the file was created');
    const seen = updated.length;
    await client.callTool({ name: 'write', arguments: { path: 'watched.txt', content: 'second\n' } });
    await waitFor(() => (updated.length > seen ? true : undefined), 'notifications/resources/updated after the file changed');
    assert.deepEqual((await client.readResource({ uri })).contents, [{ uri, mimeType: 'text/plain', text: 'second\n' }]);
    await client.unsubscribeResource({ uri });
    await assert.rejects(client.subscribeResource({ uri: 'airlock://workspace/secret/key.txt' }), (error: unknown) => error instanceof McpError && /filesystem\.denyRead/.test(error.message));
  });
});
