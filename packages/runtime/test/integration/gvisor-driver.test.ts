/**
 * Runs the driver conformance suite against the real GvisorDriver on
 * LoopDisks, with a busybox image built here. Needs root, runsc and
 * busybox-static. Everything lives under one temp dir in /var/tmp; the last
 * step asserts that nothing leaked (runsc containers, cgroups, mounts,
 * processes) and that the image rootfs never changed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isAirlockError } from '../../src/core/errors.js';
import type { SandboxHandle, SandboxSpec } from '../../src/core/sandbox-driver.js';
import type { FilesystemRules } from '../../src/core/session-contract.js';
import { DEFAULT_RESOURCES, runDriverConformance, type ConformanceContext, type SpecOptions } from '../../src/drivers/conformance/driver-conformance.js';
import { sh } from '../../src/drivers/conformance/conformance-context.js';
import { CONTAINER_PREFIX, GvisorDriver, hostProcessesOf, leftoverCgroups, mountsUnder } from '../../src/drivers/gvisor/index.js';
import { LoopDisks } from '../../src/storage/loop-disks.js';
import { buildBusyboxRootfs, treeFingerprint } from '../support/busybox-rootfs.js';

async function makeGvisorContext(): Promise<ConformanceContext> {
  const base = await mkdtemp('/var/tmp/airlock-gvisor-test-');
  const rootfsDir = join(base, 'rootfs');
  const stateRoot = join(base, 'state');
  await buildBusyboxRootfs(rootfsDir);
  const imageBefore = (await treeFingerprint(rootfsDir)).join('\n');
  const disks = new LoopDisks({ root: join(base, 'disks') });
  const driver = new GvisorDriver({ stateRoot });
  const secret = { path: join(base, 'host-secret.txt'), content: `secret-${randomBytes(8).toString('hex')}` };
  await writeFile(secret.path, secret.content);
  const specs = new Map<string, SandboxSpec>();
  const sessions = new Set<string>();
  let counter = 0;

  const leftovers = async (sandboxId: string): Promise<string[]> => {
    const spec = specs.get(sandboxId);
    const containerId = `${CONTAINER_PREFIX}${sandboxId}`;
    const found: string[] = [...(await leftoverCgroups(sandboxId))];
    const markers = spec ? [containerId, join(spec.stateDir, 'bundle')] : [containerId];
    found.push(...(await hostProcessesOf(markers)).map((pid) => `process ${pid}`));
    for (const name of await readdir(join(stateRoot, 'runsc')).catch(() => [] as string[])) {
      if (name.includes(containerId)) found.push(`runsc state ${name}`);
    }
    if (spec) {
      found.push(...(await mountsUnder(spec.stateDir)).map((path) => `mount ${path}`));
      if (
        await stat(spec.stateDir).then(
          () => true,
          () => false,
        )
      )
        found.push(`state dir ${spec.stateDir}`);
    }
    return found;
  };

  return {
    driver,
    hostSecret: secret,
    networkSubnet: '10.213.64.0/20',
    async newSpec(options: SpecOptions = {}): Promise<SandboxSpec> {
      counter += 1;
      const sandboxId = `t${counter}-${randomBytes(3).toString('hex')}`;
      let sessionId = options.sameDiskAs?.sessionId;
      let diskDir = options.sameDiskAs?.disk.path;
      if (!sessionId || !diskDir) {
        sessionId = `session-${counter}-${randomBytes(3).toString('hex')}`;
        diskDir = await disks.create(sessionId, 1024);
        sessions.add(sessionId);
        // The driver makes it on start; making it here lets a case seed files before any sandbox ran.
        await mkdir(join(diskDir, 'workspace'), { recursive: true });
      }
      const spec: SandboxSpec = {
        sandboxId,
        sessionId,
        rootfs: { kind: 'directory', path: rootfsDir },
        disk: { kind: 'directory', path: diskDir },
        stateDir: join(stateRoot, 'sandboxes', sandboxId),
        hostname: `box-${counter}`,
        resources: { ...DEFAULT_RESOURCES, ...options.resources },
        env: options.env ?? {},
        ...(options.oneShot ? { oneShot: options.oneShot } : {}),
        ...(options.network ? { network: options.network } : {}),
      };
      specs.set(sandboxId, spec);
      return spec;
    },
    workspaceHostDir: (spec) => join(spec.disk.path, 'workspace'),
    agentChannelPaths: ['/.airlock/host', '/.airlock/host/agent.sock'],
    async newImageDir(): Promise<string> {
      await mkdir(join(base, 'images'), { recursive: true });
      return join(base, 'images', `image-${(counter += 1)}`);
    },
    leftovers,
    imageFingerprint: async () => (await treeFingerprint(rootfsDir)).join('\n'),
    async dispose(): Promise<void> {
      try {
        // Destroy whatever a failed case left, then prove nothing leaked anywhere.
        for (const spec of specs.values()) {
          const handle: SandboxHandle = {
            sandboxId: spec.sandboxId,
            sessionId: spec.sessionId,
            driverData: { stateDir: spec.stateDir, diskDir: spec.disk.path },
          };
          await driver.destroy(handle);
        }
        for (const sessionId of sessions) await disks.destroy(sessionId);
        assert.deepEqual(await driver.list(), [], 'runsc containers leaked');
        for (const sandboxId of specs.keys()) assert.deepEqual(await leftovers(sandboxId), [], `sandbox ${sandboxId} leaked`);
        assert.deepEqual(await mountsUnder(base), [], 'mounts leaked');
        assert.deepEqual(await disks.list(), [], 'session disks leaked');
        assert.equal((await treeFingerprint(rootfsDir)).join('\n'), imageBefore, 'the image rootfs changed');
      } finally {
        for (const path of (await mountsUnder(base)).reverse()) execFileSync('umount', ['-l', path]);
        await rm(base, { recursive: true, force: true });
      }
    },
  };
}

runDriverConformance('gvisor', makeGvisorContext);

// What the agent does at boot, in this order (ADR 0011, ADR 0017): its bounded /proc mount, then the seccomp filter that
// keeps every process from changing the mounts. A filter installed by runsc (--oci-seccomp) would refuse the first.
describe('gVisor machine: the bounded /proc, then the mounts locked', () => {
  const LOCKS = [
    'grep " /proc " /proc/mounts | tail -n 1',
    'grep "^Seccomp:" /proc/1/status /proc/self/status',
    'mount -t tmpfs none /tmp 2>/dev/null && echo mounted || echo mount refused',
    'umount /proc 2>/dev/null && echo unmounted || echo umount refused',
    'unshare -U -m true 2>/dev/null && echo unshared || echo unshare refused',
    '(echo x > /etc/probe) 2>/dev/null && echo written || echo write refused',
  ].join('; ');
  const expected = (etc: 'written' | 'write refused'): string =>
    [
      'none /proc proc rw,dentry_cache_limit=64 0 0',
      '/proc/1/status:Seccomp:\t2',
      '/proc/self/status:Seccomp:\t2',
      'mount refused',
      'umount refused',
      'unshare refused',
      etc,
    ].join('\n');

  it('holds with and without filesystem rules, and after a checkpoint and restore', async () => {
    const context = await makeGvisorContext();
    const { driver } = context;
    try {
      const plain = await driver.start(await context.newSpec());
      try {
        assert.equal((await sh(driver, plain, LOCKS)).stdout.trim(), expected('written'));
      } finally {
        await driver.destroy(plain);
      }
      const filesystem: FilesystemRules = { denyRead: [], denyWrite: ['/etc'], readOnly: [] };
      const spec = { ...(await context.newSpec()), filesystem };
      const ruled = await driver.start(spec);
      const image = await context.newImageDir();
      try {
        assert.equal((await sh(driver, ruled, LOCKS)).stdout.trim(), expected('write refused'));
        await driver.checkpoint(ruled, image, { leaveRunning: false });
      } finally {
        await driver.destroy(ruled);
      }
      const restored = await driver.restore({ ...(await context.newSpec({ sameDiskAs: spec })), filesystem }, image);
      try {
        assert.equal((await sh(driver, restored, LOCKS)).stdout.trim(), expected('write refused'), 'after restore');
      } finally {
        await driver.destroy(restored);
      }
    } finally {
      await context.dispose();
    }
  });
});

describe('LoopDisks', () => {
  it('creates, clones copy-on-write, survives a crash and reports DISK_FULL', async () => {
    const base = await mkdtemp('/var/tmp/airlock-disks-test-');
    // A small tmpfs as the disks root makes the host run out of space on purpose.
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=48m', 'airlock-test', base]);
    const disks = new LoopDisks({ root: base });
    try {
      const dir = await disks.create('alpha', 64);
      const usage = await disks.usage('alpha');
      assert.ok(usage.sizeBytes > 40 * 1024 * 1024 && usage.sizeBytes <= 64 * 1024 * 1024, `size ${usage.sizeBytes}`);
      await writeFile(join(dir, 'note.txt'), 'alpha');
      await disks.sync('alpha');
      await assert.rejects(disks.create('alpha', 64), (error: unknown) => isAirlockError(error, 'INVALID_STATE'));
      await assert.rejects(disks.create('../escape', 64), (error: unknown) => isAirlockError(error, 'INVALID_ARGUMENTS'));

      const copy = await disks.clone('alpha', 'beta');
      assert.equal(await readFile(join(copy, 'note.txt'), 'utf8'), 'alpha');
      await writeFile(join(copy, 'note.txt'), 'beta');
      assert.equal(await readFile(join(dir, 'note.txt'), 'utf8'), 'alpha', 'the clone wrote through to its source');
      assert.deepEqual(await disks.list(), ['alpha', 'beta']);

      // Crash: unmounted behind our back, and a loop device left attached to the image.
      execFileSync('umount', [join(base, 'beta', 'mnt')]);
      const device = execFileSync('losetup', ['-f', '--show', join(base, 'beta', 'disk.ext4')], { encoding: 'utf8' }).trim();
      assert.equal(await disks.ensureMounted('alpha'), dir);
      const remounted = await disks.ensureMounted('beta');
      assert.equal(await readFile(join(remounted, 'note.txt'), 'utf8'), 'beta', 'ensureMounted after a crash');
      await disks.destroy('beta');
      assert.ok(!execFileSync('losetup', ['-a'], { encoding: 'utf8' }).includes(`${device}:`), 'loop device left attached');
      await disks.destroy('beta');

      // Crash while a snapshot copied the disk: left frozen. thaw lets writers on; destroy leaves no loop device.
      const frozen = await disks.create('delta', 32);
      execFileSync('fsfreeze', ['--freeze', frozen]);
      await disks.thaw('delta');
      await writeFile(join(frozen, 'after-thaw.txt'), 'written');
      await disks.thaw('delta');
      execFileSync('fsfreeze', ['--freeze', frozen]);
      await disks.destroy('delta');
      assert.ok(!execFileSync('losetup', ['-a'], { encoding: 'utf8' }).includes(join(base, 'delta')), 'a frozen disk kept its loop device');

      // 30 MB of incompressible data cannot be copied onto a 48 MB root that already holds it.
      await writeFile(join(dir, 'big.bin'), randomBytes(30 * 1024 * 1024));
      await assert.rejects(disks.clone('alpha', 'gamma'), (error: unknown) => isAirlockError(error, 'DISK_FULL'));
      assert.deepEqual(await disks.list(), ['alpha'], 'a failed clone left a disk behind');
    } finally {
      for (const id of await disks.list()) await disks.destroy(id);
      execFileSync('umount', [base]);
      await rm(base, { recursive: true, force: true });
    }
  });
});
