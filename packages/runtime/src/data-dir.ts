/**
 * The data dir: everything Airlock keeps on a host. One place, so that
 * backing up, moving or wiping an installation is one directory.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, renameSync, chmodSync } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { join, resolve } from 'node:path';

/** Paths inside a data dir. */
export interface DataDirLayout {
  root: string;
  database: string;
  tokenFile: string;
  /** this installation's identity: the owner of the sessions it creates, and of its uploads to a shared bucket */
  nodeIdFile: string;
  images: string;
  disks: string;
  sandboxes: string;
  snapshots: string;
  /** the audit key (0600); AIRLOCK_AUDIT_KEY_FILE overrides it, e.g. to share one key between servers */
  auditKey: string;
  /** chain heads kept outside the database */
  auditHeads: string;
  /** the pid of the server running on this data dir, while it runs */
  pidFile: string;
  /** which store holds this data dir's sessions (written when a server first uses PostgreSQL) */
  storeFile: string;
  /** screen thumbnails of desktop calls and takeover frames, per session (bounded) */
  thumbnails: string;
  /** asciicast recordings of takeover terminals, per session (kept like the audit) */
  terminalRecordings: string;
}

/** The default data dir: $AIRLOCK_DATA_DIR, else /var/lib/airlock for root, else ~/.local/share/airlock. */
export function defaultDataDir(): string {
  const fromEnv = process.env['AIRLOCK_DATA_DIR'];
  if (fromEnv) return resolve(fromEnv);
  return process.getuid?.() === 0 ? '/var/lib/airlock' : join(homedir(), '.local', 'share', 'airlock');
}

/** Cache shared by data dirs (built images). */
export function defaultCacheDir(): string {
  return process.env['AIRLOCK_CACHE_DIR'] ?? (process.getuid?.() === 0 ? '/var/cache/airlock' : join(homedir(), '.cache', 'airlock'));
}

/** Creates (if needed) and describes the data dir. */
export function openDataDir(root: string): DataDirLayout {
  const abs = resolve(root);
  const layout: DataDirLayout = {
    root: abs,
    database: join(abs, 'airlock.db'),
    tokenFile: join(abs, 'token'),
    nodeIdFile: join(abs, 'node-id'),
    // images may be shared by several data dirs (e.g. test installations): AIRLOCK_IMAGES_DIR
    images: process.env['AIRLOCK_IMAGES_DIR'] ? resolve(process.env['AIRLOCK_IMAGES_DIR']) : join(abs, 'images'),
    disks: join(abs, 'disks'),
    sandboxes: join(abs, 'sandboxes'),
    snapshots: join(abs, 'snapshots'),
    auditKey: process.env['AIRLOCK_AUDIT_KEY_FILE'] ? resolve(process.env['AIRLOCK_AUDIT_KEY_FILE']) : join(abs, 'audit.key'),
    auditHeads: join(abs, 'audit-heads.log'),
    pidFile: join(abs, 'server.pid'),
    storeFile: join(abs, 'store.json'),
    thumbnails: join(abs, 'thumbnails'),
    terminalRecordings: join(abs, 'terminal-recordings'),
  };
  for (const dir of [abs, layout.images, layout.disks, layout.sandboxes, layout.snapshots, layout.thumbnails]) mkdirSync(dir, { recursive: true, mode: 0o700 });
  return layout;
}

/** The API token: AIRLOCK_TOKEN when set, else the one stored in the data dir, else a new one (stored 0600). */
export function loadOrCreateToken(layout: DataDirLayout, fromEnv = process.env['AIRLOCK_TOKEN']): { token: string; created: boolean } {
  if (fromEnv) return { token: fromEnv, created: false };
  try {
    const stored = readFileSync(layout.tokenFile, 'utf8').trim();
    if (stored) return { token: stored, created: false };
  } catch {
    // no token yet
  }
  const token = randomBytes(32).toString('base64url');
  writeFileSync(`${layout.tokenFile}.tmp`, `${token}\n`, { mode: 0o600 });
  chmodSync(`${layout.tokenFile}.tmp`, 0o600);
  renameSync(`${layout.tokenFile}.tmp`, layout.tokenFile);
  return { token, created: true };
}

/** The PostgreSQL database this data dir's sessions were moved to (its URL without password), if any. */
export function recordedPostgresStore(layout: DataDirLayout): string | undefined {
  try {
    const recorded = JSON.parse(readFileSync(layout.storeFile, 'utf8')) as { kind?: unknown; url?: unknown };
    return recorded.kind === 'postgres' && typeof recorded.url === 'string' ? recorded.url : undefined;
  } catch {
    return undefined;
  }
}

/** Records that this data dir's sessions live in the PostgreSQL database at `url` (stored without password). */
export function recordPostgresStore(layout: DataDirLayout, url: string): void {
  const parsed = new URL(url);
  parsed.password = '';
  writeFileSync(`${layout.storeFile}.tmp`, `${JSON.stringify({ kind: 'postgres', url: parsed.toString() }, null, 2)}\n`, { mode: 0o600 });
  renameSync(`${layout.storeFile}.tmp`, layout.storeFile);
}

/** The pid of a live server on this data dir, if one runs. */
export function runningServerPid(layout: DataDirLayout): number | undefined {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(layout.pidFile, 'utf8').trim(), 10);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** Reads the stored token, if any (for the CLI on the same host). */
export function readStoredToken(root: string = defaultDataDir()): string | undefined {
  try {
    return readFileSync(join(root, 'token'), 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** The data dir's node id: made once (`node-<hostname>-<random>`) and kept, so that a restarted node knows its own leftovers. */
export function loadOrCreateNodeId(layout: DataDirLayout): string {
  try {
    const stored = readFileSync(layout.nodeIdFile, 'utf8').trim();
    if (/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/.test(stored)) return stored;
  } catch {
    // none yet
  }
  const host = hostname().replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, 40) || 'host';
  const id = `node-${host}-${randomBytes(4).toString('hex')}`;
  writeFileSync(`${layout.nodeIdFile}.tmp`, `${id}\n`);
  renameSync(`${layout.nodeIdFile}.tmp`, layout.nodeIdFile);
  return id;
}
