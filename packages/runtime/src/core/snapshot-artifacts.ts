/**
 * The port for snapshot bytes: on the host, and in object storage when the
 * server has `--objects`. The core decides when a snapshot is taken and
 * kept; this port seals it with a checksum (and, with object storage,
 * uploads it), verifies it before every restore (fetching it first when its
 * files are not on this host), and deletes it.
 */

/** Bytes moved to or from object storage by one operation. */
export interface ArtifactTransfer {
  /** bytes sent or received */
  bytes: number;
  chunks: number;
  /** chunks an upload found already stored, and did not send */
  reusedChunks: number;
  reusedBytes: number;
}

/** What sealing a snapshot gives. */
export interface SealedSnapshot {
  checksum: string;
  sizeBytes: number;
  /** with object storage: what the upload sent */
  uploaded?: ArtifactTransfer;
}

/** Stores and verifies snapshot artifacts. */
export interface SnapshotArtifacts {
  /** Host directory where a snapshot's files are written. */
  pathFor(snapshotId: string): string;
  /** Host path of the snapshot's copy of the session disk (absent for suspend snapshots: their disk stays live). */
  diskPathFor(snapshotId: string): string;
  /** Makes a new snapshot holding the memory image of another, without copying it (hard links). */
  derive(fromSnapshotId: string, toSnapshotId: string): Promise<void>;
  /**
   * Computes checksum and size of a completed snapshot and records them beside it. With object
   * storage it also uploads the snapshot, and with `liveDiskOf` (a suspend: the machine is stopped
   * or paused) that session's disk as it is now; a snapshot is sealed only once it exists remotely.
   */
  seal(snapshotId: string, options?: { liveDiskOf?: string }): Promise<SealedSnapshot>;
  /**
   * Throws SNAPSHOT_CORRUPT when the files no longer match `checksum`. With object storage, files
   * that are not on this host (or are damaged here) are fetched first; returns what was fetched.
   */
  verify(snapshotId: string, checksum: string): Promise<ArtifactTransfer | null>;
  /**
   * Before a resume from a suspend snapshot: makes the session's disk on this host the one saved
   * with it, unless the local disk already is (or was never saved anywhere else). Without object
   * storage the live disk is the only one, and nothing is done. Returns what was fetched.
   */
  prepareDisk(snapshotId: string, sessionId: string): Promise<ArtifactTransfer | null>;
  /** True when the snapshot can be restored from here: its files are on this host, or (with object storage) its manifest is stored. */
  has(snapshotId: string): Promise<boolean>;
  /** True when the snapshot's files are on this host now (a verify would read them here, fetching nothing). */
  isOnHost(snapshotId: string): Promise<boolean>;
  /** Deletes the snapshot's bytes; idempotent. */
  remove(snapshotId: string): Promise<void>;
  /** Snapshot ids found on the host, for reconciliation. */
  list(): Promise<string[]>;
  /**
   * Removes what interrupted writes left (half-written images, seals of missing snapshots, uploads
   * of this node that never finished); returns what it removed. Only safe while nothing is being
   * written: the reconciler calls it at start-up.
   */
  sweepIncomplete(): Promise<string[]>;
}
