/**
 * The gVisor driver's agent across a crash of the control plane, and the
 * machines and images of an Airlock without the agent. A child process
 * starts a machine and is killed with SIGKILL; a new driver in this process
 * adopts the machine (its agent reconnects to the new listener) and its
 * background process is still there. Needs root, runsc and busybox-static.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { SandboxHandle, SandboxSpec } from '../../src/core/sandbox-driver.js';
import { GvisorDriver, hostProcessesOf, leftoverCgroups, mountsUnder } from '../../src/drivers/gvisor/index.js';
import { LoopDisks } from '../../src/storage/loop-disks.js';
import { buildBusyboxRootfs } from '../support/busybox-rootfs.js';

const DRIVER_MODULE = new URL('../../src/drivers/gvisor/index.js', import.meta.url).href;

describe('gVisor driver: the agent across a control-plane crash, and machines without an agent', () => {
  let base: string;
  let disks: LoopDisks;
  let spec: SandboxSpec;

  before(async () => {
    base = await mkdtemp('/var/tmp/airlock-adoption-test-');
    await buildBusyboxRootfs(join(base, 'rootfs'));
    disks = new LoopDisks({ root: join(base, 'disks') });
    const diskDir = await disks.create('adopted', 256);
    spec = {
      sandboxId: 'adopted-g1',
      sessionId: 'adopted',
      rootfs: { kind: 'directory', path: join(base, 'rootfs') },
      disk: { kind: 'directory', path: diskDir },
      stateDir: join(base, 'state', 'sandboxes', 'adopted-g1'),
      hostname: 'adopted',
      resources: { cpus: 1, memoryMb: 256, maxProcesses: 64, diskMb: 256 },
      env: {},
    };
  });

  after(async () => {
    try {
      await new GvisorDriver({ stateRoot: join(base, 'state') }).destroy({ sandboxId: spec.sandboxId, sessionId: spec.sessionId, driverData: {} });
      await disks.destroy('adopted');
      assert.deepEqual(await leftoverCgroups(spec.sandboxId), []);
      assert.deepEqual(await hostProcessesOf([`airlock-${spec.sandboxId}`]), []);
      assert.deepEqual(await mountsUnder(base), []);
    } finally {
      for (const path of (await mountsUnder(base)).reverse()) execFileSync('umount', ['-l', path]);
      await rm(base, { recursive: true, force: true });
    }
  });

  it('a new control-plane process adopts a running machine after the old one was killed; its processes live on', async () => {
    // The first control plane: starts the machine and a background process, prints the handle, then is killed.
    const script = `
      const { GvisorDriver } = await import(${JSON.stringify(DRIVER_MODULE)});
      const spec = ${JSON.stringify(spec)};
      const driver = new GvisorDriver({ stateRoot: ${JSON.stringify(join(base, 'state'))} });
      const handle = await driver.start(spec);
      await driver.exec(handle, { argv: ['sh', '-c', 'sleep 1000 >/dev/null 2>&1 & echo $! > /workspace/background.pid'], cwd: '/', env: {}, timeoutMs: 30000 });
      process.stdout.write(JSON.stringify(handle) + '\\n');
      setInterval(() => undefined, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const handle = await new Promise<SandboxHandle>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('\n')) resolve(JSON.parse(out.split('\n')[0] as string) as SandboxHandle);
      });
      child.once('exit', (code) => reject(new Error(`the first control plane exited with ${code} before it printed a handle`)));
    });
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('exit', resolve));

    // The agent lost its host; a new driver (a restarted control plane) finds it through the same socket path.
    const driver = new GvisorDriver({ stateRoot: join(base, 'state') });
    const marker = join(spec.stateDir, 'airlock-agent-v1');
    await rm(marker);
    await assert.rejects(driver.exec(handle, { argv: ['true'], cwd: '/', env: {}, timeoutMs: 10_000 }), { code: 'SANDBOX_INCOMPATIBLE' }, 'a machine started without the agent');
    await writeFile(marker, '');
    const adoptingDriver = new GvisorDriver({ stateRoot: join(base, 'state') });
    let out = '';
    const outcome = await adoptingDriver.exec(handle, {
      argv: ['sh', '-c', 'kill -0 $(cat /workspace/background.pid) && echo background-alive'],
      cwd: '/',
      env: {},
      timeoutMs: 30_000,
      onStdout: (chunk) => (out += chunk.toString()),
    });
    assert.equal(outcome.exitCode, 0);
    assert.equal(out, 'background-alive\n');
    assert.equal((await adoptingDriver.health(handle)).answering, true);
    await adoptingDriver.destroy(handle);
    assert.equal(await adoptingDriver.status(handle), 'missing');
  });

  it('refuses to restore an image taken before the agent, with SNAPSHOT_INCOMPATIBLE, and starts nothing', async () => {
    const image = join(base, 'old-image');
    await mkdir(image);
    await writeFile(join(image, 'checkpoint.img'), 'an image of a busybox-init machine');
    const driver = new GvisorDriver({ stateRoot: join(base, 'state') });
    const restored = { ...spec, sandboxId: 'old-restore' };
    await assert.rejects(driver.restore(restored, image), (error: { code: string; message: string }) => {
      assert.equal(error.code, 'SNAPSHOT_INCOMPATIBLE');
      assert.match(error.message, /older Airlock.*start a new session/);
      return true;
    });
    assert.deepEqual(await hostProcessesOf(['airlock-old-restore']), []);
  });
});
