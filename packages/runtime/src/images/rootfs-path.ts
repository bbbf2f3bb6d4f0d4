/**
 * Path handling for writing untrusted layer entries into a root filesystem.
 *
 * Entry names are checked lexically first: absolute names and any `..`
 * component are refused outright (no real image needs them). Symlinks are a
 * different matter: images are full of absolute ones (`/etc/localtime ->
 * /usr/share/zoneinfo/...`) and a later entry may legitimately go through one.
 * So parent directories are resolved one component at a time with `lstat`,
 * and every symlink met on the way is followed *as if the root were `/`*
 * (the way the sandbox will see it, and the way Docker's chrooted unpack does):
 * an absolute target restarts at the root and `..` stops at the root. What
 * comes back is a chain of real directories inside the root, so the final
 * `open(O_EXCL | O_NOFOLLOW)`, `symlink` or `link` cannot land outside it.
 * Only the importer writes into the staging tree, so nothing can swap a
 * directory for a symlink between the check and the use.
 *
 * Synchronous on purpose, like the layer applier: see there.
 */
import { lstatSync, mkdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { errnoCode, imageProblem } from './image-errors.js';

/** Linux's own limit on symlinks followed while resolving one path. */
const MAX_SYMLINK_HOPS = 40;

/**
 * Splits a tar entry name into its components, dropping `.` and empty ones;
 * an empty result means the root itself. Refuses (INVALID_IMAGE) absolute
 * names and `..` components, naming `label` (which layer) in the message.
 */
export function entryComponents(name: string, label: string): string[] {
  if (name.startsWith('/')) {
    throw imageProblem(`${label} has an entry with an absolute path (${JSON.stringify(name)}), which could write outside the image`, { entry: name });
  }
  if (name.includes('\0')) {
    throw imageProblem(`${label} has an entry whose name contains a NUL byte (${JSON.stringify(name)})`, { entry: name });
  }
  const parts = name.split('/').filter((part) => part !== '' && part !== '.');
  if (parts.includes('..')) {
    throw imageProblem(`${label} has an entry that climbs out of the image with '..' (${JSON.stringify(name)})`, { entry: name });
  }
  return parts;
}

/** Options of `resolveParentDirectory`. */
export interface ResolveOptions {
  /** create missing directories (mode 0755) instead of reporting them missing */
  create: boolean;
  /** told about every directory created on the way, so callers can track them */
  onCreate?: (hostPath: string) => void;
  /** which layer, for error messages */
  label: string;
}

/**
 * Resolves the directory that holds the entry `parts` (every component but
 * the last) inside `root`, following symlinks with `root` as `/`. Returns its
 * host path, or undefined when a component is missing and `create` is off.
 */
export function resolveParentDirectory(root: string, parts: readonly string[], options: ResolveOptions): string | undefined {
  const pending = parts.slice(0, -1);
  let resolved: string[] = [];
  let hops = 0;
  while (pending.length > 0) {
    const part = pending.shift() as string;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      // only symlink targets get here (entry names with '..' are refused): stop at the root
      resolved.pop();
      continue;
    }
    const hostPath = join(root, ...resolved, part);
    let stats;
    try {
      stats = lstatSync(hostPath);
    } catch (error) {
      if (errnoCode(error) !== 'ENOENT') throw error;
      if (!options.create) return undefined;
      mkdirSync(hostPath, { mode: 0o755 });
      options.onCreate?.(hostPath);
      resolved.push(part);
      continue;
    }
    if (stats.isSymbolicLink()) {
      hops += 1;
      if (hops > MAX_SYMLINK_HOPS) {
        throw imageProblem(`${options.label} has an entry below a symlink loop (${parts.join('/')})`, { entry: parts.join('/') });
      }
      const target = readlinkSync(hostPath);
      if (target.startsWith('/')) resolved = [];
      pending.unshift(...target.split('/'));
      continue;
    }
    if (!stats.isDirectory()) {
      throw imageProblem(`${options.label} has an entry below ${JSON.stringify(part)}, which is not a directory (${parts.join('/')})`, { entry: parts.join('/') });
    }
    resolved.push(part);
  }
  return join(root, ...resolved);
}
