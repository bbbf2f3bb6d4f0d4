/**
 * The port for snapshot bytes on the host (later: object storage). The core
 * decides when a snapshot is taken and kept; this port seals it with a
 * checksum, verifies it before every restore, and deletes it.
 */

/** Stores and verifies snapshot artifacts. */
export interface SnapshotArtifacts {
  /** Host directory where a snapshot's files are written. */
  pathFor(snapshotId: string): string;
  /** Host path of the snapshot's copy of the session disk (absent for suspend snapshots: their disk stays live). */
  diskPathFor(snapshotId: string): string;
  /** Makes a new snapshot holding the memory image of another, without copying it (hard links). */
  derive(fromSnapshotId: string, toSnapshotId: string): Promise<void>;
  /** Computes checksum and size of a completed snapshot and records them beside it. */
  seal(snapshotId: string): Promise<{ checksum: string; sizeBytes: number }>;
  /** Throws SNAPSHOT_CORRUPT when the files no longer match `checksum`. */
  verify(snapshotId: string, checksum: string): Promise<void>;
  /** Deletes the snapshot's bytes; idempotent. */
  remove(snapshotId: string): Promise<void>;
  /** Snapshot ids found on the host, for reconciliation. */
  list(): Promise<string[]>;
  /**
   * Removes what interrupted writes left (half-written images, seals of missing snapshots); returns
   * what it removed. Only safe while nothing is being written: the reconciler calls it at start-up.
   */
  sweepIncomplete(): Promise<string[]>;
}
