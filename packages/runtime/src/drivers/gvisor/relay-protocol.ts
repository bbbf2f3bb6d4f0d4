/**
 * Which relay a sandbox's init speaks. A restore keeps the init and JOB
 * scripts the image was checkpointed with, whatever the new spec says
 * (measured on runsc 20240729), so a sandbox restored from an image taken
 * before the current protocol, or started by an older Airlock, still parks
 * slots of the first kind and needs the legacy relay. A sandbox started with
 * the current init gets a marker in its state dir; checkpoints copy it into
 * the image and restores of a marked image carry it on.
 */
import { access, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { RELAY_SCRIPT } from './in-sandbox-scripts.js';
import { LEGACY_RELAY_SCRIPT } from './legacy-relay-script.js';

/** In a sandbox's state dir, and in the images taken of it, when its init is the current one. */
const MARKER = 'airlock-relay-v2';

/** Records the protocol of a sandbox just started (`imageDir` undefined) or restored from `imageDir`. */
export async function recordRelayProtocol(stateDir: string, imageDir?: string): Promise<void> {
  if (imageDir === undefined || (await exists(join(imageDir, MARKER)))) await writeFile(join(stateDir, MARKER), '');
}

/** Marks a checkpoint image in the making when its sandbox speaks the current protocol. */
export async function markImageOfRelayProtocol(stateDir: string, imageDir: string): Promise<void> {
  if (await exists(join(stateDir, MARKER))) await writeFile(join(imageDir, MARKER), '');
}

/** The relay script for the sandbox whose state dir is `stateDir`. */
export async function relayScriptFor(stateDir: string): Promise<string> {
  return (await exists(join(stateDir, MARKER))) ? RELAY_SCRIPT : LEGACY_RELAY_SCRIPT;
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
