/**
 * Builds what a driver needs to start or restore a session's next sandbox:
 * its id (the driver's naming of session and generation), its disk and root
 * filesystem in the form the driver takes (a mounted directory, or a block
 * device for a VM), its image and, for a networked contract, its network.
 * Shared by create, resume, fork and per-call runs, so that every
 * incarnation of a session looks the same.
 */
import type { SandboxDriver, SandboxSpec, SandboxVolume } from './sandbox-driver.js';
import type { SandboxDrivers } from './sandbox-drivers.js';
import type { SessionDisks } from './session-disks.js';
import type { SessionNetworks } from './session-networks.js';
import type { ImageCatalog, ImageRecord } from './image-catalog.js';
import type { SessionRecord } from './session.js';

/** Host locations the service hands to the driver. */
export interface SessionLayout {
  sandboxStateDir(sandboxId: string): string;
}

/** Makes sandbox specs of sessions. */
export class SandboxSpecs {
  constructor(
    private readonly deps: {
      drivers: SandboxDrivers;
      disks: SessionDisks;
      images: ImageCatalog;
      layout: SessionLayout;
      networks?: SessionNetworks | undefined;
    },
  ) {}

  /** The spec of the session's next machine (or of a per-call sandbox, given its nonce): mounts or attaches its disk, opens its network. */
  async specFor(session: SessionRecord, image: ImageRecord, perCallNonce?: string): Promise<SandboxSpec> {
    const driver = this.deps.drivers.forSession(session);
    const sandboxId = driver.sandboxIdFor(
      perCallNonce === undefined
        ? { sessionId: session.id, purpose: 'machine', generation: session.generation }
        : { sessionId: session.id, purpose: 'per-call', nonce: perCallNonce },
    );
    const disk = await this.diskVolume(driver, session.id);
    const rootfs = await this.rootfsVolume(driver, image);
    const net = await this.deps.networks?.prepare(session, image);
    return {
      sandboxId,
      sessionId: session.id,
      rootfs,
      disk,
      stateDir: this.deps.layout.sandboxStateDir(sandboxId),
      hostname: session.id.replace(/_/g, '-'),
      resources: session.resources,
      env: net ? { ...image.env, ...net.env } : image.env,
      ...(net ? { network: net.network } : {}),
      filesystem: session.contract.filesystem,
    };
  }

  /**
   * The spec of a warm pool's machine: like a session's first machine, under the pool id, with the image's
   * environment only (sessions with a network never come from a pool).
   */
  async specForPool(
    poolId: string,
    driver: SandboxDriver,
    image: ImageRecord,
    resources: SessionRecord['resources'],
    filesystem: SessionRecord['contract']['filesystem'],
  ): Promise<SandboxSpec> {
    const sandboxId = driver.sandboxIdFor({ sessionId: poolId, purpose: 'machine', generation: 1 });
    return {
      sandboxId,
      sessionId: poolId,
      rootfs: await this.rootfsVolume(driver, image),
      disk: await this.diskVolume(driver, poolId),
      stateDir: this.deps.layout.sandboxStateDir(sandboxId),
      hostname: poolId.replace(/_/g, '-'),
      resources,
      env: image.env,
      filesystem,
    };
  }

  /** The image's root filesystem in the form the driver takes. */
  private async rootfsVolume(driver: SandboxDriver, image: ImageRecord): Promise<SandboxVolume> {
    return driver.volumes.rootfs === 'directory'
      ? { kind: 'directory', path: image.rootfsDir }
      : { kind: 'block-device', path: await this.deps.images.rootfsBlockDevice(image.name) };
  }

  /** The session disk in the form the driver takes: mounted on the host, or unmounted for a VM to attach. */
  async diskVolume(driver: SandboxDriver, sessionId: string): Promise<SandboxVolume> {
    return driver.volumes.disk === 'directory'
      ? { kind: 'directory', path: await this.deps.disks.ensureMounted(sessionId) }
      : { kind: 'block-device', path: await this.deps.disks.blockDevice(sessionId) };
  }
}
