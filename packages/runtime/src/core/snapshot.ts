/**
 * A snapshot: memory, processes and disk of a session at one moment, as a
 * versioned, checksummed artifact. It never contains a brokered secret.
 */

/** Why a snapshot was taken. */
export type SnapshotReason = 'suspend' | 'manual' | 'fork';

/** A snapshot, as stored. */
export interface SnapshotRecord {
  id: string;
  sessionId: string;
  name: string | null;
  parentSnapshotId: string | null;
  imageName: string;
  imageDigest: string;
  contractVersion: number;
  reason: SnapshotReason;
  /** host directory holding the checkpoint image and the disk copy */
  path: string;
  sizeBytes: number;
  /** sha256 over the snapshot's files, verified before every restore */
  checksum: string;
  createdAt: string;
  expiresAt: string | null;
  /** bytes deleted: by retention expiry, by rm, or when the session was terminated */
  deletedAt: string | null;
}
