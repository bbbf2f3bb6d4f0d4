/**
 * What the gVisor driver keeps in a SandboxHandle, and the runsc container
 * id of a sandbox.
 */
import { AirlockError } from '../../core/errors.js';
import type { SandboxHandle } from '../../core/sandbox-driver.js';

/** Every runsc container id of this driver starts with this, so `list` finds only ours. */
export const CONTAINER_PREFIX = 'airlock-';

/** What the driver stores in `SandboxHandle.driverData`. */
export interface GvisorHandleData {
  stateDir: string;
  diskDir: string;
  /** RLIMIT_NPROC of the sandbox's commands; absent in handles stored by older versions */
  processLimit?: number;
}

/** The runsc container id of a sandbox. */
export function containerIdOf(sandboxId: string): string {
  return `${CONTAINER_PREFIX}${sandboxId}`;
}

/** The driver data of a handle this driver made; INVALID_ARGUMENTS for any other. */
export function handleData(handle: SandboxHandle): GvisorHandleData {
  const data = storedHandleData(handle);
  if (!data) {
    throw new AirlockError('INVALID_ARGUMENTS', `handle of ${handle.sandboxId} was not made by the gvisor driver (driverData lacks stateDir/diskDir)`);
  }
  return data;
}

/** The driver data of a handle this driver made, or undefined for a bare id (an orphan found on the host). */
export function storedHandleData(handle: SandboxHandle): GvisorHandleData | undefined {
  const { stateDir, diskDir, processLimit } = handle.driverData;
  if (typeof stateDir !== 'string' || typeof diskDir !== 'string') return undefined;
  return { stateDir, diskDir, ...(typeof processLimit === 'number' ? { processLimit } : {}) };
}
