/**
 * The host's CPU architecture in OCI/Go spelling, which image configs and
 * indexes use (Node says `x64` where they say `amd64`).
 */

const OCI_ARCHITECTURES: Record<string, string> = { x64: 'amd64', ia32: '386', arm64: 'arm64', arm: 'arm', ppc64: 'ppc64le', s390x: 's390x', riscv64: 'riscv64' };

/** The OCI name of this host's CPU architecture (`amd64`, `arm64`, ...). */
export function hostArchitecture(): string {
  return OCI_ARCHITECTURES[process.arch] ?? process.arch;
}
