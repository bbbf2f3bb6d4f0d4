/**
 * The cluster's decisions over a real SQLite store: where a session call
 * goes (here, forwarded to the live owner, or here after taking the lease of
 * a suspended session whose node is gone or draining), where a new session
 * goes, which calls are routed at all, what the membership does on a look
 * around (NODE_LOST for the machines of a lost node, a drain of this one),
 * and the flags a node is started with.
 */
import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteStore } from '../../../src/stores/sqlite/sqlite-store.js';
import { AuditLog } from '../../../src/audit/audit-log.js';
import { SessionRecords } from '../../../src/core/session-records.js';
import { NodeMembership } from '../../../src/cluster/node-membership.js';
import { SessionRouting } from '../../../src/cluster/session-routing.js';
import { checkClusterOptions, claimNodeId } from '../../../src/cluster/cluster-options.js';
import { routedSessionOf } from '../../../src/api/cluster-routing.js';
import type { NodeRecord } from '../../../src/core/cluster-node.js';
import { AirlockError, isAirlockError } from '../../../src/core/errors.js';
import { sampleSession, sampleSnapshot } from '../../../src/stores/conformance/store-conformance-context.js';
import { ManualClock } from '../../support/core-fixture.js';
import { waitFor } from '../../support/wait-for.js';

const LEASE_MS = 5000;

