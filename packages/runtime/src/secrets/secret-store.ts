/**
 * Secrets the egress gateway injects into requests, encrypted at rest with
 * AES-256-GCM. Each secret is one file `<dir>/<NAME>.json` (0600) holding
 * iv, tag and ciphertext; the 32-byte key lives in a separate key file
 * (0600, default `<data dir>/secrets.key`, or AIRLOCK_SECRETS_KEY_FILE), so a
 * copy of the database or of the secrets dir alone reveals nothing. The name
 * is bound into the ciphertext (GCM additional data): a file renamed to
 * another secret's name fails to decrypt instead of being used.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AirlockError } from '../core/errors.js';

/** Names are environment-variable-like: they also name the placeholder variable. */
export const SECRET_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
/** Largest secret value accepted. */
export const MAX_SECRET_BYTES = 64 * 1024;

/** What listing shows of a secret: never its value. */
export interface SecretInfo {
  name: string;
  createdAt: string;
  updatedAt: string;
  bytes: number;
  /** the tenants whose sessions may use it; null: every tenant */
  tenants: string[] | null;
}

interface SecretFile {
  version: 1;
  name: string;
  iv: string;
  tag: string;
  data: string;
  bytes: number;
  createdAt: string;
  updatedAt: string;
  /** absent in files written before tenants: every tenant */
  tenants?: string[] | null;
}

/** The encrypted secret store of a data dir. */
export class SecretStore {
  private key: Buffer | undefined;

  constructor(private readonly options: { dir: string; keyFile: string }) {}

  /**
   * Stores (or replaces) a secret. `tenants` gives it to those tenants only
   * (null: every tenant); left out, a replaced secret keeps its tenants.
   */
  set(name: string, value: string, tenants?: string[] | null): SecretInfo {
    checkName(name);
    const bytes = Buffer.byteLength(value, 'utf8');
    if (bytes === 0 || bytes > MAX_SECRET_BYTES) {
      throw new AirlockError('INVALID_ARGUMENTS', `secret ${name} must be 1 to ${MAX_SECRET_BYTES} bytes (got ${bytes}); pipe the value on stdin`);
    }
    if (/[\r\n\0]/.test(value)) {
      throw new AirlockError('INVALID_ARGUMENTS', `secret ${name} contains a line break or NUL, which cannot go into an HTTP header; strip the trailing newline (e.g. printf %s "$TOKEN" | airlock secrets set ${name})`);
    }
    const now = new Date().toISOString();
    const previous = this.readFile(name);
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.loadKey(), iv);
    cipher.setAAD(Buffer.from(`airlock-secret:${name}`));
    const data = Buffer.concat([cipher.update(value, 'utf8'), cipher.final()]);
    const file: SecretFile = {
      version: 1,
      name,
      iv: iv.toString('base64'),
      tag: cipher.getAuthTag().toString('base64'),
      data: data.toString('base64'),
      bytes,
      createdAt: previous?.createdAt ?? now,
      updatedAt: now,
      tenants: tenants === undefined ? (previous?.tenants ?? null) : tenants === null ? null : [...new Set(tenants)].sort(),
    };
    this.ensureDir();
    const path = this.pathOf(name);
    writeFileSync(`${path}.tmp`, JSON.stringify(file), { mode: 0o600 });
    renameSync(`${path}.tmp`, path);
    return infoOf(file);
  }

  /** The plaintext, or undefined when no such secret exists. Throws when the file does not decrypt. */
  get(name: string): string | undefined {
    if (!SECRET_NAME_PATTERN.test(name)) return undefined;
    const file = this.readFile(name);
    if (!file) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.loadKey(), Buffer.from(file.iv, 'base64'));
      decipher.setAAD(Buffer.from(`airlock-secret:${name}`));
      decipher.setAuthTag(Buffer.from(file.tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(file.data, 'base64')), decipher.final()]).toString('utf8');
    } catch (error) {
      throw new AirlockError('INTERNAL', `secret ${name} does not decrypt with the key in ${this.options.keyFile} (wrong key file, or the secret was tampered with); set it again`, { cause: error });
    }
  }

  /** True when the secret exists. */
  has(name: string): boolean {
    return SECRET_NAME_PATTERN.test(name) && existsSync(this.pathOf(name));
  }

  /** True when the secret exists and sessions of `tenant` may use it. */
  givenTo(name: string, tenant: string): boolean {
    const file = this.has(name) ? this.readFile(name) : undefined;
    if (!file) return false;
    return file.tenants === undefined || file.tenants === null || file.tenants.includes(tenant);
  }

  /** Every secret, by name, without values. */
  list(): SecretInfo[] {
    if (!existsSync(this.options.dir)) return [];
    return readdirSync(this.options.dir)
      .filter((entry) => entry.endsWith('.json'))
      .map((entry) => this.readFile(entry.slice(0, -5)))
      .filter((file): file is SecretFile => file !== undefined)
      .map(infoOf)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  /** Deletes a secret; false when it did not exist. */
  remove(name: string): boolean {
    checkName(name);
    if (!existsSync(this.pathOf(name))) return false;
    rmSync(this.pathOf(name), { force: true });
    return true;
  }

  private readFile(name: string): SecretFile | undefined {
    if (!SECRET_NAME_PATTERN.test(name)) return undefined;
    try {
      return JSON.parse(readFileSync(this.pathOf(name), 'utf8')) as SecretFile;
    } catch {
      return undefined;
    }
  }

  private pathOf(name: string): string {
    return join(this.options.dir, `${name}.json`);
  }

  private ensureDir(): void {
    mkdirSync(this.options.dir, { recursive: true, mode: 0o700 });
  }

  private loadKey(): Buffer {
    if (this.key) return this.key;
    if (!existsSync(this.options.keyFile)) {
      writeFileSync(`${this.options.keyFile}.tmp`, randomBytes(32), { mode: 0o600 });
      chmodSync(`${this.options.keyFile}.tmp`, 0o600);
      renameSync(`${this.options.keyFile}.tmp`, this.options.keyFile);
    }
    const key = readFileSync(this.options.keyFile);
    if (key.length !== 32) {
      throw new AirlockError('INVALID_CONFIGURATION', `secrets key file ${this.options.keyFile} must hold exactly 32 bytes (it has ${key.length}); restore it from a backup`);
    }
    this.key = key;
    return key;
  }
}

function checkName(name: string): void {
  if (!SECRET_NAME_PATTERN.test(name)) {
    throw new AirlockError('INVALID_ARGUMENTS', `invalid secret name ${JSON.stringify(name)}: use letters, digits and _ (not starting with a digit), up to 128 characters`);
  }
}

function infoOf(file: SecretFile): SecretInfo {
  return { name: file.name, createdAt: file.createdAt, updatedAt: file.updatedAt, bytes: file.bytes, tenants: file.tenants ?? null };
}
