#!/usr/bin/env bash
# Prepares a fresh machine for deltalog's main job and test suite. Idempotent: each step
# runs only when what it installs is missing or out of date.
#   .venv/            Python virtualenv with deltalog installed editable, all extras
#   redis-server      Debian package (for the Redis commit lock tests)
#   .tools/           npm packages (Azurite, the Azure Blob emulator)
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '[setup] %s\n' "$*" >&2; }

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi

stamp=.venv/.deltalog-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  say "installing deltalog[dev] and its test dependencies into .venv (first run takes a few minutes)"
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev]"
  touch "$stamp"
fi

apt_install() {
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  say "installing Debian packages: $*"
  $sudo apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

if ! command -v redis-server >/dev/null 2>&1; then
  apt_install redis-server
fi

if ! command -v java >/dev/null 2>&1; then
  apt_install openjdk-17-jre-headless
fi

if [ ! -x .tools/node_modules/.bin/azurite-blob ]; then
  if ! command -v npm >/dev/null 2>&1; then
    apt_install nodejs npm
  fi
  say "installing Azurite (npm) into .tools/"
  mkdir -p .tools
  npm install --silent --no-audit --no-fund --prefix .tools azurite >/dev/null
fi
say "ready"
