/**
 * The workspace as resources, over a fake session (an in-memory tree behind
 * files.list / files.read): URIs, paged listing in depth-first order within
 * its bounds, reads as text or blob, refusals as JSON-RPC errors, and the
 * subscriptions' poller.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { SessionInfo } from '@airlock/sdk';
import { ResourceSubscriptions, WorkspaceResources, compareSegments, decodeCursor, encodeCursor, segmentsOfUri, uriOfSegments, type CallOutcome } from '@airlock/mcp';

type Node = { type: 'file'; content: Buffer } | { type: 'directory' } | { type: 'symlink' };

/** A session whose files live in a map; `denied` paths are refused like a denyRead rule would. */
class FakeSession {
  readonly tree = new Map<string, Node>([['/workspace', { type: 'directory' }]]);
  readonly denied = new Set<string>();
  readonly calls: string[] = [];
  state = 'running';
  toolCalls = 0;

  add(path: string, content?: string): void {
    const parts = path.split('/').filter(Boolean);
    for (let index = 2; index < parts.length; index += 1) this.tree.set(`/${parts.slice(0, index).join('/')}`, { type: 'directory' });
    this.tree.set(path, content === undefined ? { type: 'directory' } : { type: 'file', content: Buffer.from(content) });
  }

  async submit(tool: string, args: Record<string, unknown>): Promise<CallOutcome> {
    this.toolCalls += 1;
    const path = String(args['path']);
    this.calls.push(`${tool} ${path}`);
    const refused = (code: string, message: string, reason?: string): CallOutcome => ({ status: 'refused', code, message, decision: reason ? { policyIds: ['contract.filesystem.denyRead'], reason } : null });
    const hidden = [...this.denied].find((prefix) => path === prefix || path.startsWith(`${prefix}/`));
    if (hidden) return refused('POLICY_DENIED', `reading ${path} is denied: ${hidden} is listed in filesystem.denyRead`, `reading ${path} is denied: ${hidden} is listed in filesystem.denyRead`);
    const node = this.tree.get(path);
    if (!node) return refused('FILE_NOT_FOUND', `${path} does not exist`);
    const completed = (result: Record<string, unknown>): CallOutcome => ({ status: 'completed', tool, result } as unknown as CallOutcome);
    if (tool === 'files.list') {
      const entries = [...this.tree.entries()]
        .filter(([child]) => child.startsWith(`${path}/`) && !child.slice(path.length + 1).includes('/'))
        .map(([child, entry]) => ({ name: child.slice(path.length + 1), type: entry.type, size: entry.type === 'file' ? entry.content.length : 0, modifiedAt: '2026-01-01T00:00:00Z' }));
      return completed({ path, entries });
    }
    if (tool === 'files.read' && node.type === 'file') {
      const max = Number(args['maxBytes']);
      return completed({ path, content: node.content.subarray(0, max).toString('base64'), encoding: 'base64', size: node.content.length, truncated: node.content.length > max });
    }
    if (tool === 'files.stat' && node.type === 'file') return completed({ path, modifiedAt: `${node.content.length}` });
    return refused('IS_A_DIRECTORY', `${path} is a directory`);
  }

  async info(): Promise<SessionInfo> {
    return { state: this.state, meters: { toolCalls: this.toolCalls } } as unknown as SessionInfo;
  }
}

const never = async (): Promise<never> => {
  throw new Error('no held calls in these tests');
};

async function listAll(resources: WorkspaceResources): Promise<{ uris: string[]; pages: number }> {
  const uris: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await resources.list(cursor, new AbortController().signal);
    uris.push(...page.resources.map((resource) => resource.uri));
    cursor = page.nextCursor;
    pages += 1;
    assert.ok(pages < 200, 'the listing ends');
  } while (cursor !== undefined);
  return { uris, pages };
}

