/**
 * Bad hosts and bad images for the microvm driver, through the session
 * service and a real SQLite store: no QEMU, a kernel that cannot boot, a
 * guest agent that does not answer in time. Each leaves the session `failed`
 * with the cause and the fix, and nothing running or left on the host (no
 * QEMU, no cgroup, no socket dir, no disk). And a memory image whose device
 * state or RAM file changed after its checkpoint is refused, whole.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isAirlockError } from '../../src/core/errors.js';
import type { ImageCatalog, ImageRecord } from '../../src/core/image-catalog.js';
import { SandboxDrivers } from '../../src/core/sandbox-drivers.js';
import type { SandboxSpec } from '../../src/core/sandbox-driver.js';
import type { SessionService } from '../../src/core/session-service.js';
import { buildCoreServices } from '../../src/core/core-services.js';
import { AuditLog } from '../../src/audit/audit-log.js';
import { systemClock } from '../../src/core/clock.js';
import { defaultCacheDir } from '../../src/data-dir.js';
import { QemuMicrovmDriver, type MicrovmDriverOptions } from '../../src/drivers/qemu/index.js';
import { ensureRootfsBlockImage } from '../../src/images/rootfs-block-image.js';
import { parseContract } from '../../src/policy/session-contract.js';
import { LoopDisks } from '../../src/storage/loop-disks.js';
import { SnapshotDirectory } from '../../src/storage/snapshot-directory.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { mountsUnder } from '../../src/drivers/gvisor/index.js';
import { buildBusyboxRootfs } from '../support/busybox-rootfs.js';

/** The busybox image, as a catalog of one. */
function busyboxCatalog(rootfsDir: string, cacheDir: string): ImageCatalog {
  const image: ImageRecord = { name: 'busybox', digest: `sha256:${randomBytes(32).toString('hex')}`, rootfsDir, source: 'oci-archive', sizeBytes: 0, createdAt: new Date().toISOString(), env: {} };
  return {
    list: async () => [image],
    get: async () => image,
    rootfsBlockDevice: async () => ensureRootfsBlockImage(image, cacheDir),
    buildDebian: async () => image,
    importOciArchive: async () => image,
    remove: async () => undefined,
  };
}

