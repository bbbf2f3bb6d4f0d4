/**
 * A real Airlock installation for end-to-end tests: the server runs as its
 * own process (so a test can `kill -9` it), on a temp data dir, with the
 * Debian image built once per machine and shared through AIRLOCK_IMAGES_DIR.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openImageCatalog, openDataDir } from '@airlock/runtime';
import Database from 'better-sqlite3';
import { createTestDatabase, defaultTestStore, runOnDatabase, type TestDatabase } from './test-database.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The `airlock` executable of this checkout. */
/**
 * Test servers keep no warm machines unless a test asks (`serveArgs: ['--warm-pool', 'N']`, which comes later
 * and wins): a pool's background starts would compete with the test for the host's two cores, and its machines
 * would show in the tests that count sandboxes. The warm pool's own suite runs with one.
 */
const WARM_POOL_OFF = ['--warm-pool', '0'];

export const AIRLOCK_BIN = resolve(here, '../../../bin/airlock.js');
/** Images shared by every test installation on this machine. */
export const TEST_IMAGES_DIR = process.env['AIRLOCK_TEST_IMAGES_DIR'] ?? '/var/tmp/airlock-test/images';

let imageReady: Promise<void> | undefined;

/** Builds (or reuses) the Debian image for tests. */
export function ensureTestImage(): Promise<void> {
  imageReady ??= (async () => {
    process.env['AIRLOCK_IMAGES_DIR'] = TEST_IMAGES_DIR;
    const probeDir = mkdtempSync('/var/tmp/airlock-image-probe-');
    try {
      const catalog = openImageCatalog(openDataDir(probeDir));
      const existing = await catalog.list();
      if (!existing.some((image) => image.name === 'debian-bookworm')) await catalog.buildDebian({});
    } finally {
      rmSync(probeDir, { recursive: true, force: true });
    }
  })();
  return imageReady;
}

let desktopImageReady: Promise<void> | undefined;

