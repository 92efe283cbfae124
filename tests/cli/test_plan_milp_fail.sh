#!/usr/bin/env bash
# When the GLPK stage-partition program fails, plan still prints a plan (the
# candidate keeps its analytic, uniform split) and says so on a
# "# stage partition, first failure" line.  The failure is forced with
# --partition glpk (every pass in GLPK, no exact DP) and a GLPK time limit
# of a microsecond: GPT-3 175B on 1024 GPUs has candidates (PP 16 over 2
# chunks) whose uniform split with greedy recomputation does not fit the
# program's memory limit (tighter than the search's by one layer's
# activations, docs/partition.md), so GLPK has no starting split to fall
# back on and stops with none ("time limit ... reached before any split").
# --pp 16 --vpp 2 --micro-batch 2 keeps the search on them; --milp-budget 600 lets every
# candidate's program run however loaded the machine (the clock's default
# backstop on them all is 4 s).
#
# Under the default --partition milp their layers are identical, so the
# exact interleaved pass (px_partition_chunks) answers them without GLPK and
# no time limit applies: none fails.
set -u
PLAN="$1"; READBACK="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The hardware: an H100 whose user holds back 6.2 GB (mem_reserve_bytes), so
# that the plans' memory, the runtime's share included, lands in that band.
src="${PARALLAX_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}"
sed 's/"hbm_bytes": 80000000000,/"hbm_bytes": 80000000000, "mem_reserve_bytes": 6200000000,/' \
  "$src/hw_profiles/h100-sxm.json" > "$tmp/h100-held.json"
grep -q mem_reserve_bytes "$tmp/h100-held.json" || fail "could not write the profile"
base="--model gpt3-175b --hw $tmp/h100-held.json --gpus 1024 --pp 16 --vpp 2 --micro-batch 2 --milp-time-limit 0.000001 --milp-budget 600"

# 1. GLPK alone fails: the fallback plan, the failure named
args="$base --partition glpk"
"$PLAN" $args -o "$tmp/plan.json" > "$tmp/out.txt" 2> "$tmp/err.txt" \
  || fail "plan exited $?: $(cat "$tmp/err.txt")"
grep '^# stage partition' "$tmp/out.txt"
line=$(grep '^# stage partition, first failure' "$tmp/out.txt") \
  || fail "no first-failure line: $(grep '^#' "$tmp/out.txt")"
echo "$line" | grep -q 'time limit' || fail "failure line does not name the limit: $line"
grep -Eq '[1-9][0-9]* failed' "$tmp/out.txt" || fail "the summary counts no failure"
# a wall-clock search says so; the program's summary is the only one
grep -q '^# stage partition: the clock stopped or skipped [1-9][0-9]* candidates' "$tmp/out.txt" \
  || fail "no clock line under --milp-time-limit: $(grep '^# stage partition' "$tmp/out.txt")"
grep -q '^# stage partition: uniform' "$tmp/out.txt" && fail "a uniform line beside the program's"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9]+' "$tmp/out.txt")
[ "$rows" -eq 10 ] || fail "expected 10 ranked rows, got $rows"
grep -q '^# chosen: #1, TP' "$tmp/out.txt" || fail "no chosen plan"

# the plan file is valid: it reads back and re-writes to the same bytes
"$READBACK" "$tmp/plan.json" "$tmp/plan2.json" > "$tmp/back.txt" || fail "plan file does not read back"
cmp -s "$tmp/plan.json" "$tmp/plan2.json" || fail "plan re-written after reading differs"

# --json: the same failure in "partition", a plan with the schema's kind
"$PLAN" $args --json > "$tmp/out.json" 2> "$tmp/err.txt" || fail "--json exited $?: $(cat "$tmp/err.txt")"
python3 - "$tmp/out.json" "$tmp/back.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
back = dict(l.split(" ", 1) for l in open(sys.argv[2]).read().splitlines())
part = d["partition"]
assert part["method"] == "milp" and part["failed"] >= 1, part
assert "time limit" in part["note"], part["note"]
assert part["exact_dp"] == 0 and part["skipped"] == 0, part
assert part["clock_limited"] >= part["failed"], part
assert d["plan"]["kind"] == "parallax-plan", d["plan"].get("kind")
assert len(d["plans"]) == 10
p = d["plans"][0]
assert p["memory"]["total_bytes"] <= d["mem_limit_bytes"]
assert int(back["tp"]) == p["parallel"]["tp"] and int(back["pp"]) == p["parallel"]["pp"]
assert int(back["total_bytes"]) == p["memory"]["total_bytes"]
print("glpk: failed %d, note: %s" % (part["failed"], part["note"]))
PY

# 2. the default program: the exact passes answer them, none fails
"$PLAN" $base -o "$tmp/exact.json" > "$tmp/out.txt" 2> "$tmp/err.txt" \
  || fail "plan exited $?: $(cat "$tmp/err.txt")"
grep '^# stage partition' "$tmp/out.txt"
grep -q '^# stage partition, first failure' "$tmp/out.txt" \
  && fail "a program failed: $(grep '^# stage partition' "$tmp/out.txt")"
grep -Eq ' 0 failed' "$tmp/out.txt" || fail "the summary counts a failure"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9]+' "$tmp/out.txt")
[ "$rows" -eq 10 ] || fail "expected 10 ranked rows, got $rows"
"$READBACK" "$tmp/exact.json" "$tmp/exact2.json" > /dev/null || fail "plan file does not read back"
"$PLAN" $base --json > "$tmp/out.json" 2> "$tmp/err.txt" || fail "--json exited $?: $(cat "$tmp/err.txt")"
python3 - "$tmp/out.json" <<'PY' || exit 1
import json, sys
part = json.load(open(sys.argv[1]))["partition"]
assert part["method"] == "milp" and part["failed"] == 0 and part["note"] == "", part
assert part["exact_dp"] >= 1, part
print("exact: refined %d, exact %d" % (part["refined"], part["exact_dp"]))
PY

# strict parsing of the limits and the method
for opt in --milp-time-limit --milp-budget; do
  for bad in 0 -1 abc 1e9 0.5s ""; do
    "$PLAN" --model gpt3-175b --gpus 1024 $opt "$bad" > /dev/null 2> "$tmp/e" \
      && fail "$opt \"$bad\" accepted"
    grep -q 'expected seconds in (0, 3600]' "$tmp/e" || fail "$opt \"$bad\": $(cat "$tmp/e")"
  done
done
"$PLAN" --model gpt3-175b --gpus 1024 --partition simplex > /dev/null 2> "$tmp/e" \
  && fail "--partition simplex accepted"
grep -q 'allowed values are milp, uniform, glpk' "$tmp/e" || fail "--partition simplex: $(cat "$tmp/e")"
echo PASS
