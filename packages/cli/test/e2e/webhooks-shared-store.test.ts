/**
 * Two `airlock serve` on one PostgreSQL database, one webhook endpoint: each
 * hears every committed audit record (its own and the other's), both enqueue,
 * both deliver, and the receiver still gets each event once, in order per
 * session, signatures verified with `standardwebhooks` (issue 24, item 2).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { TestInstallation } from '../support/test-installation.js';
import { createTestDatabase, NO_POSTGRES, testPostgresUrl, type TestDatabase } from '../support/test-database.js';

describe('webhooks from two servers on one PostgreSQL database', { skip: testPostgresUrl() ? false : NO_POSTGRES }, () => {
  let database: TestDatabase;
  let shared: string;
  let a: TestInstallation;
  let b: TestInstallation;
  let receiver: Server;
  let secret = '';
  const received: { id: string; type: string; sessionId: string; seq: number }[] = [];

  before(async () => {
    receiver = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        try {
          const event = new Webhook(secret).verify(Buffer.concat(chunks).toString(), request.headers as Record<string, string>) as {
            type: string;
            data: { sessionId: string; seq: number };
          };
          received.push({ id: String(request.headers['webhook-id']), type: event.type, sessionId: event.data.sessionId, seq: event.data.seq });
          response.writeHead(200).end();
        } catch {
          response.writeHead(400).end();
        }
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    database = await createTestDatabase('webhooks');
    shared = mkdtempSync('/var/tmp/airlock-webhooks-shared-');
    const env = { AIRLOCK_AUDIT_KEY_FILE: join(shared, 'audit.key'), AIRLOCK_WEBHOOK_RETRY_MS: '200' };
    a = await TestInstallation.start({ store: { url: database.url }, env });
    b = await TestInstallation.start({ store: { url: database.url }, env });
  });
  after(async () => {
    await a?.destroy();
    await b?.destroy();
    await database?.drop();
    receiver?.closeAllConnections();
    await new Promise((resolve) => receiver?.close(resolve));
    if (shared) rmSync(shared, { recursive: true, force: true });
  });

  it('delivers each event once per endpoint, in order per session', async () => {
    const address = receiver.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
    const added = a.cli(['webhooks', 'add', url, '--events', 'session.*', '--json']);
    assert.equal(added.code, 0, added.stderr);
    secret = (JSON.parse(added.stdout) as { secret: string }).secret;
    const sessions: string[] = [];
    for (const installation of [a, b, a, b]) {
      const created = installation.cli(['sessions', 'create', '--mode', 'per-call']);
      assert.equal(created.code, 0, created.stderr);
      sessions.push(created.stdout.trim());
    }
    for (const [index, session] of sessions.entries()) {
      const removed = (index % 2 === 0 ? a : b).cli(['sessions', 'rm', session]);
      assert.equal(removed.code, 0, removed.stderr);
    }
    const deadline = Date.now() + 30_000;
    const terminated = () => new Set(received.filter((entry) => entry.type === 'session.terminated').map((entry) => entry.sessionId));
    while (terminated().size < sessions.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    // Both servers had time to send anything twice.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (const session of sessions) {
      const mine = received.filter((entry) => entry.sessionId === session);
      assert.deepEqual(
        mine.map((entry) => entry.type),
        ['session.created', 'session.running', 'session.terminated'],
        `every event of ${session} once, in order`,
      );
    }
    assert.equal(new Set(received.map((entry) => entry.id)).size, received.length, 'no message twice');
  });
});
