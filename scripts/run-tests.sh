#!/usr/bin/env bash
# Runs every compiled test file in phases, in this order: unit tests (fake
# driver, in-process), conformance suites (the Store suite on SQLite and
# PostgreSQL, the driver suite on gVisor), end-to-end suites (a real server
# process, gVisor and the CLI), then the slow tier (microVMs under software
# emulation, test/microvm/). `node --test` sorts the files it is given, so
# each phase is its own run. With AIRLOCK_TEST_POSTGRES_URL set, a last
# phase runs the lifecycle, policy, fork and audit suites again with their
# servers on PostgreSQL. Every phase runs; the exit code says whether all
# passed.
set -uo pipefail
cd "$(dirname "$0")/.."

mapfile -t unit < <(find packages/*/dist/test -path '*/unit/*' -name '*.test.js' | sort)
mapfile -t conformance < <( (find packages/*/dist/test/conformance -name '*.test.js' 2>/dev/null; ls packages/runtime/dist/test/integration/gvisor-driver.test.js) | sort)
mapfile -t e2e < <(find packages/*/dist/test -name '*.test.js' -not -path '*/unit/*' -not -path '*/conformance/*' -not -path '*/microvm/*' -not -name 'gvisor-driver.test.js' | sort)
mapfile -t slow < <(find packages/*/dist/test -path '*/microvm/*' -name '*.test.js' | sort)
both_stores=(
  packages/cli/dist/test/e2e/session-lifecycle.test.js
  packages/cli/dist/test/e2e/airlock-policy.test.js
  packages/cli/dist/test/e2e/fork.test.js
  packages/cli/dist/test/e2e/audit-tampering.test.js
)

failed=()
phase() {
  local name=$1
  shift
  echo "=== tests: ${name} ($# files)" >&2
  if ! node --test --test-concurrency=1 "$@"; then failed+=("$name"); fi
}

phase unit "${unit[@]}"
phase conformance "${conformance[@]}"
phase end-to-end "${e2e[@]}"
phase "microVM (slow)" "${slow[@]}"
if [ -n "${AIRLOCK_TEST_POSTGRES_URL:-}" ]; then
  AIRLOCK_TEST_STORE=postgres phase "end-to-end on PostgreSQL" "${both_stores[@]}"
else
  echo "=== tests: end-to-end on PostgreSQL skipped: set AIRLOCK_TEST_POSTGRES_URL (scripts/postgres-test-cluster.sh start DIR prints it)" >&2
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "=== tests failed in: ${failed[*]}" >&2
  exit 1
fi
echo "=== tests: every phase passed" >&2
