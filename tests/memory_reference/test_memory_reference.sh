#!/usr/bin/env bash
# Opt-in: the project's memory beside Megatron-LM's and DeepSpeed's own
# estimators (memory_reference.py).  Skipped (77) unless
# PX_MEMORY_REFERENCE=1 and the scratch venv from setup_venv.sh exists.
set -u
PLAN="$1"
VENV="${PX_MEMREF_VENV:-$HOME/.cache/parallax/memref}"
ROOT="${PARALLAX_SOURCE_ROOT:-.}"
if [ "${PX_MEMORY_REFERENCE:-0}" != 1 ]; then
  echo "skipped: set PX_MEMORY_REFERENCE=1 (and run tests/memory_reference/setup_venv.sh)"; exit 77
fi
if [ ! -x "$VENV/bin/python" ] || [ ! -f "$VENV/src/megatron/training/theoretical_memory_usage.py" ] \
   || [ ! -d "$VENV/src/deepspeed/deepspeed" ]; then
  echo "skipped: no reference venv at $VENV (tests/memory_reference/setup_venv.sh)"; exit 77
fi
exec "$VENV/bin/python" "$ROOT/tests/memory_reference/memory_reference.py" "$PLAN" "$ROOT" "$VENV"
