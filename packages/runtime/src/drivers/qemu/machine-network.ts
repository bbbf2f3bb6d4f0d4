/**
 * The network of a networked microVM: the gVisor driver's namespace, veth
 * and host firewall (gvisor/sandbox-network.ts, the same egress gateway
 * rules), plus a bridge inside the namespace joining the veth's sandbox end
 * to the tap device QEMU opens:
 *
 *   guest eth0 X/p ── tap ─┐ br0 (netns)       host netns
 *                          └ eth0 (no address) ── veth ── alk…  G/32, route X/32
 *
 * The guest owns the sandbox address X (its init sets it, or `readdressGuest`
 * after a restore into a new namespace); the namespace itself keeps none, so
 * the host sees the guest's own frames on the veth and the firewall matches
 * them by interface and source address exactly as for gVisor.
 */
import type { SandboxNetwork } from '../../core/sandbox-driver.js';
import { hostCommand } from '../../host/host-commands.js';
import { SandboxNetworks } from '../gvisor/sandbox-network.js';

/** The tap device QEMU opens inside the sandbox's namespace. */
export const TAP_NAME = 'tap0';

/** A VM's namespace once it is set up. */
export interface MachineNetworkAttachment {
  netnsPath: string;
  address: string;
  prefixLength: number;
  gateway: string;
}

/** Creates and removes the namespaces of one microVM driver instance. */
export class MachineNetworks {
  private readonly namespaces: SandboxNetworks;

  constructor(stateRoot: string) {
    this.namespaces = new SandboxNetworks(stateRoot);
  }

  /** Namespace, veth, firewall elements, then the bridge and the tap. */
  async create(sandboxId: string, network: SandboxNetwork): Promise<MachineNetworkAttachment> {
    const attachment = await this.namespaces.create(sandboxId, network);
    const ns = this.namespaces.netnsName(sandboxId);
    try {
      const ip = (...args: string[]): Promise<string> => hostCommand('ip', ['-n', ns, ...args]);
      // The address moves into the guest; the namespace only switches frames.
      await ip('route', 'flush', 'dev', 'eth0');
      await ip('addr', 'flush', 'dev', 'eth0');
      await ip('link', 'add', 'br0', 'type', 'bridge');
      await ip('link', 'set', 'eth0', 'master', 'br0');
      await ip('tuntap', 'add', 'dev', TAP_NAME, 'mode', 'tap');
      await ip('link', 'set', TAP_NAME, 'master', 'br0');
      for (const link of ['eth0', TAP_NAME, 'br0']) await ip('link', 'set', link, 'up');
    } catch (error) {
      await this.remove(sandboxId);
      throw error;
    }
    return { netnsPath: attachment.netnsPath, address: attachment.sandboxAddress, prefixLength: network.prefixLength, gateway: network.gatewayAddress };
  }

  /** Removes everything `create` made; idempotent. */
  async remove(sandboxId: string): Promise<void> {
    await this.namespaces.remove(sandboxId);
  }

  /** Sandbox ids of this driver instance that have a namespace. */
  async list(): Promise<string[]> {
    return this.namespaces.list();
  }

  /** Removes firewall elements whose interface is gone (after a crash). */
  async pruneFirewall(): Promise<void> {
    await this.namespaces.pruneFirewall();
  }
}

/** A shell script, run in the guest by the toolbox busybox, that moves eth0 to a new address and gateway. */
export function readdressScript(attachment: MachineNetworkAttachment): string {
  return [
    'B=/.airlock/bin/busybox',
    '$B ip addr flush dev eth0',
    `$B ip addr add ${attachment.address}/${attachment.prefixLength} dev eth0`,
    '$B ip link set eth0 up',
    `$B ip route replace default via ${attachment.gateway} dev eth0`,
    // The gateway's MAC changed with the namespace: forget the old one at once.
    '$B ip neigh flush dev eth0',
  ].join(' && ');
}
