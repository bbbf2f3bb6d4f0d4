/**
 * Hostile suite: tenants. Two tenants (acme, globex) on one real server,
 * each with its own tokens. A token of acme names globex's session,
 * snapshot and approval on every route family and must get exactly the
 * answer an id that does not exist gets (404, same code, same message), and
 * nothing of globex's may change. Lists are filtered; every role meets the
 * documented matrix; a revoked token answers 401 at once; the approver
 * recorded is the token that authenticated; MCP carries the caller's token.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi, needle, waitFor, type Answer } from '../support/hostile-kit.js';

/** The API spoken with one token. */
class TokenApi extends HostileApi {
  constructor(
    installation: TestInstallation,
    readonly token: string,
  ) {
    super(installation);
  }

  override request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    return super.request(method, path, body, { authorization: `Bearer ${this.token}`, ...headers });
  }
}

interface CreatedToken {
  id: string;
  token: string;
  tenant: string;
  role: string;
}

/** Exec calls running tar wait for a human. */
const HOLDING_CONTRACT = {
  version: 1,
  idle: { keepAwake: true },
  policies: [
    'permit(principal, action, resource);',
    '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
  ],
};

/** Ids of the right shape that were never made. */
const MISSING = { session: 'ses_0000000000000000000000000000', snapshot: 'snap_0000000000000000000000000000', approval: 'apr_0000000000000000000000000000' };

