/**
 * The request log: a 5xx is logged with its cause, a request id given by the
 * caller is kept only when it is plain, and a line never carries the URL's
 * query, a header or the body.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { installRequestLog, rememberFailure, requestIdOf } from '../../../src/api/request-log.js';
import { handleError } from '../../../src/api/http-errors.js';
import { JsonLog } from '../../../src/telemetry/json-log.js';

function appWithLog(level: 'info' | 'error' = 'info') {
  const lines: Record<string, unknown>[] = [];
  const log = new JsonLog(level, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  const app = Fastify({ genReqId: (request) => requestIdOf(request) });
  app.setErrorHandler((error, request, reply) => {
    rememberFailure(request, error);
    handleError(error, request, reply);
  });
  installRequestLog(app, log);
  app.get('/v1/sessions/:id/broken', async () => {
    throw new Error('could not reach the store', { cause: new Error('connect ECONNREFUSED 127.0.0.1:5432') });
  });
  app.post('/v1/sessions/:id/exec', async () => ({ ok: true }));
  return { app, lines };
}

describe('request log', () => {
  it('logs a 5xx at error level with its cause chain', async () => {
    const { app, lines } = appWithLog();
    const response = await app.inject({ method: 'GET', url: '/v1/sessions/ses_1/broken' });
    assert.equal(response.statusCode, 500);
    const line = lines.find((candidate) => candidate['event'] === 'http.request');
    assert.equal(line?.['level'], 'error');
    assert.equal(line?.['route'], '/v1/sessions/:id/broken');
    assert.equal(line?.['sessionId'], 'ses_1');
    const error = line?.['error'] as { message: string; causes: string[] };
    assert.equal(error.message, 'could not reach the store');
    assert.deepEqual(error.causes, ['Error: connect ECONNREFUSED 127.0.0.1:5432']);
  });

  it('keeps a plain X-Request-Id, replaces a hostile one, and never logs the query, headers or body', async () => {
    const { app, lines } = appWithLog();
    const kept = await app.inject({
      method: 'POST',
      url: '/v1/sessions/ses_2/exec?token=query-secret',
      headers: { 'x-request-id': 'trace-42' },
      payload: { env: { K: 'body-secret' } },
    });
    assert.equal(kept.headers['x-request-id'], 'trace-42');
    const replaced = await app.inject({
      method: 'POST',
      url: '/v1/sessions/ses_2/exec',
      headers: { 'x-request-id': 'a"b\ninjected', authorization: 'Bearer header-secret' },
      payload: {},
    });
    assert.notEqual(replaced.headers['x-request-id'], 'a"b\ninjected');
    assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    const text = JSON.stringify(lines);
    for (const secret of ['query-secret', 'body-secret', 'header-secret', 'injected']) assert.ok(!text.includes(secret), secret);
    assert.equal(lines.length, 2);
    assert.equal(lines[0]?.['requestId'], 'trace-42');
    assert.equal(lines[0]?.['status'], 200);
  });

  it('writes nothing below its level', async () => {
    const { app, lines } = appWithLog('error');
    await app.inject({ method: 'POST', url: '/v1/sessions/ses_3/exec', payload: {} });
    assert.equal(lines.length, 0);
    await app.inject({ method: 'GET', url: '/v1/sessions/ses_3/broken' });
    assert.equal(lines.length, 1);
  });
});
