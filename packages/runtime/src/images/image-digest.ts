/**
 * The digest of an image: `sha256:` over a canonical listing of its root
 * filesystem, the same scheme for built and imported images.
 *
 * Why the files and not the OCI manifest: the digest then names exactly what
 * sessions run on, whatever the source (debootstrap has no manifest; the same
 * layers exported by docker save or skopeo give different manifests but the
 * same files), and `airlock` can re-check an image on disk at any time by
 * recomputing it. The OCI manifest and config digests of an imported image
 * are kept beside it in image.json as provenance.
 *
 * The listing (version line `airlock-rootfs-v1`, then one line per entry):
 * every path below the root, the root itself as `.`, sorted by the bytes of
 * the relative path; each line is the JSON array
 * `[path, type, mode (octal), uid, gid, size, extra]` where type is
 * file|dir|symlink|char|block|fifo|socket, size is the byte size for files and
 * 0 otherwise, and extra is the hex sha256 of the content for files, the
 * target for symlinks, the device number for devices, "" otherwise. Times are
 * left out (they differ between otherwise identical builds); so is hardlink
 * identity (linked files list the same content twice).
 */
import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';

/** The digest of a root filesystem and what it takes on disk. */
export interface RootfsDigest {
  /** `sha256:<hex>` of the canonical listing */
  digest: string;
  /** bytes of regular file content, each hardlinked inode counted once */
  sizeBytes: number;
  /** number of listed entries, the root included */
  entries: number;
}

const VERSION_LINE = 'airlock-rootfs-v1';
/** files hashed at once: enough to keep the disk busy without a burst of open descriptors */
const HASH_CONCURRENCY = 8;
const STREAM_THRESHOLD = 1 << 20;

/** Computes the canonical digest of the tree at `rootfs` (see the file header for the listing format). */
export async function digestRootfs(rootfs: string): Promise<RootfsDigest> {
  const entries = await listTree(rootfs);
  entries.sort((a, b) => Buffer.compare(a.key, b.key));

  const contentHashes = new Map<string, string>();
  const files = entries.filter((entry) => entry.stats.isFile());
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < files.length) {
      const entry = files[next++] as TreeEntry;
      contentHashes.set(entry.relative, await hashFile(join(rootfs, entry.relative), entry.stats.size));
    }
  };
  await Promise.all(Array.from({ length: HASH_CONCURRENCY }, worker));

  const listing = createHash('sha256');
  listing.update(`${VERSION_LINE}\n`);
  const seenInodes = new Set<string>();
  let sizeBytes = 0;
  for (const entry of entries) {
    const { stats, relative } = entry;
    let extra = '';
    if (stats.isFile()) {
      extra = contentHashes.get(relative) as string;
      const inode = `${stats.dev}:${stats.ino}`;
      if (!seenInodes.has(inode)) {
        seenInodes.add(inode);
        sizeBytes += stats.size;
      }
    } else if (stats.isSymbolicLink()) {
      extra = await readlink(join(rootfs, relative));
    } else if (stats.isCharacterDevice() || stats.isBlockDevice()) {
      extra = String(stats.rdev);
    }
    const line = [relative, typeOf(stats), (stats.mode & 0o7777).toString(8), stats.uid, stats.gid, stats.isFile() ? stats.size : 0, extra];
    listing.update(`${JSON.stringify(line)}\n`);
  }
  return { digest: `sha256:${listing.digest('hex')}`, sizeBytes, entries: entries.length };
}

interface TreeEntry {
  relative: string;
  key: Buffer;
  stats: Stats;
}

/** Every path below `root` (and `.`), with lstat results; never follows symlinks. */
async function listTree(root: string): Promise<TreeEntry[]> {
  const entries: TreeEntry[] = [{ relative: '.', key: Buffer.from('.'), stats: await lstat(root) }];
  const pending: string[] = [''];
  while (pending.length > 0) {
    const directory = pending.pop() as string;
    for (const name of await readdir(join(root, directory))) {
      const relative = directory === '' ? name : `${directory}/${name}`;
      const stats = await lstat(join(root, relative));
      entries.push({ relative, key: Buffer.from(relative), stats });
      if (stats.isDirectory()) pending.push(relative);
    }
  }
  return entries;
}

async function hashFile(path: string, size: number): Promise<string> {
  const hash = createHash('sha256');
  if (size <= STREAM_THRESHOLD) {
    // most files are small: one read, and no 1 MiB stream buffer allocated for each of thousands of files
    return hash.update(await readFile(path)).digest('hex');
  }
  for await (const chunk of createReadStream(path, { highWaterMark: STREAM_THRESHOLD })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

function typeOf(stats: Stats): string {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'dir';
  if (stats.isSymbolicLink()) return 'symlink';
  if (stats.isCharacterDevice()) return 'char';
  if (stats.isBlockDevice()) return 'block';
  if (stats.isFIFO()) return 'fifo';
  return 'socket';
}
