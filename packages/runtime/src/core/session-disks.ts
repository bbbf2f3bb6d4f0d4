/**
 * The port for per-session writable disks. Each session owns one disk of a
 * fixed size (its disk limit); the driver keeps the sandbox's writable layers
 * and `/workspace` on it. Per-call sandboxes and forks use the same port.
 */

/** Usage of one session disk. */
export interface DiskUsage {
  sizeBytes: number;
  usedBytes: number;
}

/** Creates, mounts, copies and destroys session disks on the host. */
export interface SessionDisks {
  /** Creates an empty disk of `sizeMb` for the session and mounts it; returns the mounted directory. */
  create(sessionId: string, sizeMb: number): Promise<string>;
  /** Mounts the disk if it is not (after a host or control-plane restart); returns the directory. */
  ensureMounted(sessionId: string): Promise<string>;
  /**
   * Unmounts the disk from the host and returns its image file, for a sandbox that attaches it as a
   * block device (a microVM); the host must not mount it while that sandbox runs. `ensureMounted` mounts it again.
   */
  blockDevice(sessionId: string): Promise<string>;
  /** Copies the disk of `fromSessionId` (copy-on-write where the filesystem allows) to a new session. */
  clone(fromSessionId: string, toSessionId: string): Promise<string>;
  /**
   * Copies the session's disk into a snapshot (`destPath`, a file that does not exist yet),
   * consistent at one instant: callers pause the machine first so the copy matches its memory.
   */
  snapshot(sessionId: string, destPath: string): Promise<void>;
  /** Creates the disk of a new session from a copy made by `snapshot`; returns the mounted directory. */
  createFrom(sessionId: string, sourcePath: string): Promise<string>;
  /** Flushes pending writes of the disk to the host, for a consistent copy or snapshot. */
  sync(sessionId: string): Promise<void>;
  /**
   * Undoes a freeze a crash left behind (the control plane died while it copied the disk): a frozen
   * disk blocks every writer in its session, and cannot be unmounted. Idempotent; a disk that is not
   * frozen, or not mounted on the host, is left as it is.
   */
  thaw(sessionId: string): Promise<void>;
  /**
   * Gives the disk of `fromId` (a warm pool's machine) to `toId`, mounted and in use, without a copy;
   * refuses when `toId` has a disk. Returns the directory under its new name.
   */
  transfer(fromId: string, toId: string): Promise<string>;
  /** Unmounts and deletes the disk; idempotent. */
  destroy(sessionId: string): Promise<void>;
  usage(sessionId: string): Promise<DiskUsage>;
  /** Session ids of the disks found on the host, for reconciliation. */
  list(): Promise<string[]>;
}
