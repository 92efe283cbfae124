#!/usr/bin/env bash
# execute --trace and compare --breakdown on a real run: tiny-llama on 4
# ranks as TP 2 (+SP) x PP 2 under ZB-H1, so every span kind occurs (GEMM,
# attention, element-wise, TP collectives, pipeline p2p, the optimizer; F, B
# and W ops).  Checks: the file is valid Chrome trace-event JSON with one
# process per rank, the spans nest, every class is present on every rank,
# the report's time by class equals the trace's leaf spans summed over the
# timed steps, the report's predictions (per stage, per rank, by class) are
# the plan file's, the predicted classes sum to the predicted step, the step
# time is the median of the timed steps; compare --breakdown prints (and
# with --json returns) a row per class whose measured rows and "other" sum
# to the measured step, and refuses a report without the classes; a trace
# path that cannot be written fails the run and leaves no temporary file.
#   trace.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-trace.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$build/plan" --model tiny-llama --gpus 4 --hw h100-sxm --tp 2 --pp 2 --dp 1 --cp 1 \
  --micro-batch 1 --global-batch 4 --zero 0 --recompute none --schedule zb-h1 \
  --partition uniform -o "$work/plan.json" >"$work/plan.out" 2>&1 ||
  { cat "$work/plan.out"; fail "plan"; }
timeout 120 mpirun --oversubscribe -np 4 "$build/execute" --plan "$work/plan.json" \
  --dtype fp32 --steps 3 --warmup 1 --report "$work/r.json" --trace "$work/t.json" \
  </dev/null >"$work/exec.out" 2>&1 || { tail -5 "$work/exec.out"; fail "execute --trace"; }

python3 - "$work/t.json" "$work/r.json" <<'PY' || exit 1
import json, statistics, sys
from collections import defaultdict
trace = json.load(open(sys.argv[1]))   # valid JSON, or this raises
rep = json.load(open(sys.argv[2]))
ev = trace["traceEvents"]
world, warm, steps = rep["world_size"], rep["warmup_steps"], rep["timed_steps"]
m = 4  # micro-batches per step (global batch 4, micro-batch 1, dp 1)
bad = []
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
if sorted(names) != list(range(world)):
    bad.append("process_name for pids %s, want 0..%d" % (sorted(names), world - 1))
leaf_cats = ["gemm", "attention", "elementwise", "comm", "p2p", "optimizer"]
ns = lambda x: round(float(x) * 1000)  # ts/dur are microseconds with 3 decimals
by_pid = defaultdict(list)
for e in ev:
    if e["ph"] == "X":
        if e["dur"] < 0: bad.append("negative dur: %s" % e)
        by_pid[e["pid"]].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), e))
meas = rep["measured_class_s"]
for pid in range(world):
    spans = sorted(by_pid[pid], key=lambda s: (s[0], -(s[1] - s[0])))
    cats = {s[2]["cat"] for s in spans}
    miss = [c for c in leaf_cats if c not in cats]
    if miss: bad.append("rank %d: no %s spans" % (pid, miss))
    count = defaultdict(int)
    for s in spans: count[(s[2]["name"], s[2]["args"]["step"])] += 1
    for st in range(warm + steps):
        if count[("step", st)] != 1: bad.append("rank %d step %d: %d step spans" % (pid, st, count[("step", st)]))
        for op in "FBW":
            if count[(op, st)] != m:
                bad.append("rank %d step %d: %d %s spans, want %d" % (pid, st, count[(op, st)], op, m))
    # nesting: each span lies inside the innermost open one or after it ends
    stack = []
    for a, b, e in spans:
        while stack and stack[-1][1] <= a: stack.pop()
        if stack and b > stack[-1][1]:
            bad.append("rank %d: %s [%d, %d] overlaps %s [%d, %d]" % (pid, e["name"], a, b, stack[-1][2]["name"], stack[-1][0], stack[-1][1]))
            break
        if e["cat"] in leaf_cats and not any(s[2]["name"] == "step" for s in stack):
            bad.append("rank %d: leaf %s outside a step" % (pid, e["name"])); break
        if e["cat"] in leaf_cats and stack and stack[-1][2]["cat"] in leaf_cats:
            bad.append("rank %d: leaf %s inside leaf %s" % (pid, e["name"], stack[-1][2]["name"])); break
        stack.append((a, b, e))
    # the report's class sums are the trace's timed leaves (rounding: 1 ns a span)
    for c in leaf_cats:
        leaves = [s for s in spans if s[2]["cat"] == c and s[2]["args"]["step"] >= warm]
        t = sum(b - a for a, b, _ in leaves) * 1e-9 / steps
        if abs(t - meas[c][pid]) > 1e-9 * len(leaves) / steps + 1e-9:
            bad.append("rank %d %s: trace %.9f s, report %.9f s" % (pid, c, t, meas[c][pid]))
    tot = sum(meas[c][pid] for c in leaf_cats)
    if not (0 < tot <= meas["step"][pid] * (1 + 1e-9)):
        bad.append("rank %d: classes sum to %g s, its step %g s" % (pid, tot, meas["step"][pid]))
