#!/bin/sh
# pip install . (the repository) into a temporary venv, then runs
# test_parallax.py with that venv's Python against build/plan.
# Needs a Python with meson-python (Debian 12: python3-mesonpy, installed by
# scripts/setup) and venv; a machine without them fails with the reason.
set -u
abspath() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
PLAN=$(abspath "$1")
TEST=$(abspath "$2")
S="${PARALLAX_SOURCE_ROOT:?}"
B="${PARALLAX_BUILD_ROOT:?}"
py=""
for p in "${PX_PYTHON:-}" /usr/bin/python3 python3; do
  [ -n "$p" ] || continue
  if "$p" -c 'import mesonpy, venv, ensurepip' >/dev/null 2>&1; then py=$p; break; fi
done
if [ -z "$py" ]; then
  echo "no Python with meson-python and venv: scripts/setup installs python3-mesonpy and python3-venv"
  exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m venv --system-site-packages "$tmp/venv" || { echo "venv failed"; exit 1; }
# --no-build-isolation --no-index: nothing is downloaded; builddir: the
# package's meson build directory lives beside the tools' (incremental).
if ! "$tmp/venv/bin/python" -m pip install --quiet --no-build-isolation --no-index --no-deps \
    --config-settings=builddir="$B/python-package" "$S" >"$tmp/pip.log" 2>&1; then
  cat "$tmp/pip.log"
  echo "pip install . failed"
  exit 1
fi
# run from the temporary directory: `import parallax` must find the
# installed package, not the source tree's python/
cd "$tmp" && exec "$tmp/venv/bin/python" "$TEST" "$PLAN" "$S"
