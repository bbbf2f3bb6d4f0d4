/**
 * Forwarding a call to the node holding its session, over real HTTP servers
 * on loopback: the body goes up and the answer comes back unchanged (status,
 * headers, bytes), output streams through as it is written (the first chunk
 * arrives before the upstream finished), a WebSocket is spliced both ways,
 * the forwarded request says which node forwarded it, and a node that cannot
 * be reached is NODE_UNREACHABLE naming it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import websocket from '@fastify/websocket';
import { WebSocket } from 'ws';
import { FORWARDED_BY_HEADER, forwardToNode } from '../../../src/api/node-proxy.js';

describe('forwarding to another node', () => {
  let upstream: FastifyInstance;
  let front: FastifyInstance;
  let upstreamUrl = '';
  let frontUrl = '';
  let release: () => void = () => undefined;
  const seenVia: string[] = [];

  before(async () => {
    upstream = Fastify({ bodyLimit: 32 * 1024 * 1024 });
    upstream.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    upstream.post('/v1/sessions/s/echo', async (request, reply) => {
      seenVia.push(String(request.headers[FORWARDED_BY_HEADER]));
      return reply
        .status(207)
        .header('x-answer', 'yes')
        .send({ bytes: (request.body as Buffer).length, last: (request.body as Buffer).at(-1) });
    });
    upstream.get('/v1/sessions/s/stream', (_request, reply) => {
      reply.hijack();
      reply.raw.writeHead(200, { 'content-type': 'text/plain' });
      reply.raw.write('first\n');
      // The rest only once the client has seen the first chunk through the forwarding node.
      release = () => reply.raw.end('second\n');
    });
    await upstream.register(websocket);
    await upstream.register(async (scope) => {
      scope.get('/v1/sessions/s/ws', { websocket: true }, (socket) => {
        socket.on('message', (data: Buffer) => socket.send(`echo:${data.toString()}`));
      });
    });
    upstreamUrl = await upstream.listen({ host: '127.0.0.1', port: 0 });

    front = Fastify();
    await front.register(websocket);
    front.addHook('onRequest', async (request, reply) => {
      const target = request.url.startsWith('/unreachable') ? 'http://127.0.0.1:9' : upstreamUrl;
      forwardToNode(request, reply, target, { id: target === upstreamUrl ? 'up' : 'nowhere', via: 'front' });
      return reply;
    });
    frontUrl = await front.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await front.close();
    await upstream.close();
  });

  it('sends the body up and the answer back unchanged, saying which node forwarded it', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024, 7);
    const response = await fetch(`${frontUrl}/v1/sessions/s/echo`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body });
    assert.equal(response.status, 207, await response.clone().text());
    assert.equal(response.headers.get('x-answer'), 'yes');
    assert.deepEqual(await response.json(), { bytes: body.length, last: 7 });
    assert.deepEqual(seenVia, ['front']);
  });

  it('streams output as it is written: the first chunk arrives before the upstream ends', async () => {
    const text = await new Promise<string>((resolve, reject) => {
      const call = httpRequest(`${frontUrl}/v1/sessions/s/stream`, (response) => {
        let seen = '';
        response.on('data', (chunk: Buffer) => {
          seen += chunk.toString();
          if (seen === 'first\n') release();
        });
        response.on('end', () => resolve(seen));
        response.on('error', reject);
      });
      call.on('error', reject);
      call.end();
    });
    assert.equal(text, 'first\nsecond\n');
  });

  it('splices a WebSocket both ways', async () => {
    const socket = new WebSocket(`${frontUrl.replace('http', 'ws')}/v1/sessions/s/ws`);
    const answers: string[] = [];
    await new Promise<void>((resolve, reject) => {
      socket.on('open', () => socket.send('one'));
      socket.on('message', (data: Buffer) => {
        answers.push(data.toString());
        if (answers.length === 1) socket.send('two');
        else resolve();
      });
      socket.on('error', reject);
    });
    socket.close();
    assert.deepEqual(answers, ['echo:one', 'echo:two']);
  });

  it('answers NODE_UNREACHABLE naming the node when it cannot be reached', async () => {
    const response = await fetch(`${frontUrl}/unreachable/v1/sessions/s/echo`, { method: 'POST', body: 'x' });
    assert.equal(response.status, 503);
    const answer = (await response.json()) as { error: { code: string; message: string } };
    assert.equal(answer.error.code, 'NODE_UNREACHABLE');
    assert.match(answer.error.message, /node nowhere \(http:\/\/127\.0\.0\.1:9\) holds this session but cannot be reached \(connect ECONNREFUSED/);
  });
});
