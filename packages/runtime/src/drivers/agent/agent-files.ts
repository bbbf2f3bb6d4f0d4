/**
 * The file operations of SandboxFiles, carried out by the agent over one
 * connection. Every answer is bounded: a read never keeps more than it
 * asked for, a listing never more entries than its limit, and every call
 * has a deadline.
 */
import { AirlockError } from '../../core/errors.js';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import type { FileContent, FileInfo, SandboxFiles, SymlinkPolicy } from '../../core/sandbox-files.js';
import type { AgentConnection } from './agent-connection.js';
import { withTimeout } from './with-timeout.js';
import { EntryType, MessageType, PathLimit, Symlinks, Tag } from './agent-protocol.js';
import { AgentProtocolError, FieldWriter, type Fields } from './frame-codec.js';

/** Longest a file operation may take. */
const TIMEOUT_MS = 30_000;
/** Entries a listing returns at most. */
export const LIST_LIMIT = 100_000;

/** File operations over an agent connection. */
export class AgentFiles {
  constructor(private readonly timeoutMs = TIMEOUT_MS) {}

  /** Reads a regular file. */
  async read(connection: AgentConnection, path: string, options: { maxBytes: number; offset?: number; symlinks?: SymlinkPolicy }): Promise<FileContent> {
    checkPath(path);
    const offset = options.offset ?? 0;
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(options.maxBytes) || options.maxBytes < 0) {
      throw new AirlockError('INVALID_ARGUMENTS', 'offset and maxBytes must be whole numbers of at least 0');
    }
    const chunks: Buffer[] = [];
    let received = 0;
    const fields = this.fields(path, options.symlinks).int(Tag.OFFSET, offset).int(Tag.LIMIT, options.maxBytes);
    const stream = connection.request(MessageType.READ, fields.finish(), { operation: 'reading', path }, {
      onData: (_channel, chunk) => {
        received += chunk.length;
        // The agent was told the limit; more than that is a broken agent, not a big file.
        if (received > options.maxBytes) throw new AgentProtocolError(`a read of at most ${options.maxBytes} bytes returned more`);
        chunks.push(chunk);
      },
    });
    const { fields: result } = await this.finish(connection, stream.done, path);
    const size = result.int(Tag.SIZE, received);
    return { content: Buffer.concat(chunks, received), size, truncated: size > offset + received };
  }

  /** Writes a file atomically. */
  async write(connection: AgentConnection, path: string, content: Uint8Array, options: { createParents: boolean; symlinks?: SymlinkPolicy; mode?: number }): Promise<void> {
    checkPath(path);
    const fields = this.fields(path, options.symlinks).int(Tag.PARENTS, options.createParents ? 1 : 0);
    if (options.mode !== undefined) fields.int(Tag.MODE_BITS, options.mode & 0o7777);
    const stream = connection.request(MessageType.WRITE, fields.finish(), { operation: 'writing', path });
    // Sent right behind the request: a failed open answers ERROR, and the data already sent is dropped.
    void stream.write(content).then(() => stream.endInput());
    await this.finish(connection, stream.done, path);
  }

  /** Stat of one path. */
  async stat(connection: AgentConnection, path: string, options: { followLast?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<FileInfo> {
    checkPath(path);
    const fields = this.fields(path, options.symlinks).int(Tag.FOLLOW_LAST, options.followLast ? 1 : 0);
    const stream = connection.request(MessageType.STAT, fields.finish(), { operation: 'reading', path });
    const { fields: result } = await this.finish(connection, stream.done, path);
    const canonical = result.string(Tag.PATH, path, PathLimit.MAX_BYTES + 1);
    return fileInfo(result, parentOf(canonical), canonical);
  }

  /** Entries of a directory, sorted by name. */
  async list(connection: AgentConnection, path: string, options: { symlinks?: SymlinkPolicy } = {}): Promise<FileInfo[]> {
    checkPath(path);
    const entries: Fields[] = [];
    const fields = this.fields(path, options.symlinks).int(Tag.LIMIT, LIST_LIMIT);
    const stream = connection.request(MessageType.LIST, fields.finish(), { operation: 'listing', path }, {
      onMessage: (type, entry) => {
        if (type !== MessageType.ENTRY) throw new AgentProtocolError(`message type ${type} in a listing`);
        if (entries.length >= LIST_LIMIT) throw new AgentProtocolError(`a listing of more than ${LIST_LIMIT} entries`);
        // Checked here, while the frame is handled: a bad entry drops the connection.
        fileInfo(entry, '/');
        entries.push(entry);
      },
    });
    const { fields: result } = await this.finish(connection, stream.done, path);
    const directory = result.string(Tag.PATH, path, PathLimit.MAX_BYTES + 1);
    return entries.map((entry) => fileInfo(entry, directory)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Creates a directory. */
  async mkdir(connection: AgentConnection, path: string, options: { parents?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<{ created: boolean }> {
    checkPath(path);
    const fields = this.fields(path, options.symlinks).int(Tag.PARENTS, options.parents === false ? 0 : 1);
    const stream = connection.request(MessageType.MKDIR, fields.finish(), { operation: 'creating', path });
    const { fields: result } = await this.finish(connection, stream.done, path);
    return { created: result.int(Tag.CREATED, 0) === 1 };
  }

  /** Removes a file or a tree. */
  async remove(connection: AgentConnection, path: string, options: { recursive: boolean; symlinks?: SymlinkPolicy }): Promise<void> {
    checkPath(path);
    const fields = this.fields(path, options.symlinks).int(Tag.RECURSIVE, options.recursive ? 1 : 0);
    const stream = connection.request(MessageType.REMOVE, fields.finish(), { operation: 'remove', path });
    await this.finish(connection, stream.done, path);
  }

  /** Renames `from` to `to`. */
  async rename(connection: AgentConnection, from: string, to: string, options: { noReplace?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<void> {
    checkPath(from);
    checkPath(to);
    const fields = this.fields(from, options.symlinks).string(Tag.TARGET, to).int(Tag.NO_REPLACE, options.noReplace ? 1 : 0);
    const stream = connection.request(MessageType.RENAME, fields.finish(), { operation: 'renaming', path: from });
    await this.finish(connection, stream.done, from);
  }

  /** The canonical form of a path. */
  async canonical(connection: AgentConnection, path: string, options: { followLast: boolean }): Promise<string> {
    checkPath(path);
    const fields = this.fields(path, 'follow').int(Tag.FOLLOW_LAST, options.followLast ? 1 : 0);
    const stream = connection.request(MessageType.CANONICAL, fields.finish(), { operation: 'resolving', path });
    const { fields: result } = await this.finish(connection, stream.done, path);
    const canonical = result.string(Tag.PATH, undefined, PathLimit.MAX_BYTES + 1);
    if (!canonical.startsWith('/') || canonical.includes('\0')) throw new AgentProtocolError('a canonical path that is not absolute');
    return canonical;
  }

  private fields(path: string, symlinks: SymlinkPolicy | undefined): FieldWriter {
    return new FieldWriter().string(Tag.PATH, path).int(Tag.SYMLINKS, symlinks === 'refuse' ? Symlinks.REFUSE : Symlinks.FOLLOW);
  }

  private finish<T>(connection: AgentConnection, done: Promise<T>, path: string): Promise<T> {
    return withTimeout(done, this.timeoutMs, () => new AirlockError('SANDBOX_NOT_ANSWERING', `a file operation on ${path} in ${connection.label} took longer than ${this.timeoutMs} ms`, { details: { path, reason: 'file-timeout' } }));
  }
}

/** Checks what the agent would refuse anyway, so a bad path never reaches it. */
function checkPath(path: string): void {
  if (!path.startsWith('/')) throw new AirlockError('INVALID_ARGUMENTS', `path ${JSON.stringify(path.slice(0, 100))} must be absolute`, { details: { field: 'path' } });
  if (path.includes('\0')) throw new AirlockError('INVALID_ARGUMENTS', 'path must not contain NUL bytes', { details: { field: 'path' } });
  if (Buffer.byteLength(path) > PathLimit.MAX_BYTES) {
    throw new AirlockError('INVALID_ARGUMENTS', `path is ${Buffer.byteLength(path)} bytes long; at most ${PathLimit.MAX_BYTES}`, { details: { field: 'path' } });
  }
  const components = path.split('/').filter((part) => part !== '');
  if (components.length > PathLimit.MAX_COMPONENTS) {
    throw new AirlockError('INVALID_ARGUMENTS', `path has ${components.length} components; at most ${PathLimit.MAX_COMPONENTS}`, { details: { field: 'path' } });
  }
  const long = components.find((part) => Buffer.byteLength(part) > PathLimit.NAME_MAX_BYTES);
  if (long !== undefined) {
    throw new AirlockError('INVALID_ARGUMENTS', `a name in the path is ${Buffer.byteLength(long)} bytes long; at most ${PathLimit.NAME_MAX_BYTES}`, { details: { field: 'path' } });
  }
}

function parentOf(path: string): string {
  const slash = path.lastIndexOf('/');
  return slash <= 0 ? '/' : path.slice(0, slash);
}

const TYPES: Record<number, FileInfo['type']> = { [EntryType.FILE]: 'file', [EntryType.DIRECTORY]: 'directory', [EntryType.SYMLINK]: 'symlink', [EntryType.OTHER]: 'other' };

function fileInfo(fields: Fields, directory: string, path?: string): FileInfo {
  const name = fields.string(Tag.NAME, undefined, PathLimit.NAME_MAX_BYTES);
  if (name.includes('/') && name !== '/') throw new AgentProtocolError('an entry name with a slash');
  const type = TYPES[fields.int(Tag.TYPE)];
  if (!type) throw new AgentProtocolError('an entry of an unknown type');
  const info: FileInfo = {
    name,
    path: path ?? (directory === '/' ? `/${name}` : `${directory}/${name}`),
    type,
    size: fields.int(Tag.SIZE, 0),
    mode: (fields.int(Tag.MODE_BITS, 0) & 0o7777).toString(8).padStart(4, '0'),
    modifiedAt: new Date(fields.int(Tag.MODIFIED_MS, 0)).toISOString(),
  };
  const target = fields.bytes(Tag.TARGET);
  if (target !== undefined && target.length <= PathLimit.MAX_BYTES) info.target = target.toString('utf8');
  return info;
}

/** The SandboxFiles of a driver whose sandboxes run the agent: `agentOf` finds a handle's connection. */
export function sandboxFilesOver(agentOf: (handle: SandboxHandle) => Promise<AgentConnection>, files = new AgentFiles()): SandboxFiles {
  return {
    read: async (handle, path, options) => files.read(await agentOf(handle), path, options),
    write: async (handle, path, content, options) => files.write(await agentOf(handle), path, content, options),
    stat: async (handle, path, options) => files.stat(await agentOf(handle), path, options),
    list: async (handle, path, options) => files.list(await agentOf(handle), path, options),
    mkdir: async (handle, path, options) => files.mkdir(await agentOf(handle), path, options),
    remove: async (handle, path, options) => files.remove(await agentOf(handle), path, options),
    rename: async (handle, from, to, options) => files.rename(await agentOf(handle), from, to, options),
    canonical: async (handle, path, options) => files.canonical(await agentOf(handle), path, options),
  };
}
