/** The gVisor (runsc) sandbox driver. */
export { GvisorDriver, type GvisorDriverOptions } from './gvisor-driver.js';
/** Prefix of every runsc container id of the driver. */
export { CONTAINER_PREFIX } from './gvisor-handle.js';
/** Host-side probes for leak checks and reconciliation. */
export { leftoverCgroups } from './cgroups.js';
/** Host processes of a sandbox (by container id or bundle path), and liveness of one pid. */
export { hostProcessesOf, isProcessAlive } from './sandbox-files.js';
/** Mount points under a host path, for leak checks. */
export { mountsUnder } from './rootfs-view.js';
