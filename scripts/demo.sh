#!/usr/bin/env bash
# Sets everything up (scripts/setup.sh), then runs `browy demo`: real Chromium with the extension,
# the native host and the daemon, a local demo shop, and one agent turn streamed in this terminal
# (the scripted model by default: no API key needed). Extra arguments go to `browy demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/browy demo "$@"