describe('workspace URIs', () => {
  it('name paths under /workspace, percent-encoded per segment, and nothing else', () => {
    assert.equal(uriOfSegments(['src', 'a b#.ts']), 'airlock://workspace/src/a%20b%23.ts');
    assert.deepEqual(segmentsOfUri('airlock://workspace/src/a%20b%23.ts'), ['src', 'a b#.ts']);
    for (const bad of ['file:///workspace/a', 'airlock://workspace/', 'airlock://workspace/../etc/passwd', 'airlock://workspace/a//b', 'airlock://workspace/a/./b', 'airlock://workspace/%E0%A4%A', 'airlock://workspace/a%2Fb', 'airlock://other/a']) {
      assert.throws(() => segmentsOfUri(bad), (error: unknown) => (error as { code?: number }).code === -32602, bad);
    }
  });

  it('order paths as a depth-first walk with sorted names, and round-trip cursors', () => {
    assert.ok(compareSegments(['a'], ['a', 'b']) < 0);
    assert.ok(compareSegments(['a', 'z'], ['a-b']) < 0, 'a directory\'s content comes before its next sibling, unlike plain string order');
    assert.ok(compareSegments(['b'], ['a', 'z']) > 0);
    assert.deepEqual(decodeCursor(encodeCursor(['x', 'y z'])), ['x', 'y z']);
    assert.throws(() => decodeCursor('not-a-cursor'), (error: unknown) => (error as { code?: number }).code === -32602);
  });
});

describe('WorkspaceResources.list', () => {
  it('lists every file once, in order, across pages bounded in files and directory listings', async () => {
    const session = new FakeSession();
    const expected: string[] = [];
    for (const dir of ['a', 'a-b', 'b/c/d', 'e']) for (let n = 0; n < 4; n += 1) session.add(`/workspace/${dir}/f${n}`, 'x');
    session.add('/workspace/top.txt', 'top');
    session.add('/workspace/empty');
    session.tree.set('/workspace/link', { type: 'symlink' });
    for (const [path, node] of [...session.tree.entries()]) if (node.type === 'file') expected.push(uriOfSegments(path.split('/').slice(2)));
    expected.sort((x, y) => compareSegments(segmentsOfUri(x), segmentsOfUri(y)));
    const resources = new WorkspaceResources(session, { pageSize: 3, listingsPerPage: 2, maxDepth: 16 });
    const { uris, pages } = await listAll(resources);
    assert.deepEqual(uris, expected);
    assert.ok(pages > expected.length / 3);
    const listed = session.calls.filter((call) => call.startsWith('files.list '));
    assert.equal(new Set(listed).size, listed.length, 'the pages of one walk list each directory once');
    // A new walk (no cursor) lists again, and sees what changed.
    session.add('/workspace/a/new', 'n');
    assert.ok((await listAll(resources)).uris.includes('airlock://workspace/a/new'));
    const whole = await new WorkspaceResources(session).list(undefined, new AbortController().signal);
    assert.deepEqual(whole.resources.map((resource) => resource.uri), [...expected, 'airlock://workspace/a/new'].sort((x, y) => compareSegments(segmentsOfUri(x), segmentsOfUri(y))));
    assert.equal(whole.nextCursor, undefined);
    assert.deepEqual(whole.resources[0], { uri: 'airlock://workspace/a/f0', name: 'a/f0', size: 1, annotations: { lastModified: '2026-01-01T00:00:00Z' } });
  });

  it('leaves out directories the policy refuses and those past the depth bound, but fails when the workspace itself is refused', async () => {
    const session = new FakeSession();
    session.add('/workspace/open/a.txt', 'a');
    session.add('/workspace/secret/key', 'k');
    session.add('/workspace/d1/d2/d3/deep.txt', 'd');
    session.denied.add('/workspace/secret');
    const { uris } = await listAll(new WorkspaceResources(session, { pageSize: 100, listingsPerPage: 25, maxDepth: 2 }));
    assert.deepEqual(uris, ['airlock://workspace/open/a.txt']);
    assert.ok(!session.calls.includes('files.list /workspace/d1/d2/d3'));
    session.denied.add('/workspace');
    await assert.rejects(new WorkspaceResources(session).list(undefined, new AbortController().signal), (error: unknown) => (error as { code?: number }).code === -32000 && /filesystem\.denyRead/.test((error as Error).message));
  });
});

