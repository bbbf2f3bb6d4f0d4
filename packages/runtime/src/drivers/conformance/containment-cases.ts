/**
 * Conformance cases about containment: a fork bomb meets the process limit
 * and the sandbox survives; an allocation past the memory limit fails or kills
 * only that sandbox, reported as SANDBOX_DIED, and so does killing its init.
 * The host and the other sandboxes stay fine.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { describe, it, type TestContext } from 'node:test';
import { isAirlockError } from '../../core/errors.js';
import { sh, shOk, withSandbox, skipWithoutCommands, type ConformanceContext } from './conformance-context.js';

/** Registers the containment cases. */
export function containmentCases(getContext: () => ConformanceContext): void {
  describe('containment', () => {
    const context = (): ConformanceContext => getContext();

    it('contains a fork bomb with the process limit; the sandbox survives', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      const hostBefore = await hostProcessCount();
      await withSandbox(context(), { resources: { maxProcesses: 32 } }, async (handle) => {
        const bomb = await sh(driver, handle, 'bomb() { bomb | bomb & }; bomb; sleep 2; echo still-here', { timeoutMs: 20_000 });
        assert.ok(
          bomb.timedOut || bomb.exitCode === 0 || bomb.exitCode === 2,
          `unexpected bomb outcome ${JSON.stringify({ ...bomb, stdout: '', stderr: bomb.stderr.slice(0, 200) })}`,
        );
        assert.match(bomb.stderr, /fork|Resource temporarily unavailable/i, 'the process limit never bit');
        assert.equal(await driver.status(handle), 'running');
        assert.equal(await shOk(driver, handle, 'echo alive'), 'alive');
        // The host is unaffected: the sandbox's processes live in its sentry, not as host processes.
        assert.ok((await hostProcessCount()) < hostBefore + 200, 'host process count exploded');
      });
    });

    it('enforces the memory limit: the allocation fails or the sandbox dies as SANDBOX_DIED', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      await withSandbox(context(), { resources: { memoryMb: 128 } }, async (handle) => {
        try {
          const fill = await sh(driver, handle, 'dd if=/dev/zero of=/tmp/fill bs=1M count=600 2>&1; echo rc=$?', { timeoutMs: 120_000 });
          assert.ok(!/rc=0/.test(fill.stdout) || fill.exitCode !== 0, `600 MB fitted into a 128 MB sandbox: ${fill.stdout}`);
        } catch (error) {
          assert.ok(isAirlockError(error, 'SANDBOX_DIED'), `expected SANDBOX_DIED, got ${String(error)}`);
          assert.match((error as Error).message, /ran out of memory.*its disk is kept/);
          assert.ok(['stopped', 'missing'].includes(await driver.status(handle)));
          await assert.rejects(sh(driver, handle, 'echo hi'), (next: unknown) => isAirlockError(next, 'SANDBOX_DIED'));
        }
      });
      // Other sandboxes and the host are fine.
      await withSandbox(context(), {}, async (handle) => assert.equal(await shOk(driver, handle, 'echo ok'), 'ok'));
    });

    it('a command that ends the machine (kills pid 1, or powers off a guest kernel that protects it) ends only its own sandbox, reported as SANDBOX_DIED with that cause', async (t: TestContext) => {
      if (skipWithoutCommands(context(), t)) return;
      const { driver } = context();
      await withSandbox(context(), {}, async (handle) => {
        // A Linux guest ignores SIGKILL to its pid 1 from inside: there the same command powers the machine off.
        await sh(driver, handle, 'kill -9 1; sleep 2; poweroff -f; sleep 5', { timeoutMs: 30_000 }).catch(() => undefined);
        await assert.rejects(sh(driver, handle, 'echo hi'), (error: unknown) => {
          assert.ok(isAirlockError(error, 'SANDBOX_DIED'), `expected SANDBOX_DIED, got ${String(error)}`);
          assert.match((error as Error).message, /init process ended/);
          assert.doesNotMatch((error as Error).message, /ran out of memory/);
          return true;
        });
      });
      await withSandbox(context(), {}, async (handle) => assert.equal(await shOk(driver, handle, 'echo ok'), 'ok'));
    });
  });
}

async function hostProcessCount(): Promise<number> {
  return (await readdir('/proc')).filter((entry) => /^\d+$/.test(entry)).length;
}
