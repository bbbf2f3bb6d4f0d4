import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { LocalImageCatalog } from '../../../src/images/local-image-catalog.js';
import { airlockError, makeTar, ociLayoutArchive, temporaryDirectory } from './image-archive-fixtures.js';

type TestContext = Parameters<typeof temporaryDirectory>[0];

async function catalogWithArchive(t: TestContext) {
  const dir = await temporaryDirectory(t);
  const archivePath = join(dir, 'image.tar');
  await writeFile(archivePath, ociLayoutArchive({ layers: [makeTar([{ name: 'hello.txt', content: 'hello' }])] }));
  const root = join(dir, 'images');
  return { dir, root, archivePath, catalog: new LocalImageCatalog({ root, cacheDir: join(dir, 'cache') }) };
}

const INVALID_NAMES = ['', 'UPPER', '-lead', '.hidden', '_under', 'a/b', '..', '.', 'a'.repeat(65), 'white space', 'ünï', 'a\nb'];
const VALID_NAMES = ['a', '0', 'my-image_1.2', 'a'.repeat(64), 'debian-bookworm'];

describe('image names', () => {
  for (const name of INVALID_NAMES) {
    test(`${JSON.stringify(name)} is refused by every operation`, async (t) => {
      const { catalog, archivePath } = await catalogWithArchive(t);
      const invalid = airlockError('INVALID_ARGUMENTS', 'Invalid image name');
      await assert.rejects(catalog.get(name), invalid);
      await assert.rejects(catalog.importOciArchive({ name, archivePath }), invalid);
      await assert.rejects(catalog.remove(name, () => false), invalid);
      await assert.rejects(catalog.buildDebian({ name }), invalid);
    });
  }

  test('valid names import and read back', async (t) => {
    const { catalog, archivePath } = await catalogWithArchive(t);
    for (const name of VALID_NAMES) {
      const record = await catalog.importOciArchive({ name, archivePath });
      assert.equal((await catalog.get(name)).digest, record.digest);
    }
    assert.deepEqual((await catalog.list()).map((record) => record.name), [...VALID_NAMES].sort());
  });
});

describe('catalog records', () => {
  test('get of a missing image names the commands that make one', async (t) => {
    const { catalog } = await catalogWithArchive(t);
    await assert.rejects(catalog.get('nothing'), airlockError('IMAGE_NOT_FOUND', 'airlock images build', 'airlock images import nothing FILE'));
  });

  test('list is empty before the root exists, and skips folders that are not images', async (t) => {
    const { catalog, root, archivePath } = await catalogWithArchive(t);
    assert.deepEqual(await catalog.list(), []);
    await catalog.importOciArchive({ name: 'one', archivePath });
    await mkdir(join(root, 'not-an-image'));
    await mkdir(join(root, '.staging-x-1-abcdef01'));
    assert.deepEqual((await catalog.list()).map((record) => record.name), ['one']);
  });

  test('image.json holds the record, written without temporary files left over', async (t) => {
    const { catalog, root, archivePath } = await catalogWithArchive(t);
    const record = await catalog.importOciArchive({ name: 'one', archivePath });
    const manifest = JSON.parse(await readFile(join(root, 'one', 'image.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(manifest['digest'], record.digest);
    assert.equal(manifest['source'], 'oci-archive');
    assert.deepEqual((await readdir(join(root, 'one'))).sort(), ['image.json', 'rootfs']);
    assert.deepEqual(await catalog.get('one'), record);
  });

  test('a damaged record is INVALID_IMAGE on get and can still be removed', async (t) => {
    const { catalog, root, archivePath } = await catalogWithArchive(t);
    await catalog.importOciArchive({ name: 'one', archivePath });
    await writeFile(join(root, 'one', 'image.json'), '{"half":');
    await assert.rejects(catalog.get('one'), airlockError('INVALID_IMAGE', 'airlock images rm one'));
    assert.deepEqual(await catalog.list(), []);
    await catalog.remove('one', () => false);
    await assert.rejects(stat(join(root, 'one')), { code: 'ENOENT' });
  });

  test('importing onto an existing name is IMAGE_EXISTS', async (t) => {
    const { catalog, archivePath } = await catalogWithArchive(t);
    await catalog.importOciArchive({ name: 'one', archivePath });
    await assert.rejects(catalog.importOciArchive({ name: 'one', archivePath }), airlockError('IMAGE_EXISTS', 'airlock images rm one'));
  });

  test('leftovers of a dead process are swept by the next import', async (t) => {
    const { catalog, root, archivePath } = await catalogWithArchive(t);
    const dead = spawnSync('true').pid as number;
    const leftover = join(root, `.staging-one-${dead}-0123abcd`);
    await mkdir(join(leftover, 'rootfs'), { recursive: true });
    const mine = join(root, `.staging-two-${process.pid}-0123abcd`);
    await mkdir(mine);
    await catalog.importOciArchive({ name: 'one', archivePath });
    await assert.rejects(stat(leftover), { code: 'ENOENT' });
    await stat(mine); // a live process's staging directory is never touched
  });
});

describe('removing images', () => {
  test('refused with INVALID_STATE while a session uses the image, which stays intact', async (t) => {
    const { catalog, archivePath } = await catalogWithArchive(t);
    const record = await catalog.importOciArchive({ name: 'busy', archivePath });
    const asked: string[] = [];
    const inUse = (name: string): boolean => {
      asked.push(name);
      return true;
    };
    await assert.rejects(catalog.remove('busy', inUse), airlockError('INVALID_STATE', 'in use', 'End the sessions'));
    assert.deepEqual(asked, ['busy']);
    assert.equal(await readFile(join(record.rootfsDir, 'hello.txt'), 'utf8'), 'hello');
    assert.equal((await catalog.get('busy')).digest, record.digest);
  });

  test('deletes rootfs and record when not in use', async (t) => {
    const { catalog, root, archivePath } = await catalogWithArchive(t);
    await catalog.importOciArchive({ name: 'idle', archivePath });
    await catalog.remove('idle', () => false);
    await assert.rejects(catalog.get('idle'), airlockError('IMAGE_NOT_FOUND'));
    assert.deepEqual(await readdir(root), []);
  });

  test('removing a missing image is IMAGE_NOT_FOUND', async (t) => {
    const { catalog } = await catalogWithArchive(t);
    await assert.rejects(catalog.remove('ghost', () => false), airlockError('IMAGE_NOT_FOUND', 'ghost'));
  });
});