/** Builds (or reuses) the desktop image for tests (debootstrap with Chromium: minutes when cold, seconds from the cache). */
export function ensureTestDesktopImage(): Promise<void> {
  desktopImageReady ??= (async () => {
    await ensureTestImage();
    const probeDir = mkdtempSync('/var/tmp/airlock-image-probe-');
    try {
      const catalog = openImageCatalog(openDataDir(probeDir));
      const existing = await catalog.list();
      if (!existing.some((image) => image.name === 'debian-bookworm-desktop')) await catalog.buildDebian({ desktop: true });
    } finally {
      rmSync(probeDir, { recursive: true, force: true });
    }
  })();
  return desktopImageReady;
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Result of one CLI run. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Where a test installation keeps its state. */
export type TestStore = 'sqlite' | 'postgres' | { url: string; database?: TestDatabase };

/** Options of a test installation. */
export interface TestInstallationOptions {
  /** added to the server's and the CLI's environment */
  env?: Record<string, string>;
  /** default: $AIRLOCK_TEST_STORE (postgres: a fresh database on the test cluster), else sqlite */
  store?: TestStore;
  /** the data dir (default: a fresh one) */
  dataDir?: string;
  /** added to `airlock serve`'s command line (e.g. --objects) */
  serveArgs?: string[];
  /** the API token (default: a fresh one); nodes of a cluster share one */
  token?: string;
  /** join a cluster as this node: `--node-id NAME --advertise http://127.0.0.1:PORT` */
  nodeId?: string;
}

/** A server process and the CLI pointed at it. */
export class TestInstallation {
  readonly dataDir: string;
  token = `test-token-${Math.random().toString(36).slice(2)}`;
  port = 0;
  /** the PostgreSQL URL of the store, or undefined for SQLite in the data dir */
  storeUrl: string | undefined;
  private child: ChildProcess | undefined;
  private log = '';
  /** extra environment of the server and the CLI (e.g. AIRLOCK_EGRESS_CONFIG) */
  private readonly extraEnv: Record<string, string>;
  /** the database this installation made, dropped with it */
  private ownDatabase: TestDatabase | undefined;
  /** extra arguments of `airlock serve` (e.g. --objects) */
  private readonly serveArgs: string[];

  private constructor(dataDir: string, extraEnv: Record<string, string> = {}, serveArgs: string[] = []) {
    this.dataDir = dataDir;
    this.extraEnv = extraEnv;
    this.serveArgs = serveArgs;
  }

  /** Starts a server on a fresh (or the given) data dir. */
  static async start(options: TestInstallationOptions = {}): Promise<TestInstallation> {
    await ensureTestImage();
    const installation = new TestInstallation(options.dataDir ?? mkdtempSync('/var/tmp/airlock-e2e-'), options.env, options.serveArgs);
    if (options.token) installation.token = options.token;
    const store = options.store ?? defaultTestStore();
    if (store === 'postgres') {
      installation.ownDatabase = await createTestDatabase('e2e');
      installation.storeUrl = installation.ownDatabase.url;
    } else if (store !== 'sqlite') {
      installation.storeUrl = store.url;
    }
    installation.port = await freePort();
    if (options.nodeId) installation.serveArgs.push('--node-id', options.nodeId, '--advertise', installation.url);
    await installation.startServer();
    return installation;
  }

  /** Which store the server uses. */
  get storeKind(): 'sqlite' | 'postgres' {
    return this.storeUrl ? 'postgres' : 'sqlite';
  }

  /**
   * Runs one statement directly on the store, as someone with write access to the
   * database would: `sql.sqlite` on the SQLite file, `sql.postgres` on the database.
   */
  async writeStore(sql: { sqlite: string; postgres: string }, params: unknown[] = []): Promise<number> {
    if (!this.storeUrl) {
      const db = new Database(join(this.dataDir, 'airlock.db'));
      try {
        return db.prepare(sql.sqlite).run(...params).changes;
      } finally {
        db.close();
      }
    }
    return runOnDatabase(this.storeUrl, sql.postgres, params);
  }

  /** Base URL of the API. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Environment for the CLI and SDK. */
  get env(): NodeJS.ProcessEnv {
    return {
      ...process.env,
      ...this.extraEnv,
      AIRLOCK_URL: this.url,
      AIRLOCK_TOKEN: this.token,
      AIRLOCK_IMAGES_DIR: TEST_IMAGES_DIR,
      AIRLOCK_DATA_DIR: this.dataDir,
      ...(this.storeUrl ? { AIRLOCK_STORE_URL: this.storeUrl } : {}),
    };
  }

  /** (Re)starts the server process on the same data dir and waits until it answers. */
  async startServer(): Promise<void> {
    this.log = '';
    const args = [
      'serve',
      '--data-dir',
      this.dataDir,
      '--listen',
      `127.0.0.1:${this.port}`,
      ...(this.storeUrl ? ['--store', this.storeUrl] : []),
      ...WARM_POOL_OFF,
      ...this.serveArgs,
    ];
    const child = spawn(process.execPath, [AIRLOCK_BIN, ...args], {
      env: this.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    child.stdout?.on('data', (chunk: Buffer) => (this.log += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (this.log += chunk.toString()));
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (hasExited(child)) throw new Error(`airlock serve exited with ${child.exitCode ?? child.signalCode}:\n${this.log}`);
      try {
        const response = await fetch(`${this.url}/healthz`);
        if (response.ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`airlock serve did not answer within 60 s:\n${this.log}`);
  }

  /** What the server printed. */
  get serverLog(): string {
    return this.log;
  }

  /** Kills the server with SIGKILL, as a crash would. */
  async crashServer(): Promise<void> {
    const child = this.child;
    if (!child || hasExited(child)) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  /** Sends a signal to the server process (SIGSTOP and SIGCONT: a node paused past its lease). */
  signalServer(signal: NodeJS.Signals): void {
    if (this.child && !hasExited(this.child)) this.child.kill(signal);
  }

  /** Stops the server gracefully. */
  async stopServer(): Promise<void> {
    const child = this.child;
    if (!child || hasExited(child)) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }

  /** Runs the CLI synchronously. */
  cli(args: string[], options: { input?: string | Buffer; env?: NodeJS.ProcessEnv } = {}): CliResult {
    const result = spawnSync(process.execPath, [AIRLOCK_BIN, ...args], {
      env: { ...this.env, ...options.env },
      input: options.input ?? '',
      maxBuffer: 64 * 1024 * 1024,
      timeout: 300_000,
    });
    return { code: result.status ?? -1, stdout: result.stdout.toString(), stderr: result.stderr.toString() };
  }

  /** Runs the CLI without blocking the test's event loop (for calls that wait on another call). */
  cliAsync(args: string[], options: { input?: string } = {}): Promise<CliResult> {
    return new Promise((resolveResult) => {
      const child = spawn(process.execPath, [AIRLOCK_BIN, ...args], { env: this.env, stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.stdin.end(options.input ?? '');
      // 'close', not 'exit': a child can exit before its last output has been read from the pipes.
      child.on('close', (code) => resolveResult({ code: code ?? -1, stdout, stderr }));
    });
  }

  /** Terminates every session, stops the server and removes the data dir. */
  async destroy(): Promise<void> {
    // AIRLOCK_TEST_KEEP_DATA=1 keeps a failed run's data dir (sandbox logs, the store) to look at afterwards.
    if (process.env['AIRLOCK_TEST_KEEP_DATA'] === '1') {
      await this.stopServer();
      process.stderr.write(`test installation kept at ${this.dataDir}\n`);
      return;
    }
    if (this.child && !hasExited(this.child)) {
      const list = this.cli(['sessions', 'ls', '--json']);
      if (list.code === 0) {
        for (const session of JSON.parse(list.stdout) as { id: string; state: string }[]) {
          if (session.state !== 'terminated') this.cli(['sessions', 'rm', session.id]);
        }
      }
    }
    await this.stopServer();
    if (existsSync(this.dataDir)) rmSync(this.dataDir, { recursive: true, force: true });
    await this.ownDatabase?.drop();
  }
}

/** True once a child ended, by exit or by a signal (a killed child keeps `exitCode` null). */
function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Host processes whose command line mentions `needle` (e.g. a sandbox id). */
export function hostProcessesMatching(needle: string): string[] {
  const out = spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).stdout;
  return out.split('\n').filter((line) => line.includes(needle) && !line.includes('ps -eo'));
}

/** Paths under `root` whose name contains `needle`. */
export function pathsMatching(root: string, needle: string): string[] {
  const out = spawnSync('find', [root, '-name', `*${needle}*`], { encoding: 'utf8' }).stdout;
  return out.split('\n').filter(Boolean);
}

export { join };