pred = rep["predicted_class_s"]
ps = sum(pred[c] for c in leaf_cats)
if abs(ps - pred["step"]) > 1e-9 * pred["step"] or abs(pred["step"] - rep["predicted"]["step_time_s"]) > 1e-12:
    bad.append("predicted classes sum to %g, step %g" % (ps, pred["step"]))
timed = rep["step_times_s"][warm:]
mm = rep["measured"]
for key, want in (("step_time_s", statistics.median(timed)), ("step_time_min_s", min(timed)),
                  ("step_time_mean_s", statistics.fmean(timed))):
    if abs(mm[key] - want) > 1e-12 * want:
        bad.append("measured.%s = %g, want %g" % (key, mm[key], want))
for b in bad: print("FAIL:", b)
print("trace: %d events over %d ranks; classes %s" % (len(ev), world, " ".join(
    "%s=%.4f" % (c, statistics.fmean(meas[c])) for c in leaf_cats)))
sys.exit(1 if bad else 0)
PY

# the report's predictions are the plan file's (execute runs no cost model):
# each stage's tensors (its total less the runtime's share, which the
# tracked allocator does not hold), each rank's stage's, the time by class
python3 - "$work/plan.json" "$work/r.json" <<'PY' || exit 1
import json, sys
plan, rep = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = []
stages = [s["total_bytes"] - s.get("runtime_bytes", 0) for s in plan["prediction"]["stages"]]
if rep.get("schema_version") != 1: bad.append("report schema_version %r" % rep.get("schema_version"))
if len(stages) != 2 or rep["predicted_stage_peak_memory_bytes"] != stages:
    bad.append("report stages %s, plan %s" % (rep["predicted_stage_peak_memory_bytes"], stages))
for r, st in enumerate(rep["per_rank_stage"]):
    if rep["per_rank_predicted_peak_memory_bytes"][r] != stages[st]:
        bad.append("rank %d: predicted %d, plan's stage %d %d" % (
            r, rep["per_rank_predicted_peak_memory_bytes"][r], st, stages[st]))
if rep["predicted"]["peak_memory_bytes"] != max(stages) or \
        max(stages) != plan["prediction"]["memory"]["allocated_bytes"]:
    bad.append("predicted peak %d, largest stage %d" % (rep["predicted"]["peak_memory_bytes"], max(stages)))
for c, v in plan["prediction"]["time_by_class"].items():
    if rep["predicted_class_s"][c[:-2]] != v:
        bad.append("predicted_class_s.%s %r, plan %r" % (c[:-2], rep["predicted_class_s"][c[:-2]], v))
for b in bad: print("FAIL:", b)
sys.exit(1 if bad else 0)
PY

# compare --breakdown: a row per class, and the JSON rows sum to the step
out=$("$build/compare" --breakdown "$work/r.json") || { echo "$out"; fail "compare --breakdown"; }
for row in GEMM attention element-wise "exposed communication" "bubble + pipeline p2p" \
           optimizer "other (untraced)" step; do
  grep -q "  $row " <<<"$out" || { echo "$out"; fail "compare --breakdown: no row \"$row\""; }
done
"$build/compare" --breakdown --json "$work/r.json" >"$work/c.json" || fail "compare --breakdown --json"
python3 - "$work/c.json" <<'PY' || exit 1
import json, sys
b = json.load(open(sys.argv[1]))["runs"][0]["breakdown"]
rows = ["gemm", "attention", "elementwise", "comm", "p2p", "optimizer", "other"]
for side in ("measured_s", "predicted_s"):
    s = sum(b[r][side] for r in rows)
    if abs(s - b["step"][side]) > 1e-9 * b["step"][side]:
        print("FAIL: breakdown %s rows sum to %g, step %g" % (side, s, b["step"][side])); sys.exit(1)
e = sum(b[r]["step_error"] for r in rows)
want = (b["step"]["predicted_s"] - b["step"]["measured_s"]) / b["step"]["measured_s"]
if abs(e - want) > 1e-9: print("FAIL: step errors sum to %g, want %g" % (e, want)); sys.exit(1)
PY
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); del r["measured_class_s"]; json.dump(r, open(sys.argv[2], "w"))' \
  "$work/r.json" "$work/old.json"
"$build/compare" --breakdown "$work/old.json" >/dev/null 2>"$work/err.txt"
[ $? = 2 ] && grep -q "measured_class_s" "$work/err.txt" ||
  { cat "$work/err.txt"; fail "a report without measured_class_s: want exit 2 naming it"; }

# an unwritable trace path: the run fails, names it, and leaves no temporary
timeout 60 mpirun --oversubscribe -np 4 "$build/execute" --plan "$work/plan.json" --dtype fp32 \
  --steps 1 --warmup 0 --trace "$work/no/such/dir/t.json" </dev/null >"$work/bad.out" 2>&1
[ $? != 0 ] && grep -q "no/such/dir/t.json" "$work/bad.out" ||
  { cat "$work/bad.out"; fail "unwritable --trace: want a failure naming the path"; }
ls "$work" | grep -q '\.tmp\.' && fail "a temporary trace file was left behind"
echo "trace: ok"
