#!/usr/bin/env bash
# A candidate whose split leaves an end chunk empty (the search's split of
# DeepSeek-V3's 61 layers over PP 8 x VPP 4: one layer beside the embedding,
# the MTP module alone with the loss) is refined, not failed: the program's
# answer, which places a layer in every chunk, is weighed by the cost
# model's step time, so the plan is never slower than that split.
#   test_partition_empty_end.sh PLAN
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ds=(--model deepseek-v3 --gpus 1024 --hw h100-sxm --framework megatron --precision bf16
    --seq 4096 --global-batch 16384 --micro-batch 1 --tp 2 --pp 8 --vpp 4 --cp 1 --ep 64
    --recompute-modules mla_up_proj,mlp)
"$PLAN" "${ds[@]}" --partition uniform --json > "$tmp/uni.json" || fail "the search's split"
"$PLAN" "${ds[@]}" --json > "$tmp/milp.json" || fail "the program"
python3 - "$tmp/uni.json" "$tmp/milp.json" <<'PY' || fail "the empty end chunk's refinement"
import json, sys
uni, milp = (json.load(open(f)) for f in sys.argv[1:3])
split = uni["plans"][0]["layers_per_chunk"]
assert split[0] == 1 and split[-1] == 0 and sum(split) == 61, split
part = milp["partition"]
assert part["refined"] > 0 and part["failed"] == 0, part
assert milp["plans"][0]["step_time_s"] <= uni["plans"][0]["step_time_s"], \
    (milp["plans"][0]["step_time_s"], uni["plans"][0]["step_time_s"])
PY
echo "ok: an empty end chunk's split is refined, never slower"
