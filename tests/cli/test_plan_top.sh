#!/usr/bin/env bash
# --top K with the GLPK partition pass on (the default) gives exactly K rows
# when K distinct feasible configurations exist: the program can merge two
# candidates into one (selective recompute rewritten to none), and the search
# over-fetches so that the list still fills (px_search.c, refine_top).
# 70B on 1024 GPUs has ~18 800 feasible configurations: --top 80 and the
# maximum must come back full, distinct and ranked by the score (seconds per
# token = 1 / tokens_per_s; ties: less memory).  A narrow search (llama3-8b
# on 4 GPUs with TP 2: 64 feasible) must list at least min(K, feasible).
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# the maximum, as plan --help states it (PX_SEARCH_TOP_MAX)
max=$("$PLAN" --help 2>&1 | sed -n 's/.*--top K.*at most \([0-9][0-9]*\).*/\1/p')
[ -n "$max" ] || fail "plan --help does not state the largest --top"
"$PLAN" --model 70b --gpus 1024 --top $((max + 1)) > /dev/null 2>&1 \
  && fail "--top $((max + 1)) accepted"

for k in 80 "$max"; do
  "$PLAN" --model 70b --gpus 1024 --top "$k" --json > "$tmp/top$k.json" 2> "$tmp/err" \
    || fail "--top $k exited $?: $(cat "$tmp/err")"
done
"$PLAN" --model llama3-8b --gpus 4 --tp 2 --top 100 --json > "$tmp/narrow.json" 2> "$tmp/err" \
  || fail "narrow search exited $?: $(cat "$tmp/err")"
"$PLAN" --model 70b --gpus 1024 --top "$max" --no-milp --json > "$tmp/uniform.json" 2> "$tmp/err" \
  || fail "--no-milp exited $?: $(cat "$tmp/err")"

python3 - "$tmp" "$max" <<'PY' || exit 1
import json, sys
tmp = sys.argv[1]

def key(p):
    # everything the table and the JSON say about a configuration
    return (json.dumps(p["parallel"], sort_keys=True), p["micro_batch"],
            p["num_microbatches"], tuple(p["layers_per_chunk"]), tuple(p["layer_recompute"]))

def check(path, k, exact, method="milp"):
    d = json.load(open(path))
    plans = d["plans"]
    assert d["partition"]["method"] == method, d["partition"]
    valid = d["search"]["valid"]
    want = k if exact else min(k, valid)
    if exact:
        assert valid >= k, (path, valid)
        assert len(plans) == k, "%s: --top %d gave %d rows" % (path, k, len(plans))
    else:
        assert len(plans) >= want and len(plans) <= k, \
            "%s: --top %d with %d feasible gave %d rows" % (path, k, valid, len(plans))
    keys = [key(p) for p in plans]
    assert len(set(keys)) == len(keys), "%s: %d duplicate rows" % (path, len(keys) - len(set(keys)))
    # seconds per token, ascending; equal scores: less memory first
    score = [(1.0 / p["tokens_per_s"], p["memory"]["total_bytes"]) for p in plans]
    for a, b in zip(score, score[1:]):
        assert a[0] <= b[0] * (1 + 1e-9), (path, a, b)
        if abs(a[0] - b[0]) <= 1e-12 * b[0]:
            assert a[1] <= b[1], (path, a, b)
    print("%s: %d rows of %d feasible, distinct, ranked" % (path.split("/")[-1], len(plans), valid))

check(tmp + "/top80.json", 80, True)
check(tmp + "/top%s.json" % sys.argv[2], int(sys.argv[2]), True)
check(tmp + "/narrow.json", 100, False)
check(tmp + "/uniform.json", int(sys.argv[2]), True, "uniform")
PY
echo PASS
