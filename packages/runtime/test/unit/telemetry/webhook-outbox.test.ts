/**
 * The outbox over a real SQLite store and a real receiver on loopback:
 * records committed while no outbox heard them (a server killed between the
 * commit and the enqueue) are delivered at the next start, once each, in
 * order; two outboxes with their own node ids on one store deliver each once
 * (the PostgreSQL peer case is in the store conformance suite).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { Webhook } from 'standardwebhooks';
import { SqliteStore } from '../../../src/stores/sqlite/sqlite-store.js';
import { WebhookOutbox } from '../../../src/telemetry/webhook-outbox.js';
import { newWebhookSecret } from '../../../src/telemetry/webhook-signature.js';
import type { AuditRecord } from '../../../src/audit/audit-record.js';

describe('webhook outbox', () => {
  let dir: string;
  let server: Server;
  let url: string;
  const secret = newWebhookSecret();
  const received: { id: string; type: string; seq: number }[] = [];

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'airlock-outbox-'));
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const event = new Webhook(secret).verify(Buffer.concat(chunks).toString(), request.headers as Record<string, string>) as {
          type: string;
          data: { seq: number };
        };
        received.push({ id: String(request.headers['webhook-id']), type: event.type, seq: event.data.seq });
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('delivers at start what was committed while nobody listened, once, in order, with two outboxes on one store', async () => {
    const store = new SqliteStore(join(dir, 'airlock.db'));
    try {
      const createdAt = new Date(Date.now() - 1000).toISOString();
      await store.transaction((tx) =>
        tx.webhooks.insertEndpoint({
          id: 'wh_1',
          url,
          events: ['session.*'],
          tenant: null,
          secret,
          state: 'active',
          disabledReason: null,
          createdAt,
          createdBy: 'test',
        }),
      );
      const types = ['session.created', 'session.started', 'tool-call.completed', 'session.paused', 'session.terminated'];
      await store.transaction(async (tx) => {
        for (const [index, type] of types.entries()) {
          const record: AuditRecord = {
            sessionId: 'ses_1',
            seq: index + 1,
            at: new Date().toISOString(),
            type,
            data: { reason: 'idle' },
            prevHash: 'p',
            hash: 'h',
          };
          await tx.insertAuditRecord(record);
        }
      });
      const outboxes = [0, 1].map((index) => new WebhookOutbox({ store, nodeId: `node-${index}`, pollMs: 50, retryFirstMs: 50 }));
      await Promise.all(outboxes.map((outbox) => outbox.start()));
      const deadline = Date.now() + 15_000;
      while (received.length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      // Another round of both finds nothing more to send.
      for (const outbox of outboxes) outbox.kick();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await Promise.all(outboxes.map((outbox) => outbox.close()));
      assert.deepEqual(
        received.map((entry) => [entry.type, entry.seq]),
        [
          ['session.created', 1],
          ['session.running', 2],
          ['session.paused', 4],
          ['session.terminated', 5],
        ],
      );
      assert.equal(new Set(received.map((entry) => entry.id)).size, 4);
    } finally {
      await store.close();
    }
  });
});
