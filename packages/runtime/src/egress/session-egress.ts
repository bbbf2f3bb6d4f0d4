/**
 * SessionNetworks over the egress gateway: per networked session a gateway
 * address, the gateway's listeners on it, and the files its sandboxes see
 * (resolv.conf naming the gateway, and, with credential bindings, a CA
 * bundle that also trusts the session's CA). State lives in
 * `<data dir>/egress/<session id>/` (0700): `state.json`, the CA (key 0600),
 * `resolv.conf`, `ca-certificates.crt`.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { BlockList } from 'node:net';
import { join } from 'node:path';
import type { SessionNetworkPlan, SessionNetworks } from '../core/session-networks.js';
import type { SessionRecord } from '../core/session.js';
import type { ContractCredential, ContractNetwork } from '../core/session-contract.js';
import { placeholderFor } from './destination-policy.js';
import { GATEWAY_PORTS, type EgressGateway } from './egress-gateway.js';
import { cidrRange, GatewayAddresses, toAddress } from './gateway-addresses.js';
import { CA_CERT_FILE, ensureSessionCa } from './session-ca.js';

/** Where the sandbox finds the CA bundle (Debian's path; also what SSL_CERT_FILE names). */
export const SANDBOX_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** Options of SessionEgress. */
export interface SessionEgressOptions {
  /** `<data dir>/egress` */
  root: string;
  gateway: EgressGateway;
  /** IPv4 subnet of gateways (lower half) and sandboxes (upper half); default 10.200.0.0/16 */
  subnet?: string;
}

/** The network parts of a contract as stored on the session. */
function networkOf(session: SessionRecord): { network: ContractNetwork; credentials: readonly ContractCredential[] } | undefined {
  const contract = session.contract as { network?: ContractNetwork; credentials?: readonly ContractCredential[] };
  return contract.network ? { network: contract.network, credentials: contract.credentials ?? [] } : undefined;
}

/** Networks of sessions, behind the egress gateway. */
export class SessionEgress implements SessionNetworks {
  private readonly addresses: GatewayAddresses;
  private readonly sandboxPool: string;
  private readonly prefixLength: number;
  private readonly sandboxes = new BlockList();

  constructor(private readonly options: SessionEgressOptions) {
    const subnet = cidrRange(options.subnet ?? '10.200.0.0/16');
    const half = 2 ** (32 - subnet.prefixLength) / 2;
    this.addresses = new GatewayAddresses(options.root, { first: subnet.first, last: subnet.base + half - 1 });
    this.sandboxPool = `${toAddress(subnet.base + half)}/${subnet.prefixLength + 1}`;
    this.prefixLength = subnet.prefixLength;
    this.sandboxes.addSubnet(toAddress(subnet.base + half), subnet.prefixLength + 1, 'ipv4');
  }

