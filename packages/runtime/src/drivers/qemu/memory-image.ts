/**
 * A microVM checkpoint on disk, and its verification before any restore.
 *
 *   microvm-image.json   what the VM was (vCPUs, RAM, devices, kernel) and the
 *                        digest of every file below; written last
 *   device-state.bin     QEMU's migration stream: device state only when the
 *                        RAM is in memory.raw (`shared-memory`), everything
 *                        when the VM's RAM was a private mapping (`stream`)
 *   memory.raw           the guest RAM file (sparse), `shared-memory` only
 *   initramfs.cpio       the archive the VM booted with: a restore presents
 *                        the same devices and boot blobs to the stream
 *
 * A restore recomputes every digest and refuses a mismatch (SNAPSHOT_CORRUPT):
 * a memory image is code that will run. Verifications are remembered per
 * file identity (inode, size, mtime, ctime) for the life of the process, so
 * the branches of one fork hash a shared memory file once.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import { sparseFileDigest } from '../../storage/sparse-digest.js';

/** The image's description file. */
export const MANIFEST_FILE = 'microvm-image.json';
/** QEMU's migration stream. */
export const DEVICE_STATE_FILE = 'device-state.bin';
/** The guest RAM file of a `shared-memory` image. */
export const MEMORY_FILE = 'memory.raw';
/** The initramfs the VM booted with. */
export const INITRAMFS_FILE = 'initramfs.cpio';

/** What a restore must reproduce, and the digests it checks. */
export interface MemoryImageManifest {
  formatVersion: 1;
  /** `shared-memory`: RAM in memory.raw (branches map it copy-on-write); `stream`: RAM inside the migration stream */
  kind: 'shared-memory' | 'stream';
  cpus: number;
  memoryMb: number;
  /** whether the VM had a NIC: a restore must present the same devices */
  networked: boolean;
  kernelDigest: string;
  kernelRelease: string;
  accelerator: string;
  /** digest of each file of the image, by name */
  files: Record<string, string>;
  createdAt: string;
}

const verified = new Map<string, string>();

/** The digest of one image file: sparse-aware for the RAM file, sha256 for the rest. */
async function digestOf(path: string, name: string): Promise<string> {
  const info = await stat(path);
  const identity = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
  const known = verified.get(path);
  if (known?.startsWith(`${identity}=`)) return known.slice(identity.length + 1);
  let digest: string;
  if (name === MEMORY_FILE) digest = await sparseFileDigest(path, info.size);
  else {
    const hash = createHash('sha256');
    for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
    digest = `sha256:${hash.digest('hex')}`;
  }
  verified.set(path, `${identity}=${digest}`);
  return digest;
}

/** Digests the image's files and writes its manifest (the last file of a complete image). */
export async function writeManifest(imageDir: string, facts: Omit<MemoryImageManifest, 'formatVersion' | 'files' | 'createdAt'>): Promise<MemoryImageManifest> {
  const names = [DEVICE_STATE_FILE, INITRAMFS_FILE, ...(facts.kind === 'shared-memory' ? [MEMORY_FILE] : [])];
  const files: Record<string, string> = {};
  for (const name of names) files[name] = await digestOf(join(imageDir, name), name);
  const manifest: MemoryImageManifest = { formatVersion: 1, ...facts, files, createdAt: new Date().toISOString() };
  await writeFile(join(imageDir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

/** Reads the manifest and checks every file against it; SNAPSHOT_NOT_FOUND or SNAPSHOT_CORRUPT saying which. */
export async function verifiedManifest(imageDir: string): Promise<MemoryImageManifest> {
  let manifest: MemoryImageManifest;
  try {
    manifest = JSON.parse(await readFile(join(imageDir, MANIFEST_FILE), 'utf8')) as MemoryImageManifest;
  } catch {
    throw new AirlockError('SNAPSHOT_NOT_FOUND', `no microVM image in ${imageDir} (no readable ${MANIFEST_FILE}); take one with checkpoint() first`);
  }
  if (manifest.formatVersion !== 1 || (manifest.kind !== 'shared-memory' && manifest.kind !== 'stream') || typeof manifest.files !== 'object' || manifest.files === null) {
    throw new AirlockError('SNAPSHOT_CORRUPT', `${join(imageDir, MANIFEST_FILE)} is not a microVM image manifest this version understands; the image cannot be restored`);
  }
  const required = [DEVICE_STATE_FILE, INITRAMFS_FILE, ...(manifest.kind === 'shared-memory' ? [MEMORY_FILE] : [])];
  for (const name of required) {
    const expected = manifest.files[name];
    const actual = await digestOf(join(imageDir, name), name).catch(() => 'missing');
    if (!expected || actual !== expected) {
      throw new AirlockError('SNAPSHOT_CORRUPT', `${name} of the microVM image ${imageDir} does not match its checksum (${actual === 'missing' ? 'the file is missing' : 'its content changed'}); it is refused. Restore an earlier snapshot`, {
        details: { imageDir, file: name },
      });
    }
  }
  return manifest;
}
