/**
 * The network namespace of one networked sandbox, and the host firewall
 * that makes the egress gateway its only way out.
 *
 *   sandbox netns alk-<tag>-<sandboxId>        host netns
 *     eth0  X/16  default via G   ── veth ──   alk<hash>  G/32, route X/32
 *
 * runsc runs `--network=sandbox` in that netns: gVisor's own TCP/IP stack
 * takes eth0 over (it copies and then strips its addresses, so they are set
 * again before every start or restore). The host filters on its side of the
 * veth (table `inet airlock`): from an `alk*` interface only
 * (interface, sandbox address, gateway address, protocol, port) tuples in the
 * set `gateway` are accepted; everything else is rejected, and nothing from
 * or to an `alk*` interface is ever forwarded. So the host's other addresses,
 * its loopback, the metadata address, other sessions' gateways and other
 * sandboxes are unreachable, and with the gateway down nothing answers at all.
 * See docs/network.md.
 */
import { createHash } from 'node:crypto';
import { readdir, stat, writeFile } from 'node:fs/promises';
import { AirlockError } from '../../core/errors.js';
import type { SandboxNetwork } from '../../core/sandbox-driver.js';
import { hostCommand, hostCommandQuiet } from '../../host/host-commands.js';

/** Where `ip netns` keeps named namespaces. */
export const NETNS_DIR = '/var/run/netns';
/** nft table shared by every Airlock installation on the host (rules are identical; elements are per sandbox). */
export const FIREWALL_TABLE = 'airlock';
/** Host-side veth names start with this; the firewall matches it. */
export const VETH_PREFIX = 'alk';

/**
 * Runs runsc in a private mount namespace with /proc/sys/net hidden. runsc
 * refuses `--network=sandbox` when it thinks it is in the root netns, and it
 * decides that by the presence of /proc/sys/net/core/rmem_default, which
 * every netns has since Linux 6.x. The namespace it gets is ours and private
 * (checked by assertPrivateNetns), so the sanity check it defeats holds anyway.
 * Measured: without this, `runsc run` fails with "cannot run with network
 * enabled in root network namespace"; with it, start, exec, checkpoint and
 * restore all work (docs/network.md).
 */
export const NETSTACK_WRAPPER: readonly string[] = [
  'unshare',
  '--mount',
  '--propagation',
  'private',
  'sh',
  '-c',
  'mount -t tmpfs -o size=4k,ro airlock-netmask /proc/sys/net && exec "$0" "$@"',
];

const FIREWALL = `table inet ${FIREWALL_TABLE} {
  set gateway { type ifname . ipv4_addr . ipv4_addr . inet_proto . inet_service; }
  chain input {
    type filter hook input priority -10; policy accept;
    iifname . ip saddr . ip daddr . meta l4proto . th dport @gateway accept
    iifname "${VETH_PREFIX}*" counter reject with icmpx type admin-prohibited
  }
  chain forward {
    type filter hook forward priority -10; policy accept;
    iifname "${VETH_PREFIX}*" counter reject with icmpx type admin-prohibited
    oifname "${VETH_PREFIX}*" counter drop
  }
}
`;

/** A sandbox's namespace once it is set up. */
export interface SandboxNetworkAttachment {
  netnsPath: string;
  sandboxAddress: string;
  hostInterface: string;
}

/** Creates and removes the per-sandbox namespaces of one driver instance. */
export class SandboxNetworks {
  /** short hash of the driver's state root, so installations sharing a host never touch each other's namespaces */
  private readonly tag: string;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(stateRoot: string) {
    this.tag = createHash('sha256').update(stateRoot).digest('hex').slice(0, 6);
  }

  /** The netns name of a sandbox. */
  netnsName(sandboxId: string): string {
    return `alk-${this.tag}-${sandboxId}`;
  }

  /** The host-side veth of a sandbox (15 characters at most, as Linux requires). */
  hostInterface(sandboxId: string): string {
    return `${VETH_PREFIX}${createHash('sha256').update(`${this.tag}/${sandboxId}`).digest('hex').slice(0, 12)}`;
  }