  async prepare(session: SessionRecord, image: { rootfsDir: string }): Promise<SessionNetworkPlan | undefined> {
    const wanted = networkOf(session);
    if (!wanted) return undefined;
    const dir = join(this.options.root, session.id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const address = await this.addressOf(session.id, dir);
    const bound = wanted.credentials.length > 0;
    if (bound) {
      await ensureSessionCa(dir, session.id, wanted.credentials.flatMap((credential) => credential.hosts));
      const system = await readFile(join(image.rootfsDir, SANDBOX_CA_BUNDLE), 'utf8').catch(() => '');
      await writeFile(join(dir, 'ca-certificates.crt'), `${system}${system.endsWith('\n') || system === '' ? '' : '\n'}${await readFile(join(dir, CA_CERT_FILE), 'utf8')}`);
    }
    await writeFile(join(dir, 'resolv.conf'), `# the Airlock egress gateway of this session\nnameserver ${address}\n`);
    await this.options.gateway.open(session.id, address, bound ? dir : undefined, (peer) => this.sandboxes.check(peer.replace(/^::ffff:/, ''), 'ipv4'));
    const proxy = `http://${address}:${GATEWAY_PORTS.proxy}`;
    const env: Record<string, string> = {
      HTTP_PROXY: proxy,
      HTTPS_PROXY: proxy,
      http_proxy: proxy,
      https_proxy: proxy,
      NO_PROXY: 'localhost,127.0.0.1,::1',
      no_proxy: 'localhost,127.0.0.1,::1',
    };
    if (bound) {
      Object.assign(env, { SSL_CERT_FILE: SANDBOX_CA_BUNDLE, REQUESTS_CA_BUNDLE: SANDBOX_CA_BUNDLE, CURL_CA_BUNDLE: SANDBOX_CA_BUNDLE, NODE_EXTRA_CA_CERTS: SANDBOX_CA_BUNDLE });
      for (const credential of wanted.credentials) env[credential.env ?? credential.secret] = placeholderFor(credential.secret);
    }
    return {
      env,
      network: {
        gatewayAddress: address,
        addressPool: this.sandboxPool,
        prefixLength: this.prefixLength,
        gatewayPorts: { tcp: [GATEWAY_PORTS.proxy, GATEWAY_PORTS.http, GATEWAY_PORTS.https], udp: [GATEWAY_PORTS.dns] },
        files: [
          { hostPath: join(dir, 'resolv.conf'), sandboxPath: '/etc/resolv.conf' },
          ...(bound ? [{ hostPath: join(dir, 'ca-certificates.crt'), sandboxPath: SANDBOX_CA_BUNDLE }] : []),
        ],
      },
    };
  }

  async quiesce(sessionId: string): Promise<void> {
    this.options.gateway.quiesce(sessionId);
    // Let the resets reach the sandbox's stack before it is frozen.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  async policyChanged(sessionId: string): Promise<void> {
    await this.options.gateway.policyChanged(sessionId);
  }

  async release(sessionId: string): Promise<void> {
    await this.options.gateway.close(sessionId);
    const dir = join(this.options.root, sessionId);
    const address = await this.storedAddress(dir);
    if (address) await this.addresses.release(address);
    await rm(dir, { recursive: true, force: true });
  }

  /**
   * After a restart: reopens the gateways of sessions that still live, and
   * releases the state of every other session (crash leftovers).
   */
  async reconcile(live: readonly SessionRecord[], rootfsOf: (session: SessionRecord) => Promise<string>): Promise<{ reopened: string[]; released: string[] }> {
    const reopened: string[] = [];
    const released: string[] = [];
    const keep = new Map(live.filter((session) => networkOf(session)).map((session) => [session.id, session]));
    for (const sessionId of await readdir(this.options.root).catch(() => [] as string[])) {
      if (!keep.has(sessionId)) {
        await this.release(sessionId);
        released.push(sessionId);
      }
    }
    for (const session of keep.values()) {
      await this.prepare(session, { rootfsDir: await rootfsOf(session) });
      reopened.push(session.id);
    }
    const owned = new Set(await Promise.all([...keep.keys()].map((id) => this.storedAddress(join(this.options.root, id)))));
    for (const address of await this.addresses.held()) if (!owned.has(address)) await this.addresses.release(address);
    return { reopened, released };
  }

  private async addressOf(sessionId: string, dir: string): Promise<string> {
    const stored = await this.storedAddress(dir);
    if (stored) {
      await this.addresses.hold(stored);
      return stored;
    }
    const address = await this.addresses.allocate();
    await writeFile(join(dir, 'state.json'), `${JSON.stringify({ sessionId, gatewayAddress: address }, null, 2)}\n`);
    return address;
  }

  private async storedAddress(dir: string): Promise<string | undefined> {
    if (!existsSync(join(dir, 'state.json'))) return undefined;
    const state = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as { gatewayAddress?: unknown };
    return typeof state.gatewayAddress === 'string' ? state.gatewayAddress : undefined;
  }
}
