#!/usr/bin/env bash
# Sets up the Hugging Face reference suite's scratch environment outside the
# repository (default $HOME/.cache/parallax/hfref; PX_HFREF_VENV overrides):
# a Python venv with torch and transformers at pinned versions from PyPI
# (PX_TORCH_INDEX adds an index, e.g. https://download.pytorch.org/whl/cpu
# for torch's smaller CPU-only wheels: the reference runs in fp32 on the CPU).
set -euo pipefail
VENV="${PX_HFREF_VENV:-$HOME/.cache/parallax/hfref}"
TORCH_VERSION=2.15.0
TRANSFORMERS_VERSION=5.25.0
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
case "$(realpath -m "$VENV")/" in "$ROOT"/*)
  echo "setup_venv.sh: PX_HFREF_VENV=$VENV is inside the repository ($ROOT); choose a scratch path" >&2
  exit 2;; esac
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
extra=()
[ -n "${PX_TORCH_INDEX:-}" ] && extra=(--extra-index-url "$PX_TORCH_INDEX")
"$VENV/bin/pip" install --quiet "torch==$TORCH_VERSION" "${extra[@]}"
"$VENV/bin/pip" install --quiet "transformers==$TRANSFORMERS_VERSION"
"$VENV/bin/python" -c "import torch, transformers; print('hfref venv ready: $VENV (torch', torch.__version__, '/ transformers', transformers.__version__ + ')')"
