/**
 * The files of an image archive (`docker save` output or an OCI layout
 * tarball), unpacked once into a scratch directory so that blobs can be read
 * in manifest order (docker save writes manifest.json last).
 *
 * Blobs are stored under numbered names, never under the archive's own paths,
 * and in-archive symlinks/hardlinks (old `docker save` dedupes identical
 * layers that way) are resolved by name, in memory: the outer archive never
 * creates a link on disk. Every file's sha256 is computed while it is copied,
 * so verifying blob digests later costs nothing.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readFile } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { readDecompressed } from './archive-compression.js';
import { imageProblem } from './image-errors.js';
import { readTarArchive } from './tar-entry-reader.js';

/** One regular file of the archive, as unpacked. */
export interface ArchiveFile {
  /** its path inside the archive */
  name: string;
  hostPath: string;
  /** hex sha256 of its content */
  sha256: string;
  size: number;
}

const MAX_LINK_HOPS = 16;

/** The unpacked files of one image archive, looked up by their path inside it. */
export class OciArchiveContents {
  private constructor(
    private readonly files: Map<string, ArchiveFile>,
    private readonly links: Map<string, string>,
  ) {}

  /** Unpacks `archivePath` (plain or gzip tar) into `scratchDir`, which must exist and be empty. */
  static async unpack(archivePath: string, scratchDir: string): Promise<OciArchiveContents> {
    const files = new Map<string, ArchiveFile>();
    const links = new Map<string, string>();
    let counter = 0;
    await readTarArchive(readDecompressed(archivePath, 'the archive'), 'the archive', async (header) => {
      const name = archiveName(header.path);
      if (name === undefined) return undefined;
      if (header.type === 'SymbolicLink' || header.type === 'Link') {
        // symlink targets are relative to the link's directory, hardlink targets to the archive root
        const base = header.type === 'SymbolicLink' ? posix.dirname(name) : '.';
        const target = archiveName(posix.join(base, header.linkpath ?? ''));
        if (target !== undefined) links.set(name, target);
        return undefined;
      }
      if (header.type !== 'File' && header.type !== 'OldFile' && header.type !== 'ContiguousFile') return undefined;
      counter += 1;
      const hostPath = join(scratchDir, `blob-${counter}`);
      const handle = await open(hostPath, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
      const hash = createHash('sha256');
      let size = 0;
      return {
        async write(chunk) {
          hash.update(chunk);
          size += chunk.length;
          for (let offset = 0; offset < chunk.length; ) offset += (await handle.write(chunk, offset)).bytesWritten;
        },
        async end() {
          await handle.close();
          files.set(name, { name, hostPath, sha256: hash.digest('hex'), size });
        },
        async abort() {
          await handle.close();
        },
      };
    });
    return new OciArchiveContents(files, links);
  }

  /** The regular file at `name` (following in-archive links), or undefined. */
  file(name: string): ArchiveFile | undefined {
    let current = archiveName(name);
    for (let hop = 0; current !== undefined && hop <= MAX_LINK_HOPS; hop += 1) {
      const found = this.files.get(current);
      if (found !== undefined) return found;
      current = this.links.get(current);
    }
    return undefined;
  }

  /** True when the archive holds a file at `name`. */
  has(name: string): boolean {
    return this.file(name) !== undefined;
  }

  /** The file at `name` parsed as JSON; INVALID_IMAGE when missing or not JSON. */
  async readJson(name: string): Promise<unknown> {
    const file = this.file(name);
    if (file === undefined) throw imageProblem(`the archive has no ${name}`);
    return parseJson(await readFile(file.hostPath, 'utf8'), name);
  }
}

/** Parses JSON from an archive file, turning a syntax error into INVALID_IMAGE. */
export function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw imageProblem(`${what} is not valid JSON (${(error as Error).message})`);
  }
}

/** Normalizes a path inside the archive; undefined for the root, INVALID_IMAGE for names that climb out. */
function archiveName(raw: string): string | undefined {
  const normalized = posix.normalize(raw.replace(/^\/+/, '/'));
  if (normalized.startsWith('/') || normalized === '..' || normalized.startsWith('../')) {
    throw imageProblem(`the archive has an entry outside its root (${JSON.stringify(raw)})`, { entry: raw });
  }
  const trimmed = normalized.replace(/\/+$/, '');
  return trimmed === '' || trimmed === '.' ? undefined : trimmed;
}
