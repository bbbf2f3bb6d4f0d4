/**
 * Conformance cases about driver spec v2 itself, which even a driver that
 * runs no commands (the fake) must honour: it names its sandboxes, every
 * handle carries its name, listings carry the session, volumes in a form it
 * does not take are refused, an id is never reused, a bad identity is
 * refused, pause and checkpoint/restore move the status as declared, and
 * destroy is final and repeatable. One sandbox serves the whole block.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { isAirlockError } from '../../core/errors.js';
import type { SandboxHandle, SandboxSpec, SandboxVolume } from '../../core/sandbox-driver.js';
import type { ConformanceContext } from './conformance-context.js';

const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** Registers the specification cases. */
export function specificationCases(getContext: () => ConformanceContext): void {
  describe('driver specification v2', () => {
    let spec: SandboxSpec;
    let handle: SandboxHandle | undefined;
    const restored: SandboxHandle[] = [];
    const context = (): ConformanceContext => getContext();

    before(async () => {
      spec = await context().newSpec();
      handle = await context().driver.start(spec);
    });
    after(async () => {
      for (const each of [...restored, ...(handle ? [handle] : [])]) await context().driver.destroy(each);
    });

    it('names its sandboxes: distinct per generation and per call, safe as paths, never parsed by core', () => {
      const { driver } = context();
      const ids = [
        driver.sandboxIdFor({ sessionId: 'ses_abc', purpose: 'machine', generation: 1 }),
        driver.sandboxIdFor({ sessionId: 'ses_abc', purpose: 'machine', generation: 2 }),
        driver.sandboxIdFor({ sessionId: 'ses_abc', purpose: 'per-call', nonce: 'n1' }),
        driver.sandboxIdFor({ sessionId: 'ses_abc', purpose: 'per-call', nonce: 'n2' }),
        driver.sandboxIdFor({ sessionId: 'ses_xyz', purpose: 'machine', generation: 1 }),
      ];
      assert.equal(new Set(ids).size, ids.length, `ids collide: ${ids.join(', ')}`);
      for (const id of ids) assert.match(id, SAFE_ID);
      assert.equal(driver.specificationVersion, 'v2');
    });

    it('a handle carries the driver name and its session; the sandbox is listed with its session', async () => {
      const { driver } = context();
      assert.ok(handle);
      assert.equal(handle.driver, driver.name);
      assert.equal(handle.sessionId, spec.sessionId);
      assert.equal(await driver.status(handle), 'running');
      const listing = (await driver.list()).find((entry) => entry.sandboxId === spec.sandboxId);
      assert.ok(listing, 'a running sandbox is missing from list()');
      assert.equal(listing.sessionId, spec.sessionId);
    });

    it('refuses a second sandbox with an id in use, and leaves the first alone', async () => {
      const { driver } = context();
      await assert.rejects(driver.start({ ...spec, stateDir: `${spec.stateDir}-again` }), (error: unknown) => isAirlockError(error, 'INVALID_STATE'));
      assert.equal(await driver.status(handle as SandboxHandle), 'running');
    });

    it('refuses volumes in a form it does not take, leaving nothing behind', async () => {
      const { driver } = context();
      const other = await context().newSpec();
      const flip = (volume: SandboxVolume): SandboxVolume => ({ kind: volume.kind === 'directory' ? 'block-device' : 'directory', path: volume.path });
      for (const wrong of [
        { ...other, rootfs: flip(other.rootfs) },
        { ...other, disk: flip(other.disk) },
      ]) {
        await assert.rejects(driver.start(wrong), (error: unknown) => isAirlockError(error, 'INVALID_ARGUMENTS'));
      }
      assert.ok(!(await driver.list()).some((entry) => entry.sandboxId === other.sandboxId), 'a refused spec left a sandbox');
      assert.deepEqual(await context().leftovers(other.sandboxId), []);
    });

    it('refuses an identity that is not a hostname and a machine id', async () => {
      const { driver } = context();
      await assert.rejects(
        driver.personalize(handle as SandboxHandle, { hostname: 'bad name;', machineId: '0'.repeat(32), entropy: new Uint8Array(64) }),
        (error: unknown) => isAirlockError(error, 'INVALID_ARGUMENTS'),
      );
      await assert.rejects(
        driver.personalize(handle as SandboxHandle, { hostname: 'fine', machineId: 'not-hex', entropy: new Uint8Array(64) }),
        (error: unknown) => isAirlockError(error, 'INVALID_ARGUMENTS'),
      );
    });

    it('pause and unpause move the status when the driver declares pause', async (t: TestContext) => {
      const { driver } = context();
      if (!driver.capabilities.pause) return t.skip('driver declares no pause capability');
      await driver.pause(handle as SandboxHandle);
      assert.equal(await driver.status(handle as SandboxHandle), 'paused');
      await driver.unpause(handle as SandboxHandle);
      assert.equal(await driver.status(handle as SandboxHandle), 'running');
    });

    it('a checkpoint without leaveRunning ends the sandbox; a restore under a new id runs again', async (t: TestContext) => {
      const { driver } = context();
      if (!driver.capabilities.snapshot) return t.skip('driver declares no snapshot capability');
      const image = await context().newImageDir();
      await driver.checkpoint(handle as SandboxHandle, image, { leaveRunning: false });
      assert.ok(['missing', 'stopped'].includes(await driver.status(handle as SandboxHandle)), 'the checkpointed sandbox still runs');
      const next = await driver.restore(await context().newSpec({ sameDiskAs: spec }), image);
      restored.push(next);
      assert.equal(next.driver, driver.name);
      assert.equal(await driver.status(next), 'running');
    });

    it('destroy is final and can be repeated', async () => {
      const { driver } = context();
      for (const each of [...restored, handle as SandboxHandle]) {
        await driver.destroy(each);
        await driver.destroy(each);
        assert.equal(await driver.status(each), 'missing');
        assert.deepEqual(await context().leftovers(each.sandboxId), []);
      }
      restored.length = 0;
      handle = undefined;
    });
  });
}