describe('microvm driver failures', () => {
  let base: string;
  let store: SqliteStore;
  let disks: LoopDisks;
  let images: ImageCatalog;

  before(async () => {
    base = await mkdtemp('/var/tmp/airlock-microvm-failures-');
    await buildBusyboxRootfs(join(base, 'rootfs'));
    store = new SqliteStore(join(base, 'airlock.db'));
    disks = new LoopDisks({ root: join(base, 'disks') });
    images = busyboxCatalog(join(base, 'rootfs'), join(base, 'cache'));
  });
  after(async () => {
    await store.close();
    for (const path of (await mountsUnder(base)).reverse()) execFileSync('umount', ['-l', path]);
    await rm(base, { recursive: true, force: true });
  });

  /** A session service whose only driver is a microvm driver with `options`. */
  function servicesWith(name: string, options: Partial<MicrovmDriverOptions>): { sessions: SessionService; driver: QemuMicrovmDriver } {
    const driver = new QemuMicrovmDriver({ stateRoot: join(base, name, 'state'), cacheDir: defaultCacheDir(), sandboxesDir: join(base, name, 'sandboxes'), ...options });
    const { sessions } = buildCoreServices({
      store,
      audit: new AuditLog({ key: randomBytes(32), clock: systemClock }),
      drivers: new SandboxDrivers([driver]),
      disks,
      images,
      artifacts: new SnapshotDirectory(join(base, name, 'snapshots')),
      thumbnails: { put: async () => undefined, get: async () => undefined },
      layout: { sandboxStateDir: (sandboxId: string) => join(base, name, 'sandboxes', sandboxId) },
      authorizer: { authorize: () => ({ decision: 'allow', policyIds: [], reason: 'test', errors: [], enforced: true }) },
      analyzeCommand: () => ({ programs: [], analysable: true, reasons: [] }),
      owner: 'node-test',
    });
    return { sessions, driver };
  }

  /** Creates a session that must fail; returns its failure after checking nothing is left. */
  async function failedCreate(name: string, options: Partial<MicrovmDriverOptions>, code: string): Promise<string> {
    const { sessions, driver } = servicesWith(name, options);
    await assert.rejects(sessions.create({ contract: parseContract({ version: 1, resources: { memoryMb: 256 } }), imageName: 'busybox' }), (error: unknown) => isAirlockError(error) && error.code === code);
    const session = (await sessions.list()).at(-1);
    assert.ok(session);
    assert.equal(session.state, 'failed');
    assert.equal(session.failure?.code, code);
    assert.deepEqual(await driver.list(), [], 'a VM (or its registry entry, namespace or process) is left');
    const sandboxId = driver.sandboxIdFor({ sessionId: session.id, purpose: 'machine', generation: 1 });
    assert.deepEqual(await driver.leftovers(sandboxId, join(base, name, 'sandboxes', sandboxId)), []);
    assert.ok(!(await disks.list()).includes(session.id), 'the disk of a failed create is left');
    return session.failure?.message ?? '';
  }

  it('no QEMU installed: the session fails with the package to install', async () => {
    const message = await failedCreate('no-qemu', { qemuBinary: '/nonexistent/qemu-system-x86_64' }, 'DRIVER_UNAVAILABLE');
    assert.match(message, /QEMU is not installed .*apt-get install qemu-system-x86/);
  });

  it('a kernel that will not boot: the session fails with what QEMU or the console said', async () => {
    const kernelDir = join(base, 'bad-kernel');
    await mkdir(join(kernelDir, 'modules'), { recursive: true });
    await writeFile(join(kernelDir, 'vmlinux'), randomBytes(1024 * 1024));
    for (const module of ['virtio_ring', 'virtio', 'virtio_mmio', 'virtio_blk', 'virtio_console', 'failover', 'net_failover', 'virtio_net', 'overlay']) {
      await writeFile(join(kernelDir, 'modules', `${module}.ko`), 'not a module');
    }
    await writeFile(join(kernelDir, 'kernel.json'), JSON.stringify({ package: 'broken', version: '0', release: 'broken', vmlinuxSha256: '0'.repeat(64) }));
    const message = await failedCreate('bad-kernel', { kernelDir, cacheDir: join(base, 'bad-kernel-cache'), accelerator: 'tcg' }, 'DRIVER_FAILED');
    assert.match(message, /QEMU exited while starting|stopped while booting/);
  });

  it('a guest agent that does not answer in time: the session fails saying how to give it longer, and the VM is gone', async () => {
    const message = await failedCreate('slow-agent', { bootTimeoutMs: 1_500 }, 'DRIVER_FAILED');
    assert.match(message, /did not answer within .*AIRLOCK_MICROVM_BOOT_TIMEOUT_MS/);
  });

  it('refuses to restore an image whose device state or memory changed, and leaves nothing', async () => {
    const driver = new QemuMicrovmDriver({ stateRoot: join(base, 'tamper', 'state'), cacheDir: defaultCacheDir() });
    await disks.create('tamper-disk', 128);
    const spec = async (sandboxId: string): Promise<SandboxSpec> => ({
      sandboxId,
      sessionId: 'tamper-disk',
      rootfs: { kind: 'block-device', path: await images.rootfsBlockDevice('busybox') },
      disk: { kind: 'block-device', path: await disks.blockDevice('tamper-disk') },
      stateDir: join(base, 'tamper', 'sandboxes', sandboxId),
      hostname: 'tamper',
      resources: { cpus: 1, memoryMb: 128, maxProcesses: 64, diskMb: 128 },
      env: {},
    });
    const image = join(base, 'tamper', 'image');
    const handle = await driver.start(await spec('tamper-1'));
    await driver.checkpoint(handle, image, { leaveRunning: false });
    try {
      const files = await readdir(image);
      assert.deepEqual(files.sort(), ['device-state.bin', 'initramfs.cpio', 'memory.raw', 'microvm-image.json']);
      for (const [file, offset] of [['device-state.bin', 100], ['memory.raw', 1024 * 1024 + 7]] as const) {
        const target = join(image, file);
        const original = await flipByte(target, offset);
        await assert.rejects(driver.restore(await spec(`tamper-${file}`), image), (error: unknown) => isAirlockError(error, 'SNAPSHOT_CORRUPT') && error.message.includes(file));
        assert.deepEqual(await driver.list(), [], `a refused restore (${file}) left a VM`);
        await flipByte(target, offset, original);
      }
      const restored = await driver.restore(await spec('tamper-ok'), image);
      assert.equal(await driver.status(restored), 'running', 'the image restores once it is whole again');
      await driver.destroy(restored);
    } finally {
      await disks.destroy('tamper-disk');
    }
  });
});

/** Replaces one byte (by its complement, or by `value`); returns what was there. */
async function flipByte(path: string, offset: number, value?: number): Promise<number> {
  const file = await open(path, 'r+');
  try {
    const byte = Buffer.alloc(1);
    await file.read(byte, 0, 1, offset);
    const original = byte[0] ?? 0;
    byte[0] = value ?? original ^ 0xff;
    await file.write(byte, 0, 1, offset);
    return original;
  } finally {
    await file.close();
  }
}
