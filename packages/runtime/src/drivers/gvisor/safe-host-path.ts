/**
 * Host paths under a base directory, walked one component at a time with
 * lstat, for bind sources: runsc resolves a bind's source on the host, where
 * a symlink the agent planted in its workspace (`/workspace/a -> /`) would
 * lead to the host's own files.
 */
import { lstat, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';

/** A host path that crosses no symlink, and whether it is a directory. */
export interface HostPath {
  path: string;
  kind: 'directory' | 'file';
}

/**
 * `base/relative`: a symlink on the way is an INVALID_STATE error, a missing
 * component is made (an empty directory) when `create`, else the answer is undefined.
 */
export async function safeHostPath(base: string, relative: string, options: { create: boolean }): Promise<HostPath | undefined> {
  let path = base;
  let kind: HostPath['kind'] = 'directory';
  const parts = relative.split('/').filter((part) => part !== '');
  for (const [index, part] of parts.entries()) {
    if (kind !== 'directory') {
      throw new AirlockError('INVALID_STATE', `${path} is a file, so ${relative} under it cannot exist; fix the contract's filesystem rules or the disk`, {
        details: { path },
      });
    }
    path = join(path, part);
    const found = await lstat(path).catch(() => undefined);
    if (found?.isSymbolicLink()) {
      throw new AirlockError(
        'INVALID_STATE',
        `${path} is a symbolic link, so a filesystem rule cannot be mounted through it; replace it with a directory (the rules of ${relative} need real directories)`,
        {
          details: { path },
        },
      );
    }
    if (!found) {
      if (!options.create) return undefined;
      await mkdir(path);
      kind = 'directory';
      continue;
    }
    kind = found.isDirectory() ? 'directory' : 'file';
    if (!found.isDirectory() && !found.isFile() && index === parts.length - 1) {
      throw new AirlockError('INVALID_STATE', `${path} is neither a file nor a directory; a filesystem rule can only be mounted on one of those`, {
        details: { path },
      });
    }
  }
  return { path, kind };
}

/** `safeHostPath` with missing directories made. */
export async function createdHostPath(base: string, relative: string): Promise<HostPath> {
  const path = await safeHostPath(base, relative, { create: true });
  if (path === undefined) throw new AirlockError('INTERNAL', `${base}/${relative} was not created`);
  return path;
}
