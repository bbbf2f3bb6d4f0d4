/** What the API shows of a snapshot: its record without host paths, with what it holds and whether it can be restored. */
import type { SnapshotRecord } from '../core/snapshot.js';
import { hasDiskCopy } from '../core/snapshot-service.js';

/** The public view of a snapshot. */
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
