#!/usr/bin/env bash
# Sets everything up, then runs the default test suite (benchmarks are not part of it).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
if [ -d extension ] && ls extension/tests/*.test.mjs >/dev/null 2>&1; then
  node --test extension/tests/
fi
exec .venv/bin/python -m pytest "$@"
