/**
 * Issue 14, part 1, end to end: real servers (`airlock serve --objects`),
 * real gVisor machines, an S3-compatible server (s3rver) on loopback. Two
 * data dirs point at one bucket; a session record is copied from one SQLite
 * store to the other (servers sharing a PostgreSQL store see it without
 * copying, but a session moves to another owner only this way until leases
 * exist), which is what "resume on another node" needs of the store.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SqliteStore, openDataDir, type SessionRecord } from '@airlock/runtime';
import { AIRLOCK_BIN, TestInstallation } from '../support/test-installation.js';
import { ObjectStorageServer } from '../support/object-storage-server.js';

const COUNTER = [
  'import time, os',
  'i = 0',
  'while True:',
  '    i += 1',
  "    open('/tmp/count.tmp', 'w').write(str(i)); os.replace('/tmp/count.tmp', '/tmp/count')",
  '    time.sleep(0.05)',
].join('\n');

/** Waits until `condition` holds (checked every 100 ms), failing after `seconds`. */
async function until<T>(condition: () => T | undefined | false | Promise<T | undefined | false>, what: string, seconds = 60): Promise<T> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${seconds} s waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function ok(result: { code: number; stdout: string; stderr: string }, what: string): string {
  assert.equal(result.code, 0, `${what}: ${result.stderr}`);
  return result.stdout;
}

/** The count the machine's background counter last wrote (in its memory-backed /tmp). */
function count(node: TestInstallation, id: string): number {
  return Number.parseInt(ok(node.cli(['exec', id, '--', 'cat', '/tmp/count']), 'reading the counter'), 10);
}

/**
 * Copies a session's record and its snapshot records from one data dir's store to another's, with no
 * owner (the other server claims it at start). What a shared store does without copying: see
 * shared-store.test.ts; this test keeps to the object-storage side on SQLite.
 */
async function copySessionRecord(from: string, to: string, sessionId: string, change: Partial<SessionRecord> = {}): Promise<void> {
  const source = new SqliteStore(openDataDir(from).database);
  const target = new SqliteStore(openDataDir(to).database);
  try {
    const session = await source.getSession(sessionId);
    assert.ok(session, `no session ${sessionId} in ${from}`);
    const snapshots = await source.listSnapshots({ sessionId });
    await target.transaction(async (tx) => {
      await tx.insertSession({ ...session, ...change, owner: '' });
      for (const snapshot of snapshots) await tx.insertSnapshot(snapshot);
    });
  } finally {
    await source.close();
    await target.close();
  }
}

/** Deletes a crashed server's data dir: its disks are still loop-mounted. */
function deleteDataDir(dataDir: string): void {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4] ?? '')
    .filter((mountPoint) => mountPoint.startsWith(`${dataDir}/`))
    .sort((a, b) => b.length - a.length);
  for (const mountPoint of mounts) spawnSync('umount', ['-l', mountPoint]);
  const disks = join(dataDir, 'disks');
  for (const session of existsSync(disks) ? readdirSync(disks) : []) {
    const attached = spawnSync('losetup', ['-j', join(disks, session, 'disk.ext4')], { encoding: 'utf8' }).stdout;
    for (const line of attached.split('\n')) if (line.includes(':')) spawnSync('losetup', ['-d', line.split(':')[0]!]);
  }
  rmSync(dataDir, { recursive: true, force: true });
}

