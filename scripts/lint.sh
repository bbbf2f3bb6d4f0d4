#!/usr/bin/env bash
# `npm run lint`: types (tsc), ESLint over the whole repository (rules and import
# boundaries: eslint.config.js), then Prettier on the files in scripts/formatted-files.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
npx tsc -b
npx eslint --max-warnings 0 .
mapfile -t formatted < <(grep -v '^#' scripts/formatted-files.txt | grep -v '^$')
npx prettier --check "${formatted[@]}"
