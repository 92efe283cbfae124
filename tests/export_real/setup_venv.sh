#!/usr/bin/env bash
# Sets up the export_real suite's scratch environment outside the repository
# (default $HOME/.cache/parallax/export_real; PX_EXPORT_REAL_VENV): a Python
# venv with every requirements-<target>.txt of this folder installed (PyPI,
# pinned), and Megatron-LM's source tree at a pinned commit, taken from a
# local clone of NVIDIA/Megatron-LM (MEGATRON_LM_GIT) into $VENV/src/Megatron-LM.
# Nothing here is built or committed; the checkers put the tree on sys.path.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
VENV="${PX_EXPORT_REAL_VENV:-$HOME/.cache/parallax/export_real}"
MEGATRON_COMMIT=$(cat "$here/MEGATRON_LM_COMMIT")
MEGATRON_LM_GIT="${MEGATRON_LM_GIT:-}"
if [ -z "$MEGATRON_LM_GIT" ]; then
  echo "setup_venv.sh: set MEGATRON_LM_GIT to the git directory of a clone of NVIDIA/Megatron-LM" \
       "that has commit $MEGATRON_COMMIT" >&2
  exit 2
fi
case "$VENV" in "$(git -C "$here" rev-parse --show-toplevel 2>/dev/null || echo /nonexistent)"*)
  echo "setup_venv.sh: PX_EXPORT_REAL_VENV=$VENV is inside the repository; choose a scratch path" >&2
  exit 2;; esac
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade "pip==25.3"
for req in "$here"/requirements-*.txt; do
  # Frameworks are installed without their GPU stacks (--no-deps where the
  # file says so in its first line); what each needs is pinned in the file.
  if head -1 "$req" | grep -q "no-deps"; then
    "$VENV/bin/pip" install --no-deps -r "$req"
  else
    "$VENV/bin/pip" install -r "$req"
  fi
done
rm -rf "$VENV/src/Megatron-LM.tmp"
mkdir -p "$VENV/src/Megatron-LM.tmp"
git --git-dir="$MEGATRON_LM_GIT" archive "$MEGATRON_COMMIT" megatron | tar -x -C "$VENV/src/Megatron-LM.tmp"
echo "$MEGATRON_COMMIT" > "$VENV/src/Megatron-LM.tmp/COMMIT"
rm -rf "$VENV/src/Megatron-LM"
mv "$VENV/src/Megatron-LM.tmp" "$VENV/src/Megatron-LM"
echo "export_real venv ready: $VENV (Megatron-LM $MEGATRON_COMMIT)"
