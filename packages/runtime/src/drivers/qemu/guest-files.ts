/**
 * SandboxFiles of the microvm driver while its guest agent is the interim
 * one: each operation is a toolbox script (guest-toolbox.ts), so the guest's
 * own kernel resolves every path and nothing outside the VM is in reach.
 *
 * Symlinks refused: the script enters the operation's directory with
 * `cd -P` and compares `pwd -P` with the path it was given, so a directory
 * reached through a symlink fails the call (FILE_CHANGED); everything after
 * that is relative to the entered directory, which stays the same directory
 * however its path is swapped meanwhile. Writes go to a host-chosen random
 * name created with O_EXCL (`set -C`), renamed over the target (`mv -T`,
 * which replaces a symlink instead of following it).
 */
import { randomBytes } from 'node:crypto';
import { AirlockError } from '../../core/errors.js';
import type { SandboxHandle } from '../../core/sandbox-driver.js';
import type { FileContent, FileInfo, SandboxFiles, SymlinkPolicy } from '../../core/sandbox-files.js';
import { PathLimit } from '../agent/agent-protocol.js';
import type { GuestAgentClient } from './guest-agent-client.js';
import { fromHex, runToolboxScript, type ToolboxOutput } from './guest-toolbox.js';

const TIMEOUT_MS = 60_000;
/** Entries a listing returns at most (as the agent). */
const LIST_LIMIT = 100_000;

// Exit codes of the scripts.
const NOT_FOUND = 44;
const IS_DIRECTORY = 45;
const NOT_DIRECTORY = 46;
const EXISTS = 47;
const LOOP = 48;
const SYMLINK = 49;
const DENIED = 50;
const NOT_REGULAR = 51;
const NO_SPACE = 52;

/**
 * Shared functions: `why` turns a kernel message into an exit code, `enter DIR POLICY` makes DIR the cwd (a
 * second look only says why it failed; one that then succeeds means the path changed meanwhile).
 */
const PREAMBLE = `why() { case "$1" in *"symbolic links"*) exit ${LOOP};; *"ot a directory"*) exit ${NOT_DIRECTORY};; *"s a directory"*) exit ${IS_DIRECTORY};;
  *"ermission denied"*|*"ead-only file system"*) exit ${DENIED};; *"o space left"*) exit ${NO_SPACE};; *"o such file"*) exit ${NOT_FOUND};; *"ile exists"*) exit ${EXISTS};; esac
  printf '%s\\n' "$1" >&2; exit 1; }
enter() { cd -P -- "$1" 2>/dev/null || { m=$(cd -P -- "$1" 2>&1) && exit ${SYMLINK}; why "$m"; }; [ "$2" != refuse ] || [ "$(pwd -P)" = "$1" ] || exit ${SYMLINK}; }
`;

const READ = `${PREAMBLE}enter "$1" "$3"; n=$2
[ "$3" = refuse ] && [ -L "$n" ] && exit ${SYMLINK}
if [ ! -e "$n" ]; then m=$(bb cat -- "$n" 2>&1 >/dev/null); why "$m"; fi
[ -d "$n" ] && exit ${IS_DIRECTORY}
[ -f "$n" ] || exit ${NOT_REGULAR}
bb stat -L -c %s -- "$n" || exit 1
bb tail -c +$(($4 + 1)) -- "$n" | bb head -c "$5"`;

const WRITE = `${PREAMBLE}if [ "$4" = parents ] && [ ! -d "$1" ]; then m=$(bb mkdir -p -- "$1" 2>&1) || why "$m"; fi
enter "$1" "$3"; n=$2; t=$5
[ -d "$n" ] && [ ! -L "$n" ] && exit ${IS_DIRECTORY}
set -C
if ! m=$(bb cat 2>&1 >"$t"); then bb rm -f -- "$t"; why "$m"; fi
if [ -f "$n" ] && [ ! -L "$n" ]; then bb chmod "$(bb stat -c %a -- "$n")" "$t"; elif [ -n "$6" ]; then bb chmod "$6" "$t"; fi
m=$(bb mv -f -T -- "$t" "$n" 2>&1) || { bb rm -f -- "$t"; why "$m"; }`;

const STAT = `${PREAMBLE}enter "$1" "$3"; n=$2; o=
if [ "$4" = follow ]; then [ "$3" = refuse ] && [ -L "$n" ] && exit ${SYMLINK}; o=-L; fi
[ -e "$n" ] || [ -L "$n" ] || exit ${NOT_FOUND}
if [ -n "$o" ] && [ ! -e "$n" ]; then m=$(bb cat -- "$n" 2>&1 >/dev/null); why "$m"; fi
bb stat $o -c '%F|%s|%a|%Y' -- "$n" || exit 1
if [ -z "$o" ] && [ -L "$n" ]; then bb readlink -n -- "$n" | bb od -An -tx1 -v; fi
exit 0`;

