/**
 * A stand-in internet for egress tests: a network namespace we create, with
 * HTTP and HTTPS target servers on two 10.213.x addresses, a test CA that
 * signed their certificate, and an egress config whose hosts table maps
 * test names to them. Nothing outside this host is ever contacted.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// Compiled beside this file under dist/; benchmarks run the TypeScript source with tsx and use the compiled server.
const TARGET_SERVER = existsSync(join(here, 'egress-target-server.js'))
  ? join(here, 'egress-target-server.js')
  : join(here, '..', '..', 'dist', 'test', 'support', 'egress-target-server.js');

/** A running stand-in internet. */
export interface EgressFixture {
  /** the first target (allowed names point here) */
  allowedAddress: string;
  /** the second target (denied names point here) */
  deniedAddress: string;
  /** host-side address of the namespace's veth */
  hostAddress: string;
  /** path of the egress config for AIRLOCK_EGRESS_CONFIG */
  configFile: string;
  /** PEM of the CA that signed the targets' certificate */
  caFile: string;
  /** the hosts table of the egress config */
  hosts: Record<string, string>;
  dispose(): Promise<void>;
}

/** Names the hosts table maps, and where. */
export const TEST_HOSTS = {
  allowed: 'allowed.test',
  denied: 'denied.test',
  bound: 'api.bound.test',
  other: 'other.allowed.test',
} as const;

/** Creates the namespace, the CA and the servers; `subnet` is the third octet of 10.213.x.0/24. */
export async function startEgressFixture(subnet = 9, extraConfig: Record<string, unknown> = {}): Promise<EgressFixture> {
  const tag = randomBytes(3).toString('hex');
  const netns = `airlock-test-${tag}`;
  const veth = `altst${tag}`;
  const dir = mkdtempSync('/var/tmp/airlock-egress-fixture-');
  const allowedAddress = `10.213.${subnet}.1`;
  const deniedAddress = `10.213.${subnet}.2`;
  const hostAddress = `10.213.${subnet}.254`;
  const children: ChildProcess[] = [];
  const dispose = async (): Promise<void> => {
    for (const child of children) child.kill('SIGKILL');
    run('ip', ['netns', 'del', netns], true);
    run('ip', ['link', 'del', veth], true);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run('ip', ['netns', 'add', netns]);
    run('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
    run('ip', ['addr', 'add', `${hostAddress}/24`, 'dev', veth]);
    run('ip', ['link', 'set', veth, 'up']);
    run('ip', ['-n', netns, 'link', 'set', 'lo', 'up']);
    run('ip', ['-n', netns, 'addr', 'add', `${allowedAddress}/24`, 'dev', 'eth0']);
    run('ip', ['-n', netns, 'addr', 'add', `${deniedAddress}/24`, 'dev', 'eth0']);
    run('ip', ['-n', netns, 'link', 'set', 'eth0', 'up']);
    const caKey = join(dir, 'ca.key');
    const caFile = join(dir, 'ca.pem');
    const key = join(dir, 'server.key');
    const cert = join(dir, 'server.pem');
    run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', caKey]);
    run('openssl', ['req', '-x509', '-new', '-key', caKey, '-out', caFile, '-days', '2', '-subj', '/CN=Airlock egress test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
    run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', key]);
    const names = Object.values(TEST_HOSTS).map((name) => `DNS:${name}`).join(',');
    run('openssl', ['req', '-x509', '-new', '-key', key, '-CA', caFile, '-CAkey', caKey, '-out', cert, '-days', '2', '-subj', '/CN=allowed.test', '-addext', `subjectAltName=${names}`, '-addext', 'extendedKeyUsage=serverAuth']);
    for (const address of [allowedAddress, deniedAddress]) {
      const child = spawn('nsenter', [`--net=/var/run/netns/${netns}`, process.execPath, TARGET_SERVER, address, cert, key], { stdio: ['ignore', 'pipe', 'inherit'] });
      children.push(child);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`target server on ${address} did not start`)), 15_000);
        child.stdout?.once('data', () => {
          clearTimeout(timer);
          resolve();
        });
        child.once('exit', (code) => reject(new Error(`target server on ${address} exited with ${code}`)));
      });
    }
    const configFile = join(dir, 'egress.json');
    const hosts = { [TEST_HOSTS.allowed]: allowedAddress, [TEST_HOSTS.other]: allowedAddress, [TEST_HOSTS.bound]: allowedAddress, [TEST_HOSTS.denied]: deniedAddress };
    writeFileSync(configFile, JSON.stringify({ hosts, upstreamCaFiles: [caFile], ...extraConfig }, null, 2));
    return { allowedAddress, deniedAddress, hostAddress, configFile, caFile, hosts, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

function run(file: string, args: string[], quiet = false): void {
  try {
    execFileSync(file, args, { stdio: ['ignore', 'ignore', quiet ? 'ignore' : 'pipe'] });
  } catch (error) {
    if (!quiet) throw error;
  }
}
