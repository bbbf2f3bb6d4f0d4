/**
 * Conformance cases about the identity of restored sandboxes: branches of
 * one checkpoint start as clones (same hostname, machine id, memory), and
 * `personalize` must make them distinct; kernel randomness must differ per
 * branch even for a process that was running at the checkpoint.
 */
import assert from 'node:assert/strict';
import { describe, it, type TestContext } from 'node:test';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import { shOk, skipWithoutCommands, type ConformanceContext } from './conformance-context.js';

// Reads 16 bytes of /dev/urandom each time /tmp/ask appears; started before the checkpoint.
const READER = `while :; do if [ -e /tmp/ask ]; then rm -f /tmp/ask; head -c16 /dev/urandom | od -An -tx1 | tr -d ' \\n' > /tmp/answer; fi; sleep 0.05; done </dev/null >/dev/null 2>&1 &`;
const ASK = 'rm -f /tmp/answer; touch /tmp/ask; i=0; while [ ! -s /tmp/answer ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; cat /tmp/answer';

/** Registers the identity cases. */
export function identityCases(getContext: () => ConformanceContext): void {
  describe('identity of restored sandboxes', () => {
    it('personalize gives each branch its own hostname and machine id; urandom differs, also in a process running at the checkpoint', async (t: TestContext) => {
      const { driver } = getContext();
      if (skipWithoutCommands(getContext(), t)) return;
      if (!driver.capabilities.snapshot || !driver.capabilities.fork) return t.skip('driver declares no snapshot/fork capability');
      const image = await getContext().newImageDir();
      const handle = await driver.start(await getContext().newSpec());
      try {
        await shOk(driver, handle, READER);
        await driver.checkpoint(handle, image, { leaveRunning: false });
      } finally {
        await driver.destroy(handle);
      }
      const branches: SandboxHandle[] = [];
      try {
        for (let index = 0; index < 2; index++) branches.push(await driver.restore(await getContext().newSpec(), image));
        const identities = [0, 1].map((index) => ({
          hostname: `branch-${index}`,
          machineId: `${index}`.repeat(32),
          entropy: new Uint8Array(64).fill(index + 1),
        }));
        const seen: string[][] = [];
        for (const [index, branch] of branches.entries()) {
          const identity = identities[index] ?? assert.fail('no identity');
          await driver.personalize(branch, identity);
          const lines = (await shOk(driver, branch, `hostname; cat /etc/machine-id; ${ASK}`)).split('\n');
          assert.equal(lines[0], identity.hostname);
          assert.equal(lines[1], identity.machineId);
          seen.push(lines);
        }
        assert.notEqual(seen[0]?.[2], seen[1]?.[2], 'the running process read different /dev/urandom bytes in each branch');
        assert.match(seen[0]?.[2] ?? '', /^[0-9a-f]{32}$/);
        await assert.rejects(
          driver.personalize(branches[0] as SandboxHandle, { hostname: 'bad name;', machineId: '0'.repeat(32), entropy: new Uint8Array(8) }),
          { code: 'INVALID_ARGUMENTS' },
        );
      } finally {
        for (const branch of branches) await driver.destroy(branch);
      }
    });
  });
}
