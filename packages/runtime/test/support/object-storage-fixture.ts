/**
 * Nodes that keep snapshots in one s3rver bucket, each with its own host
 * directories (snapshot cache, disk images): what two data dirs pointed at
 * the same bucket look like, without sandboxes.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, ftruncateSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { SnapshotDirectory } from '../../src/storage/snapshot-directory.js';
import { S3ObjectStore } from '../../src/objects/s3-object-store.js';
import { ObjectSnapshotArtifacts, type ObjectSnapshotArtifactsOptions } from '../../src/objects/object-snapshot-artifacts.js';
import type { CollectionTimings } from '../../src/objects/collection-protocol.js';
import { FileDiskImages } from './file-disk-images.js';
import { ObservedObjectStore } from './observed-object-store.js';
import { TEST_BUCKET, type ObjectStorageServer } from './object-storage-server.js';

/** Short protocol timings, so that staleness shows within a test. */
export const FAST_TIMINGS: CollectionTimings = {
  heartbeatMs: 50,
  intentStaleMs: 1_500,
  lockHeartbeatMs: 50,
  lockStaleMs: 1_500,
  pollMs: 20,
  collectorPatienceMs: 15_000,
  uploadPatienceMs: 15_000,
};

/** One node's view of the bucket. */
export interface ObjectNode {
  root: string;
  local: SnapshotDirectory;
  disks: FileDiskImages;
  objects: ObservedObjectStore;
  artifacts: ObjectSnapshotArtifacts;
  close(): Promise<void>;
}

/** A fresh key prefix, so that tests sharing a server do not see each other's objects. */
export function freshPrefix(): string {
  return `t-${randomBytes(4).toString('hex')}/`;
}

/** A node on `prefix` of the test bucket. */
export function objectNode(
  server: ObjectStorageServer,
  prefix: string,
  owner: string,
  options: Pick<ObjectSnapshotArtifactsOptions, 'uploadHooks' | 'collectorHooks' | 'concurrency'> = {},
): ObjectNode {
  const root = mkdtempSync(`/tmp/airlock-objects-${owner}-`);
  const local = new SnapshotDirectory(join(root, 'snapshots'));
  mkdirSync(join(root, 'snapshots'), { recursive: true });
  const disks = new FileDiskImages(join(root, 'disks'));
  const objects = new ObservedObjectStore(new S3ObjectStore({ bucket: TEST_BUCKET, prefix }, server.env));
  const artifacts = new ObjectSnapshotArtifacts({ local, objects, disks, owner, timings: FAST_TIMINGS, ...options });
  return {
    root,
    local,
    disks,
    objects,
    artifacts,
    async close() {
      await artifacts.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

/** Writes a snapshot directory as a checkpoint would. */
export function writeSnapshotFiles(node: ObjectNode, snapshotId: string, files: Record<string, Buffer>): void {
  const dir = node.local.pathFor(snapshotId);
  mkdirSync(dir, { recursive: true });
  for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), content);
}

/** Writes a sparse disk image of `sizeBytes` holding `writes`. */
export function writeDisk(node: ObjectNode, sessionId: string, sizeBytes: number, writes: { offset: number; data: Buffer }[]): void {
  mkdirSync(join(node.disks.root, sessionId), { recursive: true });
  const fd = openSync(node.disks.imagePath(sessionId), 'w');
  try {
    ftruncateSync(fd, sizeBytes);
    for (const write of writes) writeSync(fd, write.data, 0, write.data.length, write.offset);
  } finally {
    closeSync(fd);
  }
}