// Names go out NUL-separated through one od; stat prints a line per name in order (no names in it); targets NUL-separated.
const LIST = `${PREAMBLE}enter "$1" "$2"
set --
for f in * .*; do [ "$f" = . ] || [ "$f" = .. ] && continue; { [ -e "$f" ] || [ -L "$f" ]; } && set -- "$@" "$f"; done
[ $# -gt ${LIST_LIMIT} ] && exit ${NO_SPACE + 1}
printf '%s\\0' "$@" | bb od -An -tx1 -v | bb tr -d ' \\n'; echo
[ $# -eq 0 ] || bb stat -c '%F|%s|%a|%Y' -- "$@" || exit 1
for f; do [ -L "$f" ] && bb readlink -n -- "$f"; printf '\\0'; done | bb od -An -tx1 -v | bb tr -d ' \\n'; echo`;

const MKDIR = `${PREAMBLE}if [ "$3" = parents ] && [ ! -d "$1" ]; then m=$(bb mkdir -p -- "$1" 2>&1) || why "$m"; fi
enter "$1" "$4"; n=$2
if [ -e "$n" ] || [ -L "$n" ]; then [ -d "$n" ] && [ ! -L "$n" ] && { echo 0; exit 0; }; exit ${EXISTS}; fi
m=$(bb mkdir -- "$n" 2>&1) || why "$m"
echo 1`;

const REMOVE = `${PREAMBLE}enter "$1" "$4"; n=$2
[ -e "$n" ] || [ -L "$n" ] || exit ${NOT_FOUND}
if [ -d "$n" ] && [ ! -L "$n" ]; then [ "$3" = recursive ] || exit ${IS_DIRECTORY}; m=$(bb rm -rf -- "$n" 2>&1) || why "$m"
else m=$(bb rm -f -- "$n" 2>&1) || why "$m"; fi`;

const RENAME = `${PREAMBLE}enter "$3" "$6"; to=$(pwd -P); [ "$to" = / ] && to=
cd / && enter "$1" "$6"
[ -e "$2" ] || [ -L "$2" ] || exit ${NOT_FOUND}
[ "$5" = no-replace ] && { [ -e "$to/$4" ] || [ -L "$to/$4" ]; } && exit ${EXISTS}
m=$(bb mv -f -T -- "$2" "$to/$4" 2>&1) || why "$m"`;

// Missing trailing components are kept as given; the rest is resolved by the guest kernel.
const CANONICAL = `p="$1"; rest=""
if [ "$2" = nofollow ] && [ "$p" != / ]; then rest="/$(bb basename -- "$p")"; p=$(bb dirname -- "$p"); fi
while [ "$p" != / ] && [ ! -e "$p" ]; do rest="/$(bb basename -- "$p")$rest"; p=$(bb dirname -- "$p"); done
r=$(bb readlink -f -- "$p") || exit 1
[ "$r" = / ] && r=""
printf '%s%s' "$r" "$rest"`;

/** The file operations of microVMs; `agentOf` finds a running VM's agent. */
export class GuestFiles implements SandboxFiles {
  constructor(private readonly agentOf: (handle: SandboxHandle) => Promise<GuestAgentClient>) {}

