/**
 * Issue 27, item 4: what is wrong with an installation's own settings (its
 * audit key, its store URL, its flags) stops `airlock serve` with a
 * configuration code, exit status 2 and what to change, never `INTERNAL`;
 * a database that does not answer is STORE_UNAVAILABLE (status 1: retry).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AIRLOCK_BIN, freePort } from '../support/test-installation.js';

const dirs: string[] = [];
const freshDataDir = (): string => {
  const dir = mkdtempSync('/var/tmp/airlock-config-errors-');
  dirs.push(dir);
  return dir;
};

/** Runs `airlock serve` expecting it to stop by itself. */
function serve(dataDir: string, args: string[] = [], env: Record<string, string> = {}): { status: number | null; stderr: string } {
  const run = spawnSync(process.execPath, [AIRLOCK_BIN, 'serve', '--data-dir', dataDir, '--listen', '127.0.0.1:0', '--warm-pool', '0', ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { status: run.status, stderr: run.stderr };
}

/** Starts `airlock serve` until it listens, then stops it: the data dir then has its database and audit key. */
async function serveOnce(dataDir: string): Promise<void> {
  const port = await freePort();
  const child = spawn(process.execPath, [AIRLOCK_BIN, 'serve', '--data-dir', dataDir, '--listen', `127.0.0.1:${port}`, '--warm-pool', '0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString();
      if (log.includes('listening on')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${log}`)));
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

describe('configuration errors at start', () => {
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('an audit key that is not one stops serve with INVALID_CONFIGURATION and exit 2', () => {
    const dataDir = freshDataDir();
    writeFileSync(join(dataDir, 'audit.key'), 'not a key\n');
    const result = serve(dataDir);
    assert.equal(result.status, 2, result.stderr);
    assert.match(result.stderr, /INVALID_CONFIGURATION: the audit key .*audit\.key is not 64 hex digits; restore it from a backup/);
    assert.doesNotMatch(result.stderr, /INTERNAL/);
  });

  it('an audit key other than the one the chains were written with stops serve', async () => {
    const dataDir = freshDataDir();
    await serveOnce(dataDir);
    writeFileSync(join(dataDir, 'audit.key'), `${'ab'.repeat(32)}\n`);
    const result = serve(dataDir);
    assert.equal(result.status, 2, result.stderr);
    assert.match(
      result.stderr,
      /INVALID_CONFIGURATION: the audit chains in this store were written with audit key \S+, but .* holds key \S+; restore that key file/,
    );
  });

  it('a store URL whose host does not exist is a configuration error; a database that does not answer is STORE_UNAVAILABLE', () => {
    const unknownHost = serve(freshDataDir(), ['--store', 'postgres://airlock@no-such-host.invalid:5432/airlock']);
    assert.equal(unknownHost.status, 2, unknownHost.stderr);
    assert.match(
      unknownHost.stderr,
      /INVALID_CONFIGURATION: cannot use the PostgreSQL store at postgres:\/\/airlock@no-such-host\.invalid:5432\/airlock: .*check --store/,
    );
    const refused = serve(freshDataDir(), ['--store', 'postgres://airlock@127.0.0.1:9/airlock']);
    assert.equal(refused.status, 1, refused.stderr);
    assert.match(refused.stderr, /STORE_UNAVAILABLE: cannot use the PostgreSQL store at postgres:\/\/airlock@127\.0\.0\.1:9\/airlock: .*ECONNREFUSED/);
  });

  it('bad flags exit 2 and say what they take', () => {
    for (const [args, message] of [
      [['--listen', 'everywhere'], /INVALID_ARGUMENTS: --listen takes HOST:PORT/],
      [['--log-level', 'loud'], /INVALID_ARGUMENTS: --log-level takes one of debug, info, warn, error, off/],
      [['--metrics-listen', 'nowhere:port'], /INVALID_ARGUMENTS: --metrics-listen takes HOST:PORT or a PORT/],
    ] as const) {
      const result = serve(freshDataDir(), [...args]);
      assert.equal(result.status, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
  });
});
