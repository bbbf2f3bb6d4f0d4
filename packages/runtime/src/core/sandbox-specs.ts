/**
 * Builds what the driver needs to start or restore a session's next sandbox:
 * its id (session and generation), its mounted disk, its image and, for a
 * networked contract, its network. Shared by create, resume, fork and
 * per-call runs, so that every incarnation of a session looks the same.
 */
import type { SandboxSpec } from './sandbox-driver.js';
import type { SessionDisks } from './session-disks.js';
import type { SessionNetworks } from './session-networks.js';
import type { ImageRecord } from './image-catalog.js';
import type { SessionRecord } from './session.js';

/** Host locations the service hands to the driver. */
export interface SessionLayout {
  sandboxStateDir(sandboxId: string): string;
}

/** Makes sandbox specs of sessions. */
export class SandboxSpecs {
  constructor(private readonly deps: { disks: SessionDisks; layout: SessionLayout; networks?: SessionNetworks | undefined }) {}

  /** The spec of the session's incarnation `generation` (mounts its disk, opens its network). */
  async specFor(session: SessionRecord, image: ImageRecord, generation: number = session.generation): Promise<SandboxSpec> {
    const diskDir = await this.deps.disks.ensureMounted(session.id);
    const sandboxId = `airlock-${session.id}-g${generation}`;
    const net = await this.deps.networks?.prepare(session, image);
    return {
      sandboxId,
      sessionId: session.id,
      rootfsDir: image.rootfsDir,
      diskDir,
      stateDir: this.deps.layout.sandboxStateDir(sandboxId),
      hostname: session.id.replace(/_/g, '-'),
      resources: session.resources,
      env: net ? { ...image.env, ...net.env } : image.env,
      ...(net ? { network: net.network } : {}),
    };
  }

  /** Where the driver keeps the files of a sandbox. */
  stateDir(sandboxId: string): string {
    return this.deps.layout.sandboxStateDir(sandboxId);
  }
}
