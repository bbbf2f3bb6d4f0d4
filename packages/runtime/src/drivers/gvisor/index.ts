/** The gVisor (runsc) sandbox driver. */
export { GvisorDriver, CONTAINER_PREFIX, type GvisorDriverOptions } from './gvisor-driver.js';
export { leftoverCgroups } from './cgroups.js';
export { hostProcessesOf, isProcessAlive } from './sandbox-files.js';
export { mountsUnder } from './rootfs-view.js';
