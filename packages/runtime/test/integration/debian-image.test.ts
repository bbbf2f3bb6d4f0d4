/**
 * Builds the real Debian bookworm image with debootstrap (network access to
 * the machine's Debian mirror, root, ~85 s the first time). The cache lives in
 * the shared cache (/var/cache/airlock) so that repeated runs reuse it: then the first build
 * below is served from the cache too, and the test still checks that the
 * second build is.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { access, constants, lstat, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { ImageProgress } from '../../src/core/image-catalog.js';
import { LocalImageCatalog } from '../../src/images/local-image-catalog.js';

// The cache the setup script fills: on CI the real debootstrap run is the setup's own build.
const CACHE_DIR = process.env['AIRLOCK_CACHE_DIR'] ?? '/var/cache/airlock';

function missingPrerequisite(): string | undefined {
  if (process.getuid?.() !== 0) return 'debootstrap needs root';
  try {
    execFileSync('sh', ['-c', 'command -v debootstrap || test -x /usr/sbin/debootstrap'], { stdio: 'ignore' });
  } catch {
    return 'debootstrap is not installed (apt-get install debootstrap)';
  }
  return undefined;
}

const skip = missingPrerequisite();

test('builds Debian bookworm with debootstrap, then serves the next build from the cache', { skip: skip ?? false, timeout: 20 * 60_000 }, async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'airlock-debian-'));
  t.after(() => rm(dir, { recursive: true, force: true }));

  const firstProgress: ImageProgress[] = [];
  const firstStarted = Date.now();
  const first = await new LocalImageCatalog({ root: join(dir, 'data-a', 'images'), cacheDir: CACHE_DIR }).buildDebian({
    onProgress: (p) => firstProgress.push(p),
  });
  const firstMs = Date.now() - firstStarted;
  t.diagnostic(`first build: ${firstMs} ms, ${first.provenance['fromCache'] === true ? 'from the cache' : `debootstrap from ${String(first.provenance['mirror'])}`}, ${(first.sizeBytes / 1e6).toFixed(0)} MB, ${first.digest}`);

  const rootfs = first.rootfsDir;
  await access(join(rootfs, 'usr/bin/python3'), constants.X_OK);
  await access(join(rootfs, 'usr/bin/ps'), constants.X_OK);
  await access(join(rootfs, 'etc/ssl/certs/ca-certificates.crt'));
  assert.ok((await lstat(join(rootfs, 'workspace'))).isDirectory());
  assert.equal(await readFile(join(rootfs, 'etc/hostname'), 'utf8'), 'airlock\n');
  assert.deepEqual(await readdir(join(rootfs, 'var/lib/apt/lists')), ['partial']);
  assert.equal((await readdir(join(rootfs, 'var/cache/apt/archives'))).filter((name) => name.endsWith('.deb')).length, 0);
  if (first.provenance['fromCache'] !== true) {
    const phases = new Set(firstProgress.map((p) => p.phase));
    for (const phase of ['download', 'unpack', 'configure', 'cache', 'done']) assert.ok(phases.has(phase), `phase ${phase} reported`);
  }

  const secondProgress: ImageProgress[] = [];
  const secondStarted = Date.now();
  const second = await new LocalImageCatalog({ root: join(dir, 'data-b', 'images'), cacheDir: CACHE_DIR }).buildDebian({
    onProgress: (p) => secondProgress.push(p),
  });
  const secondMs = Date.now() - secondStarted;
  t.diagnostic(`second build: ${secondMs} ms, from the cache`);
  assert.equal(second.provenance['fromCache'], true);
  assert.ok(secondProgress.some((p) => p.phase === 'cache'));
  assert.ok(!secondProgress.some((p) => p.phase === 'download'), 'debootstrap did not run');
  assert.equal(second.digest, first.digest, 'the cached tree is the same image');
  await access(join(second.rootfsDir, 'usr/bin/python3'), constants.X_OK);
  if (first.provenance['fromCache'] !== true) assert.ok(secondMs < firstMs, 'the cache is faster than debootstrap');
});
