/**
 * Screen thumbnails (and takeover frames) on local disk:
 * `<root>/<sessionId>/<name>.png`. Bounded per session, by count and by
 * bytes: when a put goes past either bound, the oldest files of that session
 * are deleted until it fits again. The audit keeps each thumbnail's sha256,
 * so what remains can be checked and what was pruned is still accounted for.
 */
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { AirlockError } from '../core/errors.js';
import type { ThumbnailStore } from '../core/screen-thumbnails.js';

/** Bounds of one session's thumbnails. */
export interface ThumbnailBounds {
  /** most files kept per session; default 2000 */
  maxFiles: number;
  /** most bytes kept per session; default 64 MiB */
  maxBytes: number;
}

/** Default bounds: about 2000 actions' thumbnails, or 64 MiB, per session. */
export const DEFAULT_THUMBNAIL_BOUNDS: ThumbnailBounds = { maxFiles: 2000, maxBytes: 64 * 1024 * 1024 };

const NAME = /^[A-Za-z0-9_-]{1,128}$/;

/** `ThumbnailStore` over a host directory. */
export class ThumbnailDirectory implements ThumbnailStore {
  /** bytes and files per session as last counted, so most puts need no listing */
  private readonly usage = new Map<string, { files: number; bytes: number }>();

  constructor(
    private readonly root: string,
    private readonly bounds: ThumbnailBounds = DEFAULT_THUMBNAIL_BOUNDS,
  ) {}

  async put(sessionId: string, name: string, png: Buffer): Promise<void> {
    const dir = this.sessionDir(sessionId);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, `${checkName(name)}.png`);
    const temporary = `${path}.tmp`;
    await writeFile(temporary, png, { mode: 0o600 });
    await rename(temporary, path);
    const usage = this.usage.get(sessionId) ?? (await this.count(dir));
    usage.files += 1;
    usage.bytes += png.length;
    this.usage.set(sessionId, usage);
    if (usage.files > this.bounds.maxFiles || usage.bytes > this.bounds.maxBytes) this.usage.set(sessionId, await this.prune(dir));
  }

  async get(sessionId: string, name: string): Promise<Buffer | undefined> {
    if (!NAME.test(name)) return undefined;
    return readFile(join(this.sessionDir(sessionId), `${name}.png`)).catch(() => undefined);
  }

  /** Deletes the oldest files until the session is within its bounds again; returns what is left. */
  private async prune(dir: string): Promise<{ files: number; bytes: number }> {
    const files = await this.listed(dir);
    files.sort((a, b) => a.modifiedMs - b.modifiedMs);
    let count = files.length;
    let bytes = files.reduce((total, file) => total + file.bytes, 0);
    // Prune to 90% of each bound, so that the next puts do not list the directory again at once.
    for (const file of files) {
      if (count <= this.bounds.maxFiles * 0.9 && bytes <= this.bounds.maxBytes * 0.9) break;
      await rm(join(dir, file.name), { force: true });
      count -= 1;
      bytes -= file.bytes;
    }
    return { files: count, bytes };
  }

  private async count(dir: string): Promise<{ files: number; bytes: number }> {
    const files = await this.listed(dir);
    return { files: files.length, bytes: files.reduce((total, file) => total + file.bytes, 0) };
  }

  private async listed(dir: string): Promise<{ name: string; bytes: number; modifiedMs: number }[]> {
    const names = (await readdir(dir).catch(() => [] as string[])).filter((name) => name.endsWith('.png'));
    const listed: { name: string; bytes: number; modifiedMs: number }[] = [];
    for (const name of names) {
      const info = await stat(join(dir, name)).catch(() => undefined);
      if (info) listed.push({ name, bytes: info.size, modifiedMs: info.mtimeMs });
    }
    return listed;
  }

  private sessionDir(sessionId: string): string {
    if (!NAME.test(sessionId)) throw new AirlockError('INVALID_ARGUMENTS', `bad session id ${JSON.stringify(sessionId)}`);
    return join(this.root, sessionId);
  }
}

function checkName(name: string): string {
  if (!NAME.test(name)) throw new AirlockError('INVALID_ARGUMENTS', `bad thumbnail name ${JSON.stringify(name)}: letters, digits, _ and -`);
  return name;
}
