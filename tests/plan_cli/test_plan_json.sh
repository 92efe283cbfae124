#!/usr/bin/env bash
# --json: one object that python3 -m json.tool accepts, with the keys the
# issue names, bytes as integers, plans ranked best first; --explain prints
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
    assert m["total_bytes"] == m["weights_bytes"] + m["grads_bytes"] + m["optimizer_bytes"] + m["activations_bytes"] + m["buffers_bytes"]
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
print("json ok:", len(plans), "plans,", d["search"]["evaluated"], "evaluated")
PY

"$PLAN" --model seed-70b --gpus 1024 --explain --tokens 15T > "$tmp/explain.txt" || fail "--explain exited $?"
for want in 'weights' 'gradients' 'optimizer state' 'activations' 'attention' 'MLP' 'buffers' \
            'logits' 'TP/SP' 'PP p2p' 'DP/ZeRO' 'exposed' 'overlapped' 'pipeline bubble' \
            'rule of thumb' 'rule steps' 'goodput-adjusted days' 'Young/Daly'; do
  grep -q "$want" "$tmp/explain.txt" || fail "--explain lacks '$want'"
done
grep -qE '^ *rule +8 ' "$tmp/explain.txt" || fail "rule-of-thumb row (TP 8) missing"
echo PASS
