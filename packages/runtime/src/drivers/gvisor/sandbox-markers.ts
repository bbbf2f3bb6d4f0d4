/**
 * Facts about a sandbox's own state that its checkpoints carry: what its
 * init speaks, whether its /proc is bounded. Each is a marker file in the
 * sandbox's state dir; a checkpoint copies the markers into its image, and a
 * restore reads them back from the image, since a restore keeps the state
 * the image was taken with whatever the new spec says.
 */
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

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

/** The sandbox's init speaks the current relay protocol (relay-protocol.ts). */
export const CURRENT_RELAY = new SandboxMarker('airlock-relay-v2');
/** The sandbox's /proc is the procfs with a bounded dentry cache (proc-dentry-cache.ts). */
export const BOUNDED_PROC = new SandboxMarker('airlock-bounded-proc');

/** The sandbox's mounts carry the contract's filesystem rules (filesystem-mounts.ts); a restore must keep them. */
export const RULE_MOUNTS = new SandboxMarker('airlock-rule-mounts-v1');

/** Copies every marker of the sandbox whose state dir is `stateDir` into a checkpoint image in the making. */
export async function markCheckpointImage(stateDir: string, imageDir: string): Promise<void> {
  for (const marker of [CURRENT_RELAY, BOUNDED_PROC, RULE_MOUNTS]) {
    if (await marker.isIn(stateDir)) await marker.put(imageDir);
  }
}
