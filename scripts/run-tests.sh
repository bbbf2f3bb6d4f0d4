#!/usr/bin/env bash
# Runs every compiled test file: unit tests first, then the ones against the
# real gVisor driver, server and CLI, then the slow tier (microVMs under
# software emulation, test/microvm/). One `node --test` run, so one summary.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t unit < <(find packages/*/dist/test -path '*/unit/*' -name '*.test.js' | sort)
mapfile -t real < <(find packages/*/dist/test -name '*.test.js' -not -path '*/unit/*' -not -path '*/microvm/*' | sort)
mapfile -t slow < <(find packages/*/dist/test -path '*/microvm/*' -name '*.test.js' | sort)
exec node --test --test-concurrency=1 "${unit[@]}" "${real[@]}" "${slow[@]}"