describe('hostile: a token reaches only its own tenant', { timeout: 900_000 }, () => {
  let installation: TestInstallation;
  let admin: HostileApi;
  const tokens: Record<string, CreatedToken> = {};
  const api: Record<string, TokenApi> = {};
  let mine = '';
  let theirs = '';
  let theirSnapshot = '';
  let theirApproval = '';
  const secret = needle('globex-secret');

  const createToken = (tenant: string, role: string, name?: string): CreatedToken => {
    const result = installation.cli(['tokens', 'create', '--tenant', tenant, '--role', role, ...(name ? ['--name', name] : []), '--json']);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as CreatedToken;
  };

  before(async () => {
    installation = await TestInstallation.start();
    admin = new HostileApi(installation);
    for (const [key, tenant, role, name] of [
      ['acmeOperator', 'acme', 'operator'],
      ['acmeApprover', 'acme', 'approver', 'alice'],
      ['acmeAgent', 'acme', 'agent'],
      ['globexOperator', 'globex', 'operator'],
    ] as const) {
      tokens[key] = createToken(tenant, role, name);
      api[key] = new TokenApi(installation, tokens[key].token);
    }
    mine = await api['acmeOperator']!.createSession(HOLDING_CONTRACT);
    theirs = await api['globexOperator']!.createSession(HOLDING_CONTRACT);
    await api['globexOperator']!.write(theirs, '/workspace/secret.txt', secret.value);
    const snapshot = await api['globexOperator']!.request('POST', `/v1/sessions/${theirs}/snapshots`, { name: 'globex-only' });
    assert.equal(snapshot.status, 201, `${snapshot.code} ${snapshot.message}`);
    theirSnapshot = String(snapshot.body['id']);
    const held = await api['globexOperator']!.tool(theirs, 'exec', { command: 'tar --version >/dev/null && echo ran >> /workspace/held.txt' });
    assert.equal(held.status, 202, `${held.code} ${held.message}`);
    theirApproval = String(held.body['approvalId']);
  });

  after(async () => {
    await installation?.destroy();
  });

  it('`tokens create --json` prints exactly id, token, tenant and role; `tokens ls --json` never prints a secret', () => {
    const made = createToken('initech', 'agent');
    assert.deepEqual(Object.keys(made).sort(), ['id', 'role', 'tenant', 'token']);
    assert.equal(made.tenant, 'initech');
    assert.equal(made.role, 'agent');
    const listed = installation.cli(['tokens', 'ls', '--json']);
    assert.equal(listed.code, 0, listed.stderr);
    for (const token of [made, ...Object.values(tokens)]) assert.ok(!listed.stdout.includes(token.token), `the secret of ${token.id} is listed`);
    const rows = JSON.parse(listed.stdout) as { id: string; tenant: string; role: string; revoked: boolean; createdAt: string; lastUsedAt: string | null }[];
    assert.deepEqual(rows.find((row) => row.id === made.id)?.tenant, 'initech');
    assert.ok(rows.every((row) => typeof row.createdAt === 'string' && typeof row.revoked === 'boolean' && 'lastUsedAt' in row));
    const plain = installation.cli(['tokens', 'create', '--tenant', 'initech']);
    assert.equal(plain.code, 0, plain.stderr);
    assert.match(plain.stdout, /^tok_\w+ \(tenant initech, role operator\): airlock_/);
  });

  it('bad token input is refused and makes nothing', () => {
    const before = installation.cli(['tokens', 'ls', '--json']).stdout;
    assert.notEqual(installation.cli(['tokens', 'create', '--tenant', '../etc', '--json']).code, 0);
    assert.notEqual(installation.cli(['tokens', 'create', '--tenant', 'acme', '--role', 'root', '--json']).code, 0);
    assert.notEqual(installation.cli(['tokens', 'create', '--json']).code, 0, '--tenant is required');
    assert.notEqual(installation.cli(['tokens', 'revoke', 'tok_nothing']).code, 0);
    assert.equal(installation.cli(['tokens', 'ls', '--json']).stdout, before);
  });

  it("every route family answers another tenant's ids exactly as ids that do not exist, and changes nothing", async () => {
    const operator = api['acmeOperator']!;
    const approver = api['acmeApprover']!;
    const agent = api['acmeAgent']!;
    /** [caller, method, path template, body]: {S} a session, {N} a snapshot, {P} an approval. */
    const attempts: [TokenApi, string, string, unknown?][] = [
      [operator, 'GET', '/v1/sessions/{S}'],
      [operator, 'GET', '/v1/sessions/{S}/contract'],
      [operator, 'PATCH', '/v1/sessions/{S}/contract', { network: { allowedDomains: ['example.com'] } }],
      [operator, 'GET', '/v1/sessions/{S}/audit'],
      [operator, 'GET', '/v1/sessions/{S}/audit/verify'],
      [operator, 'GET', '/v1/sessions/{S}/audit/export'],
      [operator, 'POST', '/v1/sessions/{S}/suspend'],
      [operator, 'POST', '/v1/sessions/{S}/resume'],
      [operator, 'POST', '/v1/sessions/{S}/pause'],
      [operator, 'POST', '/v1/sessions/{S}/restart'],
      [operator, 'POST', '/v1/sessions/{S}/guard/reset'],
      [operator, 'POST', '/v1/sessions/{S}/resize', { cpus: 1 }],
      [operator, 'POST', '/v1/sessions/{S}/keep-awake', { keepAwake: false }],
      [operator, 'DELETE', '/v1/sessions/{S}'],
      [operator, 'GET', '/v1/sessions/{S}/ports'],
      [operator, 'POST', '/v1/sessions/{S}/ports', { port: 8080 }],
      [operator, 'DELETE', '/v1/sessions/{S}/ports/8080'],
      [operator, 'GET', '/v1/sessions/{S}/ports/8080/index.html'],
      [operator, 'GET', '/v1/sessions/{S}/terminal'],
      [operator, 'GET', '/v1/sessions/{S}/terminal/recordings/tko_0000000000'],
      [operator, 'GET', '/v1/sessions/{S}/desktop'],
      [operator, 'GET', '/v1/sessions/{S}/desktop/vnc'],
      [operator, 'GET', '/v1/sessions/{S}/desktop/thumbnails/frame.png'],
      [operator, 'GET', '/v1/sessions/{S}/desktop/takeovers/tko_0'],
      [operator, 'POST', '/v1/sessions/{S}/desktop/takeover', {}],
      [operator, 'DELETE', '/v1/sessions/{S}/desktop/takeover'],
      [operator, 'POST', '/v1/sessions/{S}/desktop/screenshot', {}],
      [operator, 'POST', '/v1/sessions/{S}/desktop/actions', { action: 'click', x: 1, y: 1 }],
      [operator, 'POST', '/v1/sessions/{S}/tools/files.read', { path: '/workspace/secret.txt' }],
      [operator, 'POST', '/v1/sessions/{S}/tools/files.write', { path: '/workspace/secret.txt', content: 'overwritten' }],
      [operator, 'POST', '/v1/sessions/{S}/tools/exec', { command: 'cat /workspace/secret.txt' }],
      [operator, 'POST', '/v1/sessions/{S}/exec', { command: 'cat /workspace/secret.txt', stream: true }],
      [agent, 'POST', '/v1/sessions/{S}/tools/files.read', { path: '/workspace/secret.txt' }],
      [operator, 'POST', '/v1/sessions/{S}/tools/snapshot', {}],
      [operator, 'POST', '/v1/sessions/{S}/tools/fork', { count: 1 }],
      [operator, 'POST', '/v1/sessions/{S}/snapshots', {}],
      [operator, 'POST', '/v1/sessions/{S}/fork', { count: 1 }],
      [operator, 'GET', '/v1/snapshots?sessionId={S}'],
      [approver, 'GET', '/v1/approvals?sessionId={S}'],
      [operator, 'GET', '/v1/events?sessionId={S}'],
      [
        operator,
        'POST',
        '/v1/sessions/{S}/mcp',
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } },
      ],
      [
        operator,
        'POST',
        '/mcp?session={S}',
        { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } },
      ],
      [operator, 'GET', '/v1/snapshots/{N}'],
      [operator, 'DELETE', '/v1/snapshots/{N}'],
      [operator, 'POST', `/v1/sessions/${mine}/fork`, { count: 1, snapshotId: '{N}' }],
      // The fork tool of its own session, naming another tenant's snapshot: no existence oracle (issue 22).
      [operator, 'POST', `/v1/sessions/${mine}/tools/fork`, { count: 1, snapshotId: '{N}' }],
      [approver, 'GET', '/v1/approvals/{P}'],
      [agent, 'GET', '/v1/approvals/{P}'],
      [approver, 'POST', '/v1/approvals/{P}/approve', { reason: 'mine now' }],
      [approver, 'POST', '/v1/approvals/{P}/deny', { reason: 'mine now' }],
    ];
    const fill = (text: string, ids: { session: string; snapshot: string; approval: string }) =>
      text.replaceAll('{S}', ids.session).replaceAll('{N}', ids.snapshot).replaceAll('{P}', ids.approval);
    const fillBody = (body: unknown, ids: { session: string; snapshot: string; approval: string }) =>
      body === undefined ? undefined : JSON.parse(fill(JSON.stringify(body), ids));
    const foreign = { session: theirs, snapshot: theirSnapshot, approval: theirApproval };
    let held = 0;
    for (const [caller, method, template, body] of attempts) {
      const label = `${caller === operator ? 'operator' : caller === approver ? 'approver' : 'agent'} ${method} ${template}`;
      const answer = await caller.request(method, fill(template, foreign), fillBody(body, foreign));
      const control = await caller.request(method, fill(template, MISSING), fillBody(body, MISSING));
      assert.equal(answer.status, 404, `${label}: ${answer.status} ${answer.code} ${answer.message}`);
      assert.equal(answer.code, control.code, `${label}: another tenant's id and a missing id answer alike`);
      const normalize = (text: string, ids: { session: string; snapshot: string; approval: string }) =>
        text.replaceAll(ids.session, 'ID').replaceAll(ids.snapshot, 'ID').replaceAll(ids.approval, 'ID');
      assert.equal(normalize(answer.message, foreign), normalize(control.message, MISSING), `${label}: same message`);
      assert.ok(!JSON.stringify(answer.body).includes(secret.value), `${label}: the secret leaked`);
      held += 1;
    }
    assert.equal(held, attempts.length);
    const usage = await operator.request('GET', '/v1/tenants/globex/usage');
    const noTenant = await operator.request('GET', '/v1/tenants/no-such-tenant/usage');
    assert.equal(usage.status, 404);
    assert.equal(usage.code, noTenant.code);
    assert.equal((await operator.request('GET', '/v1/tenants/acme/usage')).status, 200, 'control: its own tenant');

    // Nothing of globex's moved.
    const globex = api['globexOperator']!;
    const session = await globex.session(theirs);
    assert.equal(session.state, 'running');
    assert.equal(String((await globex.tool(theirs, 'files.read', { path: '/workspace/secret.txt' })).result['content']), secret.value);
    assert.equal((await globex.request('GET', `/v1/snapshots/${theirSnapshot}`)).body['deletedAt'], null);
    assert.equal((await globex.request('GET', `/v1/approvals/${theirApproval}`)).body['state'], 'pending');
    assert.equal((await globex.tool(theirs, 'files.read', { path: '/workspace/held.txt' })).code, 'FILE_NOT_FOUND', 'the held call never ran');
    const contract = await globex.request('GET', `/v1/sessions/${theirs}/contract`);
    assert.equal(contract.body['version'], 1, 'no new contract version');
    const branches = (await admin.request('GET', '/v1/sessions')).body['sessions'] as { lineage: unknown }[];
    assert.ok(
      branches.every((branch) => branch.lineage === null),
      'no fork was made',
    );
  });

  it("lists show only the caller's tenant; the admin token sees both", async () => {
    const ids = (answer: Answer, key: string) => (answer.body[key] as { id: string }[]).map((item) => item.id);
    const sessions = ids(await api['acmeOperator']!.request('GET', '/v1/sessions'), 'sessions');
    assert.ok(sessions.includes(mine) && !sessions.includes(theirs), JSON.stringify(sessions));
    assert.ok(!ids(await api['acmeOperator']!.request('GET', '/v1/snapshots'), 'snapshots').includes(theirSnapshot));
    assert.ok(!ids(await api['acmeApprover']!.request('GET', '/v1/approvals'), 'approvals').includes(theirApproval));
    assert.ok(ids(await api['globexOperator']!.request('GET', '/v1/snapshots'), 'snapshots').includes(theirSnapshot), 'control: globex sees its own');
    const all = ids(await admin.request('GET', '/v1/sessions'), 'sessions');
    assert.ok(all.includes(mine) && all.includes(theirs));
    assert.ok(ids(await admin.request('GET', '/v1/approvals'), 'approvals').includes(theirApproval));
  });

  it("a session is made in the token's tenant; a contract naming another tenant is refused and makes nothing", async () => {
    assert.equal((await api['acmeOperator']!.session(mine))['tenant'], 'acme');
    const count = ((await admin.request('GET', '/v1/sessions')).body['sessions'] as unknown[]).length;
    const refused = await api['acmeOperator']!.request('POST', '/v1/sessions', { contract: { version: 1, identity: { tenant: 'globex' } } });
    assert.equal(refused.status, 403, `${refused.code} ${refused.message}`);
    assert.equal(refused.code, 'ROLE_FORBIDDEN');
    assert.equal(((await admin.request('GET', '/v1/sessions')).body['sessions'] as unknown[]).length, count);
  });

  it('a contract cannot name a secret given to another tenant: it is refused exactly as a missing one', async () => {
    const value = needle('globex-credential').value;
    const stored = installation.cli(['secrets', 'set', 'GLOBEX_TOKEN', '--tenant', 'globex', '--json'], { input: value });
    assert.equal(stored.code, 0, stored.stderr);
    assert.deepEqual((JSON.parse(stored.stdout) as { tenants: string[] | null }).tenants, ['globex']);
    const contractNaming = (secretName: string) => ({
      version: 1,
      network: { allowedDomains: ['api.example.com'] },
      credentials: [{ secret: secretName, hosts: ['api.example.com'], header: 'Authorization', format: 'Bearer {secret}' }],
    });
    const count = ((await admin.request('GET', '/v1/sessions')).body['sessions'] as unknown[]).length;
    const foreign = await api['acmeOperator']!.request('POST', '/v1/sessions', { contract: contractNaming('GLOBEX_TOKEN') });
    const missing = await api['acmeOperator']!.request('POST', '/v1/sessions', { contract: contractNaming('NO_SUCH_TOKEN') });
    assert.equal(foreign.status, 400, `${foreign.code} ${foreign.message}`);
    assert.equal(foreign.code, 'INVALID_CONTRACT');
    assert.equal(foreign.code, missing.code);
    assert.equal(foreign.message.replaceAll('GLOBEX_TOKEN', 'X'), missing.message.replaceAll('NO_SUCH_TOKEN', 'X'));
    assert.equal(((await admin.request('GET', '/v1/sessions')).body['sessions'] as unknown[]).length, count, 'nothing was made');
    // Control: globex's own session may name it.
    const own = await api['globexOperator']!.request('POST', '/v1/sessions', { contract: contractNaming('GLOBEX_TOKEN') });
    assert.equal(own.status, 201, `globex's contract naming its own secret: ${own.code} ${own.message}`);
    await api['globexOperator']!.terminate(String(own.body['id']));
    assert.equal((await api['acmeOperator']!.request('GET', '/v1/secrets')).code, 'ROLE_FORBIDDEN', 'only an admin lists secrets');
  });

  it('a tenant sees and uses only the images given to it; another answers as a missing image', async (t) => {
    const all = ((await admin.request('GET', '/v1/images')).body['images'] as { name: string }[]).map((image) => image.name);
    const hiddenName = all.find((name) => name !== 'debian-bookworm');
    if (hiddenName === undefined) {
      t.skip('this machine has one image only (build the desktop image to run this case)');
      return;
    }
    const given = installation.cli(['tenants', 'set', 'acme', '--images', 'debian-bookworm', '--json']);
    assert.equal(given.code, 0, given.stderr);
    try {
      const operator = api['acmeOperator']!;
      const listed = ((await operator.request('GET', '/v1/images')).body['images'] as { name: string }[]).map((image) => image.name);
      assert.deepEqual(listed, ['debian-bookworm']);
      const hidden = await operator.request('GET', `/v1/images/${hiddenName}`);
      const missing = await operator.request('GET', '/v1/images/no-such-image');
      const words = (message: string, name: string) =>
        message.replaceAll(name, 'X').replace(/Build the \w+ image with `airlock images build( --desktop)?`/, 'B');
      assert.equal(hidden.status, 404);
      assert.equal(hidden.code, missing.code);
      assert.equal(words(hidden.message, hiddenName), words(missing.message, 'no-such-image'));
      const count = ((await admin.request('GET', '/v1/sessions')).body['sessions'] as unknown[]).length;
      const refused = await operator.request('POST', '/v1/sessions', { image: hiddenName });
      assert.equal(refused.code, 'IMAGE_NOT_FOUND', `${refused.status} ${refused.message}`);
      assert.equal(((await admin.request('GET', '/v1/sessions')).body['sessions'] as unknown[]).length, count, 'nothing was made');
      assert.equal((await api['globexOperator']!.request('GET', `/v1/images/${hiddenName}`)).status, 200, 'another tenant keeps every image');
    } finally {
      assert.equal(installation.cli(['tenants', 'set', 'acme', '--images', 'all']).code, 0);
    }
  });

  it('every role meets the documented matrix', async () => {
    /** permission → a request that needs it and nothing more. */
    const probes: Record<string, [string, string, unknown?]> = {
      'session.info': ['GET', `/v1/sessions/${mine}`],
      'session.read': ['GET', `/v1/sessions/${mine}/audit?tail=1`],
      'session.manage': ['POST', `/v1/sessions/${mine}/keep-awake`, { keepAwake: true }],
      'tool.call': ['POST', `/v1/sessions/${mine}/tools/files.read`, { path: '/workspace/nothing.txt' }],
      'snapshot.read': ['GET', '/v1/snapshots'],
      'snapshot.manage': ['DELETE', `/v1/snapshots/${MISSING.snapshot}`],
      'approval.read': ['GET', '/v1/approvals'],
      'approval.await': ['GET', `/v1/approvals/${MISSING.approval}`],
      'approval.decide': ['POST', `/v1/approvals/${MISSING.approval}/approve`, {}],
      'image.read': ['GET', '/v1/images'],
      'secret.manage': ['GET', '/v1/secrets'],
      'token.manage': ['GET', '/v1/tokens'],
      'tenant.manage': ['GET', '/v1/tenants'],
      'identity.read': ['GET', '/v1/whoami'],
    };
    // The matrix of docs/security.md, written out again here so that a change to the code alone fails.
    const matrix: Record<string, string[]> = {
      admin: Object.keys(probes),
      operator: [
        'session.info',
        'session.read',
        'session.manage',
        'tool.call',
        'snapshot.read',
        'snapshot.manage',
        'approval.await',
        'image.read',
        'identity.read',
      ],
      approver: ['session.info', 'session.read', 'snapshot.read', 'approval.read', 'approval.await', 'approval.decide', 'image.read', 'identity.read'],
      agent: ['session.info', 'tool.call', 'approval.await', 'identity.read'],
    };
    const callers: Record<string, HostileApi> = {
      admin: new TokenApi(installation, createToken('acme', 'admin').token),
      operator: api['acmeOperator']!,
      approver: api['acmeApprover']!,
      agent: api['acmeAgent']!,
    };
    const wrong: string[] = [];
    for (const [role, allowed] of Object.entries(matrix)) {
      for (const [permission, [method, path, body]] of Object.entries(probes)) {
        const answer = await callers[role]!.request(method, path, body);
        const forbidden = answer.status === 403 && answer.code === 'ROLE_FORBIDDEN';
        if (forbidden === allowed.includes(permission)) wrong.push(`${role} ${permission}: ${answer.status} ${answer.code}`);
        if (!forbidden) assert.ok(answer.status < 500 && answer.status !== 401, `${role} ${permission}: ${answer.status} ${answer.code} ${answer.message}`);
      }
    }
    assert.deepEqual(wrong, []);
    const whoami = await api['acmeAgent']!.request('GET', '/v1/whoami');
    assert.deepEqual((whoami.body['identity'] as Record<string, unknown>)['role'], 'agent');
    assert.notEqual(installation.cli(['tokens', 'ls'], { env: { AIRLOCK_TOKEN: tokens['acmeOperator']!.token } }).code, 0, 'an operator cannot list tokens');
    assert.notEqual(
      installation.cli(['tokens', 'create', '--tenant', 'acme', '--role', 'admin'], { env: { AIRLOCK_TOKEN: tokens['acmeOperator']!.token } }).code,
      0,
      'nor make itself an admin',
    );
  });

  it('the approver recorded is the token that decided, whatever the body says; an agent cannot approve its own call', async () => {
    const held = await api['acmeAgent']!.tool(mine, 'exec', { command: 'tar --version >/dev/null && echo approved >> /workspace/approved.txt' });
    assert.equal(held.status, 202, `${held.code} ${held.message}`);
    const approvalId = String(held.body['approvalId']);
    const self = await api['acmeAgent']!.request('POST', `/v1/approvals/${approvalId}/approve`, {});
    assert.equal(self.code, 'ROLE_FORBIDDEN');
    const decided = await api['acmeApprover']!.request('POST', `/v1/approvals/${approvalId}/approve`, { by: 'mallory-named-in-the-body', reason: 'ok' });
    assert.equal(decided.status, 200, `${decided.code} ${decided.message}`);
    const expected = `token:alice (${tokens['acmeApprover']!.id})`;
    assert.equal(decided.body['decidedBy'], expected);
    const outcome = await api['acmeAgent']!.request('GET', `/v1/approvals/${approvalId}?waitSeconds=60`);
    assert.equal(outcome.body['state'], 'executed', JSON.stringify(outcome.body));
    const audit = await api['acmeApprover']!.request('GET', `/v1/sessions/${mine}/audit`);
    const granted = (audit.body['records'] as { type: string; data: Record<string, unknown> }[]).find(
      (record) => record.type === 'approval.granted' && record.data['approvalId'] === approvalId,
    );
    assert.equal(granted?.data['decidedBy'], expected);
    assert.ok(!JSON.stringify(audit.body).includes('mallory'), 'the name in the body is recorded nowhere');
  });

  it("MCP calls carry the caller's token: its tenant's session works, another caller cannot take over the MCP session", async () => {
    const transport = new StreamableHTTPClientTransport(new URL(`${installation.url}/v1/sessions/${mine}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${tokens['acmeAgent']!.token}` } },
    });
    const client = new Client({ name: 'cross-tenant', version: '1.0.0' });
    await client.connect(transport);
    try {
      const result = await client.callTool({ name: 'read', arguments: { path: '/workspace/approved.txt' } });
      assert.ok(JSON.stringify(result).includes('approved'), JSON.stringify(result).slice(0, 300));
      const mcpSessionId = transport.sessionId;
      assert.ok(mcpSessionId);
      const hijack = await fetch(`${installation.url}/v1/sessions/${mine}/mcp`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${tokens['globexOperator']!.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-session-id': mcpSessionId,
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/list' }),
      });
      assert.equal(hijack.status, 404, await hijack.text());
      const audit = (await admin.request('GET', `/v1/sessions/${mine}/audit?tail=20`)).body['records'] as { type: string }[];
      assert.ok(audit.length > 0);
    } finally {
      await client.close();
    }
  });

  it('a revoked token answers 401 at once, also through its console login', async () => {
    const made = createToken('acme', 'operator');
    const caller = new TokenApi(installation, made.token);
    assert.equal((await caller.request('GET', `/v1/sessions/${mine}`)).status, 200);
    const login = await fetch(`${installation.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: made.token }),
    });
    assert.equal(login.status, 200);
    const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    assert.equal((await fetch(`${installation.url}/v1/whoami`, { headers: { cookie } })).status, 200);
    const revoked = installation.cli(['tokens', 'revoke', made.id]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const after = await caller.request('GET', `/v1/sessions/${mine}`);
    assert.equal(after.status, 401);
    assert.equal(after.code, 'UNAUTHORIZED');
    assert.equal((await fetch(`${installation.url}/v1/whoami`, { headers: { cookie } })).status, 401);
    const listed = JSON.parse(installation.cli(['tokens', 'ls', '--json']).stdout) as { id: string; revoked: boolean; lastUsedAt: string | null }[];
    const row = listed.find((token) => token.id === made.id);
    assert.equal(row?.revoked, true);
    await waitFor(
      () =>
        (JSON.parse(installation.cli(['tokens', 'ls', '--json']).stdout) as { id: string; lastUsedAt: string | null }[]).some(
          (token) => token.id === tokens['acmeOperator']!.id && token.lastUsedAt !== null,
        ) || undefined,
      'the last use of a token to be recorded',
      30_000,
    );
  });
});
