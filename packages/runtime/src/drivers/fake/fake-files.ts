/**
 * SandboxFiles of the fake driver: a host directory stands for a sandbox's
 * filesystem (the session disk dir, so files outlive a sandbox like a disk
 * would). For unit tests of the core only. Symlinks are followed by hand and
 * clamped to the directory, like the agent does, so a test can never reach
 * the rest of the host through it.
 */
import { lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../../core/errors.js';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import type { FileContent, FileInfo, SandboxFiles, SymlinkPolicy } from '../../core/sandbox-files.js';

/** One file operation the fake saw. */
export interface FakeFileCall {
  sandboxId: string;
  operation: string;
  path: string;
}

/** Files of fake sandboxes under host directories. */
export class FakeFiles implements SandboxFiles {
  /** every operation, in order */
  readonly calls: FakeFileCall[] = [];

  constructor(private readonly rootOf: (handle: SandboxHandle) => string) {}

  async read(handle: SandboxHandle, path: string, options: { maxBytes: number; offset?: number; symlinks?: SymlinkPolicy }): Promise<FileContent> {
    const host = await this.resolve(handle, 'read', path, true, options.symlinks);
    const info = await this.stat(handle, path, { followLast: true, ...(options.symlinks ? { symlinks: options.symlinks } : {}) });
    if (info.type === 'directory') throw new AirlockError('IS_A_DIRECTORY', `${path} is a directory`, { details: { path } });
    const all = await readFile(host);
    const offset = options.offset ?? 0;
    const content = all.subarray(offset, offset + options.maxBytes);
    return { content, size: all.length, truncated: all.length > offset + content.length };
  }

  async write(handle: SandboxHandle, path: string, content: Uint8Array, options: { createParents: boolean; symlinks?: SymlinkPolicy; mode?: number }): Promise<void> {
    const host = await this.resolve(handle, 'write', path, false, options.symlinks);
    if ((await lstat(host).catch(() => undefined))?.isDirectory()) throw new AirlockError('IS_A_DIRECTORY', `${path} is a directory`, { details: { path } });
    const parent = host.slice(0, host.lastIndexOf('/'));
    if (options.createParents) await mkdir(parent, { recursive: true });
    else if (!(await stat(parent).catch(() => undefined))) throw new AirlockError('FILE_NOT_FOUND', `${path} does not exist in the session`, { details: { path } });
    await writeFile(`${host}.fake-write`, content, { mode: options.mode ?? 0o644 });
    await rename(`${host}.fake-write`, host);
  }

  async stat(handle: SandboxHandle, path: string, options: { followLast?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<FileInfo> {
    const host = await this.resolve(handle, 'stat', path, options.followLast ?? false, options.symlinks);
    return this.info(host, path);
  }

  async list(handle: SandboxHandle, path: string, options: { symlinks?: SymlinkPolicy } = {}): Promise<FileInfo[]> {
    const host = await this.resolve(handle, 'list', path, true, options.symlinks);
    const names = await readdir(host).catch((error: NodeJS.ErrnoException) => {
      throw error.code === 'ENOTDIR' ? new AirlockError('NOT_A_DIRECTORY', `${path} is not a directory`, { details: { path } }) : notFound(path);
    });
    const base = path === '/' ? '' : path;
    return Promise.all(names.sort().map((name) => this.info(join(host, name), `${base}/${name}`)));
  }

  async mkdir(handle: SandboxHandle, path: string, options: { parents?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<{ created: boolean }> {
    const host = await this.resolve(handle, 'mkdir', path, false, options.symlinks);
    const existing = await lstat(host).catch(() => undefined);
    if (existing) {
      if (existing.isDirectory()) return { created: false };
      throw new AirlockError('FILE_EXISTS', `${path} exists and is not a directory`, { details: { path } });
    }
    await mkdir(host, { recursive: options.parents !== false });
    return { created: true };
  }

  async remove(handle: SandboxHandle, path: string, options: { recursive: boolean; symlinks?: SymlinkPolicy }): Promise<void> {
    const host = await this.resolve(handle, 'remove', path, false, options.symlinks);
    const existing = await lstat(host).catch(() => undefined);
    if (!existing) throw notFound(path);
    if (existing.isDirectory() && !options.recursive) throw new AirlockError('IS_A_DIRECTORY', `${path} is a directory`, { details: { path } });
    await rm(host, { recursive: true, force: true });
  }

  async rename(handle: SandboxHandle, from: string, to: string, options: { noReplace?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<void> {
    const source = await this.resolve(handle, 'rename', from, false, options.symlinks);
    const target = await this.resolve(handle, 'rename', to, false, options.symlinks);
    if (!(await lstat(source).catch(() => undefined))) throw notFound(from);
    if (options.noReplace && (await lstat(target).catch(() => undefined))) throw new AirlockError('FILE_EXISTS', `${to} exists`, { details: { path: to } });
    await rename(source, target);
  }

  async canonical(handle: SandboxHandle, path: string, options: { followLast: boolean }): Promise<string> {
    this.calls.push({ sandboxId: handle.sandboxId, operation: 'canonical', path });
    const root = this.rootOf(handle);
    return (await this.walk(root, path, options.followLast, 'follow')).slice(root.length) || '/';
  }

  /** The host path a sandbox path stands for. */
  private async resolve(handle: SandboxHandle, operation: string, path: string, followLast: boolean, symlinks: SymlinkPolicy = 'follow'): Promise<string> {
    this.calls.push({ sandboxId: handle.sandboxId, operation, path });
    if (!path.startsWith('/') || path.includes('\0')) throw new AirlockError('INVALID_ARGUMENTS', `path ${JSON.stringify(path)} must be absolute`, { details: { path } });
    // The agent's limits (docs/agent-protocol.md, "Paths"), so core sees the same errors from the fake.
    const names = path.split('/');
    if (Buffer.byteLength(path) > 4095 || names.length > 1025 || names.some((name) => Buffer.byteLength(name) > 255)) {
      throw new AirlockError('INVALID_ARGUMENTS', `path ${JSON.stringify(path.slice(0, 64))}… is too long: at most 4,095 bytes, 1,024 components and 255 bytes a name`, { details: { path } });
    }
    return this.walk(this.rootOf(handle), path, followLast, symlinks);
  }

  /** Component by component, links expanded by hand, never above `root`. */
  private async walk(root: string, path: string, followLast: boolean, symlinks: SymlinkPolicy): Promise<string> {
    const pending = path.split('/').filter((part) => part !== '' && part !== '.');
    const resolved: string[] = [];
    let hops = 0;
    while (pending.length > 0) {
      const name = pending.shift() as string;
      if (name === '..') {
        resolved.pop();
        continue;
      }
      const host = join(root, ...resolved, name);
      const info = await lstat(host).catch(() => undefined);
      if (info?.isSymbolicLink() && (pending.length > 0 || followLast)) {
        if (symlinks === 'refuse') throw new AirlockError('FILE_CHANGED', `${path} changed while the call ran`, { details: { path } });
        if (++hops > 40) throw new AirlockError('INVALID_ARGUMENTS', `${path} goes through more than 40 symbolic links`, { details: { path } });
        const target = await readlink(host);
        if (target.startsWith('/')) resolved.length = 0;
        pending.unshift(...target.split('/').filter((part) => part !== '' && part !== '.'));
        continue;
      }
      resolved.push(name);
    }
    return join(root, ...resolved);
  }

  private async info(host: string, path: string): Promise<FileInfo> {
    const info = await lstat(host).catch(() => {
      throw notFound(path);
    });
    const type: FileInfo['type'] = info.isFile() ? 'file' : info.isDirectory() ? 'directory' : info.isSymbolicLink() ? 'symlink' : 'other';
    const name = path.slice(path.lastIndexOf('/') + 1) || '/';
    return {
      name,
      path,
      type,
      size: info.size,
      mode: (info.mode & 0o7777).toString(8).padStart(4, '0'),
      modifiedAt: info.mtime.toISOString(),
      ...(type === 'symlink' ? { target: await readlink(host) } : {}),
    };
  }
}

function notFound(path: string): AirlockError {
  return new AirlockError('FILE_NOT_FOUND', `${path} does not exist in the session`, { details: { path } });
}
