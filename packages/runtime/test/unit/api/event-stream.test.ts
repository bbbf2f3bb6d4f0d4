/**
 * The bounds of one event stream: heartbeats while idle, coalescing of a
 * burst, a resync instead of an unbounded queue, a slow reader cut off, and
 * another tenant's sessions never sent.
 */
import type { SessionContract } from '../../../src/core/session-contract.js';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { EventStream } from '../../../src/api/event-stream.js';
import { ActivityFeed } from '../../../src/api/activity-feed.js';
import type { AirlockServices } from '../../../src/api/airlock-services.js';
import type { Identity } from '../../../src/api/authentication.js';
import type { AuditRecord } from '../../../src/audit/audit-record.js';
import { emptyGuard, emptyMeters, type SessionRecord } from '../../../src/core/session.js';
import { AirlockError } from '../../../src/core/errors.js';

const ADMIN: Identity = { kind: 'console', tokenId: 'admin', tenant: '*', role: 'admin', name: 'admin' };

/** A response that records what is written; `unsent` plays a client that stopped reading. */
class RecordingResponse extends EventEmitter {
  written = '';
  writableEnded = false;
  unsent = 0;
  get writableLength(): number {
    return this.unsent;
  }
  writeHead(): this {
    return this;
  }
  write(text: string): boolean {
    this.written += text;
    return true;
  }
  end(): void {
    this.writableEnded = true;
  }
  /** Event names written so far, in order. */
  events(): string[] {
    return [...this.written.matchAll(/^event: (.+)$/gm)].map((match) => match[1] ?? '');
  }
}

function session(id: string, tenant: string): SessionRecord {
  const now = new Date().toISOString();
  return {
    id, version: 1, owner: 'srv_test', state: 'running', pendingOperation: null, mode: 'machine', tenant, principal: 'agent', imageName: 'image', imageDigest: 'sha256:x', contractVersion: 1, contract: {} as SessionContract,
    resources: { cpus: 1, memoryMb: 512, diskMb: 1024, maxProcesses: 64 }, sandbox: null, generation: 1, resumeSnapshotId: null, lineage: null, failure: null,
    createdAt: now, updatedAt: now, stateSince: now, lastActivityAt: now, meters: emptyMeters(), guard: emptyGuard(),
  };
}

function services(sessions: SessionRecord[]): AirlockServices {
  const byId = new Map(sessions.map((record) => [record.id, record]));
  return {
    sessions: {
      get(id: string) {
        const found = byId.get(id);
        if (!found) throw new AirlockError('SESSION_NOT_FOUND', `no ${id}`);
        return found;
      },
    },
    approvals: {
      get(id: string) {
        throw new AirlockError('APPROVAL_NOT_FOUND', `no ${id}`);
      },
    },
  } as unknown as AirlockServices;
}

function record(sessionId: string, seq: number): AuditRecord {
  return { sessionId, seq, at: new Date().toISOString(), type: 'tool-call.completed', data: {}, prevHash: 'p', hash: 'h' };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('one event stream', () => {
  it('sends ready first, then heartbeats while nothing happens', async () => {
    const response = new RecordingResponse();
    const stream = new EventStream(response as unknown as ServerResponse, services([]), new ActivityFeed(), { identity: ADMIN, heartbeatMs: 10 });
    assert.deepEqual(response.events(), ['stream.ready']);
    await until(() => (response.written.match(/^: heartbeat/gm) ?? []).length >= 2, 'two heartbeats');
    stream.close();
    assert.equal(response.writableEnded, true);
  });

  it('coalesces a burst of records on one session into one session.changed', async () => {
    const feed = new ActivityFeed();
    const response = new RecordingResponse();
    const stream = new EventStream(response as unknown as ServerResponse, services([session('ses_a', 'acme')]), feed, { identity: ADMIN, flushMs: 20 });
    for (let seq = 1; seq <= 100; seq += 1) feed.publish({ kind: 'audit', record: record('ses_a', seq) });
    await until(() => response.events().includes('session.changed'), 'the change');
    assert.deepEqual(response.events(), ['stream.ready', 'session.changed']);
    stream.close();
    assert.equal(feed.size, 0, 'closing unsubscribes');
  });

  it('filtered to one session: its records one by one, then a resync past 500 in one flush', async () => {
    const feed = new ActivityFeed();
    const response = new RecordingResponse();
    const stream = new EventStream(response as unknown as ServerResponse, services([session('ses_a', 'acme')]), feed, { identity: ADMIN, sessionId: 'ses_a', flushMs: 20 });
    feed.publish({ kind: 'audit', record: record('ses_b', 1) });
    for (let seq = 1; seq <= 3; seq += 1) feed.publish({ kind: 'audit', record: record('ses_a', seq) });
    await until(() => response.events().includes('session.changed'), 'the first flush');
    assert.equal(response.events().filter((event) => event === 'audit.appended').length, 3, 'only ses_a records');
    assert.doesNotMatch(response.written, /"hash"/, 'hashes stay on the server');
    for (let seq = 4; seq <= 600; seq += 1) feed.publish({ kind: 'audit', record: record('ses_a', seq) });
    await until(() => response.events().includes('stream.resync'), 'the resync');
    assert.equal(response.events().filter((event) => event === 'audit.appended').length, 3, 'the overflowing batch is replaced by the resync, not sent');
    stream.close();
  });

  it('cuts a client that stopped reading instead of buffering without bound', async () => {
    const feed = new ActivityFeed();
    const response = new RecordingResponse();
    new EventStream(response as unknown as ServerResponse, services([session('ses_a', 'acme')]), feed, { identity: ADMIN, flushMs: 5 });
    response.unsent = 2 * 1024 * 1024;
    feed.publish({ kind: 'audit', record: record('ses_a', 1) });
    await until(() => response.writableEnded, 'the cut');
    assert.equal(feed.size, 0);
    assert.deepEqual(response.events(), ['stream.ready']);
  });

  it("never sends another tenant's session to a tenant-bound identity", async () => {
    const feed = new ActivityFeed();
    const response = new RecordingResponse();
    const stream = new EventStream(response as unknown as ServerResponse, services([session('ses_mine', 'acme'), session('ses_theirs', 'globex')]), feed, {
      identity: { ...ADMIN, tenant: 'acme', role: 'operator' },
      flushMs: 5,
    });
    feed.publish({ kind: 'audit', record: record('ses_theirs', 1) });
    feed.publish({ kind: 'audit', record: record('ses_mine', 1) });
    await until(() => response.events().includes('session.changed'), 'the change');
    assert.match(response.written, /ses_mine/);
    assert.doesNotMatch(response.written, /ses_theirs/);
    stream.close();
  });
});
