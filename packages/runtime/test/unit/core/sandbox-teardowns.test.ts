import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxTeardowns } from '../../../src/core/sandbox-teardowns.js';
import type { SandboxDriver, SandboxHandle } from '../../../src/core/sandbox-driver.js';

/** A driver whose destroys end only when the test lets them. */
function gatedDriver(): { driver: SandboxDriver; gates: (() => void)[]; destroyed: string[] } {
  const gates: (() => void)[] = [];
  const destroyed: string[] = [];
  const driver = {
    destroy: (handle: SandboxHandle) =>
      new Promise<void>((resolve) =>
        gates.push(() => {
          destroyed.push(handle.sandboxId);
          resolve();
        }),
      ),
  } as unknown as SandboxDriver;
  return { driver, gates, destroyed };
}

const handle = (index: number): SandboxHandle => ({ sandboxId: `sandbox-${index}`, sessionId: `ses_${index}`, driverData: {} });
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('SandboxTeardowns', () => {
  it('returns at once while few teardowns are pending, four at a time, and makes a caller wait once they fall behind', async () => {
    const { driver, gates, destroyed } = gatedDriver();
    const teardowns = new SandboxTeardowns();
    for (let index = 0; index < 8; index++) await teardowns.release(driver, handle(index));
    assert.equal(gates.length, 4, 'four teardowns run at once');
    assert.equal(teardowns.pending, 8);
    let ninthReturned = false;
    const ninth = teardowns.release(driver, handle(8)).then(() => (ninthReturned = true));
    await tick();
    assert.equal(ninthReturned, false, 'behind: the ninth caller waits for its own teardown');
    while (!ninthReturned) {
      gates.shift()?.();
      await tick();
    }
    await ninth;
    assert.ok(destroyed.includes('sandbox-8'), 'it returned once its sandbox was destroyed');
    const draining = teardowns.drain();
    while (teardowns.pending > 0) {
      gates.shift()?.();
      await tick();
    }
    await draining;
    assert.equal(destroyed.length, 9);
  });

  it('reports a failed teardown and goes on with the rest', async () => {
    const failures: string[] = [];
    const teardowns = new SandboxTeardowns((what) => failures.push(what));
    const driver = { destroy: async (target: SandboxHandle) => Promise.reject(new Error(`cannot remove ${target.sandboxId}`)) } as unknown as SandboxDriver;
    await teardowns.release(driver, handle(1));
    await teardowns.release(driver, handle(2));
    await teardowns.drain();
    assert.deepEqual(failures, ['tearing down sandbox sandbox-1', 'tearing down sandbox sandbox-2']);
  });
});
