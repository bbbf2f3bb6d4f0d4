/**
 * The streamable HTTP transport to the letter of the 2025-11-25
 * specification, against a real server and gVisor: Origin and Host checks
 * on every route (MCP and API), JSON-RPC errors for bad input, SSE events
 * with ids behind a priming event with `retry`, and a call that survives a
 * dropped connection: the official client reconnects with Last-Event-ID
 * and receives the result, and the command finished.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Sandbox } from '@airlock/sdk';
import { AIRLOCK_BIN, DroppableFetch, TestInstallation, rawRequest, textOf, waitFor } from '../support/mcp-test-kit.js';

const ALLOWED_ORIGIN = 'https://console.example.com';
const ALLOWED_HOST = 'airlock.test';
const FOREIGN_ORIGIN = 'http://evil.example.com';

let installation: TestInstallation;
let sandbox: Sandbox;
const clients: Client[] = [];

async function connect(path: string, options: { headers?: Record<string, string>; fetch?: typeof fetch } = {}): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${installation.url}${path}`), {
    requestInit: { headers: { authorization: `Bearer ${installation.token}`, ...options.headers } },
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  const client = new Client({ name: 'airlock-transport-test', version: '1.0.0' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

/** Headers of a raw MCP POST. */
function mcpHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { authorization: `Bearer ${installation.token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...extra };
}

before(async () => {
  installation = await TestInstallation.start({ env: { AIRLOCK_ALLOWED_ORIGINS: ALLOWED_ORIGIN, AIRLOCK_ALLOWED_HOSTS: ALLOWED_HOST } });
  sandbox = await Sandbox.create({ url: installation.url, token: installation.token });
});
after(async () => {
  await Promise.allSettled(clients.map((client) => client.close()));
  await installation?.destroy();
});

describe('Origin and Host checks', () => {
  it('refuses a foreign Origin with 403 on the API and on MCP, and creates nothing', async () => {
    const countSessions = async () => ((await rawRequest(`${installation.url}/v1/sessions`, { headers: { authorization: `Bearer ${installation.token}` } })).json as { sessions: unknown[] }).sessions.length;
    const sessionsBefore = await countSessions();
    const api = await rawRequest(`${installation.url}/v1/sessions`, { headers: { authorization: `Bearer ${installation.token}`, origin: FOREIGN_ORIGIN } });
    assert.equal(api.status, 403);
    const apiError = (api.json as { error: { code: string; message: string } }).error;
    assert.equal(apiError.code, 'ORIGIN_FORBIDDEN');
    assert.match(apiError.message, /--allowed-origin http:\/\/evil\.example\.com/);
    assert.equal((await rawRequest(`${installation.url}/healthz`, { headers: { origin: FOREIGN_ORIGIN } })).status, 403);

    const mcp = await rawRequest(`${installation.url}/mcp`, { method: 'POST', headers: mcpHeaders({ origin: FOREIGN_ORIGIN }), body: initialize });
    assert.equal(mcp.status, 403);
    const body = mcp.json as { jsonrpc: string; id: unknown; error: { code: number; message: string; data: { code: string } } };
    assert.equal(body.jsonrpc, '2.0');
    assert.equal(body.id, null);
    assert.equal(body.error.data.code, 'ORIGIN_FORBIDDEN');
    assert.equal(mcp.headers['mcp-session-id'], undefined);
    assert.equal(await countSessions(), sessionsBefore, 'the refused initialize created no session');
    // Another port of the same host is another origin.
    assert.equal((await rawRequest(`${installation.url}/healthz`, { headers: { origin: `http://127.0.0.1:${installation.port + 1}` } })).status, 403);
  });

  it("lets the server's own origins, an --allowed-origin and clients without Origin through", async () => {
    for (const origin of [`http://127.0.0.1:${installation.port}`, `http://localhost:${installation.port}`, ALLOWED_ORIGIN, undefined]) {
      const response = await rawRequest(`${installation.url}/v1/sessions`, { headers: { authorization: `Bearer ${installation.token}`, ...(origin ? { origin } : {}) } });
      assert.equal(response.status, 200, `origin ${String(origin)}`);
    }
    const client = await connect(`/v1/sessions/${sandbox.id}/mcp`, { headers: { origin: ALLOWED_ORIGIN } });
    assert.ok((await client.listTools()).tools.length > 0);
  });

  it('refuses a Host that is not one of its names (DNS rebinding), on the API and on MCP', async () => {
    const port = installation.port;
    const api = await rawRequest(`${installation.url}/healthz`, { headers: { host: `evil.example.com:${port}` } });
    assert.equal(api.status, 403);
    assert.equal((api.json as { error: { code: string } }).error.code, 'HOST_FORBIDDEN');
    assert.match((api.json as { error: { message: string } }).error.message, /--allowed-host/);
    const mcp = await rawRequest(`${installation.url}/mcp`, { method: 'POST', headers: mcpHeaders({ host: `evil.example.com:${port}` }), body: initialize });
    assert.equal(mcp.status, 403);
    assert.equal((mcp.json as { error: { data: { code: string } } }).error.data.code, 'HOST_FORBIDDEN');
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, ALLOWED_HOST, `${ALLOWED_HOST}:8443`]) {
      assert.equal((await rawRequest(`${installation.url}/healthz`, { headers: { host } })).status, 200, `host ${host}`);
    }
    assert.equal((await rawRequest(`${installation.url}/healthz`, { headers: { host: `localhost:${port + 1}` } })).status, 403);
  });

  it('stops `airlock serve` with a clear error for an --allowed-origin that is not an origin', () => {
    const dataDir = mkdtempSync('/var/tmp/airlock-origin-');
    try {
      const run = spawnSync(process.execPath, [AIRLOCK_BIN, 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--allowed-origin', 'console.example.com/app'], {
        encoding: 'utf8',
        timeout: 30_000,
      });
      assert.notEqual(run.status, 0);
      assert.match(run.stderr, /INVALID_ARGUMENTS: --allowed-origin takes an origin, scheme:\/\/host\[:port\] without a path/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('JSON-RPC errors for bad input', () => {
  it('answers malformed JSON with -32700 and a message that is not JSON-RPC with -32600', async () => {
    const malformed = await rawRequest(`${installation.url}/mcp`, { method: 'POST', headers: mcpHeaders(), body: '{"jsonrpc": "2.0", "method": ' });
    assert.equal(malformed.status, 400);
    const parseError = malformed.json as { jsonrpc: string; id: unknown; error: { code: number; message: string } };
    assert.deepEqual([parseError.jsonrpc, parseError.id, parseError.error.code], ['2.0', null, -32700]);
    assert.match(parseError.error.message, /^Parse error/);
    const invalid = await rawRequest(`${installation.url}/v1/sessions/${sandbox.id}/mcp`, { method: 'POST', headers: mcpHeaders(), body: '{"hello": "world"}' });
    assert.equal(invalid.status, 400);
    assert.equal((invalid.json as { error: { code: number } }).error.code, -32600);
  });

  it('answers an unknown tool and a tools/call without a name with -32602 naming the field', async () => {
    const client = await connect(`/v1/sessions/${sandbox.id}/mcp`);
    await assert.rejects(client.callTool({ name: 'format_disk', arguments: {} }), (error: unknown) => {
      assert.ok(error instanceof McpError);
      assert.equal(error.code, -32602);
      assert.match(error.message, /unknown tool "format_disk"; the tools are bash, /);
      assert.equal((error.data as { field?: string }).field, 'name');
      return true;
    });
    const { EmptyResultSchema } = await import('@modelcontextprotocol/sdk/types.js');
    await assert.rejects(client.request({ method: 'tools/call', params: { arguments: {} } }, EmptyResultSchema), (error: unknown) => {
      assert.ok(error instanceof McpError);
      assert.equal(error.code, -32602);
      assert.equal((error.data as { field?: string }).field, 'name');
      assert.doesNotMatch(error.message, /"code":|invalid_type/, 'a sentence, not a validator dump');
      return true;
    });
  });
});

describe('resumable streams', () => {
  it('opens each call stream with a priming event (id, retry) and gives every event an id', async () => {
    const init = await rawRequest(`${installation.url}/v1/sessions/${sandbox.id}/mcp`, { method: 'POST', headers: mcpHeaders(), body: initialize });
    assert.equal(init.status, 200);
    const mcpSession = String(init.headers['mcp-session-id']);
    const session = mcpHeaders({ 'mcp-session-id': mcpSession, 'mcp-protocol-version': '2025-11-25' });
    await rawRequest(`${installation.url}/v1/sessions/${sandbox.id}/mcp`, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
    const call = await rawRequest(`${installation.url}/v1/sessions/${sandbox.id}/mcp`, {
      method: 'POST',
      headers: session,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'bash', arguments: { command: 'echo streamed' } } }),
    });
    assert.equal(call.headers['content-type'], 'text/event-stream');
    const events = call.text.split('\n\n').filter((event) => event.trim() !== '');
    assert.match(events[0] ?? '', /^id: \S+\nretry: 1000\ndata: $/, 'the priming event: an id, retry, empty data');
    assert.ok(events.length >= 2);
    for (const event of events.slice(1)) assert.match(event, /^event: message\nid: \S+\ndata: \{/);
    assert.match(events.at(-1) ?? '', /streamed.*"id":2\}$/s, 'the last event is the result');
    await rawRequest(`${installation.url}/v1/sessions/${sandbox.id}/mcp`, { method: 'DELETE', headers: session });
  });

  it('keeps a call running when its connection drops; the client reconnects with Last-Event-ID and receives the result', async () => {
    const network = new DroppableFetch();
    const client = await connect(`/v1/sessions/${sandbox.id}/mcp`, { fetch: network.fetch });
    const tokens: string[] = [];
    const call = client.callTool({ name: 'bash', arguments: { command: 'sleep 5; echo done > /workspace/f; echo finished' } }, undefined, {
      onresumptiontoken: (token) => tokens.push(token),
      timeout: 60_000,
    });
    await waitFor(() => tokens[0], 'the priming event of the call stream');
    network.dropCalls();
    const result = await call;
    assert.equal(textOf(result), 'finished\n[exit code 0]');
    assert.ok(network.resumedFrom.includes(tokens[0] as string), `the client resumed from the priming event (resumed from ${network.resumedFrom.join(', ')})`);
    assert.equal((await sandbox.files.read('/workspace/f')).toString(), 'done\n');
    const completed = (await sandbox.audit()).filter((record) => record.type === 'tool-call.completed' && JSON.stringify(record.data).includes('echo done'));
    assert.equal(completed.length, 1);
    assert.equal(completed[0]?.data['aborted'], false);
    assert.equal(completed[0]?.data['exitCode'], 0);
  });
});
