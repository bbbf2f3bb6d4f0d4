/**
 * Issue 14, three nodes on one machine (PostgreSQL, s3rver, real gVisor):
 * the nodes register and show in `airlock nodes ls`; new sessions go to the
 * node with the most free capacity; any node answers any call, forwarding it
 * to the node holding the session (bodies and streamed output included); and
 * `airlock nodes drain` suspends a node's sessions, which resume on another
 * node at their next call, with their files.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterNodes, ok, until } from '../support/cluster-nodes.js';
import { NO_POSTGRES, testPostgresUrl } from '../support/test-database.js';

describe('three nodes: placement, one endpoint, drain', { skip: testPostgresUrl() ? false : NO_POSTGRES }, () => {
  let cluster: ClusterNodes;
  const placed = new Map<string, string>();
  before(async () => {
    cluster = await ClusterNodes.start('routing', ['a', 'b', 'c'], 2);
  });
  after(async () => {
    await cluster?.destroy();
  });

  it('lists the three nodes, active, with their addresses, through any node', () => {
    for (const via of ['a', 'b', 'c']) {
      const nodes = cluster.list(via);
      assert.deepEqual(
        nodes.map((node) => [node.id, node.address, node.state, node.sessions]),
        ['a', 'b', 'c'].map((name) => [name, cluster.node(name).url, 'active', 0]),
      );
      for (const node of nodes) assert.ok(Date.now() - Date.parse(node.heartbeatAt) < 60_000);
    }
  });

  it('places new sessions on the node with the most free capacity: three creates through a land on a, b and c', () => {
    for (let index = 0; index < 3; index += 1) {
      const id = ok(cluster.node('a').cli(['sessions', 'create']), 'create').trim();
      placed.set(cluster.ownerOf(id, 'b'), id);
    }
    assert.deepEqual([...placed.keys()].sort(), ['a', 'b', 'c']);
    assert.deepEqual(
      cluster.list('c').map((node) => node.sessions),
      [1, 1, 1],
    );
  });

  it('answers any call through any node: files, exec with streamed output, suspend and resume of a session held elsewhere', () => {
    const id = placed.get('c')!;
    const text = `written through a ${'x'.repeat(100_000)}\n`;
    ok(cluster.node('a').cli(['files', 'write', id, '/workspace/through-a.txt'], { input: text }), 'write through a');
    assert.equal(ok(cluster.node('b').cli(['files', 'read', id, '/workspace/through-a.txt']), 'read through b'), text);
    const lines = ok(cluster.node('b').cli(['exec', id, '--', 'sh', '-c', 'seq 1 50000; echo done >&2']), 'exec through b');
    assert.equal(lines.split('\n').length, 50001);
    const failing = cluster.node('a').cli(['exec', id, '--', 'sh', '-c', 'exit 7']);
    assert.equal(failing.code, 7, 'the exit code comes back through the forwarding node');
    ok(cluster.node('a').cli(['sessions', 'suspend', id]), 'suspend through a');
    assert.equal(cluster.ownerOf(id, 'b'), 'c', 'suspended where it ran: c is alive');
    assert.equal(ok(cluster.node('b').cli(['exec', id, '--', 'hostname']), 'resume through b').length > 0, true);
    assert.equal(cluster.ownerOf(id, 'a'), 'c', 'resumed on c, the node that holds it');
    const audit = JSON.parse(ok(cluster.node('a').cli(['audit', id, '--json']), 'audit')) as { type: string }[];
    assert.equal(audit.filter((record) => record.type === 'session.lease-taken').length, 0, 'no takeover while its node is alive');
  });

  it('drains b: its session is suspended, then resumes on another node at its next call, with its files', async () => {
    const id = placed.get('b')!;
    ok(cluster.node('b').cli(['files', 'write', id, '/workspace/before-drain.txt'], { input: 'on b\n' }), 'write on b');
    const drained = JSON.parse(ok(cluster.node('a').cli(['nodes', 'drain', 'b', '--json']), 'drain b')) as { id: string; state: string };
    assert.equal(drained.state, 'draining');
    await until(
      () => (JSON.parse(ok(cluster.node('c').cli(['sessions', 'get', id, '--json']), 'get')) as { state: string }).state === 'suspended',
      'b suspended its session',
    );
    assert.equal(cluster.list('a').find((node) => node.id === 'b')?.state, 'draining');
    // The next call, even through b itself, runs it elsewhere.
    assert.equal(ok(cluster.node('b').cli(['files', 'read', id, '/workspace/before-drain.txt']), 'read after drain'), 'on b\n');
    const owner = cluster.ownerOf(id, 'a');
    assert.notEqual(owner, 'b');
    const taken = (JSON.parse(ok(cluster.node('a').cli(['audit', id, '--json']), 'audit')) as { type: string; data: Record<string, unknown> }[]).filter(
      (record) => record.type === 'session.lease-taken',
    );
    assert.equal(taken.length, 1);
    assert.equal(taken[0]?.data['from'], 'b');
    assert.equal(taken[0]?.data['to'], owner);
    // A drained node takes no new sessions.
    const fresh = ok(cluster.node('b').cli(['sessions', 'create']), 'create through b').trim();
    assert.notEqual(cluster.ownerOf(fresh, 'c'), 'b');
    const refused = cluster.node('a').cli(['nodes', 'drain', 'nobody']);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /NOT_FOUND: no node nobody/);
  });
});
