/**
 * Conformance cases about a sandbox's life: checkpoint/restore, fork, pause,
 * resize, per-call sandboxes and destroy. Each case owns its sandboxes and
 * skips itself (with the reason) when the driver lacks the capability.
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it, type TestContext } from 'node:test';
import { isAirlockError } from '../../core/errors.js';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import {
  assertGoneSoon,
  counterScript,
  eventually,
  pidIn,
  sh,
  shOk,
  skipWithoutCommands,
  sleep,
  withSandbox,
  type ConformanceContext,
} from './conformance-context.js';

/** Registers the lifecycle cases. */
export function lifecycleCases(getContext: () => ConformanceContext): void {
  describe('lifecycle', () => {
    const context = (): ConformanceContext => getContext();

    it('checkpoint stops the sandbox; restore continues its processes and files', async (t: TestContext) => {
      const { driver } = context();
      if (skipWithoutCommands(context(), t)) return;
      if (!driver.capabilities.snapshot) return t.skip('driver declares no snapshot capability');
      const spec = await context().newSpec();
      const handle = await driver.start(spec);
      let restored: SandboxHandle | undefined;
      try {
        const pid = await shOk(driver, handle, counterScript('/tmp/counter'));
        // A background process that still holds the stdout of the command that started it.
        const printer = pidIn(await shOk(driver, handle, 'while :; do echo tick; sleep 0.5; done & echo "pid=$!"'));
        await shOk(driver, handle, 'echo kept > /etc/marker');
        const before = Number(
          await eventually(
            () => shOk(driver, handle, 'cat /tmp/counter 2>/dev/null || echo 0'),
            (v) => Number(v) > 2,
            15_000,
            'counter',
          ),
        );
        const image = await context().newImageDir();
        const result = await driver.checkpoint(handle, image, { leaveRunning: false });
        assert.equal(result.imageDir, image);
        assert.ok(result.bytes > 0, 'empty checkpoint image');
        assert.ok(['missing', 'stopped'].includes(await driver.status(handle)), 'sandbox still there after checkpoint');
        assert.deepEqual(await context().leftovers(handle.sandboxId), [], 'checkpointed sandbox left host resources');

        restored = await driver.restore(await context().newSpec({ sameDiskAs: spec }), image);
        assert.equal(await driver.status(restored), 'running');
        assert.equal(await shOk(driver, restored, `kill -0 ${pid} && kill -0 ${printer} && echo alive; cat /etc/marker`), 'alive\nkept');
        const after = Number(
          await eventually(
            () => shOk(driver, restored as SandboxHandle, 'cat /tmp/counter'),
            (v) => Number(v) > before + 2,
            15_000,
            'restored counter',
          ),
        );
        assert.ok(after > before, `counter went from ${before} to ${after}`);
      } finally {
        if (restored) await driver.destroy(restored);
        await driver.destroy(handle);
      }
    });

    it('restores one image into several independent sandboxes (fork)', async (t: TestContext) => {
      const { driver } = context();
      if (skipWithoutCommands(context(), t)) return;
      if (!driver.capabilities.snapshot || !driver.capabilities.fork) return t.skip('driver declares no snapshot/fork capability');
      const spec = await context().newSpec();
      const image = await context().newImageDir();
      const handle = await driver.start(spec);
      try {
        await shOk(driver, handle, `${counterScript('/tmp/counter')} >/dev/null; echo base > /etc/branch`);
        await driver.checkpoint(handle, image, { leaveRunning: true });
        assert.equal(await driver.status(handle), 'running', 'leaveRunning kept the sandbox');
      } finally {
        await driver.destroy(handle);
      }
      const branches: SandboxHandle[] = [];
      try {
        for (let index = 0; index < 2; index++) branches.push(await driver.restore(await context().newSpec(), image));
        await shOk(driver, branches[0] as SandboxHandle, 'echo one > /etc/branch');
        assert.equal(await shOk(driver, branches[1] as SandboxHandle, 'cat /etc/branch'), 'base', 'branches share a root layer');
        for (const branch of branches) {
          const first = Number(await shOk(driver, branch, 'cat /tmp/counter'));
          await eventually(
            () => shOk(driver, branch, 'cat /tmp/counter'),
            (v) => Number(v) > first,
            10_000,
            'branch counter',
          );
        }
      } finally {
        for (const branch of branches) await driver.destroy(branch);
      }
    });

    it('a checkpoint during a running command never costs the session', async (t: TestContext) => {
      const { driver } = context();
      if (skipWithoutCommands(context(), t)) return;
      if (!driver.capabilities.snapshot) return t.skip('driver declares no snapshot capability');
      await withSandbox(context(), {}, async (handle) => {
        const command = sh(driver, handle, 'sleep 3; echo finished', { timeoutMs: 60_000 });
        await sleep(1_500);
        const image = await context().newImageDir();
        const checkpoint = await driver.checkpoint(handle, image, { leaveRunning: false }).then(
          () => 'taken',
          (error: unknown) => (isAirlockError(error, 'SESSION_BUSY') ? 'refused' : Promise.reject(error)),
        );
        if (checkpoint === 'refused') {
          assert.equal(await driver.status(handle), 'running', 'a refused checkpoint must leave the sandbox running');
          const result = await command;
          assert.equal(result.stdout, 'finished\n');
        } else {
          await command.catch(() => undefined);
          const restored = await driver.restore(await context().newSpec(), image);
          try {
            assert.equal(await shOk(driver, restored, 'echo back'), 'back', 'an image taken mid-command must restore');
          } finally {
            await driver.destroy(restored);
          }
        }
      });
    });

    it('pause freezes every process and unpause thaws them', async (t: TestContext) => {
      const { driver } = context();
      if (skipWithoutCommands(context(), t)) return;
      if (!driver.capabilities.pause) return t.skip('driver declares no pause capability');
      await withSandbox(context(), {}, async (handle, spec) => {
        const hostDir = context().workspaceHostDir?.(spec);
        if (hostDir === undefined) {
          // The disk is inside the machine: watch the machine's own clock instead. A frozen guest's clock
          // stops with it, so after the thaw it lags the host by about the time it was paused.
          const uptime = async (): Promise<number> => Number((await shOk(driver, handle, 'cat /proc/uptime')).split(' ')[0]);
          const guestBefore = await uptime();
          const hostBefore = Date.now();
          await driver.pause(handle);
          assert.equal(await driver.status(handle), 'paused');
          await sleep(3_000);
          await driver.unpause(handle);
          assert.equal(await driver.status(handle), 'running');
          const lag = (Date.now() - hostBefore) / 1000 - ((await uptime()) - guestBefore);
          assert.ok(lag > 2, `the guest ran while paused: its clock lags the host by only ${lag.toFixed(2)} s after a 3 s pause`);
          return;
        }
        await shOk(driver, handle, counterScript('/workspace/paused-counter'));
        const file = join(hostDir, 'paused-counter');
        await eventually(
          () => readFile(file, 'utf8').catch(() => '0'),
          (v) => Number(v) > 0,
          10_000,
          'counter',
        );
        await driver.pause(handle);
        assert.equal(await driver.status(handle), 'paused');
        const frozen = Number(await readFile(file, 'utf8'));
        await sleep(1_200);
        assert.equal(Number(await readFile(file, 'utf8')), frozen, 'counter moved while paused');
        await driver.unpause(handle);
        assert.equal(await driver.status(handle), 'running');
        await eventually(
          () => readFile(file, 'utf8'),
          (v) => Number(v) > frozen,
          10_000,
          'counter after unpause',
        );
      });
    });

    it('resize raises the memory limit of a running sandbox', async (t: TestContext) => {
      const { driver } = context();
      if (skipWithoutCommands(context(), t)) return;
      if (!driver.capabilities.resize) return t.skip('driver declares no resize capability');
      await withSandbox(context(), { resources: { memoryMb: 128 } }, async (handle) => {
        await driver.resize(handle, { cpus: 2, memoryMb: 768 });
        // 300 MB in tmpfs is sandbox memory: fatal under the 128 MB it started with (see the memory case).
        const fill = await sh(driver, handle, 'dd if=/dev/zero of=/tmp/fill bs=1M count=300 2>&1 && rm /tmp/fill && echo filled', { timeoutMs: 120_000 });
        assert.equal(fill.exitCode, 0, fill.stdout + fill.stderr);
        assert.match(fill.stdout, /filled/);
        assert.equal(await driver.status(handle), 'running');
      });
    });

    it('runOnce sees the workspace, keeps only /workspace and leaves nothing behind', async (t: TestContext) => {
      const { driver } = context();
      if (skipWithoutCommands(context(), t)) return;
      const base = await context().newSpec();
      const hostDir = context().workspaceHostDir?.(base);
      if (hostDir) await writeFile(join(hostDir, 'seed.txt'), 'seeded');
      else {
        const seeding = await context().newSpec({ sameDiskAs: base, oneShot: { argv: ['sh', '-c', 'printf seeded > /workspace/seed.txt'] } });
        assert.equal((await driver.runOnce(seeding, { cwd: '/', env: {}, timeoutMs: 60_000 })).exitCode, 0, 'seeding the workspace');
      }
      const first = await context().newSpec({
        sameDiskAs: base,
        oneShot: { argv: ['sh', '-c', 'cat /workspace/seed.txt; echo; echo x > /etc/once; sleep 300 & echo $! > /workspace/bg.pid; echo done'] },
      });
      const stdout: Buffer[] = [];
      const outcome = await driver.runOnce(first, { cwd: '/workspace', env: {}, timeoutMs: 60_000, onStdout: (chunk) => stdout.push(chunk) });
      assert.equal(outcome.exitCode, 0);
      assert.equal(Buffer.concat(stdout).toString(), 'seeded\ndone\n');
      // A driver may tear the sandbox down after the command answered (off the caller's path): it goes within seconds.
      await assertGoneSoon(context(), first.sandboxId, 'runOnce left its sandbox (or its background sleep) behind');

      const second = await context().newSpec({
        sameDiskAs: base,
        oneShot: { argv: ['sh', '-c', 'cat /workspace/bg.pid >/dev/null && ! cat /etc/once 2>/dev/null'] },
      });
      assert.equal((await driver.runOnce(second, { cwd: '/', env: {}, timeoutMs: 60_000 })).exitCode, 0, 'root writes of a per-call sandbox must be discarded');

      const slow = await context().newSpec({ sameDiskAs: base, oneShot: { argv: ['sleep', '300'] } });
      const killed = await driver.runOnce(slow, { cwd: '/', env: {}, timeoutMs: 1_500 });
      assert.equal(killed.timedOut, true);
      assert.equal(killed.exitCode, 137);
      await assertGoneSoon(context(), slow.sandboxId, 'a timed-out runOnce left its sandbox behind');
    });

    it('destroy removes everything and can be repeated', async (t: TestContext) => {
      const { driver } = context();
      if (skipWithoutCommands(context(), t)) return;
      const spec = await context().newSpec();
      const handle = await driver.start(spec);
      await shOk(driver, handle, 'sleep 300 >/dev/null 2>&1 & echo started');
      assert.notDeepEqual(await context().leftovers(handle.sandboxId), [], 'leftovers() sees a live sandbox');
      await driver.destroy(handle);
      assert.equal(await driver.status(handle), 'missing');
      assert.deepEqual(await context().leftovers(handle.sandboxId), []);
      await driver.destroy(handle);
      assert.ok(!(await driver.list()).some((listing) => listing.sandboxId === handle.sandboxId), 'destroyed sandbox still listed');
    });
  });
}
