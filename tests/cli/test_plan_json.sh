#!/usr/bin/env bash
# --json: one object that python3 -m json.tool accepts, with the documented
# keys (docs/plan-cli.md), bytes as integers, plans ranked best first; --explain prints
# the breakdowns and the rule-of-thumb plan; --tokens adds time to train.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$PLAN" --model 70b --gpus 1024 --json --tokens 15T > "$tmp/out.json" || fail "plan --json exited $?"
python3 -m json.tool "$tmp/out.json" > /dev/null || fail "json.tool rejects the output"
python3 - "$tmp/out.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
plans = d["plans"]
assert len(plans) == 10, len(plans)
for p in plans:
    for k in ("tp", "cp", "ep", "pp", "vpp", "dp", "sp"):
        assert k in p["parallel"], k
    for k in ("micro_batch", "num_microbatches", "global_batch", "tokens_per_step",
              "step_time_s", "bubble_fraction", "mfu", "hfu", "tokens_per_s"):
        assert k in p, k
    for k in ("weights_bytes", "grads_bytes", "optimizer_bytes", "activations_bytes", "total_bytes"):
        assert isinstance(p["memory"][k], int), k
    m = p["memory"]
    assert m["allocated_bytes"] == m["weights_bytes"] + m["grads_bytes"] + m["optimizer_bytes"] + m["activations_bytes"] + m["buffers_bytes"]
    # the runtime's parts beside the tensors (docs/cost-model.md, "What the runtime takes")
    assert m["total_bytes"] == m["allocated_bytes"] + m["workspace_bytes"] + m["runtime_context_bytes"] + m["nccl_bytes"]
    assert m["runtime_context_bytes"] > 0 and m["nccl_bytes"] == m["nccl_comms"] * 688000000
    assert m["total_bytes"] <= d["mem_limit_bytes"]
    assert p["global_batch"] == p["micro_batch"] * p["num_microbatches"] * p["parallel"]["dp"]
    assert p["tokens_per_step"] == d["tokens_per_step"] == 16777216
    assert 0 < p["mfu"] < 1 and p["hfu"] >= p["mfu"]
    assert p["time_to_train"]["days_to_train"] > 0
    assert p["time_to_train"]["goodput_days"] >= p["time_to_train"]["days_to_train"]
steps = [p["step_time_s"] for p in plans]
assert steps == sorted(steps), steps
assert d["search"]["evaluated"] > 1000
assert all(isinstance(v, int) for v in d["search"]["rejected"].values())
assert "rule_of_thumb" in d and d["rule_of_thumb"]["parallel"]["tp"] == 8
assert d["plan"]["kind"] == "parallax-plan"
# bytes are JSON integers everywhere, not only under memory
bad = []
def walk(x, path):
    if isinstance(x, dict):
        for k, v in x.items():
            if "bytes" in k and not isinstance(v, (int, dict, list)):
                bad.append(path + "." + k)
            walk(v, path + "." + k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, "%s[%d]" % (path, i))
walk(d, "")
assert not bad, bad
assert isinstance(plans[0]["time_to_train"]["ckpt_bytes_per_gpu"], int)
for p in plans:
    assert isinstance(p["layers_per_chunk"], list) and isinstance(p["layer_recompute"], list)
    assert p["layer_recompute"] == [] or len(p["layer_recompute"]) == 80
# the rule of thumb scores the same global batch as the search
r = d["rule_of_thumb"]
assert r["global_batch"] == d["global_batch"] and r["same_global_batch"] is True, r["global_batch"]
print("json ok:", len(plans), "plans,", d["search"]["evaluated"], "evaluated")
PY

# distinct rows: no two plans alike, --top K gives K, ZeRO > 0 only with replicas
for args in "--model 70b --gpus 64 --global-batch 3" "--model 70b --gpus 64 --global-batch 3 --top 3" \
            "--model mixtral-8x7b --gpus 256"; do
  "$PLAN" $args --json > "$tmp/rows.json" || fail "$args exited $?"
  python3 - "$tmp/rows.json" "$args" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1])); args = sys.argv[2]
top = int(args.split("--top ")[1]) if "--top" in args else 10
plans = d["plans"]
assert len(plans) == top, (args, len(plans))
keys = [json.dumps([p["parallel"], p["micro_batch"], p["num_microbatches"], p["layers_per_chunk"],
                    p["layer_recompute"]], sort_keys=True) for p in plans]
dups = [i + 1 for i, k in enumerate(keys) if keys.index(k) != i]
assert not dups, (args, "duplicate rows", dups)
for p in plans:
    q = p["parallel"]
    if q["ep"] == 1 and q["dp"] * q["cp"] == 1 and "mixtral" not in args:
        assert q["zero"] == 0, (args, "ZeRO without data parallelism", q)
print("rows ok:", args, len(plans), "distinct")
PY
done

# --explain: the rule of thumb on 24 GPUs grows PP and keeps the batch
"$PLAN" --model 70b --gpus 24 --explain > "$tmp/rule24.txt" || fail "70b on 24 exited $?"
grep -qE '^rule +8 +1 +1 +1 +3 +1 +1 +1 +2048 ' "$tmp/rule24.txt" \
  || fail "rule row on 24 GPUs is not TP 8 PP 3 DP 1, 1 x 2048: $(grep '^rule' "$tmp/rule24.txt")"
grep -q 'no ratio (the rule plan does not fit)\|best / rule' "$tmp/rule24.txt" || fail "no score line"

"$PLAN" --model seed-70b --gpus 1024 --explain --tokens 15T > "$tmp/explain.txt" || fail "--explain exited $?"
for want in 'weights' 'gradients' 'optimizer state' 'activations' 'attention' 'MLP' 'buffers' \
            'logits' 'TP/SP' 'PP p2p' 'DP/ZeRO' 'exposed' 'overlapped' 'pipeline bubble' \
            'rule of thumb' 'rule steps' 'goodput-adjusted days' 'Young/Daly'; do
  grep -q "$want" "$tmp/explain.txt" || fail "--explain lacks '$want'"
done
grep -qE '^ *rule +8 ' "$tmp/explain.txt" || fail "rule-of-thumb row (TP 8) missing"
# the links at the bus bandwidth NCCL reaches: h100-sxm's 0.824 of 450 GB/s, 0.94 of 50
grep -qF 'intra-node 370.8 GB/s (0.824 of 450.0), inter-node 47.0 GB/s (0.94 of 50.0)' \
  "$tmp/explain.txt" || fail "--explain lacks the links' bus bandwidth: $(grep 'links' "$tmp/explain.txt")"
echo PASS
