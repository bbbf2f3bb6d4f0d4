/**
 * File operations a driver performs inside a sandbox, with the sandbox's own
 * view of the filesystem: paths are absolute paths of the sandbox, resolved
 * by the driver without ever leaving the sandbox's root, whatever symlinks
 * or ".." they hold. Part of the SandboxDriver port.
 */
import type { SandboxHandle } from './sandbox-driver.js';

/** One directory entry or the result of stat. */
export interface FileInfo {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  /** permission bits as four octal digits, e.g. "0644" */
  mode: string;
  modifiedAt: string;
  /** target of a symlink, as stored in the link */
  target?: string;
}

/**
 * How symlinks met on the way are treated. `follow`: like the kernel, but
 * never above the sandbox's root. `refuse`: any symlink is an error
 * (FILE_CHANGED), so an operation on a canonical path touches exactly that
 * path even while the sandbox swaps directories for symlinks.
 */
export type SymlinkPolicy = 'follow' | 'refuse';

/** A file read. */
export interface FileContent {
  content: Buffer;
  /** the file's size when it was opened */
  size: number;
  /** more bytes follow `offset + content.length` */
  truncated: boolean;
}

/** The file operations of a driver; each takes the handle of a running sandbox. */
export interface SandboxFiles {
  /** Reads up to `maxBytes` from `offset` (default 0) of a regular file; the last symlink is followed unless refused. */
  read(handle: SandboxHandle, path: string, options: { maxBytes: number; offset?: number; symlinks?: SymlinkPolicy }): Promise<FileContent>;
  /**
   * Replaces the file atomically (a randomly named file in the same
   * directory, renamed over it); a symlink at `path` is replaced, not
   * followed. Keeps the mode of a file it replaces.
   */
  write(handle: SandboxHandle, path: string, content: Uint8Array, options: { createParents: boolean; symlinks?: SymlinkPolicy; mode?: number }): Promise<void>;
  /** Stat of a path; the last symlink is not followed unless `followLast`. */
  stat(handle: SandboxHandle, path: string, options?: { followLast?: boolean; symlinks?: SymlinkPolicy }): Promise<FileInfo>;
  /** Entries of a directory, sorted by name (at most 100,000). */
  list(handle: SandboxHandle, path: string, options?: { symlinks?: SymlinkPolicy }): Promise<FileInfo[]>;
  /** Creates a directory (and its parents unless `parents: false`); `created` is false when it was there. */
  mkdir(handle: SandboxHandle, path: string, options?: { parents?: boolean; symlinks?: SymlinkPolicy }): Promise<{ created: boolean }>;
  /** Removes a file or symlink, or a directory tree when `recursive`; never follows a symlink inside the tree. */
  remove(handle: SandboxHandle, path: string, options: { recursive: boolean; symlinks?: SymlinkPolicy }): Promise<void>;
  /** Renames within the sandbox; replaces the target unless `noReplace`. */
  rename(handle: SandboxHandle, from: string, to: string, options?: { noReplace?: boolean; symlinks?: SymlinkPolicy }): Promise<void>;
  /** The path with every symlink followed (the last one only when `followLast`) and missing components kept as given. */
  canonical(handle: SandboxHandle, path: string, options: { followLast: boolean }): Promise<string>;
}
