/**
 * Which relay a sandbox's init speaks. A restore keeps the init and JOB
 * scripts the image was checkpointed with, whatever the new spec says
 * (measured on runsc 20240729), so a sandbox restored from an image taken
 * before the current protocol, or started by an older Airlock, still parks
 * slots of the first kind and needs the legacy relay. A sandbox started with
 * the current init gets a marker in its state dir; checkpoints copy it into
 * the image and restores of a marked image carry it on.
 */
import { RELAY_SCRIPT } from './in-sandbox-scripts.js';
import { LEGACY_RELAY_SCRIPT } from './legacy-relay-script.js';
import { CURRENT_RELAY } from './sandbox-markers.js';

/** Records the protocol of a sandbox just started (`imageDir` undefined) or restored from `imageDir`. */
export async function recordRelayProtocol(stateDir: string, imageDir?: string): Promise<void> {
  if (imageDir === undefined || (await CURRENT_RELAY.isIn(imageDir))) await CURRENT_RELAY.put(stateDir);
}

/** The relay script for the sandbox whose state dir is `stateDir`. */
export async function relayScriptFor(stateDir: string): Promise<string> {
  return (await CURRENT_RELAY.isIn(stateDir)) ? RELAY_SCRIPT : LEGACY_RELAY_SCRIPT;
}
