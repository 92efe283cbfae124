#!/usr/bin/env bash
# Megatron's block recompute (--recompute-method block --recompute-num-layers
# N: the first N layers of every pipeline chunk in full, the rest none): where
# the recompute choice is left to the search and a uniform choice would be
# all or nothing, plan proposes it; the plan reads back, exports as Megatron
# runs it, and a per-layer mix of any other form is refused by name.
set -u
PLAN="$1"
EXPORT="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# Llama 3 70B on 16 H100 at TP 8 PP 2, 8 K tokens a micro-batch: without
# recompute it does not fit, with every layer recomputed it fits with room
layout=(--model llama3-70b --gpus 16 --hw h100-sxm --framework megatron --tp 8 --pp 2 --vpp 1
        --seq 8192 --global-batch 64 --micro-batch 1)
"$PLAN" "${layout[@]}" --json -o "$tmp/block.plan.json" > "$tmp/block.json" || fail "plan (free recompute)"
"$PLAN" "${layout[@]}" --recompute full --json > "$tmp/full.json" || fail "plan --recompute full"
python3 - "$tmp/block.json" "$tmp/full.json" <<'PY' || fail "block recompute"
import json, sys
block, full = (json.load(open(f)) for f in sys.argv[1:3])
b, f = block["plans"][0], full["plans"][0]
rc, n_layers = b["layer_recompute"], 80
assert len(rc) == n_layers, len(rc)
chunks = b["layers_per_chunk"] or [n_layers // 2] * 2
first, ks = 0, []
for length in chunks:            # the first k of every chunk full, the rest none
    part = rc[first:first + length]
    k = part.count("full")
    assert part == ["full"] * k + ["none"] * (length - k), part
    ks.append(k)
    first += length
n = max(ks)
assert all(k == min(n, length) for k, length in zip(ks, chunks)), (ks, chunks)
assert 0 < sum(ks) < n_layers, ks
assert b["memory"]["total_bytes"] <= block["mem_limit_bytes"], b["memory"]["total_bytes"]
assert b["step_time_s"] < f["step_time_s"], (b["step_time_s"], f["step_time_s"])
print(f"ok: block recompute of the first {n} layers of each chunk "
      f"({sum(ks)} of {n_layers}): {b['step_time_s']:.3f} s a step, full {f['step_time_s']:.3f} s")
PY
# it exports as Megatron and NeMo run it
"$EXPORT" --plan "$tmp/block.plan.json" --to megatron > "$tmp/megatron.sh" || fail "export megatron"
grep -qE -- '--recompute-granularity full' "$tmp/megatron.sh" || fail "megatron: no full granularity"
grep -qE -- '--recompute-method block' "$tmp/megatron.sh" || fail "megatron: no block method"
grep -qE -- '--recompute-num-layers [1-9][0-9]*' "$tmp/megatron.sh" || fail "megatron: no layer count"
"$EXPORT" --plan "$tmp/block.plan.json" --to nemo > "$tmp/nemo.txt" || fail "export nemo"
grep -q 'recompute_method.*block' "$tmp/nemo.txt" || fail "nemo: no block method"
echo "ok: exported as --recompute-method block"
# the 2021 release had no block method: all or nothing there (Llama 3 70B
# on 32 GPUs at TP 8 PP 4 without SP, where today's release mixes)
for rel in none 2021; do
  "$PLAN" --model llama3-70b --gpus 32 --hw h100-sxm --framework megatron --tp 8 --pp 4 --vpp 1 \
    --sp off --seq 8192 --global-batch 64 --micro-batch 1 --framework-release $rel --json \
    > "$tmp/rel-$rel.json" || fail "plan --framework-release $rel"
done
python3 - "$tmp/rel-none.json" "$tmp/rel-2021.json" <<'PY' || fail "2021 release"
import json, sys
today, old = (json.load(open(f))["plans"][0] for f in sys.argv[1:3])
t, o = today["recompute_layers"], old["recompute_layers"]
assert t["full"] > 0 and t["none"] > 0, t
assert sorted(o.values())[-1] == 80, o
print("ok: today's release mixes", today["recompute_layers"], "- 2021 all or nothing", old["recompute_layers"])
PY
# a per-layer mix of another form is refused, naming the block form
python3 - "$tmp/block.plan.json" "$tmp/mixed.plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rc = d["layer_recompute"] if "layer_recompute" in d else d["parallel"]["layer_recompute"]
rc = ["none" if i % 2 else "full" for i in range(len(rc))]
if "layer_recompute" in d: d["layer_recompute"] = rc
else: d["parallel"]["layer_recompute"] = rc
json.dump(d, open(sys.argv[2], "w"))
PY
"$EXPORT" --plan "$tmp/mixed.plan.json" --to megatron > "$tmp/out" 2> "$tmp/err" && fail "a mixed pattern exported"
grep -qE 'per_layer_recompute|recompute-method block' "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
echo "ok: another mix refused: $(head -1 "$tmp/err")"
echo "plan block recompute: ok"
