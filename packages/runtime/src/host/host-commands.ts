/**
 * Small helpers to run host networking tools (`ip`, `nft`, `nsenter`) and
 * turn their failures into AirlockErrors that name the command.
 */
import { execFile } from 'node:child_process';
import { AirlockError } from '../core/errors.js';

/** Runs a host command; resolves with stdout, rejects with DRIVER_FAILED naming it. */
export function hostCommand(file: string, args: readonly string[], options: { input?: string; timeoutMs?: number } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(file, [...args], { timeout: options.timeoutMs ?? 30_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
        const why = missing ? `${file} is not installed (apt-get install iproute2 nftables util-linux)` : String(stderr).trim() || error.message;
        reject(new AirlockError(missing ? 'DRIVER_UNAVAILABLE' : 'DRIVER_FAILED', `${file} ${args.join(' ')}: ${why}`, { cause: error }));
      } else {
        resolve(String(stdout));
      }
    });
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** Like hostCommand but ignores failure (cleanup paths that must be idempotent). */
export async function hostCommandQuiet(file: string, args: readonly string[], options: { input?: string } = {}): Promise<string | undefined> {
  return hostCommand(file, args, options).catch(() => undefined);
}
