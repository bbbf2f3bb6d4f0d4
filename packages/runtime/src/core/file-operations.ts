/**
 * File operations of the files API on a session's machine, carried out by
 * the driver inside the sandbox (SandboxDriver.files): the sandbox's own
 * view resolves every path, so `..` and symlinks can only ever land inside
 * the session. The pipeline resolves a path once (`canonical`, for policy);
 * the operation then runs on that canonical path with symlinks refused, so
 * a symlink swapped in after the check fails the call (FILE_CHANGED)
 * instead of redirecting it.
 */
import { AirlockError } from './errors.js';
import type { SandboxDriver, SandboxHandle } from './sandbox-driver.js';
import type { FileContent, FileInfo } from './sandbox-files.js';

/** One directory entry or the result of stat. */
export type { FileInfo } from './sandbox-files.js';

/** File operations on canonical paths. */
export class FileOperations {
  constructor(private readonly driver: SandboxDriver) {}

  /** Lexically normalizes `path` against `/workspace`: absolute, no `.` or `..`, no trailing slash. */
  static lexical(path: string, cwd = '/workspace'): string {
    if (path.includes('\0')) throw new AirlockError('INVALID_ARGUMENTS', 'path must not contain NUL bytes', { details: { field: 'path' } });
    const joined = path.startsWith('/') ? path : `${cwd}/${path}`;
    const parts: string[] = [];
    for (const part of joined.split('/')) {
      if (part === '' || part === '.') continue;
      if (part === '..') parts.pop();
      else parts.push(part);
    }
    return `/${parts.join('/')}`;
  }

  /** The canonical path as the sandbox resolves it: symlinks followed (the last too, when `followLast`). */
  canonical(handle: SandboxHandle, path: string, followLast: boolean): Promise<string> {
    return this.driver.files.canonical(handle, path, { followLast });
  }

  /** Reads up to `maxBytes` of a file. */
  read(handle: SandboxHandle, path: string, maxBytes: number): Promise<FileContent> {
    return this.driver.files.read(handle, path, { maxBytes, symlinks: 'refuse' });
  }

  /** Writes a file atomically (a randomly named file in the same directory, then rename). */
  write(handle: SandboxHandle, path: string, content: Uint8Array, options: { createParents: boolean }): Promise<void> {
    return this.driver.files.write(handle, path, content, { createParents: options.createParents, symlinks: 'refuse' });
  }

  /** Lists a directory (one level). */
  list(handle: SandboxHandle, path: string): Promise<FileInfo[]> {
    return this.driver.files.list(handle, path, { symlinks: 'refuse' });
  }

  /** Stat of one path (a final symlink not followed). */
  stat(handle: SandboxHandle, path: string): Promise<FileInfo> {
    return this.driver.files.stat(handle, path, { symlinks: 'refuse' });
  }

  /** Removes a file, or a directory when `recursive`. */
  async remove(handle: SandboxHandle, path: string, recursive: boolean): Promise<void> {
    if (path === '/' || path === '/workspace') {
      throw new AirlockError('INVALID_ARGUMENTS', `refusing to remove ${path}; remove the entries inside it instead`, { details: { field: 'path' } });
    }
    await this.driver.files.remove(handle, path, { recursive, symlinks: 'refuse' });
  }

  /** Creates a directory (and its parents). */
  async mkdir(handle: SandboxHandle, path: string): Promise<void> {
    await this.driver.files.mkdir(handle, path, { parents: true, symlinks: 'refuse' });
  }
}
