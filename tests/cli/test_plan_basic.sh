#!/usr/bin/env bash
# `plan --model 70b --gpus 1024`: succeeds quickly (under 5 s of CPU time:
# user + system, its work, which other processes on the machine do not
# stretch as they stretch the wall clock), prints a ranked table with
# units and a chosen row whose TP stays inside an 8-GPU node; -o writes a
# plan that reads back (px_plan_read) equal to what --json reported.
set -u
PLAN="$1"; READBACK="$2"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

TIMEFORMAT='%R %U %S'
{ time "$PLAN" --model 70b --gpus 1024 -o "$tmp/plan.json" > "$tmp/out.txt" 2> "$tmp/err.txt"; } \
  2> "$tmp/time" || fail "plan failed: $(cat "$tmp/err.txt")"
read -r wall user sys < "$tmp/time"
ms=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%d", 1000 * (u + s) }')
echo "plan --model 70b --gpus 1024: ${ms} ms of CPU time (${wall} s wall)"
[ "$ms" -lt 5000 ] || fail "used ${ms} ms of CPU time (limit 5000 ms)"
cat "$tmp/out.txt"
grep -q 'mem\[GB\]' "$tmp/out.txt" || fail "no units header"
grep -q '^ *#  *TP  *CP  *EP' "$tmp/out.txt" || fail "no column header"
grep -q '# rejected:' "$tmp/out.txt" || fail "no rejected-count summary"
rows=$(grep -cE '^ +[0-9]+ +[0-9]+ +[0-9]+' "$tmp/out.txt")
[ "$rows" -eq 10 ] || fail "expected 10 ranked rows, got $rows"
chosen=$(grep -E '^ +1 +[0-9]+' "$tmp/out.txt")
echo "$chosen" | grep -q '\*$' || fail "plan #1 not marked chosen"
tp=$(echo "$chosen" | awk '{print $2}')
[ "$tp" -ge 1 ] && [ "$tp" -le 8 ] || fail "chosen TP $tp not within a node"

# -o plan.json reads back and equals the JSON output's first plan
[ -s "$tmp/plan.json" ] || fail "-o wrote nothing"
"$READBACK" "$tmp/plan.json" "$tmp/plan2.json" > "$tmp/back.txt" || fail "plan file does not read back"
# write -> read -> write gives the same file: nothing lost or changed on the way
cmp "$tmp/plan.json" "$tmp/plan2.json" || fail "plan re-written after reading differs: $(diff "$tmp/plan.json" "$tmp/plan2.json" | head -5)"
"$PLAN" --model 70b --gpus 1024 --json > "$tmp/out.json" || fail "--json failed"
python3 - "$tmp/out.json" "$tmp/back.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
back = dict(l.split(" ", 1) for l in open(sys.argv[2]).read().splitlines())
p = d["plans"][0]
for k in ("tp", "cp", "ep", "pp", "vpp", "dp", "zero"):
    if int(back[k]) != p["parallel"][k]:
        sys.exit(f"FAIL: {k}: plan file {back[k]} != json {p['parallel'][k]}")
if int(back["sp"]) != int(p["parallel"]["sp"]):
    sys.exit("FAIL: sp differs")
if int(back["micro_batch"]) != p["micro_batch"] or int(back["num_microbatches"]) != p["num_microbatches"]:
    sys.exit("FAIL: batch differs")
if back["schedule"] != p["parallel"]["schedule"] or back["recompute"] != p["parallel"]["recompute"]:
    sys.exit("FAIL: schedule/recompute differ")
if int(back["total_bytes"]) != p["memory"]["total_bytes"]:
    sys.exit("FAIL: memory differs")
if abs(float(back["step_time_s"]) - p["step_time_s"]) > 1e-6 * p["step_time_s"]:
    sys.exit("FAIL: step time differs")
if back["model"] != "llama3-70b" or back["hw"] != "h100-sxm":
    sys.exit("FAIL: model/hw differ")
print("round trip ok")
PY
echo PASS
