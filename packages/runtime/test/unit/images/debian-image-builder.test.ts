/**
 * The Debian build path with a stand-in debootstrap (a shell script that
 * prints debootstrap's progress lines and writes a tiny tree), so that the
 * cache, the finishing steps and the error mapping are tested in
 * milliseconds. The real debootstrap runs in test/integration/debian-image.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { access, chmod, lstat, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DEBIAN_BOOKWORM, debianCacheKey } from '../../../src/images/debian-image-builder.js';
import { detectDebianMirror, mirrorFromDeb822, mirrorFromSourcesList, requireDebianMirror } from '../../../src/images/debian-mirror.js';
import { DebootstrapProgress } from '../../../src/images/debootstrap-progress.js';
import type { ImageProgress } from '../../../src/core/image-catalog.js';
import { LocalImageCatalog } from '../../../src/images/local-image-catalog.js';
import { airlockError, temporaryDirectory } from './image-archive-fixtures.js';

type TestContext = Parameters<typeof temporaryDirectory>[0];
const MIRROR = 'http://mirror.test/debian';

const SUCCESS = `
echo "I: Retrieving InRelease"
echo "I: Retrieving adduser 3.134"
echo "I: Validating adduser 3.134"
echo "I: Extracting adduser..."
echo "I: Unpacking adduser..."
echo "I: Configuring adduser..."
mkdir -p "$4/usr/bin" "$4/etc" "$4/var/lib/apt/lists/partial" "$4/var/cache/apt/archives/partial"
printf '#!/bin/sh\\n' > "$4/usr/bin/python3" && chmod 755 "$4/usr/bin/python3"
ln -s usr/bin "$4/bin"
echo buildhost > "$4/etc/hostname"
touch "$4/var/lib/apt/lists/mirror.example_Packages" "$4/var/cache/apt/archives/adduser.deb" "$4/var/cache/apt/pkgcache.bin"
echo "I: Base system installed successfully."
`;

/** A catalog whose debootstrap is a script running `body` (after logging its arguments and counting runs). */
async function stubbed(t: TestContext, body = SUCCESS, options: { cacheDir?: string; inUse?: (name: string) => boolean } = {}) {
  const dir = await temporaryDirectory(t);
  const script = join(dir, 'debootstrap');
  const runs = join(dir, 'runs');
  await writeFile(script, `#!/bin/sh\necho "$@" >> "${runs}"\n${body}\n`);
  await chmod(script, 0o755);
  const cacheDir = options.cacheDir ?? join(dir, 'cache');
  const make = (root: string) =>
    new LocalImageCatalog({ root, cacheDir, mirror: MIRROR, debootstrapPath: script, ...(options.inUse ? { inUse: options.inUse } : {}) });
  const root = join(dir, 'images');
  return {
    dir,
    root,
    cacheDir,
    catalog: make(root),
    make,
    runCount: async () => (await readFile(runs, 'utf8').catch(() => '')).split('\n').filter(Boolean).length,
    runArgs: async () => (await readFile(runs, 'utf8')).split('\n')[0],
  };
}

function recorder() {
  const seen: ImageProgress[] = [];
  return { seen, onProgress: (p: ImageProgress) => seen.push(p), phases: () => new Set(seen.map((p) => p.phase)) };
}

