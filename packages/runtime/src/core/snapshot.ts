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

/** True when the snapshot holds a copy of the disk (suspend snapshots hold memory only). */
export function hasDiskCopy(snapshot: Pick<SnapshotRecord, 'reason'>): boolean {
  return snapshot.reason !== 'suspend';
}

/** What callers see of a snapshot (API and the `snapshot` tool): its record without host paths, with what it holds and whether it can be restored. */
export function snapshotView(snapshot: SnapshotRecord, now: Date = new Date()): Record<string, unknown> {
  const expired = snapshot.expiresAt !== null && Date.parse(snapshot.expiresAt) <= (snapshot.deletedAt ? Date.parse(snapshot.deletedAt) : now.getTime());
  return {
    id: snapshot.id,
    name: snapshot.name,
    sessionId: snapshot.sessionId,
    parentSnapshotId: snapshot.parentSnapshotId,
    reason: snapshot.reason,
    state: expired ? 'expired' : snapshot.deletedAt ? 'deleted' : 'available',
    contents: hasDiskCopy(snapshot) ? ['memory', 'disk'] : ['memory'],
    image: { name: snapshot.imageName, digest: snapshot.imageDigest },
    contractVersion: snapshot.contractVersion,
    sizeBytes: snapshot.sizeBytes,
    checksum: snapshot.checksum,
    createdAt: snapshot.createdAt,
    expiresAt: snapshot.expiresAt,
    deletedAt: snapshot.deletedAt,
  };
}