describe('WorkspaceResources.read', () => {
  const session = new FakeSession();
  session.add('/workspace/notes.md', '# hi\n');
  session.tree.set('/workspace/blob.bin', { type: 'file', content: Buffer.from([0, 1, 2]) });
  session.tree.set('/workspace/latin1.txt', { type: 'file', content: Buffer.from([0xe9]) });
  session.add('/workspace/secret/key', 'k');
  session.denied.add('/workspace/secret');
  const resources = new WorkspaceResources(session);
  const read = (uri: string) => resources.read(uri, new AbortController().signal, never);

  it('returns UTF-8 as text and anything else as a base64 blob, with a MIME type', async () => {
    assert.deepEqual(await read('airlock://workspace/notes.md'), { contents: [{ uri: 'airlock://workspace/notes.md', mimeType: 'text/markdown', text: '# hi\n' }] });
    assert.deepEqual(await read('airlock://workspace/blob.bin'), { contents: [{ uri: 'airlock://workspace/blob.bin', mimeType: 'application/octet-stream', blob: 'AAEC' }] });
    assert.equal((await read('airlock://workspace/latin1.txt')).contents[0]?.mimeType, 'text/plain');
    assert.ok('blob' in ((await read('airlock://workspace/latin1.txt')).contents[0] ?? {}));
  });

  it("refuses with the policy's reason, answers a missing file with -32002, and a directory as refused", async () => {
    await assert.rejects(read('airlock://workspace/secret/key'), (error: unknown) => {
      const failure = error as { code: number; message: string; data: { reason?: string; policyIds?: string[]; uri?: string } };
      assert.equal(failure.code, -32000);
      assert.match(failure.message, /^POLICY_DENIED: reading \/workspace\/secret\/key is denied: \/workspace\/secret is listed in filesystem\.denyRead/);
      assert.equal(failure.data.uri, 'airlock://workspace/secret/key');
      assert.deepEqual(failure.data.policyIds, ['contract.filesystem.denyRead']);
      return true;
    });
    await assert.rejects(read('airlock://workspace/gone.txt'), (error: unknown) => (error as { code?: number; data?: { uri?: string } }).code === -32002);
    await assert.rejects(read('airlock://workspace/secret'), (error: unknown) => (error as { code?: number }).code === -32000);
  });
});

describe('ResourceSubscriptions', () => {
  function subscriptions(session: FakeSession): { subscriptions: ResourceSubscriptions; notified: string[] } {
    const notified: string[] = [];
    // A long interval: the test drives each look with poll().
    return { subscriptions: new ResourceSubscriptions({ calls: session, notify: async (uri) => void notified.push(uri), intervalMs: 3_600_000 }), notified };
  }
  const signal = new AbortController().signal;

  it('reads subscribed files again only after another tool call, and notifies when one changed', async (test) => {
    const session = new FakeSession();
    session.add('/workspace/a.txt', 'one');
    session.add('/workspace/b.txt', 'b');
    const { subscriptions: watch, notified } = subscriptions(session);
    test.after(() => watch.close());
    await watch.subscribe('airlock://workspace/a.txt', signal);
    await watch.subscribe('airlock://workspace/b.txt', signal);
    await watch.subscribe('airlock://workspace/later.txt', signal);
    await watch.poll();
    const reads = session.calls.length;
    await watch.poll();
    assert.equal(session.calls.length, reads, 'no tool call of others since the last look: nothing read');
    session.add('/workspace/a.txt', 'two'); // same size, other content
    session.add('/workspace/later.txt', 'now here');
    session.toolCalls += 1; // the call that changed them
    await watch.poll();
    assert.deepEqual(notified.sort(), ['airlock://workspace/a.txt', 'airlock://workspace/later.txt']);
    watch.unsubscribe('airlock://workspace/a.txt');
    session.add('/workspace/a.txt', 'three');
    session.toolCalls += 1;
    await watch.poll();
    assert.equal(notified.length, 2, 'no notification after unsubscribe');
    await watch.close();
  });

  it('leaves a sleeping session alone, and refuses to subscribe to a denied path', async (test) => {
    const session = new FakeSession();
    session.add('/workspace/a.txt', 'one');
    session.add('/workspace/secret/key', 'k');
    session.denied.add('/workspace/secret');
    const { subscriptions: watch, notified } = subscriptions(session);
    test.after(() => watch.close());
    await assert.rejects(watch.subscribe('airlock://workspace/secret/key', signal), (error: unknown) => (error as { code?: number }).code === -32000 && /filesystem\.denyRead/.test((error as Error).message));
    await watch.subscribe('airlock://workspace/a.txt', signal);
    session.state = 'suspended';
    session.toolCalls += 5;
    const reads = session.calls.length;
    await watch.poll();
    assert.equal(session.calls.length, reads, 'a suspended machine is not woken to look');
    session.state = 'running';
    session.add('/workspace/a.txt', 'changed');
    await watch.poll();
    assert.deepEqual(notified, ['airlock://workspace/a.txt']);
    await watch.close();
  });
});
