/**
 * Hostile suite: no route without an identity (issue 22 item 1). With no
 * token, a request target spelled so that the router's match and a
 * decision on the raw URL disagree (`/%761/...`, the `v` of `/v1`
 * percent-encoded; an absolute-form target `http://HOST:PORT/v1/...`; `//`,
 * dot segments, `%2F`) once reached every route with no identity: exec as
 * root, files.write, fork, DELETE, audit export, the token list, secrets,
 * the warm pool. Each must answer 400 (or 401, or 404 for a letter case the
 * router does not know) and change nothing; the same calls with a token
 * work (the positive control). Requests go out byte for byte through
 * `node:http` (fetch would normalise the target).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { TestInstallation } from '../support/test-installation.js';
import { HostileApi } from '../support/hostile-kit.js';

interface RawAnswer {
  status: number;
  body: string;
}

/** Sends `target` exactly as written, with no credential unless `headers` carries one. */
function raw(port: number, method: string, target: string, body?: unknown, headers: Record<string, string> = {}): Promise<RawAnswer> {
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path: target,
        agent: false,
        headers: {
          connection: 'close',
          ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) }),
          ...headers,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
      },
    );
    request.setTimeout(120_000, () => request.destroy(new Error(`${method} ${target} got no answer`)));
    request.on('error', reject);
    request.end(payload);
  });
}

