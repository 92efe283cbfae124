#!/usr/bin/env bash
# plan --csv: python3's csv module reads it; its rows are --json's ranked
# plans, in the same order and with the same numbers (17 significant digits
# round-trip a double); with --sweep-gpus one row per GPU count, a count that
# cannot be planned carrying its error; --csv beside --json or --explain is a
# usage error naming both.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(--model 70b --gpus 64 --top 5 --partition uniform --threads 1)
"$PLAN" "${args[@]}" --csv > "$tmp/plans.csv" || fail "plan --csv exited $?"
"$PLAN" "${args[@]}" --json > "$tmp/plans.json" || fail "plan --json exited $?"
"$PLAN" --model 70b --sweep-gpus 8,64,128 --partition uniform --threads 1 --csv \
  > "$tmp/sweep.csv" || fail "plan --sweep-gpus --csv exited $?"
"$PLAN" --model 70b --sweep-gpus 8,64,128 --partition uniform --threads 1 --json \
  > "$tmp/sweep.json" || fail "plan --sweep-gpus --json exited $?"

python3 - "$tmp" <<'PY' || exit 1
import csv, json, sys
d = sys.argv[1]
def fail(msg):
    print("FAIL:", msg, file=sys.stderr); sys.exit(1)
def same(row, p, where):
    par, mem = p["parallel"], p["memory"]
    want = {"tp": par["tp"], "cp": par["cp"], "ep": par["ep"], "etp": par["etp"],
            "pp": par["pp"], "vpp": par["vpp"], "dp": par["dp"],
            "sp": "true" if par["sp"] else "false", "micro_batch": p["micro_batch"],
            "num_microbatches": p["num_microbatches"], "global_batch": p["global_batch"],
            "tokens_per_step": p["tokens_per_step"], "zero": par["zero"],
            "recompute": par["recompute"], "schedule": par["schedule"],
            "precision": par["precision"], "step_time_s": p["step_time_s"],
            "tokens_per_s": p["tokens_per_s"], "mfu": p["mfu"], "hfu": p["hfu"],
            "bubble_fraction": p["bubble_fraction"], "mem_total_bytes": mem["total_bytes"]}
    for k, v in want.items():
        got = row[k]
        ok = (float(got) == v) if isinstance(v, float) else (
            int(got) == v if isinstance(v, int) else got == v)
        if not ok:
            fail("%s: %s = %r, --json has %r" % (where, k, got, v))

rows = list(csv.DictReader(open(d + "/plans.csv", newline="")))
plans = json.load(open(d + "/plans.json"))["plans"]
if len(rows) != len(plans) or len(rows) != 5:
    fail("%d CSV rows, %d --json plans, --top 5" % (len(rows), len(plans)))
for i, (r, p) in enumerate(zip(rows, plans)):
    if int(r["position"]) != i + 1:
        fail("row %d has position %s" % (i + 1, r["position"]))
    same(r, p, "position %d" % (i + 1))

rows = list(csv.DictReader(open(d + "/sweep.csv", newline="")))
sweep = json.load(open(d + "/sweep.json"))["sweep"]
if [int(r["gpus"]) for r in rows] != [s["gpus"] for s in sweep] or len(rows) != 3:
    fail("sweep rows for %s, --json for %s" % ([r["gpus"] for r in rows],
                                               [s["gpus"] for s in sweep]))
for r, s in zip(rows, sweep):
    if "best" in s:
        if r["error"]:
            fail("%s GPUs: error %r beside a plan" % (r["gpus"], r["error"]))
        same(r, s["best"], "sweep %s GPUs" % r["gpus"])
    elif r["error"] != s["error"] or r["tp"] != "":
        fail("%s GPUs: error %r, --json %r" % (r["gpus"], r["error"], s["error"]))
if "best" in sweep[0] or "best" not in sweep[1]:
    fail("70b: 8 GPUs should not fit and 64 should (the error row is not exercised)")
PY

for other in --json --explain; do
  "$PLAN" "${args[@]}" --csv $other > "$tmp/out" 2> "$tmp/err"
  rc=$?
  [ $rc -eq 2 ] || fail "--csv $other exited $rc, want 2 (usage)"
  grep -q -- "--csv and $other" "$tmp/err" || fail "--csv $other: $(cat "$tmp/err")"
  [ -s "$tmp/out" ] && fail "--csv $other wrote to stdout"
done
echo "plan --csv: ranked plans and sweep rows equal --json's"
