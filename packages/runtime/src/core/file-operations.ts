/**
 * File operations on a session's machine, carried out by the sandbox itself
 * through the static busybox every driver mounts at `toolboxPath`. Because
 * the sandbox's own kernel resolves every path, `..` and symlinks (absolute
 * or relative) can only ever land inside the session: the host filesystem is
 * not in the sandbox's view at all. Works with any image, even one without a
 * shell.
 */
import { AirlockError } from './errors.js';
import type { ExecOutcome, ExecRequest } from './sandbox-driver.js';

/** Runs one command in the session's sandbox and collects its output. */
export type SandboxRunner = (request: Pick<ExecRequest, 'argv' | 'stdin' | 'timeoutMs'>) => Promise<CollectedOutput>;

/** Output of a command collected in memory. */
export interface CollectedOutput extends ExecOutcome {
  stdout: Buffer;
  stderr: Buffer;
}

/** One directory entry or the result of stat. */
export interface FileInfo {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink' | 'other';
  size: number;
  mode: string;
  modifiedAt: string;
  /** target of a symlink, as stored in the link */
  target?: string;
}

const TIMEOUT_MS = 30_000;

// Exit codes of the helper scripts, mapped to stable errors.
const EXIT_NOT_FOUND = 44;
const EXIT_IS_DIRECTORY = 45;
const EXIT_NOT_DIRECTORY = 46;
const EXIT_EXISTS = 47;

/** A script preamble: `bb` runs the toolbox; `fail` exits with a code. */
function script(body: string): string {
  return `bb() { "$AIRLOCK_BB" "$@"; }\n${body}`;
}

/** File operations bound to a toolbox path. */
export class FileOperations {
  constructor(private readonly toolboxPath: string) {}

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

  /**
   * The canonical path as the sandbox resolves it: symlinks followed (the last
   * component too, when `followLast`), missing trailing components kept as given.
   */
  async canonical(run: SandboxRunner, path: string, followLast: boolean): Promise<string> {
    const body = script(`p="$1"; rest=""
if [ "$2" = nofollow ] && [ "$p" != / ]; then rest="/$(bb basename -- "$p")"; p=$(bb dirname -- "$p"); fi
while [ "$p" != / ] && [ ! -e "$p" ]; do rest="/$(bb basename -- "$p")$rest"; p=$(bb dirname -- "$p"); done
r=$(bb readlink -f -- "$p") || exit 1
[ "$r" = / ] && r=""
printf '%s%s' "$r" "$rest"`);
    const out = await this.sh(run, body, [path, followLast ? 'follow' : 'nofollow']);
    const resolved = out.stdout.toString('utf8');
    return resolved === '' ? '/' : FileOperations.lexical(resolved);
  }

  /** Reads up to `maxBytes` of a file. */
  async read(run: SandboxRunner, path: string, maxBytes: number): Promise<{ content: Buffer; size: number; truncated: boolean }> {
    const body = script(`[ -e "$1" ] || exit ${EXIT_NOT_FOUND}
[ -d "$1" ] && exit ${EXIT_IS_DIRECTORY}
bb stat -L -c '%s' -- "$1" >&2 || exit 1
bb head -c "$2" -- "$1"`);
    const out = await this.sh(run, body, [path, String(maxBytes)], path);
    const size = Number.parseInt(out.stderr.toString('utf8').trim(), 10);
    return { content: out.stdout, size, truncated: size > out.stdout.length };
  }

  /**
   * Writes a file atomically (temp file in the same directory, then rename). The temp name is one
   * nothing holds yet, opened with noclobber (O_EXCL), so a link planted under a predictable name is
   * never followed; the contract's rules are held by the sandbox's mounts whatever the path becomes.
   */
  async write(run: SandboxRunner, path: string, content: Uint8Array, options: { createParents: boolean }): Promise<void> {
    const body = script(`d=$(bb dirname -- "$1")
if [ ! -d "$d" ]; then
  if [ "$2" = parents ]; then bb mkdir -p -- "$d" || exit 1; elif [ -e "$d" ]; then exit ${EXIT_NOT_DIRECTORY}; else exit ${EXIT_NOT_FOUND}; fi
fi
[ -d "$1" ] && [ ! -L "$1" ] && exit ${EXIT_IS_DIRECTORY}
i=0
while [ -e "$d/.airlock-write.$$.$i" ] || [ -L "$d/.airlock-write.$$.$i" ]; do i=$((i+1)); done
t="$d/.airlock-write.$$.$i"
set -C
bb cat > "$t" || { bb rm -f -- "$t"; exit 1; }
set +C
[ -e "$1" ] && bb chmod "$(bb stat -c %a -- "$1")" "$t" 2>/dev/null
bb mv -f -- "$t" "$1" || { bb rm -f -- "$t"; exit 1; }`);
    await this.sh(run, body, [path, options.createParents ? 'parents' : 'exact'], path, content);
  }

