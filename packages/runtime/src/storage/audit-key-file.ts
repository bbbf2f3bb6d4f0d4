/**
 * The audit key: 32 random bytes in a file of its own (0600, default
 * `<data dir>/audit.key` beside `secrets.key`, or AIRLOCK_AUDIT_KEY_FILE), so
 * that whoever can write the database cannot recompute the chain's keyed
 * hashes. Servers sharing one PostgreSQL database share this key.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { AirlockError } from '../core/errors.js';

const KEY_BYTES = 32;

/** Reads the audit key, creating it on first use; `created` says which. */
export function loadOrCreateAuditKey(path: string): { key: Buffer; created: boolean } {
  const existing = readAuditKey(path);
  if (existing) return { key: existing, created: false };
  const key = randomBytes(KEY_BYTES);
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(temporary, 0o600);
  renameSync(temporary, path);
  return { key, created: true };
}

/** Reads an existing audit key, or undefined when the file does not exist. */
export function readAuditKey(path: string): Buffer | undefined {
  let text: string;
  try {
    text = readFileSync(path, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new AirlockError('INVALID_CONFIGURATION', `cannot read the audit key ${path}: ${(error as Error).message}`, { cause: error });
  }
  if (!/^[0-9a-f]{64}$/.test(text)) {
    throw new AirlockError(
      'INVALID_CONFIGURATION',
      `the audit key ${path} is not 64 hex digits; restore it from a backup (without it, keyed audit chains cannot be verified)`,
    );
  }
  return Buffer.from(text, 'hex');
}
