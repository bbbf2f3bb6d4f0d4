/** Where the CLI finds the server: AIRLOCK_URL / AIRLOCK_TOKEN, else the local server's defaults. */
import { readStoredToken, defaultDataDir } from '@airlock/runtime';
import type { ConnectionOptions } from '@airlock/sdk';

/** Default address of `airlock serve`. */
export const DEFAULT_LISTEN = '127.0.0.1:7070';

/** Connection options for SDK calls made by the CLI. */
export function cliConnection(): ConnectionOptions {
  const url = process.env['AIRLOCK_URL'] ?? `http://${DEFAULT_LISTEN}`;
  const token = process.env['AIRLOCK_TOKEN'] ?? readStoredToken(defaultDataDir());
  return { url, ...(token === undefined ? {} : { token }) };
}
