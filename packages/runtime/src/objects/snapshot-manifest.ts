/**
 * The manifest of a snapshot in object storage: which chunks make each of
 * its files, and, for a suspend, the session's disk as it was. It is written
 * after every chunk it names, so a manifest is the only thing that makes a
 * snapshot exist remotely; its own checksum covers the whole chunk list, and
 * it carries the snapshot's sealed checksum, which the store also holds.
 *
 * A manifest is read from a bucket others may write to, so it is checked
 * like any input: paths stay inside the snapshot, chunks stay inside their
 * file, and nothing is trusted before its checksum matches.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { AirlockError } from '../core/errors.js';
import { MAX_CHUNK_BYTES, type ChunkingMethod } from './content-chunker.js';

/** The format tag of version 1. */
export const MANIFEST_FORMAT = 'airlock.snapshot-manifest/v1';

/** Where one chunk of a file goes. */
export interface ChunkReference {
  offset: number;
  length: number;
  sha256: string;
}

/** One file of the snapshot directory. */
export interface ManifestFile {
  /** relative to the snapshot directory */
  path: string;
  sizeBytes: number;
  method: ChunkingMethod;
  /** non-zero chunks in offset order; the bytes between them are zeros */
  chunks: ChunkReference[];
}

/** The session disk saved with a suspend. */
export interface ManifestDisk {
  sessionId: string;
  sizeBytes: number;
  /** the disk's sparse digest (storage/sparse-digest.ts), checked after it is assembled */
  digest: string;
  chunks: ChunkReference[];
}

/** A snapshot as object storage holds it. */
export interface SnapshotManifest {
  format: typeof MANIFEST_FORMAT;
  snapshotId: string;
  /** the checksum the snapshot was sealed with (the store's `checksum`) */
  checksum: string;
  files: ManifestFile[];
  disk: ManifestDisk | null;
  createdAt: string;
  /** sha256 over every field above, in this order */
  manifestChecksum: string;
}

/** Object key of a snapshot's manifest. */
export function manifestKey(snapshotId: string): string {
  return `${MANIFEST_PREFIX}${snapshotId}.json`;
}

/** Key prefix of every manifest. */
export const MANIFEST_PREFIX = 'snapshots/';

/** Object key of a chunk (two hex digits of fan-out keep listings and directories small). */
export function chunkKey(sha256: string): string {
  return `${CHUNK_PREFIX}${sha256.slice(0, 2)}/${sha256}`;
}

/** Key prefix of every chunk. */
export const CHUNK_PREFIX = 'chunks/';

/** The chunk hash a chunk key names, or undefined for a key that is not a chunk's. */
export function chunkOfKey(key: string): string | undefined {
  return /^chunks\/[0-9a-f]{2}\/([0-9a-f]{64})$/.exec(key)?.[1];
}

/** A complete manifest, its checksum computed. */
export function buildManifest(body: Omit<SnapshotManifest, 'format' | 'manifestChecksum'>): SnapshotManifest {
  const withFormat = { format: MANIFEST_FORMAT, ...body } as const;
  return { ...canonical(withFormat), manifestChecksum: checksumOf(withFormat) };
}

/** The bytes written to object storage. */
export function encodeManifest(manifest: SnapshotManifest): Buffer {
  return Buffer.from(JSON.stringify({ ...canonical(manifest), manifestChecksum: manifest.manifestChecksum }));
}

/** Every chunk hash the manifest names (files and disk). */
export function chunksOf(manifest: SnapshotManifest): Set<string> {
  const names = new Set<string>();
  for (const file of manifest.files) for (const chunk of file.chunks) names.add(chunk.sha256);
  for (const chunk of manifest.disk?.chunks ?? []) names.add(chunk.sha256);
  return names;
}

