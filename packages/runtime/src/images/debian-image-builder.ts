/**
 * Builds the Debian bookworm root filesystem with debootstrap, and caches the
 * finished tree as a tarball so that later builds (another data dir, or after
 * `rm`) take seconds instead of the ~80 s of debootstrap.
 *
 * The cache is `<cacheDir>/debian-<suite>-<key>.tar` (GNU tar, numeric owners,
 * file capabilities kept) plus `debian-<suite>-<key>.json` holding the rootfs
 * digest; `key` hashes the recipe (suite, variant, packages), the finishing
 * steps' version and the architecture. A restored tree must digest to the
 * recorded value, otherwise the cache is ignored and debootstrap runs: a
 * damaged or tampered cache costs time, never a wrong image.
 */
import { execFile, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { delimiter, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { AirlockError } from '../core/errors.js';
import { hostArchitecture } from './host-architecture.js';
import type { ImageProgress } from '../core/image-catalog.js';
import { digestRootfs, type RootfsDigest } from './image-digest.js';
import { isNoSpace } from './image-errors.js';
import { removeTree, writeJsonAtomic } from './image-staging.js';
import { DebootstrapProgress } from './debootstrap-progress.js';
import { DESKTOP_IMAGE_FILES, DESKTOP_PACKAGES, type ImageFile } from './desktop-image-files.js';

/** What goes into the Debian image; the cache key hashes exactly this (plus the finishing steps and architecture). */
export interface DebianRecipe {
  suite: string;
  variant: string;
  include: readonly string[];
  /** files written into the tree after debootstrap (scripts, hooks) */
  files?: readonly ImageFile[];
}

/** The recipe of the stock image: bookworm minbase with python3, CA certificates and procps. */
export const DEBIAN_BOOKWORM: DebianRecipe = { suite: 'bookworm', variant: 'minbase', include: ['python3', 'ca-certificates', 'procps'] };

/** The recipe of the desktop image: the stock image plus a display, a VNC server, Chromium and xdotool (docs/desktop.md). */
export const DEBIAN_BOOKWORM_DESKTOP: DebianRecipe = {
  suite: 'bookworm',
  variant: 'minbase',
  include: [...DEBIAN_BOOKWORM.include, ...DESKTOP_PACKAGES],
  files: DESKTOP_IMAGE_FILES,
};

/** /etc/hostname of built images (the sandbox's UTS name is set by the driver; this is what tools read from the file). */
export const DEBIAN_HOSTNAME = 'airlock';

/** Bump when `finishRootfs` changes, so old caches are not reused for the new layout. */
const FINISH_VERSION = 1;
const TAR_FLAGS = ['--numeric-owner', '--xattrs', '--xattrs-include=security.capability', '--xattrs-include=user.*'];
const SBIN_DIRS = ['/usr/local/sbin', '/usr/sbin', '/sbin'];
const run = promisify(execFile);

/** The result of a build: the rootfs digest and whether the cache served it. */
export interface DebianBuildResult extends RootfsDigest {
  fromCache: boolean;
  cacheKey: string;
  /** the mirror debootstrap used (undefined when served from the cache) */
  mirror: string | undefined;
}

/** Options of `DebianImageBuilder`. */
export interface DebianImageBuilderOptions {
  cacheDir: string;
  mirror: string;
  /** debootstrap to run; default: found on PATH or in the sbin directories */
  debootstrapPath?: string;
  recipe?: DebianRecipe;
}

/** The cache key of a recipe: 16 hex digits of sha256 over what determines the finished tree. */
export function debianCacheKey(recipe: DebianRecipe): string {
  const files = (recipe.files ?? []).map((file) => ({ path: file.path, mode: file.mode, sha256: createHash('sha256').update(file.content).digest('hex') }));
  const material = JSON.stringify({
    suite: recipe.suite,
    variant: recipe.variant,
    include: [...recipe.include].sort(),
    finish: FINISH_VERSION,
    arch: hostArchitecture(),
    // the stock recipe's key stays what it was before recipes had files, so existing caches still serve it
    ...(files.length > 0 ? { files } : {}),
  });
  return createHash('sha256').update(material).digest('hex').slice(0, 16);
}

/** Builds the Debian root filesystem into an empty directory, from the cache when it holds a verified copy. */
export class DebianImageBuilder {
  private readonly recipe: DebianRecipe;

  constructor(private readonly options: DebianImageBuilderOptions) {
    this.recipe = options.recipe ?? DEBIAN_BOOKWORM;
  }

  /** The cache tarball this builder reads and writes. */
  get cacheFile(): string {
    return join(this.options.cacheDir, `debian-${this.recipe.suite}-${debianCacheKey(this.recipe)}.tar`);
  }

  /** Fills `rootfs` (an existing empty directory); reports phases through `onProgress`. */
  async build(rootfs: string, onProgress: (progress: ImageProgress) => void = () => undefined): Promise<DebianBuildResult> {
    const cacheKey = debianCacheKey(this.recipe);
    const cached = await this.restoreFromCache(rootfs, onProgress);
    if (cached !== undefined) return { ...cached, fromCache: true, cacheKey, mirror: undefined };

    await this.debootstrap(rootfs, onProgress);
    onProgress({ phase: 'finish', message: 'Removing apt lists and caches, adding /workspace and /etc/hostname', fraction: 0.9 });
    await finishRootfs(rootfs, this.recipe.files ?? []);
    onProgress({ phase: 'digest', message: 'Computing the image digest', fraction: 0.92 });
    const digest = await digestRootfs(rootfs);
    await this.saveCache(rootfs, digest, onProgress);
    return { ...digest, fromCache: false, cacheKey, mirror: this.options.mirror };
  }

  private get cacheMetadataFile(): string {
    return this.cacheFile.replace(/\.tar$/, '.json');
  }

  /** Extracts and verifies the cached tree; undefined (and `rootfs` empty again) when there is none or it does not verify. */
  private async restoreFromCache(rootfs: string, onProgress: (progress: ImageProgress) => void): Promise<RootfsDigest | undefined> {
    const metadata = await readFile(this.cacheMetadataFile, 'utf8').then(parseOrUndefined, () => undefined);
    if (typeof metadata?.['digest'] !== 'string') return undefined;
    if (!(await access(this.cacheFile).then(() => true, () => false))) return undefined;
    onProgress({ phase: 'cache', message: `Extracting the cached image ${this.cacheFile}`, fraction: 0.1 });
    try {
      await run('tar', ['--extract', '--file', this.cacheFile, '--preserve-permissions', ...TAR_FLAGS, '--directory', rootfs], { maxBuffer: 1 << 20 });
      onProgress({ phase: 'digest', message: 'Verifying the cached image against its digest', fraction: 0.6 });
      const digest = await digestRootfs(rootfs);
      if (digest.digest === metadata['digest']) return digest;
      onProgress({ phase: 'cache', message: `The cached image does not match its recorded digest; rebuilding with debootstrap`, fraction: 0 });
    } catch (error) {
      if (isNoSpace(error)) throw error;
      onProgress({ phase: 'cache', message: `The cached image could not be extracted (${firstLine(error)}); rebuilding with debootstrap`, fraction: 0 });
    }
    await removeTree(rootfs);
    await mkdir(rootfs, { mode: 0o755 });
    return undefined;
  }

  /** Saves the finished tree and its digest; a failure only costs the next build time, so it is reported, not thrown. */
  private async saveCache(rootfs: string, digest: RootfsDigest, onProgress: (progress: ImageProgress) => void): Promise<void> {
    onProgress({ phase: 'cache', message: `Saving the image to the cache ${this.cacheFile}`, fraction: 0.95 });
    const temporary = `${this.cacheFile}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      await mkdir(this.options.cacheDir, { recursive: true, mode: 0o755 });
      await run('tar', ['--create', '--file', temporary, ...TAR_FLAGS, '--directory', rootfs, '.'], { maxBuffer: 1 << 20 });
      // metadata first: a tarball is only ever used next to the digest that vouches for it
      await writeJsonAtomic(this.cacheMetadataFile, { digest: digest.digest, recipe: this.recipe, createdAt: new Date().toISOString() });
      await rename(temporary, this.cacheFile);
    } catch (error) {
      await rm(temporary, { force: true });
      onProgress({ phase: 'cache', message: `Could not save the cache (${firstLine(error)}); the next build will run debootstrap again`, fraction: 0.95 });
    }
  }

  private async debootstrap(rootfs: string, onProgress: (progress: ImageProgress) => void): Promise<void> {
    const executable = await findDebootstrap(this.options.debootstrapPath);
    if (executable === undefined) {
      throw new AirlockError('DRIVER_UNAVAILABLE', 'debootstrap is not installed, and building the Debian image needs it. Install it with `apt-get install debootstrap` and retry.', {
        details: { tool: 'debootstrap' },
      });
    }
    const { suite, variant, include } = this.recipe;
    const args = [`--variant=${variant}`, `--include=${include.join(',')}`, suite, rootfs, this.options.mirror];
    onProgress({ phase: 'resolve', message: `Running debootstrap ${args.join(' ')}`, fraction: 0 });
    const progress = new DebootstrapProgress();
    const tail: string[] = [];
    const child = spawn(executable, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      // debootstrap calls chroot, mount and friends from sbin, which a service PATH may lack
      env: { ...process.env, PATH: [process.env['PATH'] ?? '', ...SBIN_DIRS].filter(Boolean).join(delimiter), DEBIAN_FRONTEND: 'noninteractive', LC_ALL: 'C' },
    });
    const onLine = (line: string): void => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      const report = progress.line(line);
      if (report !== undefined) onProgress(report);
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    const exitCode = await new Promise<number>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', (code, signal) => resolve(code ?? (signal === null ? 1 : 128)));
    }).catch((error: unknown) => {
      throw new AirlockError('DRIVER_UNAVAILABLE', `debootstrap could not be started (${firstLine(error)}). Install it with \`apt-get install debootstrap\` and retry.`, { cause: error });
    });
    if (exitCode !== 0) throw this.failure(exitCode, tail);
  }

  /** Explains a failed debootstrap run by its output. */
  private failure(exitCode: number, tail: readonly string[]): AirlockError {
    const output = tail.join('\n');
    const reason = [...tail].reverse().find((line) => line.startsWith('E:')) ?? tail.at(-1) ?? `exit code ${exitCode}`;
    const details = { exitCode, output: tail };
    const mirror = this.options.mirror;
    if (/No space left on device/i.test(output)) {
      return new AirlockError('DISK_FULL', `debootstrap ran out of disk space (${reason}). Free some space on the disk holding the image directory and retry.`, { details });
    }
    if (/can only run as root|must be root|Operation not permitted/i.test(output)) {
      return new AirlockError('DRIVER_UNAVAILABLE', `debootstrap needs root (${reason}). Run the Airlock server as root to build images.`, { details });
    }
    if (/Failed getting release|Couldn't download|Failure trying to run: wget|Could not resolve|Temporary failure in name resolution|Connection refused|Connection timed out|Network is unreachable/i.test(output)) {
      return new AirlockError(
        'DRIVER_UNAVAILABLE',
        `Cannot download Debian ${this.recipe.suite} from the mirror ${mirror} (${reason}). Check that this machine reaches it (\`curl -sI ${mirror}/dists/${this.recipe.suite}/InRelease\`), or use a reachable mirror: pass \`mirror\` to the image catalog, or fix the first URI in /etc/apt/sources.list.d/debian.sources.`,
        { details: { ...details, mirror } },
      );
    }
    if (/signature|NO_PUBKEY|keyring/i.test(output)) {
      return new AirlockError('DRIVER_UNAVAILABLE', `debootstrap could not verify the Debian archive (${reason}). Install the archive keys with \`apt-get install debian-archive-keyring\` and retry.`, { details });
    }
    return new AirlockError('DRIVER_FAILED', `debootstrap failed with exit code ${exitCode} (${reason}). The last lines of its output are in this error's details.`, { details });
  }
}

