/**
 * Where the CLI finds the server: AIRLOCK_URL / AIRLOCK_TOKEN, else the local
 * server's defaults (its address, and the token it stored in its data dir).
 * Kept free of the runtime package so that client commands start fast.
 */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import type { ConnectionOptions } from '@airlock/sdk';

/** Default address of `airlock serve`. */
export const DEFAULT_LISTEN = '127.0.0.1:7070';

/** The data dir `airlock serve` uses by default (same rule as the runtime's). */
export function defaultDataDir(): string {
  const fromEnv = process.env['AIRLOCK_DATA_DIR'];
  if (fromEnv) return resolve(fromEnv);
  return process.getuid?.() === 0 ? '/var/lib/airlock' : join(homedir(), '.local', 'share', 'airlock');
}

/** Connection options for SDK calls made by the CLI. */
export function cliConnection(): ConnectionOptions {
  const url = process.env['AIRLOCK_URL'] ?? `http://${DEFAULT_LISTEN}`;
  let token = process.env['AIRLOCK_TOKEN'];
  if (!token) {
    try {
      token = readFileSync(join(defaultDataDir(), 'token'), 'utf8').trim() || undefined;
    } catch {
      token = undefined;
    }
  }
  return { url, ...(token === undefined ? {} : { token }) };
}
