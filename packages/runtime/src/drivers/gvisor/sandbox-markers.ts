/**
 * Facts about a sandbox's own state that its checkpoints carry: what its
 * first process is. Each is a marker file in the
 * sandbox's state dir; a checkpoint copies the markers into its image, and a
 * restore reads them back from the image, since a restore keeps the state
 * the image was taken with whatever the new spec says.
 */
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';

/** One fact, as a file named `name` in a state dir or an image dir. */
export class SandboxMarker {
  constructor(private readonly name: string) {}

  /** Whether `dir` (a state dir or an image) holds the marker. */
  async isIn(dir: string): Promise<boolean> {
    return access(join(dir, this.name)).then(
      () => true,
      () => false,
    );
  }

  /** Puts the marker in `dir`. */
  async put(dir: string): Promise<void> {
    await writeFile(join(dir, this.name), '');
  }
}

/**
 * The sandbox's first process is the agent (protocol 1.x), which also
 * bounded its /proc at boot. Sandboxes and images without it come from an
 * Airlock whose init was a busybox shell: they are refused
 * (SANDBOX_INCOMPATIBLE, SNAPSHOT_INCOMPATIBLE).
 */
export const AGENT_INIT = new SandboxMarker('airlock-agent-v1');

/** The sandbox's mounts carry the contract's filesystem rules (filesystem-mounts.ts); a restore must keep them. */
export const RULE_MOUNTS = new SandboxMarker('airlock-rule-mounts-v1');

/** Copies every marker of the sandbox whose state dir is `stateDir` into a checkpoint image in the making. */
export async function markCheckpointImage(stateDir: string, imageDir: string): Promise<void> {
  for (const marker of [AGENT_INIT, RULE_MOUNTS]) {
    if (await marker.isIn(stateDir)) await marker.put(imageDir);
  }
}

/** Refuses a checkpoint image taken before machines had the agent, with what to do instead. */
export async function requireAgentImage(imageDir: string): Promise<void> {
  if (await AGENT_INIT.isIn(imageDir)) return;
  throw new AirlockError(
    'SNAPSHOT_INCOMPATIBLE',
    `the memory image ${imageDir} was taken by an older Airlock whose machines had no agent, and this version cannot restore it; ` +
      "start a new session (or fork a snapshot taken by this version); the session's disk is kept, so its files stay reachable through `files` and `exec --ephemeral`",
    { details: { imageDir } },
  );
}