describe('hostile: every route needs an identity, however its path is spelled', { timeout: 600_000 }, () => {
  let installation: TestInstallation;
  let api: HostileApi;
  let port = 0;
  let session = '';

  /** The spellings of an API path that once bypassed authentication, and a few of their kin. */
  const spellings = (path: string): string[] => [
    path.replace(/^\/v1\//, '/%761/'),
    path.replace(/^\/v1\//, '/%56%31/'),
    `http://127.0.0.1:${port}${path}`,
    `http://localhost:${port}${path}`,
    `/${path}`,
    `/v1/.${path.slice(3)}`,
    `/x/..${path}`,
    path.replace(/^\/v1\/(\w+)\//, '/v1/$1%2F'),
  ];

  before(async () => {
    installation = await TestInstallation.start();
    api = new HostileApi(installation);
    port = Number(new URL(installation.url).port);
    session = await api.createSession({ version: 1, idle: { keepAwake: true } });
  });

  after(async () => {
    await installation?.destroy();
  });

  /** Asserts an attempt was refused without running anything: 400, or 401 / 404 (never a success). */
  const refused = (answer: RawAnswer, what: string) => {
    assert.ok([400, 401, 404].includes(answer.status), `${what}: ${answer.status} ${answer.body.slice(0, 300)}`);
  };

  it('GET /%761/sessions/ID and its kin answer 400, not the session', async () => {
    for (const target of spellings(`/v1/sessions/${session}`)) {
      const answer = await raw(port, 'GET', target);
      assert.equal(answer.status, 400, `GET ${target}: ${answer.status} ${answer.body.slice(0, 300)}`);
      assert.match(answer.body, /INVALID_REQUEST/);
      assert.ok(!answer.body.includes('"state"'), `GET ${target} shows the session`);
    }
    // Letter case the router does not know: 404, never the session nor a console page.
    for (const target of [`/V1/sessions/${session}`, `/V1/SESSIONS/${session}`]) {
      const answer = await raw(port, 'GET', target);
      assert.equal(answer.status, 404, `GET ${target}: ${answer.status}`);
      assert.ok(!answer.body.includes('"state"') && !answer.body.includes('<html'), `GET ${target}: ${answer.body.slice(0, 200)}`);
    }
  });

  it('exec and files.write through each spelling with no token run nothing; with a token they do (control)', async () => {
    const attempts: { target: string; marker: string; tool: string }[] = [];
    let n = 0;
    for (const tool of ['exec', 'files.write']) {
      for (const target of spellings(`/v1/sessions/${session}/tools/${tool}`)) attempts.push({ target, tool, marker: `/workspace/marker-${tool}-${n++}` });
    }
    for (const attempt of attempts) {
      const body = attempt.tool === 'exec' ? { command: `id > ${attempt.marker}` } : { path: attempt.marker, content: 'written with no token' };
      refused(await raw(port, 'POST', attempt.target, body), `POST ${attempt.target}`);
      // The path as written in the request line, canonical, and a wrong token: 401.
      assert.equal((await raw(port, 'POST', `/v1/sessions/${session}/tools/${attempt.tool}`, body, { authorization: 'Bearer wrong' })).status, 401);
    }
    const listed = await api.sh(session, 'ls -1 /workspace');
    for (const attempt of attempts) assert.ok(!listed.includes(attempt.marker.slice('/workspace/'.length)), `${attempt.target} left ${attempt.marker}`);
    // The control: the same calls, canonical and with the token, write their markers.
    const token = { authorization: `Bearer ${installation.token}` };
    assert.equal((await raw(port, 'POST', `/v1/sessions/${session}/tools/exec`, { command: 'id > /workspace/control-exec' }, token)).status, 200);
    assert.equal(
      (await raw(port, 'POST', `/v1/sessions/${session}/tools/files.write`, { path: '/workspace/control-write', content: 'ok' }, token)).status,
      200,
    );
    assert.match(await api.sh(session, 'cat /workspace/control-exec /workspace/control-write'), /uid=0\(root\)[\s\S]*ok/);
  });

  it('fork, DELETE, audit export, the token list, a secret and the warm pool answer 400 or 401 and change nothing', async () => {
    const sessionsBefore = (await api.request('GET', '/v1/sessions')).body['sessions'] as unknown[];
    const tokensBefore = (await api.request('GET', '/v1/tokens')).body['tokens'] as unknown[];
    const secretName = 'HOSTILE_NO_TOKEN';
    const calls: [string, string, unknown][] = [
      ['POST', `/v1/sessions/${session}/fork`, { count: 1 }],
      ['DELETE', `/v1/sessions/${session}`, undefined],
      ['GET', `/v1/sessions/${session}/audit/export`, undefined],
      ['GET', '/v1/tokens', undefined],
      ['POST', '/v1/tokens', { tenant: 'acme', role: 'admin' }],
      ['PUT', `/v1/secrets/${secretName}`, { value: 'planted' }],
      ['GET', '/v1/warm-pool', undefined],
    ];
    for (const [method, path, body] of calls) {
      for (const target of [path, ...spellings(path)]) {
        const answer = await raw(port, method, target, body);
        refused(answer, `${method} ${target}`);
        assert.ok(!/"(records|tokens|token|classes|pools)"/.test(answer.body), `${method} ${target} answered with data: ${answer.body.slice(0, 300)}`);
      }
    }
    assert.equal((await api.session(session)).state, 'running', 'the session was not deleted');
    assert.equal(((await api.request('GET', '/v1/sessions')).body['sessions'] as unknown[]).length, sessionsBefore.length, 'no fork branch was made');
    const secrets = await api.request('GET', '/v1/secrets');
    assert.ok(!JSON.stringify(secrets.body).includes(secretName), 'no secret was set');
    const tokens = await api.request('GET', '/v1/tokens');
    assert.equal(tokens.status, 200);
    assert.equal((tokens.body['tokens'] as unknown[]).length, tokensBefore.length, 'no token was made');
  });

  it('a query parameter given twice answers 400 naming it, not 500', async () => {
    const token = { authorization: `Bearer ${installation.token}` };
    for (const target of [
      `/v1/approvals?sessionId=${session}&sessionId=${session}`,
      `/v1/snapshots?sessionId=${session}&sessionId=${session}`,
      `/v1/events?sessionId=${session}&sessionId=${session}`,
    ]) {
      const answer = await raw(port, 'GET', target, undefined, token);
      assert.equal(answer.status, 400, `${target}: ${answer.status} ${answer.body.slice(0, 300)}`);
      assert.match(answer.body, /INVALID_ARGUMENTS.*sessionId.*more than once/);
    }
  });
});
