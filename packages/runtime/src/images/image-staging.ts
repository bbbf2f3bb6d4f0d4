/**
 * How an image directory comes and goes without ever being half there.
 *
 * A build or import fills `<root>/.staging-<name>-<pid>-<random>/` (same
 * filesystem as the final place) and renames it to `<root>/<name>/` when
 * complete; removal renames the image to `.trash-...` first and deletes it
 * after. Image names cannot start with a dot, so these never collide with an
 * image. A process that dies mid-build leaves its staging directory behind;
 * the next build sweeps those whose process is gone. Before deleting a tree,
 * anything still mounted below it (debootstrap mounts /proc and /sys inside
 * the target and a killed run leaves them) is unmounted, so a recursive delete
 * never walks into a live /proc or /sys.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { AirlockError } from '../core/errors.js';
import { errnoCode } from './image-errors.js';

const run = promisify(execFile);
const LEFTOVER = /^\.(?:staging|trash)-.+-(\d+)-[0-9a-f]{8}$/;

/** A directory being filled next to its final place; `install` renames it there, `discard` deletes it. */
export class StagingDirectory {
  private constructor(readonly path: string) {}

  /** Creates `<parent>/.staging-<name>-<pid>-<random>/`, creating `parent` if needed. */
  static async create(parent: string, name: string): Promise<StagingDirectory> {
    await mkdir(parent, { recursive: true });
    const path = join(parent, uniqueName('staging', name));
    await mkdir(path, { mode: 0o755 });
    return new StagingDirectory(path);
  }

  /**
   * Renames the staging directory to `finalPath`. When something is already
   * there: IMAGE_EXISTS, or with `replace` the old one is moved aside and
   * deleted once the new one is in place.
   */
  async install(finalPath: string, options: { replace: boolean; name: string }): Promise<void> {
    try {
      await rename(this.path, finalPath);
      return;
    } catch (error) {
      const code = errnoCode(error);
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR') throw error;
      if (!options.replace) throw imageExists(options.name);
    }
    const trash = join(dirname(finalPath), uniqueName('trash', options.name));
    await rename(finalPath, trash);
    try {
      await rename(this.path, finalPath);
    } catch (error) {
      await rename(trash, finalPath).catch(() => undefined);
      throw error;
    }
    await removeTree(trash);
  }

  /** Deletes the staging directory and everything in it (mounts below it first). */
  async discard(): Promise<void> {
    await removeTree(this.path);
  }
}

/** The IMAGE_EXISTS error, with the two ways out. */
export function imageExists(name: string): AirlockError {
  return new AirlockError(
    'IMAGE_EXISTS',
    `Image "${name}" already exists. Remove it first with \`airlock images rm ${name}\`, or choose another name${name === 'debian-bookworm' ? ' (or rebuild with --force)' : ''}.`,
    { details: { name } },
  );
}

/** Deletes a tree after unmounting anything mounted below it; missing trees are fine. */
export async function removeTree(path: string): Promise<void> {
  await unmountBelow(path);
  await rm(path, { recursive: true, force: true });
}

/** Moves `path` aside to a `.trash-` name in the same directory (so it vanishes at once), then deletes it. */
export async function removeAtomically(path: string, name: string): Promise<void> {
  const trash = join(dirname(path), uniqueName('trash', name));
  await rename(path, trash);
  await removeTree(trash);
}

/** Deletes staging and trash directories in `parent` left by processes that no longer run. */
export async function sweepLeftovers(parent: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(parent);
  } catch (error) {
    if (errnoCode(error) === 'ENOENT') return;
    throw error;
  }
  for (const name of names) {
    const pid = Number(LEFTOVER.exec(name)?.[1]);
    if (Number.isInteger(pid) && pid > 0 && !processAlive(pid)) await removeTree(join(parent, name));
  }
}

/** Writes JSON to `file` through a temporary file and a rename, so readers see the old or the new content, never half. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const temporary = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(temporary, `${JSON.stringify(value, null, 2)}\n`, { mode: 0o644, flush: true });
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

function uniqueName(kind: 'staging' | 'trash', name: string): string {
  return `.${kind}-${name}-${process.pid}-${randomBytes(4).toString('hex')}`;
}

function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errnoCode(error) === 'EPERM';
  }
}

/** Unmounts (lazily, deepest first) every mount point at or below `path`, per /proc/self/mountinfo. */
async function unmountBelow(path: string): Promise<void> {
  let mountinfo: string;
  try {
    mountinfo = await readFile('/proc/self/mountinfo', 'utf8');
  } catch {
    return; // not Linux, or no /proc: nothing we could have mounted
  }
  const points = mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((field): field is string => field !== undefined)
    // mountinfo escapes space, tab, newline and backslash as octal
    .map((field) => field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((point) => point === path || point.startsWith(`${path}/`))
    .sort((a, b) => b.length - a.length);
  for (const point of points) {
    await run('umount', ['-l', point]).catch(() => undefined);
  }
}