const chunkSchema = z.object({
  offset: z.number().int().nonnegative(),
  length: z.number().int().positive().max(MAX_CHUNK_BYTES),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
const sizeSchema = z.number().int().nonnegative().max(2 ** 50);
const manifestSchema = z.object({
  format: z.literal(MANIFEST_FORMAT),
  snapshotId: z.string().regex(/^[a-z]+_[0-9a-z]+$/),
  checksum: z.string().min(1).max(200),
  files: z
    .array(
      z.object({
        path: z.string().min(1).max(255).regex(/^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/),
        sizeBytes: sizeSchema,
        method: z.enum(['aligned', 'content-defined']),
        chunks: z.array(chunkSchema),
      }),
    )
    .min(1)
    .max(10_000),
  disk: z
    .object({ sessionId: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/), sizeBytes: sizeSchema, digest: z.string().min(1).max(200), chunks: z.array(chunkSchema) })
    .nullable(),
  createdAt: z.string().max(64),
  manifestChecksum: z.string().regex(/^sha256:[0-9a-f]{64}$/),
});

/**
 * Parses and checks a manifest read from object storage. Throws
 * SNAPSHOT_CORRUPT (naming what is wrong) when it is not one, does not match
 * its own checksum, or is not the manifest of `snapshotId`.
 */
export function parseManifest(bytes: Buffer, snapshotId: string): SnapshotManifest {
  const corrupt = (why: string, cause?: unknown): never => {
    throw new AirlockError('SNAPSHOT_CORRUPT', `the manifest of snapshot ${snapshotId} in object storage ${why}; it was not restored. Restore an earlier snapshot or terminate the session`, {
      ...(cause === undefined ? {} : { cause }),
      details: { snapshotId, object: manifestKey(snapshotId) },
    });
  };
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    return corrupt('is not valid JSON', error);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success) return corrupt(`is malformed (${parsed.error.issues[0]?.path.join('.') ?? ''}: ${parsed.error.issues[0]?.message ?? ''})`);
  const manifest = parsed.data as SnapshotManifest;
  if (checksumOf(manifest) !== manifest.manifestChecksum) return corrupt('does not match its own checksum (altered or truncated)');
  if (manifest.snapshotId !== snapshotId) return corrupt(`names another snapshot (${manifest.snapshotId})`);
  const paths = new Set<string>();
  for (const file of manifest.files) {
    if (file.path.split('/').some((segment) => segment === '.' || segment === '..')) return corrupt(`names a path outside the snapshot (${file.path})`);
    if (paths.has(file.path)) return corrupt(`names ${file.path} twice`);
    paths.add(file.path);
    if (!chunksFit(file.chunks, file.sizeBytes)) return corrupt(`has chunks of ${file.path} that overlap or run past its size`);
  }
  if (manifest.disk && !chunksFit(manifest.disk.chunks, manifest.disk.sizeBytes)) return corrupt('has disk chunks that overlap or run past the disk size');
  return manifest;
}

function chunksFit(chunks: ChunkReference[], size: number): boolean {
  let end = 0;
  for (const chunk of chunks) {
    if (chunk.offset < end || chunk.offset + chunk.length > size) return false;
    end = chunk.offset + chunk.length;
  }
  return true;
}

/** The manifest's fields in their fixed order, so that its checksum is stable. */
function canonical(manifest: Omit<SnapshotManifest, 'manifestChecksum'>): Omit<SnapshotManifest, 'manifestChecksum'> {
  const chunkList = (chunks: ChunkReference[]): ChunkReference[] => chunks.map((chunk) => ({ offset: chunk.offset, length: chunk.length, sha256: chunk.sha256 }));
  return {
    format: manifest.format,
    snapshotId: manifest.snapshotId,
    checksum: manifest.checksum,
    files: manifest.files.map((file) => ({ path: file.path, sizeBytes: file.sizeBytes, method: file.method, chunks: chunkList(file.chunks) })),
    disk: manifest.disk ? { sessionId: manifest.disk.sessionId, sizeBytes: manifest.disk.sizeBytes, digest: manifest.disk.digest, chunks: chunkList(manifest.disk.chunks) } : null,
    createdAt: manifest.createdAt,
  };
}

function checksumOf(manifest: Omit<SnapshotManifest, 'manifestChecksum'>): string {
  return `sha256:${createHash('sha256').update(JSON.stringify(canonical(manifest))).digest('hex')}`;
}
