#!/usr/bin/env bash
# Runs every compiled test file in phases, in this order: unit tests (fake
# driver, in-process), conformance suites (the Store suite on SQLite and
# PostgreSQL, the driver suite on gVisor), end-to-end suites (a real server
# process, gVisor and the CLI), then the slow tier (microVMs under software
# emulation, test/microvm/). `node --test` sorts the files it is given, so
# each phase is its own run. With AIRLOCK_TEST_POSTGRES_URL set, a last
# phase runs the lifecycle, policy, fork and audit suites again with their
# servers on PostgreSQL, and the cluster suites (test/cluster/: three nodes
# on one database and one bucket) run. Every phase runs; the exit code says
# whether all passed.
set -uo pipefail
cd "$(dirname "$0")/.."

mapfile -t unit < <(find packages/*/dist/test -path '*/unit/*' -name '*.test.js' | sort)
mapfile -t conformance < <( (find packages/*/dist/test/conformance -name '*.test.js' 2>/dev/null; ls packages/runtime/dist/test/integration/gvisor-driver.test.js) | sort)
mapfile -t e2e < <(find packages/*/dist/test -name '*.test.js' -not -path '*/unit/*' -not -path '*/conformance/*' -not -path '*/microvm/*' -not -path 'packages/cli/dist/test/cluster/*' -not -name 'gvisor-driver.test.js' | sort)
mapfile -t cluster < <(find packages/cli/dist/test/cluster -name '*.test.js' | sort)
mapfile -t slow < <(find packages/*/dist/test -path '*/microvm/*' -name '*.test.js' | sort)
both_stores=(
  packages/cli/dist/test/e2e/session-lifecycle.test.js
  packages/cli/dist/test/e2e/airlock-policy.test.js
  packages/cli/dist/test/e2e/fork.test.js
  packages/cli/dist/test/e2e/audit-tampering.test.js
)

failed=()
logs=$(mktemp -d /var/tmp/airlock-test-logs-XXXXXX)
phase() {
  local name=$1
  shift
  local began=$SECONDS log
  log="$logs/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '-').tap"
  echo "=== tests: ${name} ($# files)" >&2
  if ! node --test --test-concurrency=1 "$@" | tee "$log"; then failed+=("$name"); fi
  echo "=== tests: ${name} took $((SECONDS - began)) s" >&2
}

# The failures again at the very end, with their errors, so that a log's tail says what broke.
summarize_failures() {
  for log in "$logs"/*.tap; do
    grep '^ *not ok' "$log" | grep -qv '# TODO' || continue
    echo "=== failures in $(basename "$log" .tap):" >&2
    # Each failure's block (todo tests are expected to fail and left out), without stack frames.
    awk '/^ *not ok/ { show = ($0 !~ /# TODO/); n = 0 } /^ *ok / { show = 0 } show && n < 17 { print; n++ }' "$log" | grep -v -E '^ *(duration_ms|type|failureType|stack|\.\.\.|---)|^ +(async |[A-Za-z.<>]+ \(file:|process\.|node:)' | cut -c1-400 | head -n 200 >&2
  done
}

phase unit "${unit[@]}"
phase conformance "${conformance[@]}"
if [ -n "${AIRLOCK_TEST_IMAGES_BUILDER_PID:-}" ]; then
  # .ci/run builds the test images in the background; a failed build shows up as the tests' own build.
  echo "=== tests: waiting for the test images being built in the background" >&2
  while kill -0 "$AIRLOCK_TEST_IMAGES_BUILDER_PID" 2>/dev/null; do sleep 2; done
fi
phase end-to-end "${e2e[@]}"
phase "microVM (slow)" "${slow[@]}"
if [ -n "${AIRLOCK_TEST_POSTGRES_URL:-}" ]; then
  AIRLOCK_TEST_STORE=postgres phase "end-to-end on PostgreSQL" "${both_stores[@]}"
  phase "cluster (three nodes on PostgreSQL and object storage)" "${cluster[@]}"
else
  echo "=== tests: end-to-end on PostgreSQL and the cluster suites skipped: set AIRLOCK_TEST_POSTGRES_URL (scripts/postgres-test-cluster.sh start DIR prints it)" >&2
fi

if [ ${#failed[@]} -gt 0 ]; then
  summarize_failures
  rm -rf "$logs"
  echo "=== tests failed in: ${failed[*]}" >&2
  exit 1
fi
rm -rf "$logs"
echo "=== tests: every phase passed" >&2
