/**
 * The slow tier: the driver conformance suite against the real QEMU microvm
 * driver (software emulation on hosts without a usable KVM), on LoopDisks
 * handed over as block devices and a busybox image made into an ext4 block
 * image here. Needs root, qemu-system-x86, gcc and the guest kernel that
 * scripts/setup.sh fetches. The last step asserts that nothing leaked (QEMU
 * processes, cgroups, namespaces, sockets, mounts, disks) and that the image
 * never changed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxHandle, SandboxSpec } from '../../src/core/sandbox-driver.js';
import { defaultCacheDir } from '../../src/data-dir.js';
import { DEFAULT_RESOURCES, runDriverConformance, type ConformanceContext, type SpecOptions } from '../../src/drivers/conformance/driver-conformance.js';
import { mountsUnder } from '../../src/drivers/gvisor/index.js';
import { QemuMicrovmDriver } from '../../src/drivers/qemu/index.js';
import { ensureRootfsBlockImage } from '../../src/images/rootfs-block-image.js';
import { LoopDisks } from '../../src/storage/loop-disks.js';
import { buildBusyboxRootfs, treeFingerprint } from '../support/busybox-rootfs.js';

async function makeMicrovmContext(): Promise<ConformanceContext> {
  const base = await mkdtemp('/var/tmp/airlock-microvm-test-');
  const rootfsDir = join(base, 'rootfs');
  await buildBusyboxRootfs(rootfsDir);
  const rootfsImage = await ensureRootfsBlockImage({ rootfsDir, digest: `sha256:${randomBytes(16).toString('hex')}` }, join(base, 'cache'));
  const fingerprint = async (): Promise<string> => `${(await treeFingerprint(rootfsDir)).join('\n')}\n${createHash('sha256').update(await readFile(rootfsImage)).digest('hex')}`;
  const imageBefore = await fingerprint();
  const disks = new LoopDisks({ root: join(base, 'disks') });
  const driver = new QemuMicrovmDriver({ stateRoot: join(base, 'state'), cacheDir: defaultCacheDir(), sandboxesDir: join(base, 'sandboxes') });
  const secret = { path: join(base, 'host-secret.txt'), content: `secret-${randomBytes(8).toString('hex')}` };
  await writeFile(secret.path, secret.content);
  const specs = new Map<string, SandboxSpec>();
  const sessions = new Set<string>();
  let counter = 0;

  return {
    driver,
    hostSecret: secret,
    networkSubnet: '10.213.80.0/20',
    async newSpec(options: SpecOptions = {}): Promise<SandboxSpec> {
      counter += 1;
      const sandboxId = `t${counter}-${randomBytes(3).toString('hex')}`;
      let sessionId = options.sameDiskAs?.sessionId;
      if (!sessionId) {
        sessionId = `session-${counter}-${randomBytes(3).toString('hex')}`;
        await disks.create(sessionId, 256);
        sessions.add(sessionId);
      }
      const spec: SandboxSpec = {
        sandboxId,
        sessionId,
        rootfs: { kind: 'block-device', path: rootfsImage },
        disk: { kind: 'block-device', path: await disks.blockDevice(sessionId) },
        stateDir: join(base, 'sandboxes', sandboxId),
        hostname: `box-${counter}`,
        resources: { ...DEFAULT_RESOURCES, ...options.resources },
        env: options.env ?? {},
        ...(options.oneShot ? { oneShot: options.oneShot } : {}),
        ...(options.network ? { network: options.network } : {}),
      };
      specs.set(sandboxId, spec);
      return spec;
    },
    async newImageDir(): Promise<string> {
      await mkdir(join(base, 'images'), { recursive: true });
      return join(base, 'images', `image-${(counter += 1)}`);
    },
    leftovers: (sandboxId) => driver.leftovers(sandboxId, specs.get(sandboxId)?.stateDir),
    imageFingerprint: fingerprint,
    async dispose(): Promise<void> {
      try {
        for (const spec of specs.values()) {
          const handle: SandboxHandle = { sandboxId: spec.sandboxId, sessionId: spec.sessionId, driverData: {} };
          await driver.destroy(handle);
        }
        for (const sessionId of sessions) await disks.destroy(sessionId);
        assert.deepEqual(await driver.list(), [], 'microVMs leaked');
        for (const sandboxId of specs.keys()) assert.deepEqual(await driver.leftovers(sandboxId, specs.get(sandboxId)?.stateDir), [], `sandbox ${sandboxId} leaked`);
        assert.deepEqual(await mountsUnder(base), [], 'mounts leaked');
        assert.deepEqual(await disks.list(), [], 'session disks leaked');
        assert.equal(await fingerprint(), imageBefore, 'the image changed');
      } finally {
        for (const path of (await mountsUnder(base)).reverse()) execFileSync('umount', ['-l', path]);
        await rm(base, { recursive: true, force: true });
      }
    },
  };
}

runDriverConformance('microvm', makeMicrovmContext);
