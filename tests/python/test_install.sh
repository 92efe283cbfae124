#!/bin/sh
# meson install into a scratch DESTDIR: the tools, libparallax, parallax.h,
# parallax.pc and the presets land where they should; a C program built
# with pkg-config against the installed header and library gets from
# parallax_plan exactly what the installed `plan --json` prints (timings
# aside), and an error object with the tool's message for bad input; the
# library exports the parallax_* calls only.
set -u
CLIENT_SRC=$1
B="${PARALLAX_BUILD_ROOT:?}"
fail=0
bad() { echo "FAIL: $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
D=$tmp/dest
meson install -C "$B" --destdir "$D" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; echo "meson install failed"; exit 1; }
pc=$(find "$D" -name parallax.pc | head -1)
[ -n "$pc" ] || { echo "FAIL: parallax.pc not installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")"
P=$D$(pkg-config --variable=prefix parallax)
for f in bin/plan bin/validate bin/execute bin/calibrate bin/compare include/parallax.h \
         share/parallax/models/llama3-70b.json share/parallax/hw_profiles/h100-sxm.json \
         share/parallax/frameworks/megatron.json share/parallax/recipes/llama3-70b-lora.json; do
  [ -e "$P/$f" ] || bad "not installed: $f"
done
lib=$(find "$P" -name 'libparallax.so.1' | head -1)
[ -n "$lib" ] || bad "libparallax.so.1 not installed"
others=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 !~ /^parallax_/' | wc -l)
[ "$others" -eq 0 ] || bad "libparallax exports $others symbols outside parallax_*"

flags=$(pkg-config --define-variable=prefix="$P" --cflags --libs parallax) || bad "pkg-config parallax"
cc -std=c11 -o "$tmp/client" "$CLIENT_SRC" $flags || { echo "FAIL: api_client does not build"; exit 1; }
export LD_LIBRARY_PATH="$(dirname "$lib")"

"$tmp/client" plan '{"model": "70b", "gpus": 64, "tp": 8, "pp": 4, "dp": 2, "micro_batch": 1, "partition": "uniform"}' \
  >"$tmp/api.json" || bad "parallax_plan: status $?"
"$P/bin/plan" --model 70b --gpus 64 --tp 8 --pp 4 --dp 2 --micro-batch 1 --partition uniform --json \
  >"$tmp/cli.json" || bad "installed plan --json: exit $?"
python3 - "$tmp/api.json" "$tmp/cli.json" <<'PY' || bad "parallax_plan differs from plan --json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for d in (a, b):
    d["search"].pop("elapsed_s"); d["search"].pop("configs_per_s"); d["partition"].pop("elapsed_s")
sys.exit(0 if a == b and a["plans"] else 1)
PY
"$tmp/client" plan '{"model": "70b", "gpus": 0}' >"$tmp/err.json"
rc=$?
[ "$rc" -eq 12 ] || bad "gpus 0: status $rc, want 12 (a usage error)"
"$P/bin/plan" --model 70b --gpus 0 2>"$tmp/cli.err" >/dev/null
python3 - "$tmp/err.json" "$tmp/cli.err" <<'PY' || bad "error object: $(cat "$tmp/err.json")"
import json, sys
e = json.load(open(sys.argv[1]))
line = open(sys.argv[2]).read().splitlines()[0]
sys.exit(0 if e["status"] == "usage error" and "plan: " + e["error"] == line else 1)
PY
"$tmp/client" model '{"model": {"model_type": "llama"}}' >"$tmp/m.json" && bad "an incomplete HF model loaded"
grep -q 'hidden_size' "$tmp/m.json" || bad "incomplete HF model: field not named: $(cat "$tmp/m.json")"
[ $fail -eq 0 ] && echo "install: ok"
exit $fail