  /** Lists a directory (one level). */
  async list(run: SandboxRunner, path: string): Promise<FileInfo[]> {
    const body = script(`[ -e "$1" ] || exit ${EXIT_NOT_FOUND}
[ -d "$1" ] || exit ${EXIT_NOT_DIRECTORY}
cd -- "$1" || exit 1
for f in * .*; do
  [ "$f" = . ] || [ "$f" = .. ] && continue
  [ -e "$f" ] || [ -L "$f" ] || continue
  bb stat -c '%F|%s|%a|%Y|%n' -- "$f" | bb od -An -tx1 -v | bb tr -d '\\n' ; printf '\\n'
done`);
    const out = await this.sh(run, body, [path], path);
    return out.stdout
      .toString('utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => parseStatLine(decodeOd(line), path))
      .sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  /** Stat of one path (symlinks not followed). */
  async stat(run: SandboxRunner, path: string): Promise<FileInfo> {
    const body = script(`[ -e "$1" ] || [ -L "$1" ] || exit ${EXIT_NOT_FOUND}
bb stat -c '%F|%s|%a|%Y|%n' -- "$1" | bb od -An -tx1 -v | bb tr -d '\\n'
[ -L "$1" ] && { printf '\\n'; bb readlink -- "$1" | bb od -An -tx1 -v | bb tr -d '\\n'; }
exit 0`);
    const out = await this.sh(run, body, [path], path);
    const [statLine = '', targetLine] = out.stdout.toString('utf8').split('\n');
    const info = parseStatLine(decodeOd(statLine), path.slice(0, path.lastIndexOf('/')) || '/');
    info.path = path;
    if (targetLine !== undefined) info.target = decodeOd(targetLine).replace(/\n$/, '');
    return info;
  }

  /** Removes a file, or a directory when `recursive`. */
  async remove(run: SandboxRunner, path: string, recursive: boolean): Promise<void> {
    if (path === '/' || path === '/workspace') {
      throw new AirlockError('INVALID_ARGUMENTS', `refusing to remove ${path}; remove the entries inside it instead`, { details: { field: 'path' } });
    }
    const body = script(`[ -e "$1" ] || [ -L "$1" ] || exit ${EXIT_NOT_FOUND}
if [ -d "$1" ] && [ ! -L "$1" ]; then [ "$2" = recursive ] || exit ${EXIT_IS_DIRECTORY}; bb rm -rf -- "$1"; else bb rm -f -- "$1"; fi`);
    await this.sh(run, body, [path, recursive ? 'recursive' : 'single'], path);
  }

  /** Creates a directory (and its parents). */
  async mkdir(run: SandboxRunner, path: string): Promise<void> {
    const body = script(`[ -e "$1" ] && { [ -d "$1" ] && exit 0; exit ${EXIT_EXISTS}; }
bb mkdir -p -- "$1"`);
    await this.sh(run, body, [path], path);
  }

  private async sh(run: SandboxRunner, body: string, args: string[], path?: string, stdin?: Uint8Array): Promise<CollectedOutput> {
    const out = await run({
      argv: [this.toolboxPath, 'env', `AIRLOCK_BB=${this.toolboxPath}`, this.toolboxPath, 'sh', '-c', body, 'airlock-files', ...args],
      ...(stdin === undefined ? { stdin: new Uint8Array() } : { stdin }),
      timeoutMs: TIMEOUT_MS,
    });
    if (out.exitCode === 0) return out;
    const where = path ?? args[0] ?? '';
    const stderr = out.stderr.toString('utf8').trim();
    switch (out.exitCode) {
      case EXIT_NOT_FOUND:
        throw new AirlockError('FILE_NOT_FOUND', `${where} does not exist in the session`, { details: { path: where } });
      case EXIT_IS_DIRECTORY:
        throw new AirlockError('IS_A_DIRECTORY', `${where} is a directory`, { details: { path: where } });
      case EXIT_NOT_DIRECTORY:
        throw new AirlockError('NOT_A_DIRECTORY', `${where} (or its parent) is not a directory`, { details: { path: where } });
      case EXIT_EXISTS:
        throw new AirlockError('FILE_EXISTS', `${where} exists and is not a directory`, { details: { path: where } });
      default:
        if (/Read-only file system|Permission denied/i.test(stderr)) {
          throw new AirlockError(
            'FILE_ACCESS_DENIED',
            `the session's machine refused ${where}: ${/Read-only/i.test(stderr) ? 'it is read-only' : 'permission denied'}. The contract's filesystem rules are mounts of the machine (read-only, or hidden by filesystem.denyRead), and file permissions apply too`,
            { details: { path: where } },
          );
        }
        if (/No space left/i.test(stderr)) {
          throw new AirlockError('DISK_FULL', `the session's disk is full writing ${where}; remove files or create the session with a larger resources.diskMb`, { details: { path: where } });
        }
        throw new AirlockError('DRIVER_FAILED', `file operation on ${where} failed: ${stderr || `exit ${out.exitCode}`}`, {
          details: { path: where, exitCode: out.exitCode, timedOut: out.timedOut },
        });
    }
  }
}

/** Decodes `od -An -tx1` output (hex bytes) back to a string: names may hold any byte. */
function decodeOd(text: string): string {
  const hex = text.replace(/\s+/g, '');
  return Buffer.from(hex, 'hex').toString('utf8');
}

function parseStatLine(line: string, dir: string): FileInfo {
  const clean = line.replace(/\n$/, '');
  const [kind = '', size = '0', mode = '0', mtime = '0', ...nameParts] = clean.split('|');
  const name = nameParts.join('|');
  const type: FileInfo['type'] = kind.startsWith('regular') ? 'file' : kind === 'directory' ? 'directory' : kind === 'symbolic link' ? 'symlink' : 'other';
  return {
    name: name.slice(name.lastIndexOf('/') + 1),
    path: dir === '/' ? `/${name}` : `${dir}/${name}`,
    type,
    size: Number.parseInt(size, 10),
    mode: mode.padStart(4, '0'),
    modifiedAt: new Date(Number.parseInt(mtime, 10) * 1000).toISOString(),
  };
}
