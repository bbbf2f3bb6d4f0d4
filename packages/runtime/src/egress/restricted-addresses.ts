/**
 * Addresses the gateway never connects to on a sandbox's behalf unless the
 * operator named them: loopback, private and link-local ranges (the cloud
 * metadata address 169.254.169.254 among them), carrier-grade NAT,
 * multicast and reserved space. A public name that resolves into them (DNS
 * rebinding) is refused like a direct attempt.
 */
import { BlockList, isIPv4, isIPv6 } from 'node:net';

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

/** True for the host's own loopback and unspecified addresses, which nothing may ever name. */
export function isLoopbackAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped) return isLoopbackAddress(mapped);
  if (isIPv4(address)) return loopback.check(address, 'ipv4');
  if (isIPv6(address)) return loopback.check(address, 'ipv6');
  return true;
}
