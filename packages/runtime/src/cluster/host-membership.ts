/**
 * This host's membership of a cluster, as `airlock serve --advertise` makes
 * it: its capacity from the host's size, its sandbox runtime's version for
 * placement, drains through the session service, and what dropping a lost
 * session means on this host (its machines, then its disk).
 */
import { cpus, totalmem } from 'node:os';
import type { SandboxDriver } from '../core/sandbox-driver.js';
import type { SandboxDrivers } from '../core/sandbox-drivers.js';
import type { SessionDisks } from '../core/session-disks.js';
import type { SessionService } from '../core/session-service.js';
import type { Store } from '../core/store.js';
import type { Clock } from '../core/clock.js';
import type { ClusterSettings } from './cluster-options.js';
import { hostCapacity, NodeMembership } from './node-membership.js';

/** What the membership of this host is made from. */
export interface HostMembershipDeps {
  store: Store;
  sessions: SessionService;
  drivers: SandboxDrivers;
  disks: SessionDisks;
  clock: Clock;
  nodeId: string;
  settings: ClusterSettings;
  airlockVersion: string;
  /** machines this node takes at most; default one per 512 MiB of host memory */
  maxSessions?: number;
  log(message: string): void;
}

/** The membership of this host (not yet joined). */
export async function hostMembership(deps: HostMembershipDeps): Promise<NodeMembership> {
  const { sessions, drivers, disks, settings } = deps;
  return new NodeMembership({
    store: deps.store,
    records: sessions.records,
    clock: deps.clock,
    self: {
      id: deps.nodeId,
      address: settings.address,
      capacity: hostCapacity(cpus().length, Math.floor(totalmem() / 1048576), deps.maxSessions),
      runtimeVersion: await runtimeVersionOf(drivers.default),
      airlockVersion: deps.airlockVersion,
    },
    leaseMs: settings.leaseMs,
    suspend: (sessionId) => sessions.suspend(sessionId, 'drain', 'airlock'),
    dropLocal: async (sessionId) => {
      // A call still running here ends first (its last write is refused: LEASE_LOST), for at most a lease.
      let patience: NodeJS.Timeout | undefined;
      await Promise.race([
        sessions.locks.exclusive(sessionId, async () => undefined),
        new Promise((resolve) => (patience = setTimeout(resolve, settings.leaseMs))),
      ]);
      clearTimeout(patience);
      // What this host still has of a session another node now holds: its machines, then its disk.
      for (const driver of drivers.all()) {
        for (const sandbox of await driver.list()) {
          if (sandbox.sessionId === sessionId) await driver.destroy({ sandboxId: sandbox.sandboxId, sessionId, driver: driver.name, driverData: {} });
        }
      }
      if ((await disks.list()).includes(sessionId)) await disks.destroy(sessionId);
    },
    log: deps.log,
  });
}

/** The sandbox runtime's version, as nodes compare it for placement (a snapshot restores only on the runtime that took it). */
async function runtimeVersionOf(driver: SandboxDriver): Promise<string> {
  const facts = (await driver.describeRuntime?.().catch(() => undefined)) ?? {};
  return [driver.name, ...Object.entries(facts).map(([key, value]) => `${key}=${value}`)].join(' ');
}
