/**
 * Issue 14, a fork of 8 from a snapshot taken on a, with its branches placed
 * on b and c (three nodes on one machine, PostgreSQL, s3rver, real gVisor):
 * a is drained, so its suspended session moves with the fork call to the
 * node with the most room, which makes its share of the branches and asks
 * the other node to fork the same snapshot, from the bucket, into the rest.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ClusterNodes, ok, until } from '../support/cluster-nodes.js';
import { NO_POSTGRES, testPostgresUrl } from '../support/test-database.js';

interface BranchView {
  id?: string;
  node?: string;
  state?: string;
  lineage?: { parentSessionId: string; snapshotId: string; branchIndex: number } | null;
  error?: { code: string; message: string };
}

describe('three nodes: a fork of 8 placed on the nodes with room', { skip: testPostgresUrl() ? false : NO_POSTGRES }, () => {
  let cluster: ClusterNodes;
  before(async () => {
    cluster = await ClusterNodes.start('fork', ['a', 'b', 'c'], 4, { a: 8 });
  });
  after(async () => {
    await cluster?.destroy();
  });

  it('forks 8 branches of a snapshot taken on a: 4 on b, 4 on c, each with the parent’s files, numbered 0 to 7', async () => {
    const a = cluster.node('a');
    const id = ok(a.cli(['sessions', 'create']), 'create').trim();
    assert.equal(cluster.ownerOf(id, 'b'), 'a');
    ok(a.cli(['files', 'write', id, '/workspace/notes.txt'], { input: 'written on a\n' }), 'write');
    const snapshot = JSON.parse(ok(a.cli(['snapshots', 'create', id, '--name', 'on-a', '--json']), 'snapshot')) as { id: string };
    ok(a.cli(['sessions', 'suspend', id]), 'suspend');
    ok(a.cli(['nodes', 'drain', 'a']), 'drain a');

    const forked = await cluster.node('c').cliAsync(['sessions', 'fork', id, '--snapshot', snapshot.id, '--count', '8', '--json']);
    assert.equal(forked.code, 0, forked.stderr);
    const result = { branches: JSON.parse(forked.stdout) as BranchView[] };
    assert.equal(result.branches.length, 8);
    for (const branch of result.branches) assert.equal(branch.lineage?.snapshotId, snapshot.id);
    for (const branch of result.branches) assert.equal(branch.error, undefined, JSON.stringify(branch.error));
    assert.deepEqual(
      result.branches.map((branch) => branch.lineage?.branchIndex),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    const perNode = new Map<string, number>();
    for (const branch of result.branches) perNode.set(branch.node ?? '?', (perNode.get(branch.node ?? '?') ?? 0) + 1);
    assert.deepEqual(Object.fromEntries(perNode), { b: 4, c: 4 });
    assert.notEqual(cluster.ownerOf(id, 'a'), 'a', 'the parent moved off the drained node with the fork call');
    for (const branch of result.branches) {
      assert.equal(branch.state, 'running');
      assert.equal(ok(cluster.node('a').cli(['files', 'read', branch.id!, '/workspace/notes.txt']), 'read a branch'), 'written on a\n');
    }
    for (const branch of result.branches) ok(cluster.node('b').cli(['sessions', 'rm', branch.id!]), 'remove a branch');
    await until(() => cluster.list('b').every((node) => node.sessions <= 1), 'the branches are gone');
  });
});
