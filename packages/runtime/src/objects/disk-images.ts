/**
 * What object storage needs of session disks beyond the SessionDisks port:
 * the image file itself, read at one consistent instant or written whole,
 * and a note of which snapshot the local disk was last saved into, so that a
 * node never resumes a session over a disk that another node has since moved
 * on from.
 */

/** Raw access to session disk images (implemented by LoopDisks). */
export interface DiskImages {
  /** True when the session has a disk on this host. */
  has(sessionId: string): Promise<boolean>;
  /** Runs `read` over the disk's image file (path and size) with writes to the disk held off until it returns. */
  readImage<T>(sessionId: string, read: (imagePath: string, sizeBytes: number) => Promise<T>): Promise<T>;
  /**
   * Creates the session's disk from an image that `write` makes at the path it
   * is given (a file that does not exist yet), then mounts it; on failure
   * nothing is left. The session must have no disk here.
   */
  createFromImage(sessionId: string, write: (imagePath: string) => Promise<void>): Promise<string>;
  /** The snapshot this disk was last saved into or fetched from, if it ever was. */
  savedIn(sessionId: string): Promise<string | undefined>;
  /** Records that the disk, as it is now, is the one saved in `snapshotId`. */
  recordSavedIn(sessionId: string, snapshotId: string): Promise<void>;
  /** Unmounts and deletes the disk; idempotent. */
  destroy(sessionId: string): Promise<void>;
}
