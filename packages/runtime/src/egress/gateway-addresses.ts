/**
 * The host addresses the gateway listens on: one IPv4 address per networked
 * session, held by an "anchor" veth pair of this installation (the kernel of
 * these hosts has no dummy interface module), so the gateway can listen even
 * while no sandbox of the session exists. The driver puts the same address
 * on each sandbox's veth (see drivers/gvisor/sandbox-network.ts).
 */
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { AirlockError } from '../core/errors.js';
import { hostCommand, hostCommandQuiet } from '../host/host-commands.js';

/** Allocates and holds gateway addresses from a pool. */
export class GatewayAddresses {
  /** anchor interface of this installation */
  readonly anchor: string;

  constructor(installationRoot: string, private readonly pool: { first: number; last: number }) {
    this.anchor = `algw${createHash('sha256').update(installationRoot).digest('hex').slice(0, 6)}`;
  }

  /** A free pool address, added to the anchor. */
  async allocate(): Promise<string> {
    await this.ensureAnchor();
    const used = await localAddresses();
    const span = this.pool.last - this.pool.first + 1;
    const start = Math.floor(Math.random() * span);
    for (let i = 0; i < span; i++) {
      const candidate = toAddress(this.pool.first + ((start + i) % span));
      if (used.has(candidate)) continue;
      await this.hold(candidate);
      return candidate;
    }
    throw new AirlockError('INTERNAL', 'no free gateway address left in the egress subnet; terminate sessions or widen it');
  }

  /** Makes sure `address` is on the anchor (after a restart of the host, or of the server). */
  async hold(address: string): Promise<void> {
    await this.ensureAnchor();
    const current = await hostCommand('ip', ['-4', '-o', 'addr', 'show', 'dev', this.anchor]);
    if (current.includes(` ${address}/32 `)) return;
    await hostCommand('ip', ['addr', 'add', `${address}/32`, 'dev', this.anchor]);
  }

  /** Removes `address` from the anchor (idempotent); the anchor itself goes with its last address. */
  async release(address: string): Promise<void> {
    await hostCommandQuiet('ip', ['addr', 'del', `${address}/32`, 'dev', this.anchor]);
    if ((await this.held()).length === 0) await hostCommandQuiet('ip', ['link', 'del', this.anchor]);
  }

  /** Addresses on the anchor, for reconciliation. */
  async held(): Promise<string[]> {
    const text = (await hostCommandQuiet('ip', ['-4', '-o', 'addr', 'show', 'dev', this.anchor])) ?? '';
    return [...text.matchAll(/inet (\d+\.\d+\.\d+\.\d+)\/32/g)].map((match) => match[1] ?? '');
  }

  private async ensureAnchor(): Promise<void> {
    if ((await hostCommandQuiet('ip', ['link', 'show', this.anchor])) !== undefined) return;
    await hostCommandQuiet('ip', ['link', 'add', this.anchor, 'type', 'veth', 'peer', 'name', `${this.anchor}p`]);
    for (const name of [this.anchor, `${this.anchor}p`]) {
      await writeFile(`/proc/sys/net/ipv6/conf/${name}/disable_ipv6`, '1').catch(() => undefined);
      await hostCommand('ip', ['link', 'set', name, 'up']);
    }
  }
}

/** Parses `a.b.c.d/n` into its first and last usable numbers. */
export function cidrRange(cidr: string): { first: number; last: number; prefixLength: number; base: number } {
  const match = /^(\d+\.\d+\.\d+\.\d+)\/(\d+)$/.exec(cidr);
  if (!match?.[1] || !match[2] || Number(match[2]) > 30) throw new AirlockError('INVALID_ARGUMENTS', `expected an IPv4 CIDR of /30 or wider such as 10.200.0.0/16, got ${cidr}`);
  const prefixLength = Number(match[2]);
  const base = toNumber(match[1]) - (toNumber(match[1]) % 2 ** (32 - prefixLength));
  return { base, first: base + 1, last: base + 2 ** (32 - prefixLength) - 2, prefixLength };
}

/** Dotted quad of a 32-bit number. */
export function toAddress(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join('.');
}

function toNumber(address: string): number {
  return address.split('.').reduce((sum, part) => sum * 256 + Number(part), 0);
}

async function localAddresses(): Promise<Set<string>> {
  const text = await hostCommand('ip', ['-4', '-o', 'addr', 'show']);
  const routes = await hostCommand('ip', ['-4', '-o', 'route', 'show']);
  return new Set([...text.matchAll(/inet (\d+\.\d+\.\d+\.\d+)\//g), ...routes.matchAll(/^(\d+\.\d+\.\d+\.\d+) /gm)].map((match) => match[1] ?? ''));
}
