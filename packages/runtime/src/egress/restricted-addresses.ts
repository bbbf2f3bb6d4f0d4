/**
 * Addresses the gateway never connects to on a sandbox's behalf unless the
 * operator named them: loopback, private and link-local ranges (the cloud
 * metadata address 169.254.169.254 among them), carrier-grade NAT,
 * multicast and reserved space. A public name that resolves into them (DNS
 * rebinding) is refused like a direct attempt.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { networkInterfaces } from 'node:os';

const restricted = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  restricted.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['64:ff9b::', 96],
] as const) {
  restricted.addSubnet(network, prefix, 'ipv6');
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addSubnet('0.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');
loopback.addAddress('::', 'ipv6');

/** True when `address` lies in a range the gateway refuses by default. */
export function isRestrictedAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return isRestrictedAddress(mapped);
  if (isIPv4(address)) return restricted.check(address, 'ipv4');
  if (isIPv6(address)) return restricted.check(address, 'ipv6');
  return true;
}

/**
 * True for the host's own addresses (loopback, unspecified, and every address of its interfaces,
 * the gateways' own included), which nothing may ever name: a contract listing one would give the
 * sandbox the host's services (sshd, the API on 0.0.0.0) through the gateway.
 */
export function isLoopbackAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return isLoopbackAddress(mapped);
  if (isIPv4(address)) return loopback.check(address, 'ipv4') || hostAddresses().has(address);
  if (isIPv6(address)) return loopback.check(address, 'ipv6') || hostAddresses().has(address.toLowerCase().replace(/%.*$/, ''));
  return true;
}

let known: { addresses: Set<string>; readAt: number } | undefined;

/** The addresses of the host's interfaces, re-read at most once a second (interfaces come and go with sandboxes). */
function hostAddresses(): Set<string> {
  const now = Date.now();
  if (known && now - known.readAt < 1000) return known.addresses;
  const addresses = new Set<string>();
  for (const entries of Object.values(networkInterfaces())) {
    for (const entry of entries ?? []) addresses.add(entry.address.toLowerCase().replace(/%.*$/, ''));
  }
  known = { addresses, readAt: now };
  return addresses;
}
