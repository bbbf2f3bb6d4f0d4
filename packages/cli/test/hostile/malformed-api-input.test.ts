/**
 * Hostile suite: malformed and oversized API input. Every attempt must get a
 * 4xx whose message names the limit or the problem, and change nothing. The
 * first eight are the failures of issue 12's "Why", point 8.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestInstallation } from '../support/test-installation.js';

interface ErrorResponse {
  status: number;
  code: string;
  message: string;
}

describe('hostile: malformed API input gets a 4xx that says what limit was hit, and changes nothing', () => {
  let installation: TestInstallation;
  let sessionId: string;

  before(async () => {
    installation = await TestInstallation.start();
    const created = installation.cli(['sessions', 'create']);
    assert.equal(created.code, 0, created.stderr);
    sessionId = created.stdout.trim();
  });
  after(async () => {
    await installation?.destroy();
  });

  async function send(method: string, path: string, body: string | undefined, headers: Record<string, string> = {}): Promise<ErrorResponse & { body: unknown }> {
    const response = await fetch(`${installation.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${installation.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body }),
    });
    const text = await response.text();
    const parsed = (text ? JSON.parse(text) : {}) as { error?: { code: string; message: string } };
    return { status: response.status, code: parsed.error?.code ?? '', message: parsed.error?.message ?? '', body: parsed };
  }

  function tool(name: string, args: unknown): Promise<ErrorResponse> {
    return send('POST', `/v1/sessions/${sessionId}/tools/${name}`, JSON.stringify(args));
  }

  function assertClientError(response: ErrorResponse, code: string, mentions: RegExp): void {
    assert.ok(response.status >= 400 && response.status < 500, `expected a 4xx, got ${response.status} ${response.code}: ${response.message}`);
    assert.equal(response.code, code, response.message);
    assert.match(response.message, mentions);
  }

  function workspaceListing(): string {
    const listed = installation.cli(['files', 'ls', sessionId, '/workspace']);
    assert.equal(listed.code, 0, listed.stderr);
    return listed.stdout;
  }

  it('a 300-character file name is refused with the 255-byte name limit', async () => {
    const before = workspaceListing();
    assertClientError(await tool('files.write', { path: `/workspace/${'a'.repeat(300)}`, content: 'x' }), 'INVALID_ARGUMENTS', /255/);
    assert.equal(workspaceListing(), before);
  });

  it('a path of 2,040 components is refused with the component limit', async () => {
    assertClientError(await tool('files.write', { path: `/workspace/${'a/'.repeat(2040)}x`, content: 'x' }), 'INVALID_ARGUMENTS', /components/);
    assert.doesNotMatch(workspaceListing(), /\ba\b/);
  });

  it('a path longer than PATH_MAX is refused with the byte limit', async () => {
    assertClientError(await tool('files.read', { path: `/workspace/${'abcdefgh/'.repeat(460)}` }), 'INVALID_ARGUMENTS', /4095/);
  });

  it('a Cedar policy of 20,000 `&&` terms is a contract error, not a stack overflow, and no session is made', async () => {
    const ids = (): string[] => (JSON.parse(installation.cli(['sessions', 'ls', '--json']).stdout) as { id: string }[]).map((session) => session.id);
    const before = ids();
    // Short terms, so the text stays under the 256 KiB policy size limit and reaches the parser's recursion.
    const condition = Array.from({ length: 20_000 }, () => 'true').join(' && ');
    const contract = { version: 1, policies: [`permit(principal, action, resource) when { ${condition} };`] };
    const response = await send('POST', '/v1/sessions', JSON.stringify({ contract }));
    assert.ok(response.status >= 400 && response.status < 500, `${response.status} ${response.message}`);
    assert.match(response.message, /operators|split/);
    assert.deepEqual(ids(), before);
  });

  it('a 140 KB command is refused with the per-argument limit instead of a spawn E2BIG', async () => {
    assertClientError(await tool('exec', { command: `echo ${'a'.repeat(140_000)}` }), 'INVALID_ARGUMENTS', /131071|single argument/);
  });

  it('a JSON body nested 5,000 deep is a 400, not an unavailable audit log', async () => {
    const deep = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;
    assertClientError(await send('POST', `/v1/sessions/${sessionId}/tools/exec`, deep), 'INVALID_REQUEST', /nests .* deep/);
    const audit = installation.cli(['audit', 'verify', sessionId]);
    assert.equal(audit.code, 0, audit.stderr);
  });

  it('an oversized body without a token gets 401 before any body limit is applied', async () => {
    const response = await fetch(`${installation.url}/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(40 * 1024 * 1024) },
      body: Buffer.alloc(40 * 1024 * 1024, 0x20),
    }).catch((error: unknown) => error as Error);
    assert.ok(!(response instanceof Error), `the request failed outright: ${String(response)}`);
    assert.equal(response.status, 401);
  });

  it('a call held for approval on a session that is then terminated ends as expired, not pending forever', async () => {
    const contractPath = new URL('../../../../../examples/contracts/no-rm-approve-tar.json', import.meta.url).pathname;
    const created = installation.cli(['sessions', 'create', '--contract', contractPath]);
    assert.equal(created.code, 0, created.stderr);
    const held = created.stdout.trim();
    const submitted = await send('POST', `/v1/sessions/${held}/tools/exec`, JSON.stringify({ argv: ['tar', 'cf', '/tmp/w.tar', '/workspace'] }));
    const approvalId = (submitted.body as { approvalId?: string }).approvalId;
    assert.ok(approvalId, `expected a held call, got ${JSON.stringify(submitted.body)}`);
    assert.equal(installation.cli(['sessions', 'rm', held]).code, 0);
    const approval = await send('GET', `/v1/approvals/${approvalId}`, undefined);
    assert.equal((approval.body as { state?: string }).state, 'expired');
    const approve = installation.cli(['approvals', 'approve', approvalId]);
    assert.notEqual(approve.code, 0, 'an expired approval cannot be approved');
  });

  it('a body that is not JSON is a 400 naming JSON', async () => {
    assertClientError(await send('POST', `/v1/sessions/${sessionId}/tools/exec`, '{"command": "ls"'), 'INVALID_REQUEST', /JSON/);
  });

  it('an empty JSON body is a 400 that says to send an object', async () => {
    assertClientError(await send('POST', `/v1/sessions/${sessionId}/tools/exec`, ' '), 'INVALID_REQUEST', /empty/);
  });

  it('a "__proto__" key is refused', async () => {
    assertClientError(await send('POST', `/v1/sessions/${sessionId}/tools/exec`, '{"command":"true","__proto__":{"admin":true}}'), 'INVALID_REQUEST', /__proto__/);
  });

  it('an unknown tool is refused and lists the tools', async () => {
    const response = await tool('rm-everything', { path: '/' });
    assert.ok(response.status === 400 || response.status === 404, String(response.status));
    assert.match(response.message, /exec/);
  });

  it('a NUL byte in a path is refused', async () => {
    assertClientError(await tool('files.read', { path: '/workspace/a\u0000b' }), 'INVALID_ARGUMENTS', /NUL/);
  });

  it('a negative timeout is refused naming the field', async () => {
    assertClientError(await tool('exec', { command: 'true', timeoutMs: -5 }), 'INVALID_ARGUMENTS', /timeoutMs/);
  });

  it('an environment name with a space is refused', async () => {
    assertClientError(await tool('exec', { command: 'true', env: { 'BAD NAME': 'x' } }), 'INVALID_ARGUMENTS', /environment names/);
  });

  it('4,097 argv elements are refused', async () => {
    assertClientError(await tool('exec', { argv: Array.from({ length: 4097 }, () => 'x') }), 'INVALID_ARGUMENTS', /argv/);
  });

  it('arguments of 1 MiB in total are refused with the total limit', async () => {
    assertClientError(await tool('exec', { argv: Array.from({ length: 10 }, () => 'b'.repeat(120_000)) }), 'INVALID_ARGUMENTS', /1048576/);
  });

  it('an extra argument field is refused naming it', async () => {
    assertClientError(await tool('files.read', { path: '/workspace/x', sudo: true }), 'INVALID_ARGUMENTS', /sudo|Unrecognized/);
  });

  it('a wrong argument type is refused naming the field', async () => {
    assertClientError(await tool('files.write', { path: '/workspace/x', content: 42 }), 'INVALID_ARGUMENTS', /content/);
  });

  it('a number beyond float range is refused', async () => {
    assertClientError(await send('POST', `/v1/sessions/${sessionId}/tools/exec`, '{"command":"true","timeoutMs":1e400}'), 'INVALID_ARGUMENTS', /timeoutMs/);
  });

  it('an encoded `..` in a session id reaches no other route and leaks nothing', async () => {
    const response = await send('POST', `/v1/sessions/..%2F..%2Fsnapshots/tools/exec`, JSON.stringify({ command: 'true' }));
    assert.ok(response.status === 404 || response.status === 400, `${response.status} ${response.message}`);
  });

  it('an unknown session is a 404 with SESSION_NOT_FOUND', async () => {
    assertClientError(await send('POST', '/v1/sessions/ses_doesnotexist00/tools/exec', '{"command":"true"}'), 'SESSION_NOT_FOUND', /does not exist/);
  });

  it('an invalid base64 upload is refused, not written as garbage', async () => {
    const response = await tool('files.write', { path: '/workspace/b64.bin', content: '@@@not base64@@@', encoding: 'base64' });
    assertClientError(response, 'INVALID_ARGUMENTS', /base64/);
    assert.doesNotMatch(workspaceListing(), /b64\.bin/);
  });
});
