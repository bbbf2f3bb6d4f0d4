/**
 * Applies OCI/Docker image layers onto a root filesystem, in order, with the
 * whiteout rules of the OCI image spec: `.wh.NAME` deletes NAME from lower
 * layers, `.wh..wh..opq` empties its directory of everything lower layers put
 * there. Entries of the same layer are never hidden by its own whiteouts.
 *
 * Every entry goes through `rootfs-path.ts` (no absolute names, no `..`,
 * symlinks followed as if the rootfs were `/`) and is created with O_EXCL |
 * O_NOFOLLOW after removing what was there, so no write ever follows a link
 * out of the rootfs. Device nodes and FIFOs are skipped (gVisor provides
 * /dev); xattrs (file capabilities) are not kept.
 */
import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { chmod, lchown, link, lstat, lutimes, mkdir, open, readdir, rm, symlink, utimes, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { pipeline, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { errnoCode, imageProblem } from './image-errors.js';
import { entryComponents, resolveParentDirectory } from './rootfs-path.js';
import { readTarArchive, type TarBodySink, type TarEntryHeader } from './tar-entry-reader.js';

interface DirectoryMetadata {
  mode: number;
  uid: number;
  gid: number;
  mtime: Date | undefined;
}

/** How a layer blob is compressed, from its first bytes. */
export type LayerCompression = 'gzip' | 'zstd' | 'none';

const WHITEOUT_PREFIX = '.wh.';
const OPAQUE_WHITEOUT = '.wh..wh..opq';

/** Tells gzip / zstd / plain apart by magic bytes (media types are not trusted for this). */
export async function detectCompression(file: string): Promise<LayerCompression> {
  const handle = await open(file, 'r');
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await handle.read(head, 0, 4, 0);
    if (bytesRead >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'gzip';
    if (bytesRead >= 4 && head.readUInt32LE(0) === 0xfd2fb528) return 'zstd';
    return 'none';
  } finally {
    await handle.close();
  }
}

/** Applies layers, in order, onto one (initially empty) rootfs directory. */
export class LayerApplier {
  /** directory modes/owners/times, applied at the end so that read-only directories do not block later layers */
  private readonly directories = new Map<string, DirectoryMetadata>();
  private readonly canChown = process.getuid?.() === 0;
  /** resolved parent directories by entry path; cleared whenever a directory or symlink is removed */
  private readonly parents = new Map<string, string>();

  constructor(private readonly rootfs: string) {}

  /** Applies one layer blob (gzip or plain tar); returns `sha256:` of the uncompressed tar, i.e. the layer's diff id. */
  async apply(layerFile: string, label: string): Promise<string> {
    const compression = await detectCompression(layerFile);
    if (compression === 'zstd') {
      throw imageProblem(`${label} is zstd-compressed, which this import cannot read yet (export with gzip or uncompressed layers)`);
    }
    const file = createReadStream(layerFile, { highWaterMark: 1 << 20 });
    // pipeline() destroys the file stream too when the reader stops early
    const plain: Readable = compression === 'gzip' ? pipeline(file, createGunzip(), () => undefined) : file;
    const hash = createHash('sha256');
    const hashed = async function* (): AsyncGenerator<Buffer> {
      try {
        for await (const chunk of plain) {
          hash.update(chunk as Buffer);
          yield chunk as Buffer;
        }
      } catch (error) {
        if (errnoCode(error) === 'Z_BUF_ERROR' || errnoCode(error) === 'Z_DATA_ERROR') {
          throw imageProblem(`${label} is not valid gzip (${(error as Error).message})`);
        }
        throw error;
      }
    };
    const writtenHere = new Set<string>();
    await readTarArchive(hashed(), label, (header) => this.applyEntry(header, label, writtenHere));
    return `sha256:${hash.digest('hex')}`;
  }

  /** Sets the directory modes, owners and times collected from all layers; call once, after the last layer. */
  async finish(): Promise<void> {
    // deepest first, so a parent's mtime is set after its children are touched
    const paths = [...this.directories.keys()].sort((a, b) => b.length - a.length);
    for (const path of paths) {
      const meta = this.directories.get(path) as DirectoryMetadata;
      const stats = await lstat(path).catch(() => undefined);
      if (stats === undefined || !stats.isDirectory()) continue;
      if (this.canChown) await lchown(path, meta.uid, meta.gid);
      await chmod(path, meta.mode);
      if (meta.mtime !== undefined) await utimes(path, meta.mtime, meta.mtime);
    }
    this.directories.clear();
  }

  private async applyEntry(header: TarEntryHeader, label: string, writtenHere: Set<string>): Promise<TarBodySink | undefined> {
    const parts = entryComponents(header.path, label);
    const name = parts.at(-1);
    if (name === undefined) return undefined; // the root directory itself keeps 0755
    if (name.startsWith(WHITEOUT_PREFIX)) {
      await this.whiteout(parts, name, label, writtenHere);
      return undefined;
    }
    const kind = entryKind(header.type);
    if (kind === 'skip') return undefined;
    const parent = (await this.resolveParent(parts, label, writtenHere)) as string;
    const target = join(parent, name);
    if (kind === 'directory') {
      const existing = await lstat(target).catch(() => undefined);
      if (existing === undefined || !existing.isDirectory()) {
        if (existing !== undefined) await this.removePath(target);
        await mkdir(target, { mode: 0o700 });
      }
      writtenHere.add(target);
      this.directories.set(target, { mode: header.mode, uid: header.uid, gid: header.gid, mtime: header.mtime });
      return undefined;
    }
    writtenHere.add(target);
    if (kind === 'hardlink') {
      const source = await this.hardlinkSource(header, label);
      if (source !== target) await this.replacing(target, () => link(source, target));
      return undefined;
    }
    if (kind === 'symlink') {
      await this.replacing(target, () => symlink(header.linkpath ?? '', target));
      if (this.canChown) await lchown(target, header.uid, header.gid);
      if (header.mtime !== undefined) await lutimes(target, header.mtime, header.mtime);
      return undefined;
    }
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const handle = await this.replacing(target, () => open(target, flags, 0o600));
    return this.fileSink(handle, header);
  }

  /** Runs `create` (which fails with EEXIST when something is at `target`); on EEXIST removes that thing and runs it again. */
  private async replacing<T>(target: string, create: () => Promise<T>): Promise<T> {
    try {
      return await create();
    } catch (error) {
      if (errnoCode(error) !== 'EEXIST') throw error;
    }
    // never written through: what was there (file, link, directory) goes first
    await this.removePath(target);
    return create();
  }

  /** `resolveParentDirectory`, remembered per entry directory; `writtenHere` (when creating) learns the directories made on the way. */
  private async resolveParent(parts: readonly string[], label: string, writtenHere: Set<string> | undefined): Promise<string | undefined> {
    const key = parts.slice(0, -1).join('/');
    const known = this.parents.get(key);
    if (known !== undefined) return known;
    const resolved = await resolveParentDirectory(this.rootfs, parts, {
      create: writtenHere !== undefined,
      label,
      ...(writtenHere === undefined ? {} : { onCreate: (created: string) => writtenHere.add(created) }),
    });
    if (resolved !== undefined) this.parents.set(key, resolved);
    return resolved;
  }

  private fileSink(handle: FileHandle, header: TarEntryHeader): TarBodySink {
    const canChown = this.canChown;
    return {
      async write(chunk) {
        await handle.write(chunk);
      },
      async end() {
        try {
          // chown before chmod: chown clears setuid/setgid bits
          if (canChown) await handle.chown(header.uid, header.gid);
          await handle.chmod(header.mode);
          if (header.mtime !== undefined) await handle.utimes(header.mtime, header.mtime);
        } finally {
          await handle.close();
        }
      },
      async abort() {
        await handle.close();
      },
    };
  }

  /** The host path a hardlink entry points at: inside the rootfs, existing, not a directory. */
  private async hardlinkSource(header: TarEntryHeader, label: string): Promise<string> {
    const linkParts = entryComponents(header.linkpath ?? '', `${label} (hardlink ${JSON.stringify(header.path)})`);
    const linkName = linkParts.at(-1);
    const parent = linkName === undefined ? undefined : await this.resolveParent(linkParts, label, undefined);
    const source = parent === undefined || linkName === undefined ? undefined : join(parent, linkName);
    const stats = source === undefined ? undefined : await lstat(source).catch(() => undefined);
    if (source === undefined || stats === undefined || stats.isDirectory()) {
      throw imageProblem(`${label} has a hardlink ${JSON.stringify(header.path)} to ${JSON.stringify(header.linkpath)}, which is not a file in the image`, {
        entry: header.path,
      });
    }
    return source;
  }

  private async whiteout(parts: string[], name: string, label: string, writtenHere: Set<string>): Promise<void> {
    const directory = await this.resolveParent(parts, label, undefined);
    if (directory === undefined) return; // nothing below to hide
    if (name === OPAQUE_WHITEOUT) {
      await this.clearLowerEntries(directory, writtenHere);
      return;
    }
    if (name.startsWith(`${WHITEOUT_PREFIX}${WHITEOUT_PREFIX}`)) return; // other AUFS metadata (.wh..wh.plnk ...)
    const hidden = join(directory, name.slice(WHITEOUT_PREFIX.length));
    if (!writtenHere.has(hidden)) await this.removePath(hidden);
  }

  /** Opaque whiteout: removes whatever lower layers put below `directory`, keeping this layer's entries. */
  private async clearLowerEntries(directory: string, writtenHere: Set<string>): Promise<void> {
    for (const child of await readdir(directory)) {
      const path = join(directory, child);
      if (!writtenHere.has(path)) {
        await this.removePath(path);
        continue;
      }
      const stats = await lstat(path);
      if (stats.isDirectory()) await this.clearLowerEntries(path, writtenHere);
    }
  }

  /** Removes a file, link or whole directory (never following a symlink), forgetting metadata recorded below it. */
  private async removePath(path: string): Promise<void> {
    const stats = await lstat(path).catch(() => undefined);
    if (stats === undefined) return;
    if (stats.isDirectory() || stats.isSymbolicLink()) this.parents.clear();
    if (stats.isDirectory()) {
      await rm(path, { recursive: true, force: true });
      const prefix = path + sep;
      for (const key of this.directories.keys()) {
        if (key === path || key.startsWith(prefix)) this.directories.delete(key);
      }
      return;
    }
    await rm(path, { force: true });
  }
}

type EntryKind = 'file' | 'directory' | 'symlink' | 'hardlink' | 'skip';

function entryKind(type: string): EntryKind {
  switch (type) {
    case 'File':
    case 'OldFile':
    case 'ContiguousFile':
      return 'file';
    case 'Directory':
      return 'directory';
    case 'SymbolicLink':
      return 'symlink';
    case 'Link':
      return 'hardlink';
    default:
      // CharacterDevice, BlockDevice, FIFO, GNUDumpDir...: gVisor supplies /dev itself
      return 'skip';
  }
}
