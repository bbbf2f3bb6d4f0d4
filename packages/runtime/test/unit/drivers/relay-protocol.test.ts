/**
 * Which relay the driver uses for a sandbox: the current one when its init
 * is current (started by this driver, or restored from an image it marked),
 * the legacy one for a sandbox restored from an older image.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RELAY_SCRIPT } from '../../../src/drivers/gvisor/in-sandbox-scripts.js';
import { LEGACY_RELAY_SCRIPT } from '../../../src/drivers/gvisor/legacy-relay-script.js';
import { recordRelayProtocol, relayScriptFor } from '../../../src/drivers/gvisor/relay-protocol.js';
import { markCheckpointImage } from '../../../src/drivers/gvisor/sandbox-markers.js';

function dirs(): { base: string; state: (name: string) => string; image: (name: string) => string } {
  const base = mkdtempSync(join(tmpdir(), 'airlock-relay-protocol-'));
  const make = (name: string): string => {
    const path = join(base, name);
    mkdirSync(path);
    return path;
  };
  return { base, state: make, image: make };
}

describe('relay protocol of a sandbox', () => {
  it('is the current one for a fresh start and for restores of images it marked', async () => {
    const { base, state, image } = dirs();
    try {
      const started = state('started');
      await recordRelayProtocol(started);
      assert.equal(await relayScriptFor(started), RELAY_SCRIPT);
      const taken = image('taken');
      await markCheckpointImage(started, taken);
      const restored = state('restored');
      await recordRelayProtocol(restored, taken);
      assert.equal(await relayScriptFor(restored), RELAY_SCRIPT);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('is the legacy one for a sandbox restored from an older image, and stays so in its images', async () => {
    const { base, state, image } = dirs();
    try {
      const restored = state('restored');
      await recordRelayProtocol(restored, image('older'));
      assert.equal(await relayScriptFor(restored), LEGACY_RELAY_SCRIPT);
      const taken = image('taken');
      await markCheckpointImage(restored, taken);
      const again = state('again');
      await recordRelayProtocol(again, taken);
      assert.equal(await relayScriptFor(again), LEGACY_RELAY_SCRIPT);
      // A sandbox started by an older driver has no record at all.
      assert.equal(await relayScriptFor(state('unrecorded')), LEGACY_RELAY_SCRIPT);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
