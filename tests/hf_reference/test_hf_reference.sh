#!/usr/bin/env bash
# Opt-in: the executor's first step beside Hugging Face transformers
# (hf_reference.py).  Skipped (77) unless PX_HF_REFERENCE=1, the scratch venv
# from setup_venv.sh exists and mpirun is there (the split layouts).
set -u
BUILD="$1"
VENV="${PX_HFREF_VENV:-$HOME/.cache/parallax/hfref}"
ROOT="${PARALLAX_SOURCE_ROOT:-.}"
if [ "${PX_HF_REFERENCE:-0}" != 1 ]; then
  echo "skipped: set PX_HF_REFERENCE=1 (and run tests/hf_reference/setup_venv.sh)"; exit 77
fi
if ! "$VENV/bin/python" -c "import torch, transformers" 2>/dev/null; then
  echo "skipped: no torch + transformers venv at $VENV (tests/hf_reference/setup_venv.sh)"; exit 77
fi
command -v mpirun >/dev/null || { echo "skipped: no mpirun"; exit 77; }
exec "$VENV/bin/python" "$ROOT/tests/hf_reference/hf_reference.py" "$BUILD" \
  --markdown "$BUILD/hf_reference.md"
