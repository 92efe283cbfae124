#!/usr/bin/env bash
# The search spread over threads returns byte-identical JSON to the search on
# one thread (timings aside: elapsed_s and configs_per_s).  The analytic pass
# is cut into (tp, cp, pp) pieces merged in loop order whatever thread scored
# them (px_search.c, analytic_pass).  GLPK's programs stop by their work,
# the same on every run; the clock, which only a machine far slower or
# busier than usual reaches, would make two runs differ for another reason:
# the test checks that it stopped none (partition.clock_limited), with
# --milp-budget 600 so that the whole search's wall-clock backstop is not
# what a loaded machine cuts.  The last case runs GLPK to its work limit
# (DeepSeek-V3's interleaved candidates).  Also --sweep-gpus: a table row
# and a JSON element per GPU count, each the best plan `plan --gpus G`
# chooses.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

strip() { grep -v -e '"elapsed_s"' -e '"configs_per_s"' "$1"; }

glpk="--model deepseek-v3 --hw gb200-nvl72 --gpus 256 --pp 4 --vpp 4 --ep 64 --micro-batch 1"
glpk="$glpk --global-batch 4096 --precision mxfp8 --framework megatron"
for args in "--model 70b --gpus 1024" "--model tiny-moe --gpus 8" \
            "--model llama3-405b --gpus 16384 --top 20" "$glpk"; do
  for t in 1 2 5; do
    "$PLAN" $args --threads "$t" --milp-budget 600 --json > "$tmp/t$t.json" 2> "$tmp/err" \
      || fail "plan $args --threads $t exited $?: $(cat "$tmp/err")"
  done
  python3 - "$tmp/t1.json" "$args" "$glpk" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))["partition"]
if d["clock_limited"]:
    sys.exit("FAIL: plan %s: precondition: the clock stopped no program, got %s" % (sys.argv[2], d))
if sys.argv[2] == sys.argv[3] and not (d["not_proven"] and d["exact_dp"] < d["refined"]):
    sys.exit("FAIL: plan %s: no program ran GLPK to its work limit: %s" % (sys.argv[2], d))
PY
  for t in 2 5; do
    diff <(strip "$tmp/t1.json") <(strip "$tmp/t$t.json") > "$tmp/diff" \
      || fail "plan $args: --threads $t differs from --threads 1: $(head -20 "$tmp/diff")"
  done
  n=$(strip "$tmp/t1.json" | wc -l)
  [ "$n" -gt 100 ] || fail "plan $args: only $n lines of JSON"
done

# --sweep-gpus: rows per count, the same best as plan --gpus
"$PLAN" --model 70b --sweep-gpus 256..1024 > "$tmp/sweep.txt" 2> "$tmp/err" \
  || fail "--sweep-gpus exited $?: $(cat "$tmp/err")"
"$PLAN" --model 70b --sweep-gpus 256..1024 --json > "$tmp/sweep.json" 2> "$tmp/err" \
  || fail "--sweep-gpus --json exited $?: $(cat "$tmp/err")"
"$PLAN" --model 70b --gpus 512 --json > "$tmp/g512.json" 2> "$tmp/err" \
  || fail "plan --gpus 512 exited $?: $(cat "$tmp/err")"
for g in 256 512 1024; do
  grep -Eq "^ +$g +[0-9]+" "$tmp/sweep.txt" || fail "--sweep-gpus: no row for $g GPUs"
done
python3 - "$tmp/sweep.json" "$tmp/g512.json" <<'PY' || exit 1
import json, sys
sw = json.load(open(sys.argv[1]))["sweep"]
one = json.load(open(sys.argv[2]))["plans"][0]
if [r["gpus"] for r in sw] != [256, 512, 1024]:
    sys.exit("FAIL: sweep counts %s" % [r["gpus"] for r in sw])
best = sw[1]["best"]
for k in ("parallel", "micro_batch", "num_microbatches", "step_time_s", "layers_per_chunk"):
    if best[k] != one[k]:
        sys.exit("FAIL: sweep 512 %s = %s, plan --gpus 512 %s" % (k, best[k], one[k]))
PY
"$PLAN" --model 70b --sweep-gpus 64..8 > /dev/null 2> "$tmp/err" && fail "--sweep-gpus 64..8 accepted"
grep -q "B is below A" "$tmp/err" || fail "--sweep-gpus 64..8: message: $(cat "$tmp/err")"
"$PLAN" --model 70b --sweep-gpus 8..64 --gpus 8 > /dev/null 2> "$tmp/err" \
  && fail "--sweep-gpus with --gpus accepted"
echo "plan threads and sweep: OK"
