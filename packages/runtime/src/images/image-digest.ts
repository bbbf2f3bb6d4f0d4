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
import { createReadStream, lstatSync, readdirSync, readFileSync, readlinkSync, type Stats } from 'node:fs';
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
/** files up to this size are read in one call; larger ones are streamed */
const STREAM_THRESHOLD = 1 << 20;
/** entries between turns of the event loop, so a server stays responsive while a big tree is hashed */
const ENTRIES_PER_TURN = 256;

/**
 * Computes the canonical digest of the tree at `rootfs` (see the file header
 * for the listing format). Small files are read with synchronous calls, for
 * the reason given in oci-layer-applier.ts (thousands of small files, each
 * thread-pool round trip costing more than the read); the event loop gets a
 * turn every few hundred entries.
 */
export async function digestRootfs(rootfs: string): Promise<RootfsDigest> {
  const entries = listTree(rootfs);
  entries.sort((a, b) => Buffer.compare(a.key, b.key));

  const listing = createHash('sha256');
  listing.update(`${VERSION_LINE}\n`);
  const seenInodes = new Set<string>();
  let sizeBytes = 0;
  for (const [index, { stats, relative }] of entries.entries()) {
    if (index % ENTRIES_PER_TURN === ENTRIES_PER_TURN - 1) await new Promise((resolve) => setImmediate(resolve));
    const path = join(rootfs, relative);
    let extra = '';
    if (stats.isFile()) {
      extra = stats.size <= STREAM_THRESHOLD ? createHash('sha256').update(readFileSync(path)).digest('hex') : await hashLargeFile(path);
      const inode = `${stats.dev}:${stats.ino}`;
      if (!seenInodes.has(inode)) {
        seenInodes.add(inode);
        sizeBytes += stats.size;
      }
    } else if (stats.isSymbolicLink()) {
      extra = readlinkSync(path);
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
function listTree(root: string): TreeEntry[] {
  const entries: TreeEntry[] = [{ relative: '.', key: Buffer.from('.'), stats: lstatSync(root) }];
  const pending: string[] = [''];
  while (pending.length > 0) {
    const directory = pending.pop() as string;
    for (const name of readdirSync(join(root, directory))) {
      const relative = directory === '' ? name : `${directory}/${name}`;
      const stats = lstatSync(join(root, relative));
      entries.push({ relative, key: Buffer.from(relative), stats });
      if (stats.isDirectory()) pending.push(relative);
    }
  }
  return entries;
}

async function hashLargeFile(path: string): Promise<string> {
  const hash = createHash('sha256');
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
