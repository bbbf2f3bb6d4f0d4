/**
 * The server closes whatever its sockets do (issue 22: after a hostile run
 * `airlock serve` did not exit on SIGTERM for minutes, sockets in
 * CLOSE-WAIT): a long poll whose client half-closed, an event stream whose
 * client reads nothing, a request whose headers never end, an idle
 * keep-alive connection. A real listening server (fake driver, real SQLite).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../../src/server.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';
import { DirectoryDisks, StaticImages } from '../../support/core-fixture.js';

const TOKEN = 'server-shutdown-test-token-0123456789';
const APPROVE_TAR = {
  version: 1,
  policies: [
    'permit(principal, action, resource);',
    '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
  ],
};

/** Opens a raw connection and writes `text`; the connection is left as it is. */
function openRaw(port: number, text: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(text);
      resolve(socket);
    });
    socket.on('error', () => undefined);
    socket.once('error', reject);
  });
}

/** Resolves once `socket` has received at least one byte. */
function firstBytes(socket: Socket): Promise<void> {
  return new Promise((resolve) => socket.once('data', () => resolve()));
}

describe('closing the server with sockets open', () => {
  let server: RunningServer;
  let root: string;
  const sockets: Socket[] = [];

  before(async () => {
    root = mkdtempSync('/tmp/airlock-server-shutdown-');
    server = await startServer({
      dataDir: join(root, 'data'),
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      driver: new FakeDriver(),
      disks: new DirectoryDisks(join(root, 'disks')),
      images: new StaticImages(),
    });
  });

  after(() => {
    for (const socket of sockets) socket.destroy();
    rmSync(root, { recursive: true, force: true });
  });

  it('closes within the bound with a long poll, a stalled stream, half-sent headers and an idle keep-alive open', async () => {
    const port = Number(new URL(server.url).port);
    const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    const created = (await (await fetch(`${server.url}/v1/sessions`, { method: 'POST', headers, body: JSON.stringify({ contract: APPROVE_TAR }) })).json()) as {
      id: string;
    };
    const held = await fetch(`${server.url}/v1/sessions/${created.id}/exec`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ argv: ['tar', 'cf', 'x.tar', '.'] }),
    });
    assert.equal(held.status, 202);
    const approvalId = ((await held.json()) as { approvalId: string }).approvalId;
    const request = (target: string) => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`;

    // A long poll (10 minutes) whose client then half-closes: the server's side sits in CLOSE-WAIT.
    const poll = await openRaw(port, request(`/v1/approvals/${approvalId}?waitSeconds=600`));
    poll.end();
    sockets.push(poll);
    // An event stream whose client never reads.
    const stream = await openRaw(port, request('/v1/events'));
    stream.pause();
    sockets.push(stream);
    // A request whose headers never end.
    sockets.push(await openRaw(port, `GET /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: 1`));
    // A keep-alive connection, idle after its answer.
    const idle = await openRaw(port, request('/v1/sessions'));
    await firstBytes(idle);
    sockets.push(idle);

    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), 10_000)));
    const outcome = await Promise.race([server.close().then(() => 'closed' as const), bound]);
    clearTimeout(timer);
    assert.equal(outcome, 'closed', 'the server closed with those sockets open');
  });
});
