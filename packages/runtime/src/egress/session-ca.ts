/**
 * The per-session certificate authority the gateway uses to terminate TLS
 * for hosts that have a credential binding. Made with Debian's `openssl`
 * (node:crypto cannot issue X.509 certificates). The CA is name-constrained
 * to the bound hosts, so even a stolen CA key cannot vouch for any other
 * name; it is trusted only inside its own session's sandbox; its key never
 * leaves the host.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { AirlockError } from '../core/errors.js';
import { parseDomainPattern } from './destination-policy.js';

/** File names of a session CA inside its directory. */
export const CA_CERT_FILE = 'ca.pem';
const CA_KEY_FILE = 'ca.key';
const LEAF_KEY_FILE = 'leaf.key';

/** Creates the CA files in `dir` unless they exist. */
export async function ensureSessionCa(dir: string, sessionId: string, hostPatterns: readonly string[]): Promise<void> {
  if (existsSync(join(dir, CA_CERT_FILE)) && existsSync(join(dir, LEAF_KEY_FILE))) return;
  const names = [...new Set(hostPatterns.map((text) => parseDomainPattern(text).name))];
  // RFC 5280: a DNS constraint "example.com" permits the name and everything below it.
  const constraints = names.map((name) => `permitted;DNS:${name}`).join(',');
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', join(dir, CA_KEY_FILE)]);
  await openssl([
    'req', '-x509', '-new', '-key', join(dir, CA_KEY_FILE), '-out', join(dir, CA_CERT_FILE), '-days', '3650', '-sha256',
    '-subj', `/O=Airlock/CN=Airlock session ${sessionId} egress CA`,
    '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
    '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
    ...(constraints ? ['-addext', `nameConstraints=critical,${constraints}`] : []),
  ]);
  await openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', join(dir, LEAF_KEY_FILE)]);
}

/** Issues (and caches) TLS server contexts for names under one session CA. */
export class LeafCertificates {
  private readonly contexts = new Map<string, Promise<SecureContext>>();

  constructor(private readonly dir: string) {}

  /** A secure context presenting a certificate for `host`, signed by the session CA. */
  contextFor(host: string): Promise<SecureContext> {
    let context = this.contexts.get(host);
    if (!context) {
      context = this.issue(host);
      context.catch(() => this.contexts.delete(host));
      this.contexts.set(host, context);
    }
    return context;
  }

  private async issue(host: string): Promise<SecureContext> {
    const san = /^\d+\.\d+\.\d+\.\d+$/.test(host) ? `IP:${host}` : `DNS:${host}`;
    const cert = await openssl([
      'req', '-x509', '-new', '-key', join(this.dir, LEAF_KEY_FILE), '-CA', join(this.dir, CA_CERT_FILE), '-CAkey', join(this.dir, CA_KEY_FILE),
      '-days', '30', '-sha256', '-subj', `/CN=${host}`,
      '-addext', `subjectAltName=${san}`,
      '-addext', 'basicConstraints=critical,CA:FALSE',
      '-addext', 'extendedKeyUsage=serverAuth',
      '-addext', 'keyUsage=critical,digitalSignature',
    ]);
    const [key, ca] = await Promise.all([readFile(join(this.dir, LEAF_KEY_FILE)), readFile(join(this.dir, CA_CERT_FILE), 'utf8')]);
    return createSecureContext({ key, cert: `${cert}${ca}` });
  }
}

function openssl(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('openssl', args, { timeout: 30_000 }, (error, stdout, stderr) => {
      if (error) {
        const missing = (error as NodeJS.ErrnoException).code === 'ENOENT';
        reject(new AirlockError(missing ? 'DRIVER_UNAVAILABLE' : 'INTERNAL', missing ? 'openssl is not installed: apt-get install openssl' : `openssl ${args[0] ?? ''} failed: ${String(stderr).trim()}`, { cause: error }));
      } else {
        resolve(String(stdout));
      }
    });
  });
}