/** Removes what a running sandbox never needs (apt lists and caches, ~90 MB) and adds what Airlock expects and the recipe's files. */
async function finishRootfs(rootfs: string, files: readonly ImageFile[]): Promise<void> {
  // `partial` stays: apt expects the directory layout, not the content
  await emptyDirectory(join(rootfs, 'var/lib/apt/lists'), ['partial']);
  await emptyDirectory(join(rootfs, 'var/cache/apt/archives'), ['partial', 'lock']);
  await emptyDirectory(join(rootfs, 'var/cache/apt/archives/partial'), []);
  for (const name of ['pkgcache.bin', 'srcpkgcache.bin']) await rm(join(rootfs, 'var/cache/apt', name), { force: true });
  await rm(join(rootfs, 'debootstrap'), { recursive: true, force: true });
  await mkdir(join(rootfs, 'workspace'), { recursive: true, mode: 0o755 });
  await writeFile(join(rootfs, 'etc/hostname'), `${DEBIAN_HOSTNAME}\n`, { mode: 0o644 });
  for (const file of files) {
    const target = join(rootfs, file.path);
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    await writeFile(target, file.content, { mode: file.mode });
    // writeFile's mode is masked by the umask and ignored for an existing file
    await chmod(target, file.mode);
  }
}

async function emptyDirectory(directory: string, keep: readonly string[]): Promise<void> {
  const names = await readdir(directory).catch(() => [] as string[]);
  for (const name of names) {
    if (!keep.includes(name)) await rm(join(directory, name), { recursive: true, force: true });
  }
}

/** The debootstrap executable: the given path if executable, else the first on PATH or in the sbin directories. */
async function findDebootstrap(explicit: string | undefined): Promise<string | undefined> {
  const candidates = explicit !== undefined ? [explicit] : [...(process.env['PATH'] ?? '').split(delimiter).filter(Boolean), ...SBIN_DIRS].map((dir) => join(dir, 'debootstrap'));
  for (const candidate of candidates) {
    if (await access(candidate, constants.X_OK).then(() => true, () => false)) return candidate;
  }
  return undefined;
}

function parseOrUndefined(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