describe('cluster routing and membership', () => {
  let dir: string;
  let store: SqliteStore;
  let clock: ManualClock;
  let records: SessionRecords;
  let membership: NodeMembership;
  let routing: SessionRouting;
  const suspended: string[] = [];
  const dropped: string[] = [];

  const node = (id: string, overrides: Partial<NodeRecord> = {}): NodeRecord => ({
    id,
    address: `http://${id}.test:7070`,
    state: 'active',
    capacity: { sessions: 4, cpus: 2, memoryMb: 4096 },
    runtimeVersion: 'gvisor',
    airlockVersion: '0.0.0',
    joinedAt: clock.now().toISOString(),
    heartbeatAt: clock.now().toISOString(),
    ...overrides,
  });
  const put = (...nodes: NodeRecord[]) =>
    store.transaction(async (tx) => {
      for (const each of nodes) await tx.putNode(each);
    });
  const insert = (overrides: Parameters<typeof sampleSession>[0]) => {
    const session = sampleSession(overrides);
    return store.transaction(async (tx) => {
      await tx.insertSession(session);
      return session;
    });
  };
  /** A heartbeat older than the lease. */
  const stale = () => new Date(clock.now().getTime() - LEASE_MS - 1000).toISOString();

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'airlock-routing-'));
    store = new SqliteStore(join(dir, 'airlock.db'));
    clock = new ManualClock();
    const audit = new AuditLog({ key: randomBytes(32), clock });
    records = new SessionRecords({ store, audit, clock, owner: 'me' });
    suspended.length = 0;
    dropped.length = 0;
    membership = new NodeMembership({
      store,
      records,
      clock,
      self: { id: 'me', address: 'http://me.test:7070', capacity: { sessions: 4, cpus: 2, memoryMb: 4096 }, runtimeVersion: 'gvisor', airlockVersion: '0.0.0' },
      leaseMs: LEASE_MS,
      suspend: async (sessionId) => {
        suspended.push(sessionId);
        await records.transition(sessionId, 'begin-suspend', { type: 'session.suspending', data: {} });
        await records.transition(sessionId, 'finish-suspend', { type: 'session.suspended', data: {} }, { sandbox: null });
      },
      dropLocal: async (sessionId) => {
        dropped.push(sessionId);
      },
      log: () => undefined,
    });
    await membership.join();
    routing = new SessionRouting({ store, records, membership });
  });
  afterEach(async () => {
    await membership.leave();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers here for its own sessions, forwards to a live owner, and answers a forwarded call here whatever it finds', async () => {
    await put(node('b'));
    const mine = await insert({ owner: 'me', state: 'running', pendingOperation: null });
    const theirs = await insert({ owner: 'b', state: 'running', pendingOperation: null });
    assert.deepEqual(await routing.routeSession(mine.id, false), { kind: 'local' });
    const route = await routing.routeSession(theirs.id, false);
    assert.equal(route.kind === 'proxy' && route.node.address, 'http://b.test:7070');
    assert.deepEqual(await routing.routeSession(theirs.id, true), { kind: 'local' }, 'never forwarded twice');
    assert.deepEqual(await routing.routeSession('ses_missing', false), { kind: 'local' }, 'the services answer SESSION_NOT_FOUND');
  });

  it('takes the lease of a suspended session whose node is lost or draining (epoch + 1, audited), and of none whose node is alive', async () => {
    await put(node('gone', { heartbeatAt: stale() }), node('leaving', { state: 'draining' }), node('alive'));
    const ofGone = await insert({ owner: 'gone', state: 'suspended', pendingOperation: null, epoch: 3 });
    const ofLeaving = await insert({ owner: 'leaving', state: 'suspended', pendingOperation: null });
    const ofAlive = await insert({ owner: 'alive', state: 'suspended', pendingOperation: null });
    const busy = await insert({ owner: 'gone', state: 'suspended', pendingOperation: 'resume' });
    for (const session of [ofGone, ofLeaving]) assert.deepEqual(await routing.routeSession(session.id, false), { kind: 'local' });
    assert.equal((await store.getSession(ofGone.id))?.owner, 'me');
    assert.equal((await store.getSession(ofGone.id))?.epoch, 4);
    assert.equal(records.leases.epochOf(ofGone.id), 4);
    assert.equal((await store.getSession(ofLeaving.id))?.owner, 'me');
    const [taken] = await store.listAudit(ofGone.id, { types: ['session.lease-taken'] });
    assert.deepEqual([taken?.data['from'], taken?.data['to'], taken?.data['epoch'], taken?.data['reason']], ['gone', 'me', 4, 'owner lost']);
    assert.equal((await routing.routeSession(ofAlive.id, false)).kind, 'proxy');
    assert.equal((await store.getSession(ofAlive.id))?.owner, 'alive');
    await routing.routeSession(busy.id, false);
    assert.equal((await store.getSession(busy.id))?.owner, 'gone', 'an operation in flight: not moved');
  });

  it('places a new session on the active node with the most free capacity, itself on a tie, never on a lost or draining node', async () => {
    await put(
      node('b'),
      node('c', { capacity: { sessions: 9, cpus: 2, memoryMb: 4096 }, heartbeatAt: stale() }),
      node('d', { state: 'draining', capacity: { sessions: 9, cpus: 2, memoryMb: 4096 } }),
    );
    assert.deepEqual(await routing.placeNew(false), { kind: 'local' }, 'me and b tie at 4');
    await insert({ owner: 'me', state: 'running', pendingOperation: null });
    const route = await routing.placeNew(false);
    assert.equal(route.kind === 'proxy' && route.node.id, 'b');
    assert.deepEqual(await routing.placeNew(true), { kind: 'local' }, 'a forwarded create is made here');
    await insert({ owner: 'b', state: 'running', pendingOperation: null });
    await insert({ owner: 'b', state: 'suspended', pendingOperation: null });
    assert.deepEqual(await routing.placeNew(false), { kind: 'local' }, 'suspended sessions take no capacity: 3 free each, a tie');
  });

  it('a draining node sends its suspended sessions to another node, and takes over nothing itself', async () => {
    await put(node('b'), node('gone', { heartbeatAt: stale() }));
    const mine = await insert({ owner: 'me', state: 'suspended', pendingOperation: null });
    const ofGone = await insert({ owner: 'gone', state: 'suspended', pendingOperation: null });
    await store.transaction((tx) => tx.setNodeState('me', 'draining'));
    const route = await routing.routeSession(mine.id, false);
    assert.equal(route.kind === 'proxy' && route.node.id, 'b');
    const other = await routing.routeSession(ofGone.id, false);
    assert.equal(other.kind === 'proxy' && other.node.id, 'b');
    assert.equal((await store.getSession(ofGone.id))?.owner, 'gone');
  });

  it('on a look around: fails the machines of a lost node with NODE_LOST naming the last snapshot, leaves its suspended ones, drains itself', async () => {
    await put(node('gone', { heartbeatAt: stale() }));
    const running = await insert({ owner: 'gone', state: 'running', pendingOperation: null });
    const asleep = await insert({ owner: 'gone', state: 'suspended', pendingOperation: null });
    const snapshot = sampleSnapshot(running.id);
    await store.transaction((tx) => tx.insertSnapshot(snapshot));
    const mineRunning = await insert({ owner: 'me', state: 'running', pendingOperation: null });
    await records.holdOwned();
    await store.transaction((tx) => tx.setNodeState('me', 'draining'));
    await membership.tick();
    await waitFor(() => suspended.includes(mineRunning.id), 10_000, 'the drain suspended its session');
    const failed = await store.getSession(running.id);
    assert.equal(failed?.state, 'failed');
    assert.equal(failed?.owner, 'me');
    assert.equal(failed?.failure?.code, 'NODE_LOST');
    assert.equal(failed?.failure?.lastSnapshotId, snapshot.id);
    assert.match(
      failed?.failure?.message ?? '',
      /node gone stopped renewing its lease at .*; its last snapshot snap_\S+ \(.*\) can be forked with `airlock sessions fork/,
    );
    assert.equal((await store.getSession(asleep.id))?.owner, 'gone', 'suspended: taken over on its next call, not now');
    assert.equal((await store.getSession(mineRunning.id))?.state, 'suspended');
  });

  it('after an outage of the store, takes no node for lost until the others have had a whole lease to renew their heartbeats', async () => {
    const transaction = store.transaction.bind(store);
    let down = true;
    store.transaction = ((work) =>
      down
        ? Promise.reject(new AirlockError('STORE_UNAVAILABLE', 'the PostgreSQL store is unavailable; retry'))
        : transaction(work)) as typeof store.transaction;
    // The heartbeat's own timer (a third of the lease) meets the outage.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 3 + 500));
    down = false;
    await put(node('gone', { heartbeatAt: stale() }));
    const running = await insert({ owner: 'gone', state: 'running', pendingOperation: null });
    await membership.tick();
    assert.equal((await store.getSession(running.id))?.state, 'running', 'its heartbeat may be old only because the store was down');
    clock.advance(LEASE_MS + 1);
    await membership.tick();
    assert.equal((await store.getSession(running.id))?.failure?.code, 'NODE_LOST', 'a lease after the store came back, it is lost');
  });

  it('drops a session whose lease another node took, and refuses its writes from then on', async () => {
    const mine = await insert({ owner: 'me', state: 'running', pendingOperation: null });
    await records.holdOwned();
    const fresh = await store.getSession(mine.id);
    await store.transaction((tx) => tx.replaceSession({ ...fresh!, owner: 'b', epoch: 1, version: fresh!.version + 1 }));
    await membership.tick();
    await waitFor(() => dropped.length > 0, 10_000, 'the session dropped');
    assert.deepEqual(dropped, [mine.id]);
    await assert.rejects(
      records.update(mine.id, () => ({ keepAwake: true })),
      (error: unknown) => isAirlockError(error, 'LEASE_LOST'),
    );
  });

  it('routes the calls that must run where the session is, and answers store reads anywhere', () => {
    assert.equal(routedSessionOf('POST', '/v1/sessions/ses_a/exec'), 'ses_a');
    assert.equal(routedSessionOf('DELETE', '/v1/sessions/ses_a'), 'ses_a');
    assert.equal(routedSessionOf('GET', '/v1/sessions/ses_a/ports/8000/index.html?x=1'), 'ses_a');
    assert.equal(routedSessionOf('GET', '/v1/sessions/ses_a/terminal'), 'ses_a');
    for (const read of ['/v1/sessions/ses_a', '/v1/sessions/ses_a/audit?afterSeq=3', '/v1/sessions/ses_a/contract', '/v1/sessions', '/v1/approvals']) {
      assert.equal(routedSessionOf('GET', read), undefined, read);
    }
  });

  it('refuses cluster flags that cannot work, saying what to give', () => {
    const refused = (options: Parameters<typeof checkClusterOptions>[0], message: RegExp) =>
      assert.throws(
        () => checkClusterOptions(options),
        (error: unknown) => isAirlockError(error, 'INVALID_ARGUMENTS') && message.test((error as Error).message),
      );
    assert.equal(checkClusterOptions({ storeKind: 'sqlite' }), undefined, 'no --advertise: one node');
    refused({ advertise: 'not a url', storeKind: 'postgres', objects: 's3://b' }, /is not a URL; give the address other nodes reach this one at/);
    refused({ advertise: 'http://10.0.0.5:7070/api', storeKind: 'postgres', objects: 's3://b' }, /must be http:\/\/HOST:PORT/);
    refused({ advertise: 'http://10.0.0.5:7070', storeKind: 'sqlite', objects: 's3://b' }, /give --store postgres:/);
    refused({ advertise: 'http://10.0.0.5:7070', storeKind: 'postgres' }, /give --objects s3:\/\/BUCKET/);
    refused(
      { advertise: 'http://10.0.0.5:7070', storeKind: 'postgres', objects: 's3://b', leaseSeconds: '0' },
      /AIRLOCK_NODE_LEASE_SECONDS="0": give a number of seconds from 1 to 3600/,
    );
    assert.deepEqual(checkClusterOptions({ advertise: 'http://10.0.0.5:7070', storeKind: 'postgres', objects: 's3://b', leaseSeconds: '2.5' }), {
      address: 'http://10.0.0.5:7070',
      leaseMs: 2500,
    });
    const file = join(dir, 'node-id');
    claimNodeId(file, 'node-1');
    assert.equal(readFileSync(file, 'utf8'), 'node-1\n');
    claimNodeId(file, 'node-1');
    assert.throws(() => claimNodeId(file, 'node-2'), /this data dir is node node-1; start it with --node-id node-1/);
    assert.throws(() => claimNodeId(file, 'bad name'), /--node-id "bad name": use letters, digits/);
  });
});
