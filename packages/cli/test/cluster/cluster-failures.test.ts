/**
 * Issue 14, nodes that fail (PostgreSQL, s3rver, real gVisor, three nodes on
 * one machine; a has the most capacity, so what is created through it stays on it): a node paused past its lease (SIGSTOP) loses its running
 * session, which fails with NODE_LOST; when it wakes (SIGCONT) its write is
 * refused by the store's epoch check and it drops the machine. A node killed
 * after a suspend, its data dir deleted: another node resumes the session
 * with its files and a counter that goes on counting. Two nodes racing to
 * resume one session: exactly one runs it, the other forwards the call.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ClusterNodes, COUNTER, deleteDataDir, ok, until } from '../support/cluster-nodes.js';
import { hostProcessesMatching } from '../support/test-installation.js';
import { NO_POSTGRES, testPostgresUrl } from '../support/test-database.js';

describe('three nodes: a node paused past its lease, a node killed, a race to resume', { skip: testPostgresUrl() ? false : NO_POSTGRES }, () => {
  let cluster: ClusterNodes;
  before(async () => {
    // a takes the most sessions: everything created through a stays on a.
    cluster = await ClusterNodes.start('failures', ['a', 'b', 'c'], 4, { a: 8 });
  });
  after(async () => {
    await cluster?.destroy();
  });

  it('SIGSTOP a past its lease: its running session fails with NODE_LOST; on SIGCONT its write is refused and it drops the machine', async () => {
    const id = ok(cluster.node('a').cli(['sessions', 'create']), 'create on a').trim();
    const created = cluster.session(id, 'b');
    assert.equal(created.node, 'a');
    assert.ok(created.sandboxId);
    const call = cluster.node('a').cliAsync(['exec', id, '--', 'sh', '-c', 'sleep 2; echo finished']);
    // Read from the database directly: quick enough to stop a well before its call ends.
    await until(
      async () => (await cluster.database.query("SELECT 1 FROM audit_records WHERE session_id = $1 AND type = 'tool-call.started'", [id])).rowCount === 1,
      'the call started on a',
    );
    cluster.node('a').signalServer('SIGSTOP');
    try {
      await until(() => cluster.list('b').find((node) => node.id === 'a')?.state === 'lost', 'a is lost');
      const failed = await until(() => {
        const view = cluster.session(id, 'b');
        return view.state === 'failed' ? view : undefined;
      }, 'the session failed');
      assert.equal(failed.failure?.code, 'NODE_LOST');
      assert.match(failed.failure?.message ?? '', /node a stopped renewing its lease at .* and its machine is lost/);
      assert.notEqual(failed.node, 'a', 'the node that failed it holds it now');
      assert.equal(cluster.audit(id, 'c', 'session.node-lost').length, 1);
    } finally {
      cluster.node('a').signalServer('SIGCONT');
    }
    const finished = await call;
    assert.notEqual(finished.code, 0, `the call that ran while a slept cannot record its end: ${finished.stdout}`);
    assert.match(finished.stderr, /LEASE_LOST: session .* was taken over by node [bc] \(lease epoch 1, this node held 0\)/);
    await until(() => hostProcessesMatching(created.sandboxId!).length === 0 || undefined, 'a dropped the machine');
    await until(
      () => /lease of session .* lost to node [bc] \(epoch 1\); dropping what this host has of it/.test(cluster.node('a').serverLog) || undefined,
      'a says so',
    );
    await until(() => cluster.list('b').find((node) => node.id === 'a')?.state === 'active', 'a renews its lease again');
    const refused = cluster.node('a').cli(['exec', id, '--', 'true']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /INVALID_STATE: .* cannot run tool calls: it failed \(node a stopped renewing its lease/);
    assert.equal(cluster.session(id, 'a').state, 'failed', 'nothing changed it back');
  });

  it('suspend on a; kill a and delete its data dir: b resumes the session with its files and a counter that goes on counting', async () => {
    const a = cluster.node('a');
    const id = ok(a.cli(['sessions', 'create']), 'create on a').trim();
    const racing = ok(a.cli(['sessions', 'create']), 'create a second on a').trim();
    assert.equal(cluster.ownerOf(id, 'b'), 'a');
    assert.equal(cluster.ownerOf(racing, 'b'), 'a');
    ok(a.cli(['files', 'write', id, '/workspace/counter.py'], { input: COUNTER }), 'write the counter');
    ok(a.cli(['files', 'write', id, '/workspace/notes.txt'], { input: 'written on a\n' }), 'write notes');
    ok(a.cli(['files', 'write', racing, '/workspace/notes.txt'], { input: 'racing\n' }), 'write notes of the second');
    ok(a.cli(['exec', id, '--detach', '--', 'python3', '/workspace/counter.py']), 'start the counter');
    await until(() => a.cli(['exec', id, '--', 'test', '-s', '/tmp/count']).code === 0, 'the counter started');
    const beforeSuspend = Number(ok(a.cli(['exec', id, '--', 'cat', '/tmp/count']), 'count'));
    // Suspended through other nodes: the calls are forwarded to a.
    ok(cluster.node('b').cli(['sessions', 'suspend', id]), 'suspend through b');
    ok(cluster.node('c').cli(['sessions', 'suspend', racing]), 'suspend through c');
    await a.crashServer();
    deleteDataDir(a.dataDir);
    await until(() => cluster.list('b').find((node) => node.id === 'a')?.state === 'lost', 'a is lost');

    const count = () => Number(ok(cluster.node('b').cli(['exec', id, '--', 'cat', '/tmp/count']), 'count on b'));
    const first = count();
    assert.ok(first >= beforeSuspend, `the counter went on from ${beforeSuspend} (read ${first}), it did not start again`);
    await until(() => count() > first, 'the counter goes on counting on b');
    assert.equal(ok(cluster.node('c').cli(['files', 'read', id, '/workspace/notes.txt']), 'read through c'), 'written on a\n');
    assert.equal(cluster.ownerOf(id, 'c'), 'b');
    const taken = cluster.audit(id, 'c', 'session.lease-taken');
    assert.equal(taken.length, 1);
    assert.deepEqual([taken[0]?.data['from'], taken[0]?.data['to'], taken[0]?.data['epoch']], ['a', 'b', 1]);
    const resumed = cluster.audit(id, 'c', 'session.resumed').at(-1)?.data['fetched'] as
      { memory: { bytes: number } | null; disk: { bytes: number } | null } | undefined;
    assert.ok(resumed?.memory && resumed.memory.bytes > 0, 'the memory image came from object storage');
    assert.ok(resumed?.disk && resumed.disk.bytes > 0, 'the disk came from object storage');

    // Two nodes race to resume the other: exactly one takes it and runs it, the other forwards its call there.
    const results = await Promise.all([
      cluster.node('b').cliAsync(['exec', racing, '--', 'cat', '/workspace/notes.txt']),
      cluster.node('c').cliAsync(['exec', racing, '--', 'cat', '/workspace/notes.txt']),
    ]);
    for (const result of results) {
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, 'racing\n');
    }
    const winner = cluster.session(racing, 'b');
    assert.ok(winner.node === 'b' || winner.node === 'c');
    assert.equal(cluster.audit(racing, 'b', 'session.lease-taken').length, 1, 'one takeover');
    assert.equal(cluster.audit(racing, 'b', 'session.resumed').length, 1, 'one resume');
    const loser = winner.node === 'b' ? 'c' : 'b';
    assert.ok(winner.sandboxId);
    assert.ok(readdirSync(join(cluster.node(winner.node).dataDir, 'sandboxes')).includes(winner.sandboxId), 'the winner runs it');
    assert.ok(!readdirSync(join(cluster.node(loser).dataDir, 'sandboxes')).includes(winner.sandboxId), 'the loser does not');
  });
});
