/**
 * The image catalog on the host's disk: `<root>/<name>/rootfs/` holds the
 * root filesystem, `<root>/<name>/image.json` the record. Both appear
 * together, by one rename of a staging directory built next to them
 * (see image-staging.ts), so a reader never sees half an image, and an image
 * directory is never written again once it is in place: sessions mount the
 * rootfs read-only under a gVisor overlay, and a force rebuild replaces the
 * whole directory instead of touching it.
 *
 * Digests follow image-digest.ts (a canonical listing of the rootfs, for both
 * sources); the OCI manifest and config digests of imports are kept in
 * image.json under `provenance`.
 */
import { mkdir, readdir, readFile, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { AirlockError } from '../core/errors.js';
import { DEBIAN_BOOKWORM, DEBIAN_BOOKWORM_DESKTOP, DebianImageBuilder } from './debian-image-builder.js';
import { DESKTOP_IMAGE_ENV } from './desktop-image-files.js';
import { requireDebianMirror } from './debian-mirror.js';
import type { ImageCatalog, ImageProgress, ImageRecord } from '../core/image-catalog.js';
import { digestRootfs } from './image-digest.js';
import { errnoCode, toImageError } from './image-errors.js';
import { imageExists, removeAtomically, StagingDirectory, sweepLeftovers, writeJsonAtomic } from './image-staging.js';
import { importOciArchive as importArchive } from './oci-archive-importer.js';
import { ensureRootfsBlockImage } from './rootfs-block-image.js';

/** Options of the host image catalog. */
export interface LocalImageCatalogOptions {
  /** directory holding one folder per image, e.g. `<data-dir>/images` */
  root: string;
  /** where the Debian build cache lives, e.g. `/var/cache/airlock` (shared by data dirs) */
  cacheDir: string;
  /** Debian mirror for debootstrap; default: $AIRLOCK_DEBIAN_MIRROR, else the one apt uses on this machine */
  mirror?: string;
  /** debootstrap executable; default: found on PATH or in the sbin directories */
  debootstrapPath?: string;
  /** consulted before a force rebuild replaces an image, as `remove` consults its argument */
  inUse?: (name: string) => boolean;
}

/** An image record plus what the local catalog also keeps: the image's working directory and where it came from. */
export interface LocalImageRecord extends ImageRecord {
  /** `WorkingDir` of an imported image's config, when it sets one */
  workingDir?: string;
  /** debootstrap recipe and mirror, or archive format and OCI digests */
  provenance: Record<string, unknown>;
}

/** The stock image name of `buildDebian`. */
export const DEFAULT_DEBIAN_IMAGE = 'debian-bookworm';
/** The image name of `buildDebian({ desktop: true })`. */
export const DEFAULT_DESKTOP_IMAGE = 'debian-bookworm-desktop';

const NAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** Where an image keeps its on-start hooks, relative to its rootfs. */
const START_HOOKS_DIR = 'etc/airlock/hooks/on-start.d';
const MANIFEST_FILE = 'image.json';

const manifestSchema = z.object({
  formatVersion: z.literal(1),
  name: z.string(),
  digest: z.string(),
  source: z.enum(['debootstrap', 'oci-archive']),
  sizeBytes: z.number(),
  createdAt: z.string(),
  env: z.record(z.string(), z.string()),
  workingDir: z.string().optional(),
  provenance: z.record(z.string(), z.unknown()),
});
type ImageManifest = z.infer<typeof manifestSchema>;
type ImageContent = Omit<ImageManifest, 'formatVersion' | 'name' | 'createdAt'>;

/** `ImageCatalog` over a directory of the host: builds with debootstrap, imports OCI archives. */
export class LocalImageCatalog implements ImageCatalog {
  private readonly root: string;

  constructor(private readonly options: LocalImageCatalogOptions) {
    this.root = resolve(options.root);
  }

  /** Every image in the catalog, by name; folders without a readable record are skipped. */
  async list(): Promise<LocalImageRecord[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') return [];
      throw toImageError(error, this.root);
    }
    const records: LocalImageRecord[] = [];
    for (const name of names.filter((candidate) => NAME.test(candidate)).sort()) {
      const record = await this.read(name).catch(() => undefined);
      if (record !== undefined) records.push(record);
    }
    return records;
  }

  /** The image called `name`; IMAGE_NOT_FOUND naming the commands that make one. */
  async get(name: string): Promise<LocalImageRecord> {
    const record = await this.read(checkName(name));
    if (record === undefined) throw notFound(name);
    return record;
  }

  /** The image's root filesystem as a read-only ext4 image file, cached per digest under the cache dir. */
  async rootfsBlockDevice(name: string): Promise<string> {
    return ensureRootfsBlockImage(await this.get(name), this.options.cacheDir);
  }

  /**
   * Builds Debian bookworm (minbase + python3, ca-certificates, procps) with debootstrap, from the cache when it has a
   * verified copy; `desktop` adds a display, a VNC server, Chromium and xdotool (docs/desktop.md).
   */
  async buildDebian(options: { name?: string; onProgress?: (p: ImageProgress) => void; force?: boolean; desktop?: boolean } = {}): Promise<LocalImageRecord> {
    const desktop = options.desktop === true;
    const recipe = desktop ? DEBIAN_BOOKWORM_DESKTOP : DEBIAN_BOOKWORM;
    const name = checkName(options.name ?? (desktop ? DEFAULT_DESKTOP_IMAGE : DEFAULT_DEBIAN_IMAGE));
    const force = options.force === true;
    if (await this.exists(name)) {
      if (!force) throw imageExists(name);
      if (this.options.inUse?.(name) === true) throw inUse(name, 'rebuild');
    }
    const onProgress = options.onProgress ?? (() => undefined);
    return this.stage(name, force, onProgress, async (rootfs) => {
      const mirror = this.options.mirror ?? (await requireDebianMirror());
      const builder = new DebianImageBuilder({
        cacheDir: this.options.cacheDir,
        mirror,
        recipe,
        ...(this.options.debootstrapPath === undefined ? {} : { debootstrapPath: this.options.debootstrapPath }),
      });
      const built = await builder.build(rootfs, onProgress);
      const { files, ...packages } = recipe;
      return {
        digest: built.digest,
        sizeBytes: built.sizeBytes,
        source: 'debootstrap',
        env: desktop ? { ...DESKTOP_IMAGE_ENV } : {},
        provenance: {
          ...packages,
          ...(files === undefined ? {} : { files: files.map((file) => file.path), desktop: true }),
          mirror: built.mirror ?? null,
          cacheKey: built.cacheKey,
          fromCache: built.fromCache,
        },
      };
    });
  }

  /** Imports a `docker save` or OCI layout archive; INVALID_IMAGE (and nothing left behind) when it is damaged or unsafe. */
  async importOciArchive(options: { name: string; archivePath: string; onProgress?: (p: ImageProgress) => void }): Promise<LocalImageRecord> {
    const name = checkName(options.name);
    if (await this.exists(name)) throw imageExists(name);
    const archivePath = resolve(options.archivePath);
    const archive = await stat(archivePath).catch(() => undefined);
    if (archive === undefined || !archive.isFile()) {
      throw new AirlockError(
        'INVALID_ARGUMENTS',
        `No image archive file at ${archivePath}. Pass a file written by \`docker save IMAGE -o file.tar\` or \`skopeo copy docker://IMAGE oci-archive:file.tar\`.`,
        { details: { archivePath } },
      );
    }
    const onProgress = options.onProgress ?? (() => undefined);
    return this.stage(name, false, onProgress, async (rootfs, stagingPath) => {
      const scratchDir = join(stagingPath, 'archive');
      await mkdir(scratchDir, { mode: 0o700 });
      const imported = await importArchive({ archivePath, rootfsDir: rootfs, scratchDir, onProgress });
      await rm(scratchDir, { recursive: true, force: true });
      onProgress({ phase: 'digest', message: 'Computing the image digest', fraction: 0.96 });
      const digest = await digestRootfs(rootfs);
      return {
        digest: digest.digest,
        sizeBytes: digest.sizeBytes,
        source: 'oci-archive',
        env: imported.env,
        ...(imported.workingDir === undefined ? {} : { workingDir: imported.workingDir }),
        provenance: {
          archive: archivePath,
          format: imported.format,
          configDigest: imported.configDigest,
          manifestDigest: imported.manifestDigest ?? null,
          layers: imported.layerCount,
        },
      };
    });
  }

  /** Deletes the image's rootfs and record; INVALID_STATE while `inUse(name)` says a live session runs on it. */
  async remove(name: string, isInUse: (name: string) => boolean): Promise<void> {
    checkName(name);
    if (!(await this.exists(name))) throw notFound(name);
    if (isInUse(name)) throw inUse(name, 'remove');
    try {
      await removeAtomically(this.imageDir(name), name);
    } catch (error) {
      if (errnoCode(error) === 'ENOENT') throw notFound(name);
      throw toImageError(error, this.root);
    }
  }

  private imageDir(name: string): string {
    return join(this.root, name);
  }

  private async exists(name: string): Promise<boolean> {
    return stat(this.imageDir(name)).then(
      () => true,
      () => false,
    );
  }

  /** Fills a staging directory, records it and renames it into place; on any failure nothing is left behind. */
  private async stage(
    name: string,
    replace: boolean,
    onProgress: (p: ImageProgress) => void,
    fill: (rootfs: string, stagingPath: string) => Promise<ImageContent>,
  ): Promise<LocalImageRecord> {
    let staging: StagingDirectory | undefined;
    try {
      await sweepLeftovers(this.root);
      staging = await StagingDirectory.create(this.root, name);
      const rootfs = join(staging.path, 'rootfs');
      await mkdir(rootfs, { mode: 0o755 });
      const content = await fill(rootfs, staging.path);
      const manifest: ImageManifest = { formatVersion: 1, name, createdAt: new Date().toISOString(), ...content };
      await writeJsonAtomic(join(staging.path, MANIFEST_FILE), manifest);
      await staging.install(this.imageDir(name), { replace, name });
      onProgress({ phase: 'done', message: `Image ${name} is ready (${manifest.digest})`, fraction: 1 });
      return await this.withStartHooks(this.toRecord(manifest));
    } catch (error) {
      await staging?.discard().catch(() => undefined);
      throw toImageError(error, this.root);
    }
  }

  /** The record of `name`, undefined when there is no image folder or record; INVALID_IMAGE when the record is damaged. */
  private async read(name: string): Promise<LocalImageRecord | undefined> {
    const file = join(this.imageDir(name), MANIFEST_FILE);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      const code = errnoCode(error);
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw toImageError(error, this.root);
    }
    let parsed: ReturnType<typeof manifestSchema.safeParse>;
    try {
      parsed = manifestSchema.safeParse(JSON.parse(text));
    } catch {
      parsed = manifestSchema.safeParse(undefined);
    }
    if (!parsed.success || parsed.data.name !== name) {
      throw new AirlockError('INVALID_IMAGE', `The record ${file} of image "${name}" is damaged. Remove the image with \`airlock images rm ${name}\` and build or import it again.`, {
        details: { name, file },
      });
    }
    return this.withStartHooks(this.toRecord(parsed.data));
  }

  /** Records whether the image has on-start hooks: known here, on the host, so that sessions of images without any do not look inside their machine. */
  private async withStartHooks(record: LocalImageRecord): Promise<LocalImageRecord> {
    record.startHooks = await stat(join(record.rootfsDir, START_HOOKS_DIR)).then(
      (info) => info.isDirectory(),
      () => false,
    );
    return record;
  }

  private toRecord(manifest: ImageManifest): LocalImageRecord {
    const record: LocalImageRecord = {
      name: manifest.name,
      digest: manifest.digest,
      rootfsDir: join(this.imageDir(manifest.name), 'rootfs'),
      source: manifest.source,
      sizeBytes: manifest.sizeBytes,
      createdAt: manifest.createdAt,
      env: manifest.env,
      provenance: manifest.provenance,
      desktop: manifest.provenance['desktop'] === true,
    };
    if (manifest.workingDir !== undefined) record.workingDir = manifest.workingDir;
    return record;
  }
}

/** Returns `name` when it is a valid image name; INVALID_ARGUMENTS otherwise. */
function checkName(name: unknown): string {
  if (typeof name === 'string' && NAME.test(name)) return name;
  throw new AirlockError(
    'INVALID_ARGUMENTS',
    `Invalid image name ${JSON.stringify(name)}: use 1 to 64 characters from a-z, 0-9, '.', '_' and '-', starting with a letter or digit (for example \`debian-bookworm\`).`,
    { details: { name } },
  );
}

function notFound(name: string): AirlockError {
  const build = name === DEFAULT_DESKTOP_IMAGE ? 'Build the desktop image with `airlock images build --desktop`' : 'Build the Debian image with `airlock images build`';
  return new AirlockError(
    'IMAGE_NOT_FOUND',
    `Image "${name}" not found. ${build} or import one with \`airlock images import ${name} FILE\`.`,
    { details: { name } },
  );
}

function inUse(name: string, action: 'remove' | 'rebuild'): AirlockError {
  return new AirlockError('INVALID_STATE', `Image "${name}" is in use by a live session, so it cannot be ${action === 'remove' ? 'removed' : 'rebuilt'} now. End the sessions started from it, then retry.`, {
    details: { name },
  });
}
