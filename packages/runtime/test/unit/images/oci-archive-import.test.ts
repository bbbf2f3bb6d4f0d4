import assert from 'node:assert/strict';
import { lstat, mkdir, readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { LocalImageCatalog } from '../../../src/images/local-image-catalog.js';
import {
  airlockError,
  dockerSaveArchive,
  gnuTar,
  makeTar,
  ociLayoutArchive,
  temporaryDirectory,
  type ImageSpec,
} from './image-archive-fixtures.js';

const REEXPORT = 'docker save IMAGE -o file.tar';
const runningAsRoot = process.getuid?.() === 0;

/** A lower layer with one of everything, and an upper layer that whites parts of it out. */
function lowerLayer(): Buffer {
  return makeTar([
    { name: 'etc/', type: 'dir' },
    { name: 'etc/os-release', content: 'ID=lower\n' },
    { name: 'bin/', type: 'dir' },
    { name: 'bin/tool', content: '#!/bin/sh\necho tool\n', mode: 0o755 },
    { name: 'bin/tool-alias', type: 'hardlink', linkname: 'bin/tool' },
    { name: 'usr/lib/', type: 'dir' },
    { name: 'usr/lib/libx.so', content: 'ELF' },
    { name: 'usr/lib/libx.so.1', type: 'symlink', linkname: 'libx.so' },
    { name: 'usr/lib/absolute', type: 'symlink', linkname: '/etc/os-release' },
    { name: 'secret/', type: 'dir', mode: 0o700 },
    { name: 'secret/key', content: 'k', mode: 0o600, uid: 1000, gid: 1001 },
    { name: 'setuid-tool', content: 'su', mode: 0o4755 },
    { name: 'dev/', type: 'dir' },
    { name: 'dev/null', type: 'char' },
    { name: 'pipe', type: 'fifo' },
    { name: 'old/', type: 'dir' },
    { name: 'old/a', content: 'a' },
    { name: 'old/sub/', type: 'dir' },
    { name: 'old/sub/b', content: 'b' },
    { name: 'gone', content: 'bye' },
    { name: 'gone-dir/', type: 'dir' },
    { name: 'gone-dir/inner', content: 'bye' },
    { name: './dotted/file', content: 'dot' },
    { name: `deep/${'d'.repeat(80)}/${'e'.repeat(80)}/file`, content: 'long name through pax' },
  ]);
}

function upperLayer(): Buffer {
  return makeTar([
    { name: '.wh.gone' },
    { name: '.wh.gone-dir' },
    { name: 'old/', type: 'dir' },
    { name: 'old/.wh..wh..opq' },
    { name: 'old/new', content: 'new' },
    { name: 'etc/os-release', content: 'ID=upper\n' },
    { name: 'usr/lib/libx.so.1', content: 'now a plain file' },
  ]);
}

const IMAGE: ImageSpec = { layers: [lowerLayer(), upperLayer()], env: ['PATH=/usr/bin:/bin', 'GREETING=a=b', 'BROKEN'], workingDir: '/srv/app' };

async function importArchive(t: Parameters<typeof temporaryDirectory>[0], archive: Buffer, name = 'test-image') {
  const dir = await temporaryDirectory(t);
  const archivePath = join(dir, 'image.tar');
  await writeFile(archivePath, archive);
  const root = join(dir, 'images');
  const catalog = new LocalImageCatalog({ root, cacheDir: join(dir, 'cache') });
  return { dir, root, catalog, archivePath, run: () => catalog.importOciArchive({ name, archivePath }) };
}

async function assertLayeredContent(rootfs: string): Promise<void> {
  assert.equal(await readFile(join(rootfs, 'etc/os-release'), 'utf8'), 'ID=upper\n');
  await assert.rejects(lstat(join(rootfs, 'gone')), { code: 'ENOENT' });
  await assert.rejects(lstat(join(rootfs, 'gone-dir')), { code: 'ENOENT' });
  assert.deepEqual(await readdir(join(rootfs, 'old')), ['new']);
  const tool = await stat(join(rootfs, 'bin/tool'));
  assert.equal((await stat(join(rootfs, 'bin/tool-alias'))).ino, tool.ino, 'hardlink kept');
  assert.equal(tool.mode & 0o7777, 0o755);
  assert.ok((await lstat(join(rootfs, 'usr/lib/libx.so.1'))).isFile(), 'symlink replaced by a file');
  assert.equal(await readlink(join(rootfs, 'usr/lib/absolute')), '/etc/os-release', 'absolute symlink kept as is');
  assert.equal((await stat(join(rootfs, 'secret'))).mode & 0o7777, 0o700);
  const key = await stat(join(rootfs, 'secret/key'));
  assert.equal(key.mode & 0o7777, 0o600);
  if (runningAsRoot) assert.deepEqual([key.uid, key.gid], [1000, 1001]);
  assert.equal((await stat(join(rootfs, 'setuid-tool'))).mode & 0o7777, 0o4755);
  assert.deepEqual(await readdir(join(rootfs, 'dev')), [], 'device nodes skipped');
  await assert.rejects(lstat(join(rootfs, 'pipe')), { code: 'ENOENT' });
  assert.equal(await readFile(join(rootfs, 'dotted/file'), 'utf8'), 'dot');
  assert.equal(await readFile(join(rootfs, `deep/${'d'.repeat(80)}/${'e'.repeat(80)}/file`), 'utf8'), 'long name through pax');
}

describe('importing image archives', () => {
  test('docker save archive: layers applied in order with whiteouts, modes, links, env and working dir', async (t) => {
    const { root, run } = await importArchive(t, dockerSaveArchive(IMAGE));
    const record = await run();
    assert.match(record.digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(record.source, 'oci-archive');
    assert.equal(record.rootfsDir, join(root, 'test-image', 'rootfs'));
    assert.deepEqual(record.env, { PATH: '/usr/bin:/bin', GREETING: 'a=b' });
    assert.equal(record.workingDir, '/srv/app');
    assert.equal(record.provenance['format'], 'docker-save');
    await assertLayeredContent(record.rootfsDir);
    assert.deepEqual(await readdir(root), ['test-image'], 'no staging left');
    assert.deepEqual((await readdir(join(root, 'test-image'))).sort(), ['image.json', 'rootfs']);
  });

  test('OCI layout archive with gzip and plain layers gives the same files and the same digest', async (t) => {
    const docker = await (await importArchive(t, dockerSaveArchive(IMAGE))).run();
    const { run } = await importArchive(t, ociLayoutArchive({ ...IMAGE, gzip: [0] }));
    const record = await run();
    await assertLayeredContent(record.rootfsDir);
    assert.equal(record.digest, docker.digest, 'the digest names the files, not the archive format');
    assert.equal(record.provenance['format'], 'oci-layout');
    assert.match(String(record.provenance['manifestDigest']), /^sha256:[0-9a-f]{64}$/);
  });

  test('Docker 25+ docker save (blobs/sha256 names, gzip layer) is read too', async (t) => {
    const spec: ImageSpec = { ...IMAGE, gzip: [1] };
    const record = await (await importArchive(t, dockerSaveArchive(spec))).run();
    await assertLayeredContent(record.rootfsDir);
  });

  test('a layer written by GNU tar (./ names, GNU long names) imports', async (t) => {
    const dir = await temporaryDirectory(t);
    const source = join(dir, 'source');
    const longDir = join(source, 'x'.repeat(90), 'y'.repeat(90));
    await mkdir(longDir, { recursive: true });
    await writeFile(join(longDir, 'file.txt'), 'from gnu tar');
    const { run } = await importArchive(t, ociLayoutArchive({ layers: [gnuTar(source)], gzip: [0] }));
    const record = await run();
    assert.equal(await readFile(join(record.rootfsDir, 'x'.repeat(90), 'y'.repeat(90), 'file.txt'), 'utf8'), 'from gnu tar');
  });
});

describe('layer entries never write outside the rootfs', () => {
  /** A catalog plus a host directory `outside` (holding `victim`) that no layer may touch. */
  async function hostile(t: Parameters<typeof temporaryDirectory>[0]) {
    const setup = await importArchive(t, Buffer.alloc(0));
    const outside = join(setup.dir, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'victim'), 'original');
    const importLayers = async (layers: Buffer[]) => {
      await writeFile(setup.archivePath, ociLayoutArchive({ layers }));
      return setup.run();
    };
    return { ...setup, outside, importLayers };
  }

  for (const name of ['../escape', 'a/../../escape', 'a/b/../../../../escape']) {
    test(`an entry named ${name} is refused and nothing is left`, async (t) => {
      const { dir, root, run } = await importArchive(t, ociLayoutArchive({ layers: [makeTar([{ name: 'ok', content: '1' }, { name, content: 'pwned' }])] }));
      await assert.rejects(run(), airlockError('INVALID_IMAGE', "'..'", REEXPORT));
      await assert.rejects(stat(join(dir, 'escape')), { code: 'ENOENT' });
      assert.deepEqual(await readdir(root), []);
    });
  }

  test('an absolute entry name is refused', async (t) => {
    const { root, run } = await importArchive(t, ociLayoutArchive({ layers: [makeTar([{ name: '/etc/evil', content: 'x' }])] }));
    await assert.rejects(run(), airlockError('INVALID_IMAGE', 'absolute path', REEXPORT));
    assert.deepEqual(await readdir(root), []);
  });

  test('a file written through an absolute symlink lands inside the rootfs, not on the host', async (t) => {
    const setup = await hostile(t);
    const record = await setup.importLayers([makeTar([{ name: 'evil', type: 'symlink', linkname: setup.outside }, { name: 'evil/pwned', content: 'x' }])]);
    await assert.rejects(stat(join(setup.outside, 'pwned')), { code: 'ENOENT' });
    assert.equal(await readFile(join(record.rootfsDir, setup.outside, 'pwned'), 'utf8'), 'x');
  });

  test('a symlink climbing with .. is clamped at the rootfs, also across layers', async (t) => {
    const setup = await hostile(t);
    const lower = makeTar([{ name: 'var/', type: 'dir' }, { name: 'var/run', type: 'symlink', linkname: '../../../../../../../..' + setup.outside }]);
    const record = await setup.importLayers([lower, makeTar([{ name: 'var/run/pwned', content: 'x' }])]);
    await assert.rejects(stat(join(setup.outside, 'pwned')), { code: 'ENOENT' });
    assert.equal(await readFile(join(record.rootfsDir, setup.outside, 'pwned'), 'utf8'), 'x');
  });

  test('a file replacing a symlink replaces the link, never writes through it', async (t) => {
    const setup = await hostile(t);
    const lower = makeTar([{ name: 'link', type: 'symlink', linkname: join(setup.outside, 'victim') }]);
    const record = await setup.importLayers([lower, makeTar([{ name: 'link', content: 'overwritten' }])]);
    assert.equal(await readFile(join(setup.outside, 'victim'), 'utf8'), 'original');
    assert.equal(await readFile(join(record.rootfsDir, 'link'), 'utf8'), 'overwritten');
  });

  test('hardlinks cannot reach host files', async (t) => {
    const climbing = await hostile(t);
    await assert.rejects(climbing.importLayers([makeTar([{ name: 'hl', type: 'hardlink', linkname: '../../outside/victim' }])]), airlockError('INVALID_IMAGE', "'..'"));

    const viaSymlink = await hostile(t);
    const layer = makeTar([
      { name: 'evil', type: 'symlink', linkname: viaSymlink.outside },
      { name: 'hl', type: 'hardlink', linkname: 'evil/victim' },
    ]);
    await assert.rejects(viaSymlink.importLayers([layer]), airlockError('INVALID_IMAGE', 'not a file in the image'));
    assert.equal((await stat(join(viaSymlink.outside, 'victim'))).nlink, 1);
    assert.deepEqual(await readdir(viaSymlink.root), []);
  });

  test('whiteouts through a symlink do not delete host files', async (t) => {
    const setup = await hostile(t);
    const lower = makeTar([{ name: 'evil', type: 'symlink', linkname: setup.outside }]);
    await setup.importLayers([lower, makeTar([{ name: 'evil/.wh.victim' }, { name: 'evil/.wh..wh..opq' }])]);
    assert.equal(await readFile(join(setup.outside, 'victim'), 'utf8'), 'original');
  });
});

describe('damaged archives are refused with INVALID_IMAGE and leave nothing behind', () => {
  const cases: Array<[string, () => Buffer, string]> = [
    [
      'a layer blob whose bytes do not match its digest',
      () =>
        ociLayoutArchive({
          ...IMAGE,
          tamper: (files) => {
            const [name, blob] = [...files].find(([, data]) => data.equals(IMAGE.layers[0] as Buffer)) as [string, Buffer];
            const flipped = Buffer.from(blob);
            flipped[600] = (flipped[600] as number) ^ 0xff;
            files.set(name, flipped);
          },
        }),
      'is corrupt',
    ],
    [
      'a docker save layer that does not match its diff id',
      () =>
        dockerSaveArchive({
          ...IMAGE,
          tamper: (files) => {
            const name = [...files.keys()].find((key) => key.endsWith('/layer.tar')) as string;
            files.set(name, makeTar([{ name: 'swapped', content: 'evil' }]));
          },
        }),
      'diff id',
    ],
    [
      'a missing layer blob',
      () =>
        ociLayoutArchive({
          ...IMAGE,
          tamper: (files) => {
            const name = [...files].find(([, data]) => data.equals(IMAGE.layers[1] as Buffer))?.[0] as string;
            files.delete(name);
          },
        }),
      'missing',
    ],
    [
      'a config whose bytes do not match its name',
      () =>
        dockerSaveArchive({
          ...IMAGE,
          tamper: (files) => {
            const name = [...files.keys()].find((key) => key.endsWith('.json') && !key.includes('/') && key !== 'manifest.json') as string;
            files.set(name, Buffer.from('{"rootfs":{"diff_ids":[]}}'));
          },
        }),
      'is corrupt',
    ],
    ['an archive cut in the middle of a blob', () => dockerSaveArchive(IMAGE).subarray(0, 3000), 'runcated'],
    ['an archive cut at a block boundary inside a blob', () => ociLayoutArchive(IMAGE).subarray(0, 512 * 9), 'runcated'],
    ['a file that is not a tar', () => Buffer.from('hello, this is not an image\n'.repeat(40)), 'not a valid tar'],
    ['an empty file', () => Buffer.alloc(0), 'not a valid tar'],
    ['an archive without manifest.json or index.json', () => makeTar([{ name: 'readme', content: 'hi' }]), 'neither index.json'],
    [
      'a gzip layer that is cut short',
      () =>
        dockerSaveArchive({
          ...IMAGE,
          gzip: [0],
          tamper: (files) => {
            const name = [...files.keys()].find((key) => key.endsWith('/layer.tar')) as string;
            const data = files.get(name) as Buffer;
            files.set(name, data.subarray(0, Math.floor(data.length / 2)));
          },
        }),
      'gzip',
    ],
    ['an image for another architecture', () => ociLayoutArchive({ ...IMAGE, architecture: process.arch === 'arm64' ? 'amd64' : 'arm64' }), 'this host is'],
  ];
  for (const [what, archive, fragment] of cases) {
    test(what, async (t) => {
      const { root, run } = await importArchive(t, archive());
      await assert.rejects(run(), airlockError('INVALID_IMAGE', fragment, REEXPORT, 'image.tar'));
      assert.deepEqual(await readdir(root), [], 'no image, no staging directory');
    });
  }

  test('a missing archive file is INVALID_ARGUMENTS', async (t) => {
    const dir = await temporaryDirectory(t);
    const catalog = new LocalImageCatalog({ root: join(dir, 'images'), cacheDir: join(dir, 'cache') });
    await assert.rejects(catalog.importOciArchive({ name: 'x', archivePath: join(dir, 'nope.tar') }), airlockError('INVALID_ARGUMENTS', 'docker save'));
  });
});
