#!/usr/bin/env bash
# Fetches the guest kernel of the microvm driver: Debian's cloud kernel,
# downloaded with `apt-get download` (never installed on the host), unpacked
# with dpkg-deb into $AIRLOCK_CACHE_DIR/microvm-kernel (default
# /var/cache/airlock/microvm-kernel):
#   vmlinux       the uncompressed kernel (QEMU boots it directly through its
#                 PVH entry, ~0.4 s faster under emulation than vmlinuz)
#   modules/*.ko  the virtio, overlay and failover modules the guest loads
#   kernel.json   package, version, release and the sha256 of vmlinux
# Idempotent: a second run with the same package version only checks.
set -euo pipefail
cache="${AIRLOCK_CACHE_DIR:-/var/cache/airlock}"
target="$cache/microvm-kernel"
modules=(virtio_ring virtio virtio_mmio virtio_blk virtio_console failover net_failover virtio_net overlay)

# The versioned image package the bookworm meta package points at (not backports: its modules are xz-compressed
# and its kernel is untested here).
package=$(apt-cache depends --no-recommends --no-suggests linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9].*-cloud-amd64$/ {print $2; exit}')
if [ -z "$package" ]; then
  echo "fetch-microvm-kernel: apt knows no linux-image-cloud-amd64; run apt-get update" >&2
  exit 1
fi
version=$(apt-cache policy "$package" | awk '/Candidate:/ {print $2}')
if [ -f "$target/kernel.json" ] && grep -q "\"version\": \"$version\"" "$target/kernel.json" && [ -f "$target/vmlinux" ]; then
  echo "fetch-microvm-kernel: $package $version already in $target" >&2
  exit 0
fi

work=$(mktemp -d /var/tmp/airlock-kernel-XXXXXX)
trap 'rm -rf "$work"' EXIT
( cd "$work" && apt-get download "$package=$version" >/dev/null 2>&1 ) || { echo "fetch-microvm-kernel: apt-get download $package failed" >&2; exit 1; }
dpkg-deb -x "$work"/*.deb "$work/root"
release=$(ls "$work/root/lib/modules")
vmlinuz="$work/root/boot/vmlinuz-$release"
# vmlinuz is a bzImage whose payload is LZ4 (legacy frame, magic 02 21 4c 18): cut it out and unpack it.
offset=$(grep -obUaP '\x02\x21\x4c\x18' "$vmlinuz" | head -1 | cut -d: -f1)
[ -n "$offset" ] || { echo "fetch-microvm-kernel: no LZ4 payload in $vmlinuz" >&2; exit 1; }
tail -c +$((offset + 1)) "$vmlinuz" | lz4 -dc > "$work/vmlinux" 2>/dev/null || true
if ! head -c 4 "$work/vmlinux" | grep -q 'ELF'; then
  echo "fetch-microvm-kernel: unpacking $vmlinuz gave no ELF kernel" >&2
  exit 1
fi

staging="$target.partial-$$"
rm -rf "$staging" && mkdir -p "$staging/modules"
mv "$work/vmlinux" "$staging/vmlinux"
for module in "${modules[@]}"; do
  found=$(find "$work/root/lib/modules/$release" -name "$module.ko" -o -name "$module.ko.xz" | head -1)
  [ -n "$found" ] || { echo "fetch-microvm-kernel: module $module missing from $package" >&2; exit 1; }
  case "$found" in
    *.xz) xz -dc "$found" > "$staging/modules/$module.ko" ;;
    *) cp "$found" "$staging/modules/$module.ko" ;;
  esac
done
digest=$(sha256sum "$staging/vmlinux" | cut -d' ' -f1)
cat > "$staging/kernel.json" <<JSON
{ "package": "$package", "version": "$version", "release": "$release", "vmlinuxSha256": "$digest" }
JSON
rm -rf "$target" && mv "$staging" "$target"
echo "fetch-microvm-kernel: $package $version ($release) in $target" >&2