describe('building the Debian image (stand-in debootstrap)', () => {
  test('runs debootstrap with the recipe, finishes the tree, records it and saves the cache', async (t) => {
    const stub = await stubbed(t);
    const progress = recorder();
    const record = await stub.catalog.buildDebian({ onProgress: progress.onProgress });
    assert.equal(record.name, 'debian-bookworm');
    assert.equal(record.source, 'debootstrap');
    assert.match(record.digest, /^sha256:[0-9a-f]{64}$/);
    const escapedRoot = stub.root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    assert.match(
      await stub.runArgs() ?? '',
      new RegExp(`^--variant=minbase --include=python3,ca-certificates,procps bookworm ${escapedRoot}/\\.staging-debian-bookworm-\\d+-[0-9a-f]{8}/rootfs ${MIRROR}$`),
      'built next to the final place, in a staging directory',
    );

    const rootfs = record.rootfsDir;
    await access(join(rootfs, 'usr/bin/python3'));
    assert.ok((await lstat(join(rootfs, 'workspace'))).isDirectory());
    assert.equal(await readFile(join(rootfs, 'etc/hostname'), 'utf8'), 'airlock\n');
    assert.deepEqual(await readdir(join(rootfs, 'var/lib/apt/lists')), ['partial']);
    assert.deepEqual(await readdir(join(rootfs, 'var/cache/apt/archives')), ['partial']);
    assert.deepEqual(await readdir(join(rootfs, 'var/cache/apt')), ['archives']);

    const key = debianCacheKey(DEBIAN_BOOKWORM);
    await access(join(stub.cacheDir, `debian-bookworm-${key}.tar`));
    assert.equal(record.provenance['fromCache'], false);
    assert.equal(record.provenance['mirror'], MIRROR);

    for (const phase of ['resolve', 'download', 'extract', 'unpack', 'configure', 'finish', 'digest', 'cache', 'done']) {
      assert.ok(progress.phases().has(phase), `phase ${phase} reported`);
    }
    const fractions = progress.seen.map((p) => p.fraction ?? 0);
    assert.deepEqual(fractions, [...fractions].sort((a, b) => a - b), 'fractions only grow');
    assert.equal(fractions.at(-1), 1);
  });

  test('a second build elsewhere, and a build after rm, come from the cache with the same digest', async (t) => {
    const stub = await stubbed(t);
    const first = await stub.catalog.buildDebian({});
    const progress = recorder();
    const second = await stub.make(join(stub.dir, 'other-data-dir')).buildDebian({ onProgress: progress.onProgress });
    assert.equal(await stub.runCount(), 1, 'debootstrap ran once');
    assert.equal(second.digest, first.digest);
    assert.equal(second.provenance['fromCache'], true);
    assert.ok(progress.phases().has('cache'));
    assert.ok(!progress.phases().has('download'));
    await access(join(second.rootfsDir, 'usr/bin/python3'));

    await stub.catalog.remove('debian-bookworm', () => false);
    const third = await stub.catalog.buildDebian({});
    assert.equal(third.digest, first.digest);
    assert.equal(await stub.runCount(), 1);
  });

  test('an existing image needs force; force replaces it unless it is in use', async (t) => {
    let busy = false;
    const stub = await stubbed(t, SUCCESS, { inUse: () => busy });
    const first = await stub.catalog.buildDebian({ name: 'deb' });
    await assert.rejects(stub.catalog.buildDebian({ name: 'deb' }), airlockError('IMAGE_EXISTS', 'airlock images rm deb'));
    busy = true;
    await assert.rejects(stub.catalog.buildDebian({ name: 'deb', force: true }), airlockError('INVALID_STATE', 'in use'));
    busy = false;
    const rebuilt = await stub.catalog.buildDebian({ name: 'deb', force: true });
    assert.equal(rebuilt.digest, first.digest);
    assert.notEqual(rebuilt.createdAt, undefined);
    assert.deepEqual(await readdir(stub.root), ['deb'], 'the old tree is gone, no staging left');
  });

  test('a damaged or altered cache is ignored and rebuilt, never used', async (t) => {
    const stub = await stubbed(t);
    const first = await stub.catalog.buildDebian({});
    const cacheFile = join(stub.cacheDir, `debian-bookworm-${debianCacheKey(DEBIAN_BOOKWORM)}.tar`);

    await writeFile(cacheFile, 'not a tar at all');
    const afterGarbage = await stub.make(join(stub.dir, 'b')).buildDebian({});
    assert.equal(await stub.runCount(), 2);
    assert.equal(afterGarbage.digest, first.digest);

    const other = join(stub.dir, 'other-tree');
    await mkdir(join(other, 'usr/bin'), { recursive: true });
    await writeFile(join(other, 'usr/bin/python3'), 'tampered');
    execFileSync('tar', ['--create', '--file', cacheFile, '--directory', other, '.']);
    const afterTamper = await stub.make(join(stub.dir, 'c')).buildDebian({});
    assert.equal(await stub.runCount(), 3);
    assert.equal(afterTamper.digest, first.digest);
    assert.notEqual(await readFile(join(afterTamper.rootfsDir, 'usr/bin/python3'), 'utf8'), 'tampered');

    await writeFile(cacheFile.replace(/\.tar$/, '.json'), '{"digest":');
    await stub.make(join(stub.dir, 'd')).buildDebian({});
    assert.equal(await stub.runCount(), 4, 'a cache without a readable digest is not trusted');
  });

  test('the image is invisible until the build completes', async (t) => {
    const stub = await stubbed(t, `sleep 1\n${SUCCESS}`);
    const building = stub.catalog.buildDebian({});
    while ((await stub.runCount()) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await assert.rejects(stub.catalog.get('debian-bookworm'), airlockError('IMAGE_NOT_FOUND'));
    assert.deepEqual(await stub.catalog.list(), []);
    await building;
    await stub.catalog.get('debian-bookworm');
  });

  const failures: Array<[string, string, string, string[]]> = [
    ['an unreachable mirror', 'echo "I: Retrieving InRelease"\necho "E: Failed getting release file http://mirror.test/debian/dists/bookworm/Release"\nexit 1', 'DRIVER_UNAVAILABLE', [MIRROR, 'curl', 'mirror']],
    ['a full disk', 'echo "tar: ./usr/lib/x: Cannot write: No space left on device"\nexit 1', 'DISK_FULL', ['Free some space']],
    ['an unexplained failure', 'echo "E: Couldn\'t find these debs: nosuchpackage"\nexit 1', 'DRIVER_FAILED', ['nosuchpackage']],
  ];
  for (const [what, body, code, fragments] of failures) {
    test(`${what} is ${code} and leaves nothing behind`, async (t) => {
      const stub = await stubbed(t, `mkdir -p "$4/half"\n${body}`);
      await assert.rejects(stub.catalog.buildDebian({}), airlockError(code, ...fragments));
      assert.deepEqual(await readdir(stub.root), []);
    });
  }

  test('a missing debootstrap is DRIVER_UNAVAILABLE naming the package to install', async (t) => {
    const dir = await temporaryDirectory(t);
    const catalog = new LocalImageCatalog({ root: join(dir, 'images'), cacheDir: join(dir, 'cache'), mirror: MIRROR, debootstrapPath: join(dir, 'no-debootstrap') });
    await assert.rejects(catalog.buildDebian({}), airlockError('DRIVER_UNAVAILABLE', 'apt-get install debootstrap'));
    assert.deepEqual(await readdir(join(dir, 'images')), []);
  });
});

describe('the Debian mirror', () => {
  test('comes from the first non-security deb stanza of debian.sources', () => {
    const sources = [
      'Types: deb',
      'URIs: http://security.example/debian-security',
      'Suites: bookworm-security',
      'Components: main',
      '',
      'Types: deb-src',
      'URIs: http://src.example/debian',
      'Suites: bookworm',
      '',
      'Types: deb',
      '# a comment line',
      'URIs: http://deb.example/debian/',
      'Suites: bookworm bookworm-updates',
      'Components: main',
    ].join('\n');
    assert.equal(mirrorFromDeb822(sources), 'http://deb.example/debian');
    assert.equal(mirrorFromDeb822('Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: bookworm\n'), undefined);
  });

  test('comes from the first deb line of sources.list', () => {
    const list = ['# deb http://commented.example/debian bookworm main', 'deb-src http://src.example/debian bookworm main', 'deb http://security.example/debian-security bookworm-security main', 'deb [arch=amd64 signed-by=/k.gpg] http://list.example/debian bookworm main'].join('\n');
    assert.equal(mirrorFromSourcesList(list), 'http://list.example/debian');
  });

  test('names no mirror of its own: without one from apt or AIRLOCK_DEBIAN_MIRROR it asks for one', async (t) => {
    const dir = await temporaryDirectory(t);
    const none = [join(dir, 'none.sources'), join(dir, 'none.list')];
    assert.equal(await detectDebianMirror(none), undefined);
    const saved = process.env['AIRLOCK_DEBIAN_MIRROR'];
    delete process.env['AIRLOCK_DEBIAN_MIRROR'];
    await assert.rejects(requireDebianMirror(none), /AIRLOCK_DEBIAN_MIRROR/);
    process.env['AIRLOCK_DEBIAN_MIRROR'] = 'http://named.example/debian/';
    assert.equal(await requireDebianMirror(none), 'http://named.example/debian');
    if (saved === undefined) delete process.env['AIRLOCK_DEBIAN_MIRROR'];
    else process.env['AIRLOCK_DEBIAN_MIRROR'] = saved;
    await writeFile(join(dir, 'debian.sources'), 'Types: deb\nURIs: http://found.example/debian\nSuites: bookworm\n');
    assert.equal(await detectDebianMirror([join(dir, 'debian.sources')]), 'http://found.example/debian');
  });
});

describe('debootstrap progress', () => {
  test('maps I: lines to phases with a growing fraction, ignoring other lines', () => {
    const progress = new DebootstrapProgress(2);
    const lines = ['I: Retrieving InRelease', 'W: something odd', 'I: Retrieving bash 5.2', 'I: Validating bash 5.2', 'I: Extracting bash...', 'I: Unpacking bash...', 'I: Configuring bash...', 'I: Base system installed successfully.'];
    const reports = lines.map((line) => progress.line(line));
    assert.equal(reports[1], undefined);
    assert.deepEqual(reports.filter((r) => r !== undefined).map((r) => r.phase), ['resolve', 'download', 'download', 'extract', 'unpack', 'configure', 'configure']);
    const fractions = reports.filter((r) => r !== undefined).map((r) => r.fraction ?? 0);
    assert.deepEqual(fractions, [...fractions].sort((a, b) => a - b));
    assert.ok((fractions.at(-1) ?? 1) < 0.9, 'debootstrap never claims the whole build');
  });
});
