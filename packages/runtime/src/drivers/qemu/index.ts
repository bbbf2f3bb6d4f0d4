/** The QEMU microVM driver (`sandbox: microvm`). */
export { QemuMicrovmDriver, type MicrovmDriverOptions } from './qemu-microvm-driver.js';
export { qemuArguments, type MachineLayout } from './qemu-command-line.js';
export { FrameReader, encodeFrame, SYNC_MAGIC } from './guest-protocol.js';
export { newcArchive } from './newc-archive.js';
