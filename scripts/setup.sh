#!/usr/bin/env bash
# Installs everything Browy needs on a fresh Debian machine: Chromium from Debian's packages (and
# zsh and fish, whose completion scripts the tests run), a virtual environment in .venv with the
# project and its test extras. Idempotent; safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
[ -x /usr/lib/chromium/chromium ] || missing+=(chromium)
command -v zsh >/dev/null || missing+=(zsh)
command -v fish >/dev/null || missing+=(fish)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "setup: ${missing[*]} missing; run: sudo apt-get install -y ${missing[*]}" >&2
  fi
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# pip's 'Location ... is ignored' lines are noise from this machine's pip config.
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v 'is ignored' || true
# editable_mode=compat: a plain path entry in a .pth file. The default editable mode installs an
# import hook that every Python start loads (~10 ms of pathlib/importlib.util), and the relay
# Chrome starts is a Python start (its cold start is a benchmark, bench/bench_relay.py).
# setuptools calls compat mode transitional: if a future one refuses it, the default mode does.
pip_log=$(mktemp)
if ! .venv/bin/python -m pip install -q -e '.[test]' --config-settings editable_mode=compat \
    >"$pip_log" 2>&1; then
  grep -v 'is ignored' "$pip_log" | tail -5 || true
  echo "setup: compat editable install refused; using the default editable mode" >&2
  .venv/bin/python -m pip install -q -e '.[test]' 2>&1 | grep -v 'is ignored' || true
fi
rm -f "$pip_log"
.venv/bin/python -c 'import messages, actors, supervisors, nativehost, pykka, openai, aiohttp, re2, mcp, tomlkit, copilot'
