#!/usr/bin/env bash
# Installs what Airlock needs on a Debian 12 host, builds it, and builds the
# default image. Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# runsc 20240729 (overlay2 on a host dir, uncompressed checkpoints) is in bookworm-backports;
# bookworm's own 2022 build lacks both.
need_apt=0
# nft, ip, unshare, nsenter and openssl: the egress gateway (per-session netns, firewall, session CAs).
# gcc, make and libc6-dev: the in-sandbox agent (packages/runtime/agent) is built here from source, static.
# strace: the shell analysis' differential test traces what dash runs.
for tool in runsc debootstrap busybox nft ip mkfs.ext4 openssl unshare nsenter gcc make strace; do command -v "$tool" >/dev/null 2>&1 || need_apt=1; done
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || [ -f /usr/lib/aarch64-linux-gnu/libc.a ] || need_apt=1
[ -x /bin/busybox ] && file_is_static=$( (ldd /bin/busybox 2>&1 || true) | grep -c "not a dynamic" ) || file_is_static=0
[ "$file_is_static" -ge 1 ] || need_apt=1
if [ "$need_apt" -eq 1 ]; then
  echo "setup: installing runsc (bookworm-backports), debootstrap, busybox-static, nftables, iproute2, openssl, gcc" >&2
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    if ! grep -q 'bookworm-backports' /etc/apt/sources.list.d/debian.sources; then
      as_root sed -i -E '0,/^Suites: bookworm( |$)/s//Suites: bookworm bookworm-backports\1/' /etc/apt/sources.list.d/debian.sources
    fi
  fi
  if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    # The mirror this machine's apt already uses (a one-line sources.list); Airlock names none of its own.
    mirror=$(sed -n -E 's/^deb +(\[[^]]*\] +)?([^ ]+) +bookworm +.*/\2/p' /etc/apt/sources.list 2>/dev/null | head -n1)
    if [ -z "$mirror" ]; then
      echo "setup: no Debian mirror found in /etc/apt sources; add bookworm-backports to apt's sources yourself, then rerun" >&2
      exit 1
    fi
    echo "deb $mirror bookworm-backports main" | as_root tee /etc/apt/sources.list.d/bookworm-backports.list >/dev/null
  fi
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports runsc >/dev/null
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap busybox-static nftables iproute2 e2fsprogs openssl util-linux gcc make libc6-dev strace >/dev/null
fi
runsc --version | sed -n 1p >&2

# Chromium: only the web console's browser tests (packages/console/test) and its bench drive it,
# headless through playwright-core, which never downloads a browser of its own.
if ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing chromium (for the console's browser tests)" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# The microvm sandbox driver (\`sandbox: microvm\`): QEMU's microvm machine, gcc and libc6-dev to build its
# static guest agent, lz4 to unpack the guest kernel; Debian's cloud kernel is downloaded (never installed)
# into the cache by fetch-microvm-kernel.sh.
if ! command -v qemu-system-x86_64 >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1 || ! command -v lz4 >/dev/null 2>&1 || [ ! -f /usr/lib/x86_64-linux-gnu/libc.a ]; then
  echo "setup: installing qemu-system-x86, gcc, libc6-dev, lz4 (for microvm sessions)" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-system-x86 gcc libc6-dev lz4 >/dev/null
fi
as_root bash scripts/fetch-microvm-kernel.sh

# Prometheus: the metrics suite scrapes a real `airlock serve` with Debian's prometheus.
# Only the binaries are used; the packaged service is not started.
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  echo "setup: installing prometheus (for the metrics tests)" >&2
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  # Where systemd runs, the package starts its own service on :9090; the tests start theirs on a port of their own.
  if command -v systemctl >/dev/null 2>&1; then as_root systemctl disable --now prometheus >/dev/null 2>&1 || true; fi
fi

if [ ! -d node_modules/better-sqlite3/build ] || [ ! -d node_modules/fastify ]; then
  echo "setup: npm install (builds better-sqlite3 from source, ~1-2 min)" >&2
  npm install --no-audit --no-fund --loglevel=error
fi
echo "setup: building (TypeScript, the console, the in-sandbox agent)" >&2
npm run --silent build
[ -x packages/runtime/dist/agent/airlock-agent ] || { echo "setup: the in-sandbox agent was not built; see the message above" >&2; exit 1; }

if ! npx --no-install airlock images ls --json 2>/dev/null | grep -q '"name": "debian-bookworm"'; then
  echo "setup: building the default image debian-bookworm (debootstrap, ~90 s the first time, cached after)" >&2
  npx --no-install airlock images build
fi
echo "setup: done. Start the server with: npx airlock serve" >&2
