import { describe, it, before, after, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes, randomInt } from 'node:crypto';
import { ObjectStorageServer } from '../../support/object-storage-server.js';
import { freshPrefix, objectNode, writeSnapshotFiles, type ObjectNode } from '../../support/object-storage-fixture.js';
import { COLLECTOR_LOCK_KEY, encodeRecord } from '../../../src/objects/collection-protocol.js';
import { chunkKey, chunksOf, manifestKey, parseManifest } from '../../../src/objects/snapshot-manifest.js';

const MiB = 1024 * 1024;

/** A promise the test opens when it wants. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Waits until `condition` holds (checked every 10 ms), failing after 20 s. */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Every chunk every manifest in the bucket names exists. */
async function everyNamedChunkExists(node: ObjectNode): Promise<{ named: number; missing: string[] }> {
  const present = new Set((await node.objects.list('chunks/')).map((chunk) => chunk.key));
  let named = 0;
  const missing: string[] = [];
  for (const manifest of await node.objects.list('snapshots/')) {
    const snapshotId = manifest.key.replace(/^snapshots\//, '').replace(/\.json$/, '');
    for (const chunk of chunksOf(parseManifest((await node.objects.get(manifest.key))!, snapshotId))) {
      named += 1;
      if (!present.has(chunkKey(chunk))) missing.push(`${snapshotId}:${chunk}`);
    }
  }
  return { named, missing };
}

describe('chunk collector against concurrent uploads', () => {
  let server: ObjectStorageServer;
  const nodes: ObjectNode[] = [];
  before(async () => {
    server = await ObjectStorageServer.start();
  });
  after(() => server.close());
  afterEach(async () => {
    for (const node of nodes.splice(0)) await node.close();
  });

  /** Two nodes on a fresh prefix: one that uploads, one that collects (each may be given test hooks). */
  function pair(hooks: { uploader?: Parameters<typeof objectNode>[3]; collector?: Parameters<typeof objectNode>[3] } = {}): [ObjectNode, ObjectNode] {
    const prefix = freshPrefix();
    const uploader = objectNode(server, prefix, 'uploader', hooks.uploader);
    const collector = objectNode(server, prefix, 'collector', hooks.collector);
    nodes.push(uploader, collector);
    return [uploader, collector];
  }

  /** Chunks stored by a snapshot that was then removed: unreferenced, the collector's to delete. */
  async function orphanChunksOf(node: ObjectNode, content: Buffer): Promise<string[]> {
    writeSnapshotFiles(node, 'snap_orphaned', { 'pages.img': content });
    await node.artifacts.seal('snap_orphaned');
    const chunks = [...chunksOf(parseManifest((await node.objects.get(manifestKey('snap_orphaned')))!, 'snap_orphaned'))];
    await node.objects.delete(manifestKey('snap_orphaned'));
    await node.local.remove('snap_orphaned');
    return chunks;
  }

  it('an upload in flight holds the collector off, so the chunks it reuses survive', async () => {
    const held = gate();
    let registered = false;
    const [uploader, collector] = pair({
      uploader: {
        uploadHooks: {
          registered: async () => {
            registered = true;
            await held.wait;
          },
        },
      },
    });
    const content = randomBytes(8 * MiB);
    const orphans = await orphanChunksOf(collector, content);
    // The upload registers, then is held before it looks at any chunk.
    writeSnapshotFiles(uploader, 'snap_racing', { 'pages.img': content });
    const sealing = uploader.artifacts.seal('snap_racing');
    await until(() => registered, 'the upload registered');
    const collecting = collector.artifacts.collect();
    await until(() => collector.objects.count('list', 'uploads/') >= 3, 'the collector waited on the upload');
    assert.equal(collector.objects.count('list', 'chunks/'), 0, 'no chunk listed while the upload is in flight');
    held.open();
    const sealed = await sealing;
    assert.ok(sealed.uploaded && sealed.uploaded.reusedChunks === orphans.length, 'the upload relied on the chunks the collector wanted to delete');
    const report = await collecting;
    assert.equal(report.completed, true);
    assert.equal(report.deletedChunks, 0);
    assert.deepEqual((await everyNamedChunkExists(collector)).missing, []);
    await collector.artifacts.verify('snap_racing', sealed.checksum);
  });

  it('a collector at work holds new uploads off until it is done', async () => {
    const held = gate();
    let candidates: string[] = [];
    const [uploader, collector] = pair({
      collector: {
        collectorHooks: {
          beforeDelete: async (keys) => {
            candidates = keys;
            await held.wait;
          },
        },
      },
    });
    const content = randomBytes(8 * MiB);
    const orphans = await orphanChunksOf(collector, content);
    const collecting = collector.artifacts.collect();
    await until(() => candidates.length > 0, 'the collector chose what to delete');
    assert.deepEqual(candidates.sort(), orphans.map(chunkKey).sort());
    writeSnapshotFiles(uploader, 'snap_waiting', { 'pages.img': content });
    const sealing = uploader.artifacts.seal('snap_waiting');
    await until(() => uploader.objects.count('head', COLLECTOR_LOCK_KEY) >= 2, 'the upload saw the lock and waited');
    assert.equal(uploader.objects.count('head', 'chunks/'), 0, 'no chunk looked at while the collector deletes');
    held.open();
    const report = await collecting;
    assert.equal(report.deletedChunks, orphans.length);
    const sealed = await sealing;
    assert.ok(sealed.uploaded && sealed.uploaded.reusedChunks === 0 && sealed.uploaded.chunks === orphans.length, 'the upload stored the chunks again');
    assert.deepEqual((await everyNamedChunkExists(uploader)).missing, []);
    await collector.artifacts.verify('snap_waiting', sealed.checksum);
  });

  it('random interleavings of uploads, removals and collections never lose a named chunk', async () => {
    const [first, second] = pair();
    for (const node of [first, second]) node.objects.delay = () => randomInt(0, 4);
    // Few distinct blocks, so that snapshots share chunks and removals orphan some of them.
    const blocks = Array.from({ length: 5 }, () => randomBytes(MiB + randomInt(0, 4096)));
    const live = new Map<string, string>();
    let counter = 0;
    const upload = async (node: ObjectNode): Promise<void> => {
      const id = `snap_r${(counter++).toString(36)}`;
      const content = Buffer.concat(Array.from({ length: randomInt(1, 4) }, () => blocks[randomInt(0, blocks.length)]!));
      writeSnapshotFiles(node, id, { 'pages.img': content });
      live.set(id, (await node.artifacts.seal(id)).checksum);
    };
    const remove = async (node: ObjectNode): Promise<void> => {
      const ids = [...live.keys()];
      const id = ids[randomInt(0, Math.max(ids.length, 1))];
      if (!id) return;
      live.delete(id);
      await node.artifacts.remove(id);
    };
    for (let round = 0; round < 8; round++) {
      const work: Promise<unknown>[] = [];
      for (const node of [first, second]) {
        work.push(upload(node), upload(node), node.artifacts.collect());
        if (round % 2 === 1) work.push(remove(node));
      }
      await Promise.all(work);
      const { named, missing } = await everyNamedChunkExists(first);
      assert.deepEqual(missing, [], `round ${round}: a manifest names a chunk that is gone`);
      assert.ok(named > 0);
    }
    // Every remaining snapshot restores elsewhere; once all are removed, the collector leaves nothing.
    const fresh = objectNode(server, '', 'unused');
    nodes.push(fresh);
    for (const [id, checksum] of live) await second.artifacts.verify(id, checksum).then(() => second.local.remove(id));
    for (const id of [...live.keys()]) await first.artifacts.remove(id);
    const report = await first.artifacts.collect();
    assert.equal(report.completed, true);
    assert.deepEqual(await first.objects.list('chunks/'), []);
    assert.deepEqual(await first.objects.list('uploads/'), []);
  });

  it('judges an upload dead once its intent stops changing, and collects what it left', async () => {
    const [node] = pair();
    // A node killed mid-upload: its intent and one chunk, and no manifest.
    await node.objects.put('uploads/dead-upload.json', encodeRecord({ owner: 'killed-node', purpose: 'snap_never', startedAt: new Date().toISOString(), beat: 3 }));
    const orphan = randomBytes(1000);
    const { sha256Of } = await import('../../../src/objects/content-chunker.js');
    await node.objects.put(chunkKey(sha256Of(orphan)), orphan);
    const report = await node.artifacts.collect();
    assert.equal(report.completed, true);
    assert.deepEqual(report.deadUploads, ['uploads/dead-upload.json']);
    assert.equal(report.deletedChunks, 1);
    assert.deepEqual(await node.objects.list(''), []);
  });

  it('a node that restarts removes its own unfinished intents at once', async () => {
    const [node, other] = pair();
    await node.objects.put('uploads/mine.json', encodeRecord({ owner: 'uploader', purpose: 'snap_x', startedAt: '', beat: 0 }));
    await node.objects.put('uploads/theirs.json', encodeRecord({ owner: 'someone-else', purpose: 'snap_y', startedAt: '', beat: 0 }));
    const swept = await node.artifacts.sweepIncomplete();
    assert.deepEqual(swept, ['object:uploads/mine.json']);
    assert.deepEqual((await other.objects.list('uploads/')).map((intent) => intent.key), ['uploads/theirs.json']);
  });

  it('steps over the lock of a collector that died', async () => {
    const [node] = pair();
    await node.objects.put(COLLECTOR_LOCK_KEY, encodeRecord({ owner: 'dead-collector', purpose: 'collection-x', startedAt: '', beat: 0 }));
    writeSnapshotFiles(node, 'snap_after', { 'pages.img': randomBytes(MiB) });
    const sealed = await node.artifacts.seal('snap_after');
    assert.ok(sealed.uploaded && sealed.uploaded.chunks > 0);
    assert.equal(await node.objects.head(COLLECTOR_LOCK_KEY), undefined);
  });
});