  async read(handle: SandboxHandle, path: string, options: { maxBytes: number; offset?: number; symlinks?: SymlinkPolicy }): Promise<FileContent> {
    const offset = options.offset ?? 0;
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(options.maxBytes) || options.maxBytes < 0) {
      throw new AirlockError('INVALID_ARGUMENTS', 'offset and maxBytes must be whole numbers of at least 0');
    }
    const [dir, name] = split(path, options.symlinks);
    const out = await this.run(handle, READ, [dir, name, policy(options.symlinks), String(offset), String(options.maxBytes)], path);
    const newline = out.stdout.indexOf(0x0a);
    const size = Number(out.stdout.subarray(0, Math.max(0, newline)).toString('ascii'));
    const content = out.stdout.subarray(newline + 1);
    if (newline < 0 || !Number.isSafeInteger(size) || content.length > options.maxBytes) throw garbled(path, 'read');
    return { content: Buffer.from(content), size, truncated: size > offset + content.length };
  }

  async write(handle: SandboxHandle, path: string, content: Uint8Array, options: { createParents: boolean; symlinks?: SymlinkPolicy; mode?: number }): Promise<void> {
    const [dir, name] = split(path, options.symlinks);
    const temp = `.airlock-${randomBytes(16).toString('hex')}`;
    const mode = options.mode === undefined ? '' : (options.mode & 0o7777).toString(8);
    await this.run(handle, WRITE, [dir, name, policy(options.symlinks), options.createParents ? 'parents' : 'exact', temp, mode], path, content);
  }

  async stat(handle: SandboxHandle, path: string, options: { followLast?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<FileInfo> {
    const [dir, name] = split(path, options.symlinks);
    const out = await this.run(handle, STAT, [dir, name, policy(options.symlinks), options.followLast ? 'follow' : 'last'], path);
    // The stat line, then (for a symlink) its target as od's hex lines.
    const text = out.stdout.toString('utf8');
    const newline = text.indexOf('\n');
    const info = parseStat(newline < 0 ? text : text.slice(0, newline), path.slice(path.lastIndexOf('/') + 1) || '/', path);
    if (info.type === 'symlink' && newline >= 0) info.target = fromHex(text.slice(newline + 1)).toString('utf8');
    return info;
  }

  async list(handle: SandboxHandle, path: string, options: { symlinks?: SymlinkPolicy } = {}): Promise<FileInfo[]> {
    checkPath(path);
    const directory = normalized(path);
    const out = await this.run(handle, LIST, [options.symlinks === 'refuse' ? directory : path, policy(options.symlinks)], path);
    const lines = out.stdout.toString('utf8').split('\n');
    const names = splitNul(fromHex(lines[0] ?? ''));
    const targets = splitNul(fromHex(lines.at(-2) ?? ''));
    const stats = lines.slice(1, -2);
    if (stats.length !== names.length || targets.length !== names.length) throw garbled(path, 'listing');
    return names
      .map((raw, index) => {
        const name = raw.toString('utf8');
        if (name.includes('/') || name === '') throw garbled(path, 'listing');
        const info = parseStat(stats[index] ?? '', name, directory === '/' ? `/${name}` : `${directory}/${name}`);
        if (info.type === 'symlink') info.target = (targets[index] ?? Buffer.alloc(0)).toString('utf8');
        return info;
      })
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async mkdir(handle: SandboxHandle, path: string, options: { parents?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<{ created: boolean }> {
    const [dir, name] = split(path, options.symlinks);
    const out = await this.run(handle, MKDIR, [dir, name, options.parents === false ? 'exact' : 'parents', policy(options.symlinks)], path);
    return { created: out.stdout.toString('utf8').trim() === '1' };
  }

  async remove(handle: SandboxHandle, path: string, options: { recursive: boolean; symlinks?: SymlinkPolicy }): Promise<void> {
    if (normalized(path) === '/') throw new AirlockError('INVALID_ARGUMENTS', 'refusing to remove the root directory; act on the entries inside it instead', { details: { path } });
    const [dir, name] = split(path, options.symlinks);
    await this.run(handle, REMOVE, [dir, name, options.recursive ? 'recursive' : 'single', policy(options.symlinks)], path);
  }

  async rename(handle: SandboxHandle, from: string, to: string, options: { noReplace?: boolean; symlinks?: SymlinkPolicy } = {}): Promise<void> {
    const [fromDir, fromName] = split(from, options.symlinks);
    const [toDir, toName] = split(to, options.symlinks);
    await this.run(handle, RENAME, [fromDir, fromName, toDir, toName, options.noReplace ? 'no-replace' : 'replace', policy(options.symlinks)], from);
  }

  async canonical(handle: SandboxHandle, path: string, options: { followLast: boolean }): Promise<string> {
    checkPath(path);
    const out = await this.run(handle, CANONICAL, [path, options.followLast ? 'follow' : 'nofollow'], path);
    const resolved = out.stdout.toString('utf8');
    return resolved === '' ? '/' : normalized(resolved);
  }

  private async run(handle: SandboxHandle, script: string, args: string[], path: string, stdin?: Uint8Array): Promise<ToolboxOutput> {
    const out = await runToolboxScript(await this.agentOf(handle), script, args, { timeoutMs: TIMEOUT_MS, ...(stdin === undefined ? {} : { stdin }) });
    if (out.exitCode === 0) return out;
    const details = { path, exitCode: out.exitCode };
    switch (out.exitCode) {
      case NOT_FOUND:
        throw new AirlockError('FILE_NOT_FOUND', `${path} does not exist in the session`, { details });
      case IS_DIRECTORY:
        throw new AirlockError('IS_A_DIRECTORY', `${path} is a directory`, { details });
      case NOT_DIRECTORY:
        throw new AirlockError('NOT_A_DIRECTORY', `${path} (or one of its parents) is not a directory`, { details });
      case EXISTS:
        throw new AirlockError('FILE_EXISTS', `${path} exists and is not a directory`, { details });
      case LOOP:
        throw new AirlockError('INVALID_ARGUMENTS', `${path} goes through too many symbolic links; resolve them first`, { details });
      case SYMLINK:
        throw new AirlockError('FILE_CHANGED', `${path} changed while the call ran: a component became a symbolic link after the path was resolved; retry the call`, { details });
      case DENIED:
        throw new AirlockError('FILE_ACCESS_DENIED', `the sandbox refused access to ${path} (read-only or not permitted inside the session)`, { details });
      case NOT_REGULAR:
        throw new AirlockError('INVALID_ARGUMENTS', `${path} is not a regular file (a device, fifo or socket); read it with a command instead`, { details });
      case NO_SPACE:
        throw new AirlockError('DISK_FULL', `the session's disk is full writing ${path}; remove files or create the session with a larger resources.diskMb`, { details });
      case NO_SPACE + 1:
        throw new AirlockError('INVALID_ARGUMENTS', `${path} holds more than ${LIST_LIMIT} entries; list it with a command instead`, { details });
      default:
        throw new AirlockError('DRIVER_FAILED', `a file operation on ${path} failed in the VM: ${out.stderr || `exit ${out.exitCode}`}${out.timedOut ? ' (timed out)' : ''}`, { details });
    }
  }
}

function policy(symlinks: SymlinkPolicy | undefined): 'refuse' | 'follow' {
  return symlinks === 'refuse' ? 'refuse' : 'follow';
}

/**
 * Directory and last name of a path. With symlinks refused the directory is the lexical form (no symlink may
 * be met, so ".." means the same as to the kernel) that `pwd -P` must print; else the guest kernel resolves it.
 */
function split(path: string, symlinks: SymlinkPolicy | undefined): [string, string] {
  checkPath(path);
  const clean = normalized(path);
  if (clean === '/') return ['/', '.'];
  const slash = clean.lastIndexOf('/');
  const name = clean.slice(slash + 1);
  if (symlinks === 'refuse') return [clean.slice(0, slash) || '/', name];
  // Following: the kernel resolves ".." after a symlink differently from the lexical form; keep the path as given.
  const raw = path.replace(/\/+$/, '');
  const rawSlash = raw.lastIndexOf('/');
  const rawName = raw.slice(rawSlash + 1);
  if (rawName === '' || rawName === '.' || rawName === '..') return [clean.slice(0, slash) || '/', name];
  return [raw.slice(0, rawSlash) || '/', rawName];
}

/** Lexical normal form: absolute, no empty, "." or ".." components. */
function normalized(path: string): string {
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') parts.pop();
    else parts.push(part);
  }
  return `/${parts.join('/')}`;
}

/** What the shared agent refuses too, so the answers match (docs/agent-protocol.md "Paths"). */
function checkPath(path: string): void {
  if (!path.startsWith('/')) throw new AirlockError('INVALID_ARGUMENTS', `path ${JSON.stringify(path.slice(0, 100))} must be absolute`, { details: { field: 'path' } });
  if (path.includes('\0') || path.includes('\n')) throw new AirlockError('INVALID_ARGUMENTS', 'path must not contain NUL bytes or line breaks', { details: { field: 'path' } });
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

/** A `%F|%s|%a|%Y` line of busybox stat. */
function parseStat(line: string, name: string, path: string): FileInfo {
  const [kind = '', size = '', mode = '', mtime = ''] = line.split('|');
  if (!/^\d+$/.test(size) || !/^[0-7]+$/.test(mode) || !/^\d+$/.test(mtime)) throw garbled(path, 'stat');
  const type: FileInfo['type'] = kind.startsWith('regular') ? 'file' : kind === 'directory' ? 'directory' : kind === 'symbolic link' ? 'symlink' : 'other';
  return {
    name,
    path,
    type,
    size: Number(size),
    mode: (Number.parseInt(mode, 8) & 0o7777).toString(8).padStart(4, '0'),
    modifiedAt: new Date(Number(mtime) * 1000).toISOString(),
  };
}

function splitNul(bytes: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  let start = 0;
  for (let index = bytes.indexOf(0); index >= 0; index = bytes.indexOf(0, start)) {
    parts.push(bytes.subarray(start, index));
    start = index + 1;
  }
  return parts;
}

function garbled(path: string, what: string): AirlockError {
  return new AirlockError('DRIVER_FAILED', `the VM answered a ${what} of ${path} in a form the driver does not understand; retry, and report it if it persists`, { details: { path } });
}
