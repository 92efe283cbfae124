#!/usr/bin/env bash
# plan on a hybrid Mamba-2 model (Nemotron-H): the default framework (this
# project's executor) refuses its Mamba layers by name and names the one that
# runs them; under megatron the header counts the layers by kind, --explain
# names the Mamba-2 mixers beside attention, the plan file keeps the pattern
# and the mixer's sizes and reads back byte for byte, and a TP the mixer's
# groups do not divide is refused naming them.
set -u
PLAN="$1"
READBACK="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLAN" --model nemotron-h-8b --gpus 64 > "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "default framework: want exit 1"
grep -q "Mamba-2 layers ('M' in layer_pattern).*--framework megatron can" "$tmp/err" \
  || fail "default framework: $(cat "$tmp/err")"

"$PLAN" --model nemotron-h-8b --gpus 64 --framework megatron --tp 2 --pp 2 --explain --top 1 \
  -o "$tmp/plan.json" > "$tmp/out" 2> "$tmp/err" || fail "megatron: $(cat "$tmp/err")"
grep -q "^# layers: 24 Mamba-2, 4 attention, 24 MLP, one sublayer each" "$tmp/out" \
  || fail "header: $(grep '^# layers' "$tmp/out")"
grep -q "attention and Mamba-2 mixers" "$tmp/out" || fail "--explain: no Mamba-2 mixers line"
grep -q "attention core and Mamba-2 scan" "$tmp/out" || fail "--explain: no Mamba-2 scan line"
python3 - "$tmp/plan.json" <<'PY' || fail "plan file"
import json, sys
m = json.load(open(sys.argv[1]))["model"]
assert m["layer_pattern"].count("M") == 24 and len(m["layer_pattern"]) == 52, m["layer_pattern"]
assert m["mamba"] == {"heads": 128, "head_dim": 64, "state": 128, "groups": 8, "conv": 4}, m["mamba"]
assert m["mlp_act"] == "relu2" and m["rope_fraction"] == 0, (m["mlp_act"], m["rope_fraction"])
PY
"$READBACK" "$tmp/plan.json" "$tmp/again.json" || fail "read back"
cmp -s "$tmp/plan.json" "$tmp/again.json" || fail "the plan file does not read back byte for byte"

# two Mamba groups: tp 4 leaves none on a rank (the attention's 8 kv heads
# allow it)
here=$(cd "$(dirname "$0")" && pwd)
sed -e 's/"groups": 8/"groups": 2/' -e 's/"name": "nemotron-h-8b"/"name": "two-groups"/' \
  "$here/../../models/nemotron-h-8b.json" > "$tmp/two-groups.json"
"$PLAN" --model "$tmp/two-groups.json" --gpus 64 --framework megatron --tp 4 \
  > "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "tp 4 over 2 groups: want exit 1"
grep -q "Mamba-2 heads and the 2 groups" "$tmp/err" || fail "tp 4: $(cat "$tmp/err")"
echo "plan_hybrid: ok"
