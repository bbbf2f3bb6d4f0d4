#!/bin/sh
# Builds the in-sandbox agent when a C compiler is there (`npm run build` calls this);
# without one it says how to get it, and keeps an agent built earlier.
set -eu
cd "$(dirname "$0")"
if command -v make >/dev/null 2>&1 && command -v "${CC:-gcc}" >/dev/null 2>&1; then
  exec make -s
fi
if [ -x ../dist/agent/airlock-agent ]; then
  echo "agent: no gcc/make here; keeping the agent built earlier (../dist/agent/airlock-agent)" >&2
else
  echo "agent: not built: install gcc, make and libc6-dev (scripts/setup.sh does), then run npm run build" >&2
fi