describe('snapshots in object storage: a session suspended on one data dir resumes on another', () => {
  let objects: ObjectStorageServer;
  const nodes: TestInstallation[] = [];
  const node = async (prefix: string): Promise<TestInstallation> => {
    // A short collection interval: the collector's work shows within the test.
    const started = await TestInstallation.start({
      env: { ...objects.env, AIRLOCK_OBJECTS_COLLECT_SECONDS: '5' },
      serveArgs: ['--objects', `s3://airlock-test/${prefix}`],
    });
    nodes.push(started);
    return started;
  };
  before(async () => {
    objects = await ObjectStorageServer.start();
  });
  after(async () => {
    for (const installation of nodes) await installation.destroy();
    await objects.close();
  });

  it('a bad --objects, a missing bucket or an unreachable endpoint stops serve with a clear error, before the data dir is made', () => {
    const dataDir = `/var/tmp/airlock-objects-refused-${process.pid}`;
    const serve = (objectsUrl: string, env: Record<string, string>) =>
      spawnSync(process.execPath, [AIRLOCK_BIN, 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--objects', objectsUrl], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
        timeout: 60_000,
      });
    const cases: [string, Record<string, string>, RegExp][] = [
      [
        's3://Not_A_Bucket',
        objects.env,
        /INVALID_ARGUMENTS: --objects "s3:\/\/Not_A_Bucket": "Not_A_Bucket" is not a valid bucket name .* give s3:\/\/BUCKET or s3:\/\/BUCKET\/PREFIX/,
      ],
      ['s3://no-such-bucket', objects.env, /OBJECT_STORAGE_UNAVAILABLE: bucket no-such-bucket does not exist at http:\/\/127\.0\.0\.1:\d+; create it/],
      [
        's3://airlock-test',
        { ...objects.env, AWS_ENDPOINT_URL: 'http://127.0.0.1:9' },
        /OBJECT_STORAGE_UNAVAILABLE: .*cannot reach http:\/\/127\.0\.0\.1:9 \(ECONNREFUSED\)/,
      ],
      [
        's3://airlock-test',
        { AWS_ENDPOINT_URL: '', AWS_REGION: '', AWS_DEFAULT_REGION: '' },
        /INVALID_ARGUMENTS: object storage needs a region: set AWS_REGION/,
      ],
    ];
    for (const [url, env, message] of cases) {
      const result = serve(url, env);
      // A setting to change exits like bad usage (2); a bucket that cannot be reached is a failure (1).
      assert.equal(result.status, /INVALID_ARGUMENTS/.test(message.source) ? 2 : 1, `${url}: ${result.stderr}`);
      assert.match(result.stderr, message);
      assert.equal(existsSync(dataDir), false, `${url}: nothing was created`);
    }
  });

  it('suspend on A; kill A and delete its data dir; B resumes the session with its files and a counter that goes on counting; forks of A’s snapshot run on B', async () => {
    const a = await node('move');
    const id = ok(a.cli(['sessions', 'create']), 'create').trim();
    ok(a.cli(['files', 'write', id, '/workspace/counter.py'], { input: COUNTER }), 'write the counter');
    ok(a.cli(['files', 'write', id, '/workspace/notes.txt'], { input: 'written on A\n' }), 'write notes');
    ok(a.cli(['exec', id, '--detach', '--', 'python3', '/workspace/counter.py']), 'start the counter');
    await until(() => a.cli(['exec', id, '--', 'test', '-s', '/tmp/count']).code === 0, 'the counter started');
    const snapshot = JSON.parse(ok(a.cli(['snapshots', 'create', id, '--name', 'on-a', '--json']), 'snapshot')) as { id: string };
    const beforeSuspend = count(a, id);
    ok(a.cli(['sessions', 'suspend', id]), 'suspend');
    const suspended = JSON.parse(ok(a.cli(['audit', id, '--json']), 'audit')) as { type: string; data: Record<string, unknown> }[];
    const uploaded = suspended.find((record) => record.type === 'session.suspended')?.data['uploaded'] as { bytes: number } | undefined;
    assert.ok(uploaded && uploaded.bytes > 0, 'the suspend says what it uploaded');
    assert.ok((await objects.keys('move/snapshots/')).length === 2, 'two manifests: the named snapshot and the suspend');

    await a.crashServer();
    const b = await node('move');
    await b.stopServer();
    await copySessionRecord(a.dataDir, b.dataDir, id);
    deleteDataDir(a.dataDir);
    await b.startServer();

    // The counter's value at the suspend is in the memory image; B's first call resumes from it.
    const first = count(b, id);
    assert.ok(first >= beforeSuspend, `the counter went on from ${beforeSuspend} (read ${first}), it did not start again`);
    await until(() => count(b, id) > first, 'the counter goes on counting on B');
    assert.equal(ok(b.cli(['files', 'read', id, '/workspace/notes.txt']), 'read notes'), 'written on A\n');
    const resumed = (JSON.parse(ok(b.cli(['audit', id, '--json']), 'audit on B')) as { type: string; data: Record<string, unknown> }[]).find(
      (record) => record.type === 'session.resumed',
    );
    const fetched = resumed?.data['fetched'] as { memory: { bytes: number } | null; disk: { bytes: number } | null } | undefined;
    assert.ok(fetched?.memory && fetched.memory.bytes > 0, 'the memory image was fetched from object storage');
    assert.ok(fetched?.disk && fetched.disk.bytes > 0, 'the disk was fetched from object storage');

    // A snapshot taken on A forks on B: its files come from the bucket.
    const branches = ok(b.cli(['sessions', 'fork', id, '--snapshot', snapshot.id, '--count', '2']), 'fork on B')
      .trim()
      .split('\n');
    assert.equal(branches.length, 2);
    for (const branch of branches) {
      assert.equal(ok(b.cli(['files', 'read', branch, '/workspace/notes.txt']), 'read on a branch'), 'written on A\n');
      ok(b.cli(['sessions', 'rm', branch]), 'remove a branch');
    }

    // Terminating removes the manifests, and the collector then every chunk they named.
    ok(b.cli(['sessions', 'rm', id]), 'terminate');
    await until(async () => (await objects.keys('move/')).length === 0 || undefined, 'the bucket holds nothing of the session any more');
  });

  it('object storage down during suspend: the session stays running and says why; nothing is lost', async () => {
    const a = await node('down');
    const id = ok(a.cli(['sessions', 'create']), 'create').trim();
    ok(a.cli(['files', 'write', id, '/workspace/counter.py'], { input: COUNTER }), 'write the counter');
    ok(a.cli(['exec', id, '--detach', '--', 'python3', '/workspace/counter.py']), 'start the counter');
    await until(() => a.cli(['exec', id, '--', 'test', '-s', '/tmp/count']).code === 0, 'the counter started');
    await objects.stop();
    const refused = a.cli(['sessions', 'suspend', id]);
    assert.notEqual(refused.code, 0);
    assert.match(refused.stderr, /OBJECT_STORAGE_UNAVAILABLE: suspend of session .* failed: object storage s3:\/\/airlock-test\/down: .* cannot reach/);
    const view = JSON.parse(ok(a.cli(['sessions', 'get', id, '--json']), 'get')) as { state: string; pendingOperation: string | null };
    assert.equal(view.state, 'running');
    assert.equal(view.pendingOperation, null);
    const failed = (JSON.parse(ok(a.cli(['audit', id, '--json']), 'audit')) as { type: string; data: Record<string, unknown> }[]).filter(
      (record) => record.type === 'session.suspend-failed',
    );
    assert.equal(failed.at(-1)?.data['code'], 'OBJECT_STORAGE_UNAVAILABLE');
    const before = count(a, id);
    await until(() => count(a, id) > before, 'the same counter goes on: the machine was never stopped');
    await objects.resume();
    ok(a.cli(['sessions', 'suspend', id]), 'suspend once storage is back');
    assert.ok(count(a, id) >= before);
  });

  it('a server killed mid-upload: the previous snapshot still restores elsewhere, and the collector removes the orphan chunks', async () => {
    const a = await node('killed');
    const id = ok(a.cli(['sessions', 'create']), 'create').trim();
    ok(a.cli(['files', 'write', id, '/workspace/notes.txt'], { input: 'first version\n' }), 'write notes');
    // Memory that takes a while to upload, and that changes before the second suspend.
    ok(
      a.cli([
        'exec',
        id,
        '--detach',
        '--',
        'python3',
        '-c',
        "import os,time\nb=bytearray(os.urandom(160*1024*1024))\nopen('/tmp/ready','w').write('1')\nwhile True:\n  time.sleep(0.2)\n  if os.path.exists('/tmp/churn'): b[:]=os.urandom(len(b)); os.remove('/tmp/churn')",
      ]),
      'hold memory',
    );
    await until(() => a.cli(['exec', id, '--', 'test', '-f', '/tmp/ready']).code === 0, 'the memory is filled', 120);
    ok(a.cli(['sessions', 'suspend', id]), 'first suspend');
    const firstManifests = await objects.keys('killed/snapshots/');
    const firstChunks = new Set(await objects.keys('killed/chunks/'));
    assert.equal(firstManifests.length, 1);
    ok(a.cli(['files', 'write', id, '/workspace/notes.txt'], { input: 'second version\n' }), 'change the disk (resumes the machine)');
    ok(a.cli(['exec', id, '--', 'sh', '-c', 'touch /tmp/churn; while [ -e /tmp/churn ]; do sleep 0.1; done']), 'change the memory');
    const secondSuspend = a.cliAsync(['sessions', 'suspend', id]);
    await until(
      async () => (await objects.keys('killed/chunks/')).filter((key) => !firstChunks.has(key)).length >= 5 || undefined,
      'the second upload is under way',
    );
    await a.crashServer();
    await secondSuspend;
    assert.deepEqual(await objects.keys('killed/snapshots/'), firstManifests, 'the interrupted upload wrote no manifest');

    // Elsewhere, the session as the cluster last knew it (suspended at the first snapshot) restores.
    const b = await node('killed');
    await b.stopServer();
    await copySessionRecord(a.dataDir, b.dataDir, id, { state: 'suspended', pendingOperation: null, sandbox: null });
    await b.startServer();
    assert.equal(ok(b.cli(['files', 'read', id, '/workspace/notes.txt']), 'read on B'), 'first version\n');
    assert.equal(b.cli(['exec', id, '--', 'test', '-f', '/tmp/ready']).code, 0, 'its memory came back: the process still runs');
    ok(b.cli(['sessions', 'suspend', id]), 'B suspends it again');

    // A restarts: its intent is swept, and the chunks no manifest names go.
    await a.startServer();
    await until(
      async () => {
        const manifests = await objects.keys('killed/snapshots/');
        const chunks = await objects.keys('killed/chunks/');
        const uploads = await objects.keys('killed/uploads/');
        return manifests.length > 0 && uploads.length === 0 && chunks.length > 0 && (await everyChunkNamed(manifests, chunks)) ? true : undefined;
      },
      'only chunks named by a manifest remain',
      120,
    );
  });

  /** True when every chunk key is named by one of the manifests (read through the bucket). */
  async function everyChunkNamed(manifests: string[], chunks: string[]): Promise<boolean> {
    const named = new Set<string>();
    for (const key of manifests) {
      const manifest = JSON.parse(await objects.read(key)) as { files: { chunks: { sha256: string }[] }[]; disk: { chunks: { sha256: string }[] } | null };
      for (const file of manifest.files) for (const chunk of file.chunks) named.add(chunk.sha256);
      for (const chunk of manifest.disk?.chunks ?? []) named.add(chunk.sha256);
    }
    return chunks.every((key) => named.has(key.slice(key.lastIndexOf('/') + 1)));
  }
});