  /**
   * Creates the namespace, veth, addresses and firewall elements of a sandbox.
   * Serialized: address allocation reads the host's routes.
   */
  create(sandboxId: string, network: SandboxNetwork): Promise<SandboxNetworkAttachment> {
    const run = this.queue.then(() => this.createNow(sandboxId, network));
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Sets the sandbox side's address and routes again (runsc strips them when it takes eth0 over). */
  async readdress(sandboxId: string, network: SandboxNetwork, sandboxAddress: string): Promise<void> {
    const ns = this.netnsName(sandboxId);
    const prefix = poolOf(network).prefixLength;
    await hostCommand('ip', ['-n', ns, 'addr', 'replace', `${sandboxAddress}/${prefix}`, 'dev', 'eth0']);
    await hostCommand('ip', ['-n', ns, 'link', 'set', 'eth0', 'up']);
    await hostCommand('ip', ['-n', ns, 'route', 'replace', 'default', 'via', network.gatewayAddress, 'dev', 'eth0']);
  }

  /** Removes everything `create` made for the sandbox; idempotent. */
  async remove(sandboxId: string): Promise<void> {
    const veth = this.hostInterface(sandboxId);
    await hostCommandQuiet('ip', ['netns', 'del', this.netnsName(sandboxId)]);
    // Deleting the netns deletes the veth pair, but only once nothing holds the namespace.
    await hostCommandQuiet('ip', ['link', 'del', veth]);
    await this.removeElements((element) => element.ifname === veth);
    await this.dropFirewallIfUnused();
  }

  /** Sandbox ids of this driver instance that have a namespace on the host. */
  async list(): Promise<string[]> {
    const prefix = `alk-${this.tag}-`;
    const names = await readdir(NETNS_DIR).catch(() => [] as string[]);
    return names.filter((name) => name.startsWith(prefix)).map((name) => name.slice(prefix.length));
  }

  /** Removes firewall elements whose host interface no longer exists (left by a crash). */
  async pruneFirewall(): Promise<void> {
    const links = new Set(
      ((await hostCommandQuiet('ip', ['-o', 'link', 'show'])) ?? '').split('\n').map((line) => line.split(':')[1]?.trim().split('@')[0] ?? ''),
    );
    await this.removeElements((element) => element.ifname.startsWith(VETH_PREFIX) && !links.has(element.ifname));
  }

  private async createNow(sandboxId: string, network: SandboxNetwork): Promise<SandboxNetworkAttachment> {
    const ns = this.netnsName(sandboxId);
    const veth = this.hostInterface(sandboxId);
    const netnsPath = `${NETNS_DIR}/${ns}`;
    await this.ensureFirewall();
    await this.remove(sandboxId);
    const sandboxAddress = await allocateAddress(network);
    try {
      await hostCommand('ip', ['netns', 'add', ns]);
      await assertPrivateNetns(netnsPath);
      // No IPv6 anywhere on this link: the firewall speaks IPv4 only, and link-local chatter leaks nothing useful.
      await hostCommand('nsenter', [`--net=${netnsPath}`, 'sysctl', '-q', '-w', 'net.ipv6.conf.all.disable_ipv6=1', 'net.ipv6.conf.default.disable_ipv6=1']);
      await hostCommand('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
      await writeFile(`/proc/sys/net/ipv6/conf/${veth}/disable_ipv6`, '1').catch(() => undefined);
      // The gateway address on the veth too: the host then answers ARP for it and sources its own ARP from it.
      await hostCommand('ip', ['addr', 'add', `${network.gatewayAddress}/32`, 'dev', veth]);
      await hostCommand('ip', ['link', 'set', veth, 'up']);
      await hostCommand('ip', ['route', 'add', `${sandboxAddress}/32`, 'dev', veth, 'src', network.gatewayAddress]);
      await hostCommand('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
      await this.readdress(sandboxId, network, sandboxAddress);
      const elements = [
        ...network.gatewayPorts.tcp.map((port) => `"${veth}" . ${sandboxAddress} . ${network.gatewayAddress} . tcp . ${port}`),
        ...network.gatewayPorts.udp.map((port) => `"${veth}" . ${sandboxAddress} . ${network.gatewayAddress} . udp . ${port}`),
      ];
      if (elements.length > 0) {
        const add = () => hostCommand('nft', ['add', 'element', 'inet', FIREWALL_TABLE, 'gateway', `{ ${elements.join(', ')} }`]);
        // Another installation may have dropped the table as unused a moment ago: make it again once.
        await add().catch(async () => {
          await this.ensureFirewall();
          await add();
        });
      }
      return { netnsPath, sandboxAddress, hostInterface: veth };
    } catch (error) {
      await this.remove(sandboxId);
      throw error;
    }
  }

  /** Deletes the shared table when no sandbox of any installation is left on the host. */
  private async dropFirewallIfUnused(): Promise<void> {
    const listing = await hostCommandQuiet('nft', ['-j', 'list', 'set', 'inet', FIREWALL_TABLE, 'gateway']);
    if (!listing || firewallElements(listing).length > 0) return;
    const links = (await hostCommandQuiet('ip', ['-o', 'link', 'show'])) ?? '';
    if (new RegExp(`^\\d+: ${VETH_PREFIX}`, 'm').test(links)) return;
    await hostCommandQuiet('nft', ['delete', 'table', 'inet', FIREWALL_TABLE]);
  }

  private async ensureFirewall(): Promise<void> {
    if ((await hostCommandQuiet('nft', ['list', 'chain', 'inet', FIREWALL_TABLE, 'forward'])) !== undefined) return;
    await hostCommand('nft', ['-f', '-'], { input: FIREWALL });
  }

  private async removeElements(match: (element: FirewallElement) => boolean): Promise<void> {
    const listing = await hostCommandQuiet('nft', ['-j', 'list', 'set', 'inet', FIREWALL_TABLE, 'gateway']);
    if (!listing) return;
    const doomed = firewallElements(listing).filter(match);
    if (doomed.length === 0) return;
    const text = doomed.map((e) => `"${e.ifname}" . ${e.source} . ${e.destination} . ${e.protocol} . ${e.port}`).join(', ');
    await hostCommandQuiet('nft', ['delete', 'element', 'inet', FIREWALL_TABLE, 'gateway', `{ ${text} }`]);
  }
}

/** One element of the `gateway` set. */
interface FirewallElement {
  ifname: string;
  source: string;
  destination: string;
  protocol: string;
  port: number;
}

function firewallElements(json: string): FirewallElement[] {
  const parsed = JSON.parse(json) as { nftables?: { set?: { elem?: unknown[] } }[] };
  const elements: FirewallElement[] = [];
  for (const entry of parsed.nftables ?? []) {
    for (const elem of entry.set?.elem ?? []) {
      const parts = (elem as { concat?: unknown[] }).concat;
      if (!Array.isArray(parts) || parts.length !== 5) continue;
      const [ifname, source, destination, protocol, port] = parts;
      elements.push({ ifname: String(ifname), source: String(source), destination: String(destination), protocol: String(protocol), port: Number(port) });
    }
  }
  return elements;
}

/** Refuses to go on if `path` is the host's own network namespace: runsc would strip the host's addresses. */
async function assertPrivateNetns(path: string): Promise<void> {
  const [target, host] = await Promise.all([stat(path), stat('/proc/self/ns/net')]);
  if (target.ino === host.ino && target.dev === host.dev) {
    throw new AirlockError('DRIVER_FAILED', `${path} is the host's network namespace; refusing to give it to a sandbox`);
  }
}

/** Parsed address pool of a SandboxNetwork. */
function poolOf(network: SandboxNetwork): { first: number; last: number; prefixLength: number } {
  const match = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(network.addressPool);
  if (!match || !match[1] || !match[2])
    throw new AirlockError('INVALID_ARGUMENTS', `network.addressPool must be an IPv4 CIDR such as 10.200.128.0/17, got ${network.addressPool}`);
  const base = toNumber(match[1]);
  const bits = Number(match[2]);
  const size = 2 ** (32 - bits);
  return { first: base + 1, last: base + size - 2, prefixLength: network.prefixLength };
}

/** A pool address that no host route uses yet, starting at a random place to make cross-process races rare. */
async function allocateAddress(network: SandboxNetwork): Promise<string> {
  const { first, last } = poolOf(network);
  const used = new Set(
    (await hostCommand('ip', ['-4', '-o', 'route', 'show']))
      .split('\n')
      .map((line) => line.split(' ')[0]?.replace(/\/32$/, '') ?? '')
      .filter((address) => /^\d+\.\d+\.\d+\.\d+$/.test(address)),
  );
  used.add(network.gatewayAddress);
  const span = last - first + 1;
  const start = Math.floor(Math.random() * span);
  for (let i = 0; i < span; i++) {
    const candidate = toAddress(first + ((start + i) % span));
    if (!used.has(candidate)) return candidate;
  }
  throw new AirlockError('DRIVER_FAILED', `no free sandbox address left in ${network.addressPool}; terminate sessions or widen the egress subnet`);
}

function toNumber(address: string): number {
  return address.split('.').reduce((sum, part) => sum * 256 + Number(part), 0);
}

function toAddress(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}
