#!/usr/bin/env bash
# Sets up the memory reference suite's scratch environment outside the
# repository (default $HOME/.cache/parallax/memref): a Python venv, DeepSpeed's
# pinned source release (unpacked, not built: its estimator functions are
# plain arithmetic and are called without torch) and Megatron-LM's
# megatron/training/theoretical_memory_usage.py at a pinned commit, taken
# from a local clone of NVIDIA/Megatron-LM (MEGATRON_LM_GIT).
set -euo pipefail
VENV="${PX_MEMREF_VENV:-$HOME/.cache/parallax/memref}"
DEEPSPEED_VERSION=0.19.8
MEGATRON_COMMIT=d98e8a64ddf34856e74b24714e3bedb2f5a39553
MEGATRON_LM_GIT="${MEGATRON_LM_GIT:-}"
if [ -z "$MEGATRON_LM_GIT" ]; then
  echo "setup_venv.sh: set MEGATRON_LM_GIT to the git directory of a clone of NVIDIA/Megatron-LM" \
       "that has commit $MEGATRON_COMMIT" >&2
  exit 2
fi
case "$VENV" in "$(git rev-parse --show-toplevel 2>/dev/null || echo /nonexistent)"*)
  echo "setup_venv.sh: PX_MEMREF_VENV=$VENV is inside the repository; choose a scratch path" >&2
  exit 2;; esac
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
mkdir -p "$VENV/dl" "$VENV/src/megatron/training"
if [ ! -d "$VENV/dl/deepspeed-$DEEPSPEED_VERSION" ]; then
  "$VENV/bin/pip" download "deepspeed==$DEEPSPEED_VERSION" --no-deps --no-binary :all: -d "$VENV/dl"
  tar xzf "$VENV/dl/deepspeed-$DEEPSPEED_VERSION.tar.gz" -C "$VENV/dl"
fi
ln -sfn "$VENV/dl/deepspeed-$DEEPSPEED_VERSION" "$VENV/src/deepspeed"
git --git-dir="$MEGATRON_LM_GIT" show \
  "$MEGATRON_COMMIT:megatron/training/theoretical_memory_usage.py" \
  > "$VENV/src/megatron/training/theoretical_memory_usage.py"
echo "$MEGATRON_COMMIT" > "$VENV/src/megatron/COMMIT"
echo "memref venv ready: $VENV (deepspeed $DEEPSPEED_VERSION source, Megatron-LM $MEGATRON_COMMIT)"
