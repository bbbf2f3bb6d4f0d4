/**
 * Runs the driver conformance suite against the real GvisorDriver on
 * LoopDisks, with a busybox image built here. Needs root, runsc and
 * busybox-static. Everything lives under one temp dir in /var/tmp; the last
 * step asserts that nothing leaked (runsc containers, cgroups, mounts,
 * processes) and that the image rootfs never changed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { SandboxHandle, SandboxSpec } from '../../src/core/sandbox-driver.js';
import { DEFAULT_RESOURCES, runDriverConformance, type ConformanceContext, type SpecOptions } from '../../src/drivers/conformance/driver-conformance.js';
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
      if (await stat(spec.stateDir).then(() => true, () => false)) found.push(`state dir ${spec.stateDir}`);
    }
    return found;
  };

  return {
    driver,
    hostSecret: secret,
    async newSpec(options: SpecOptions = {}): Promise<SandboxSpec> {
      counter += 1;
      const sandboxId = `t${counter}-${randomBytes(3).toString('hex')}`;
      let sessionId = options.sameDiskAs?.sessionId;
      let diskDir = options.sameDiskAs?.diskDir;
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
        rootfsDir,
        diskDir,
        stateDir: join(stateRoot, 'sandboxes', sandboxId),
        hostname: `box-${counter}`,
        resources: { ...DEFAULT_RESOURCES, ...options.resources },
        env: options.env ?? {},
        ...(options.oneShot ? { oneShot: options.oneShot } : {}),
      };
      specs.set(sandboxId, spec);
      return spec;
    },
    workspaceHostDir: (spec) => join(spec.diskDir, 'workspace'),
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
          const handle: SandboxHandle = { sandboxId: spec.sandboxId, sessionId: spec.sessionId, driverData: { stateDir: spec.stateDir, diskDir: spec.diskDir } };
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
