/**
 * The conformance suite against the fake driver: it runs no commands, so
 * every case that needs a process skips saying so, and what remains (driver
 * spec v2: naming, handles, listings, volumes, ids, identity checks, pause,
 * checkpoint/restore, destroy) must pass for it as for a real driver. Run
 * twice: as a directory driver and as a block-device one.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_RESOURCES, runDriverConformance, type ConformanceContext, type SpecOptions } from '../../../src/drivers/conformance/driver-conformance.js';
import { FakeDriver } from '../../../src/drivers/fake/fake-driver.js';
import type { SandboxSpec, SandboxVolume } from '../../../src/core/sandbox-driver.js';

function fakeContext(kind: SandboxVolume['kind']): () => Promise<ConformanceContext> {
  return async () => {
    const driver = new FakeDriver({ name: `fake-${kind}`, volumes: { rootfs: kind, disk: kind }, capabilities: { sharedDisk: kind === 'directory' } });
    let counter = 0;
    // The fake's files live in its disk directories (block devices too: a directory stands for the image).
    const base = mkdtempSync(join(tmpdir(), 'airlock-fake-conformance-'));
    return {
      driver,
      runsNoCommands: 'the fake driver runs no processes: it answers every exec from a handler',
      hostSecret: { path: '/nonexistent/secret', content: 'never-read' },
      async newSpec(options: SpecOptions = {}): Promise<SandboxSpec> {
        counter += 1;
        const sessionId = options.sameDiskAs?.sessionId ?? `session-${counter}`;
        return {
          sandboxId: `f${counter}-${randomBytes(3).toString('hex')}`,
          sessionId,
          rootfs: { kind, path: '/images/test' },
          disk: { kind, path: join(base, 'disks', sessionId) },
          stateDir: `/state/${counter}`,
          hostname: `box-${counter}`,
          resources: { ...DEFAULT_RESOURCES, ...options.resources },
          env: options.env ?? {},
        };
      },
      newImageDir: async () => `/images/checkpoint-${(counter += 1)}`,
      leftovers: async (sandboxId) => (driver.sandboxes.has(sandboxId) ? [`fake sandbox ${sandboxId}`] : []),
      imageFingerprint: async () => 'unchanged',
      dispose: async () => rmSync(base, { recursive: true, force: true }),
    };
  };
}

runDriverConformance('fake (directory volumes)', fakeContext('directory'));
runDriverConformance('fake (block-device volumes)', fakeContext('block-device'));
