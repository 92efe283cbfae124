#!/usr/bin/env bash
# test_compare.sh — `compare` on hand-made reports: the table has a row per
# run with the right relative errors, the limits decide the exit status
# (0 within, 1 outside, table printed either way), --json parses and
# carries the same numbers, and malformed or incomplete reports are named;
# limits outside (0, 1] and negative or non-numeric step times or memory are
# refused; a report whose plan file is gone gets a warning.  Then a real
# PP 2 run (plan, execute under mpirun): the report carries the predicted
# peak per pipeline stage, the stages differ, each rank is within 10 % of
# its own stage, and compare checks every rank against its own stage.
set -u
build=${PARALLAX_BUILD_ROOT:?}
cmp=$build/compare
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

report() { # file pred_step meas_step pred_mem meas_mem
  cat >"$1" <<JSON
{"losses": [5.1, 5.0, 4.9], "world_size": 2,
 "parallel": {"tp": 2, "pp": 1, "dp": 1, "vpp": 1, "sp": true, "micro_batch": 1,
              "num_microbatches": 4, "zero": 0, "schedule": "1f1b", "recompute": "none"},
 "predicted": {"step_time_s": $2, "tokens_per_s": $(awk -v t="$2" 'BEGIN{print 512/t}'),
               "mfu": 0.5, "hfu": 0.5, "peak_memory_bytes": $4},
 "measured": {"step_time_s": $3, "tokens_per_s": $(awk -v t="$3" 'BEGIN{print 512/t}'),
              "mfu": 0.4, "hfu": 0.4, "peak_memory_bytes": $5},
 "relative_error": {}}
JSON
}
report "$tmp/good.json" 0.110 0.100 105000000 100000000
report "$tmp/slow.json" 0.080 0.100 100000000 100000000
report "$tmp/fat.json" 0.100 0.100 120000000 100000000

"$cmp" --max-time-err 0.25 --max-mem-err 0.10 "$tmp/good.json" >"$tmp/out" \
  || fail "good run rejected: $(cat "$tmp/out")"
cat "$tmp/out"
grep -q '+10.0%' "$tmp/out" || fail "step time error +10.0% not shown"
grep -q '+5.0%' "$tmp/out" || fail "memory error +5.0% not shown"
grep -q 'tp2+sp pp1 dp1 mb1x4 1f1b' "$tmp/out" || fail "run label missing"
grep -q '^# limits' "$tmp/out" || fail "limits header missing"

"$cmp" --max-time-err 0.25 --max-mem-err 0.10 "$tmp/good.json" "$tmp/slow.json" \
  "$tmp/fat.json" >"$tmp/out2"
rc=$?
cat "$tmp/out2"
[ "$rc" = 1 ] || fail "memory error of 20% passed the 10% limit (exit $rc)"
[ "$(grep -c ' | within$' "$tmp/out2")" = 2 ] || fail "expected 2 runs within the limits (good, slow at -20%)"
[ "$(grep -c ' | outside$' "$tmp/out2")" = 1 ] || fail "expected 1 run outside the limits"
"$cmp" --max-time-err 0.15 "$tmp/slow.json" >/dev/null && fail "-20% step time passed a 15% limit"
# Without limits the defaults (25 % step time, 10 % memory) still mark a
# run outside them, plainly, and count it; the exit status stays 0.
report "$tmp/wild.json" 0.223 0.100 100000000 100000000
"$cmp" "$tmp/good.json" "$tmp/wild.json" "$tmp/fat.json" >"$tmp/out3" \
  || fail "without limits the exit status is not 0"
cat "$tmp/out3"
grep -q '+123.0% .* | outside$' "$tmp/out3" || fail "+123% step error not marked outside"
grep -q '+20.0% .* | outside$' "$tmp/out3" || fail "+20% memory error not marked outside (default 10 %)"
[ "$(grep -c ' | within$' "$tmp/out3")" = 1 ] || fail "expected 1 run within the default limits"
grep -q '; 2 outside the limits (defaults)$' "$tmp/out3" || fail "default-limit count wrong: $(tail -1 "$tmp/out3")"
grep -q '^# limits (defaults): |step time err| <= 25%, |peak memory err| <= 10%' "$tmp/out3" \
  || fail "default limits not stated"

"$cmp" --json --max-time-err 0.25 "$tmp/good.json" "$tmp/slow.json" >"$tmp/j" || fail "--json run failed"
python3 - "$tmp/j" <<'PY' || fail "--json output wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["n_runs"] == 2 and d["n_failed"] == 0, d
r = d["runs"][1]
assert abs(r["relative_error"]["step_time_s"] + 0.2) < 1e-9, r
assert r["predicted"]["peak_memory_bytes"] == 100000000
assert abs(d["worst_step_time_err"] - 0.2) < 1e-9
PY

echo '{"measured": {"step_time_s": 1,' >"$tmp/broken.json"
"$cmp" "$tmp/broken.json" 2>"$tmp/e1" >/dev/null; rc=$?
[ "$rc" = 2 ] || fail "malformed report: exit $rc, want 2"
grep -q 'broken.json:[0-9][0-9]*:' "$tmp/e1" || fail "malformed report: no file:line ($(cat "$tmp/e1"))"
echo '{"measured": {"step_time_s": 1, "tokens_per_s": 1, "mfu": 0, "hfu": 0, "peak_memory_bytes": 1}}' >"$tmp/half.json"
"$cmp" "$tmp/half.json" 2>"$tmp/e2" >/dev/null && fail "report without predicted accepted"
grep -q 'predicted' "$tmp/e2" || fail "missing section not named: $(cat "$tmp/e2")"
"$cmp" "$tmp/none.json" 2>/dev/null >/dev/null; [ $? = 2 ] || fail "missing file: exit status not 2"
"$cmp" --max-time-err abc "$tmp/good.json" 2>"$tmp/e3" >/dev/null; [ $? = 2 ] || fail "bad limit accepted"
grep -q 'max-time-err' "$tmp/e3" || fail "bad limit not named"
# Limits are fractions in (0, 1]: "25" (meant as 25 %) and 0 are refused,
# the message names the flag and the value.
for lim in 25 0 -0.1 1.5; do
  "$cmp" --max-time-err "$lim" "$tmp/good.json" 2>"$tmp/e4" >/dev/null; rc=$?
  [ "$rc" = 2 ] || fail "--max-time-err $lim: exit $rc, want 2"
  grep -q -- "--max-time-err $lim: a fraction" "$tmp/e4" || fail "--max-time-err $lim: $(cat "$tmp/e4")"
done
"$cmp" --max-mem-err 10 "$tmp/good.json" 2>"$tmp/e5" >/dev/null; rc=$?
[ "$rc" = 2 ] || fail "--max-mem-err 10: exit $rc, want 2"
grep -q -- "--max-mem-err 10: a fraction" "$tmp/e5" || fail "--max-mem-err 10: $(cat "$tmp/e5")"
"$cmp" --max-time-err 1 --max-mem-err 1 "$tmp/good.json" >/dev/null || fail "a limit of 1 (100 %) refused"

# Negative step time or peak memory on either side: refused, file and field named.
report "$tmp/negt.json" 0.110 -0.100 105000000 100000000
report "$tmp/negm.json" 0.110 0.100 -5 100000000
"$cmp" "$tmp/negt.json" 2>"$tmp/e6" >/dev/null; rc=$?
[ "$rc" = 2 ] || fail "negative measured step time: exit $rc, want 2"
grep -q 'negt.json: measured.step_time_s' "$tmp/e6" || fail "negative step time not named: $(cat "$tmp/e6")"
"$cmp" "$tmp/negm.json" 2>"$tmp/e7" >/dev/null; rc=$?
[ "$rc" = 2 ] || fail "negative predicted memory: exit $rc, want 2"
grep -q 'negm.json: predicted.peak_memory_bytes' "$tmp/e7" || fail "negative memory not named: $(cat "$tmp/e7")"
sed 's/"step_time_s": 0.100/"step_time_s": "fast"/' "$tmp/good.json" >"$tmp/nan.json"
"$cmp" "$tmp/nan.json" 2>"$tmp/e8" >/dev/null; rc=$?
[ "$rc" = 2 ] || fail "step time that is not a number: exit $rc, want 2"
grep -q 'nan.json.*measured.step_time_s' "$tmp/e8" || fail "non-number not named: $(cat "$tmp/e8")"

# A report naming a plan file that is gone (as execute writes them: no
# "parallel" object): still tabulated under its file name, with a warning.
python3 - "$tmp/good.json" "$tmp/orphan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["parallel"]
d["plan"] = "no-such-plan.json"
json.dump(d, open(sys.argv[2], "w"))
PY
"$cmp" "$tmp/orphan.json" 2>"$tmp/e9" >"$tmp/out3" || fail "orphan report refused: $(cat "$tmp/e9")"
grep -q '^orphan ' "$tmp/out3" || fail "orphan report not labelled by its file name: $(cat "$tmp/out3")"
grep -q 'warning: .*orphan.json: plan "no-such-plan.json".*cannot be opened' "$tmp/e9" \
  || fail "unopenable plan not reported: $(cat "$tmp/e9")"
"$cmp" "$tmp/good.json" 2>"$tmp/e10" >/dev/null
[ ! -s "$tmp/e10" ] || fail "warning without a plan field: $(cat "$tmp/e10")"

# --breakdown: one measured step for a run, the table's (measured
# step_time_s, the median of the slowest rank's steps), not the ranks' mean
# step of measured_class_s; the classes and "other" sum to it.  Two runs of
# one plan with long report names: the label is shown whole in both tables.
classes() { # file meas_step ranks_mean_step
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
path, step, mean = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
r = json.load(open(path))
r["measured"]["step_time_s"] = step
keys = ["gemm", "attention", "elementwise", "comm", "p2p", "optimizer"]
r["measured_class_s"] = {k: [0.002, 0.002] for k in keys}
r["measured_class_s"]["step"] = [mean, mean]
r["predicted_class_s"] = {k: 0.002 for k in keys}
r["predicted_class_s"]["step"] = r["predicted"]["step_time_s"]
json.dump(r, open(path, "w"))
PY
}
for n in first second; do
  f="$tmp/report-of-the-$n-run-on-the-quiet-machine.json"
  report "$f" 0.030 0.024 100000000 100000000
  classes "$f" 0.0240 0.0319
done
"$cmp" --breakdown "$tmp"/report-of-the-*-run-on-the-quiet-machine.json >"$tmp/bd" \
  || fail "compare --breakdown on hand-made reports: $(cat "$tmp/bd")"
cat "$tmp/bd"
for n in first second; do
  lab="tp2+sp pp1 dp1 mb1x4 1f1b \\[report-of-the-$n-run-on-the-quiet-machine\\]"
  [ "$(grep -c "^$lab " "$tmp/bd")" = 9 ] || fail "label of the $n run cut or missing (want 1 table row + 8 breakdown rows)"
  grep -q "^$lab  *step  *|  *0.0300  *0.0240 " "$tmp/bd" || fail "breakdown step of the $n run is not the table's 0.0240"
done
"$cmp" --breakdown --json "$tmp"/report-of-the-first-run-on-the-quiet-machine.json >"$tmp/bdj" \
  || fail "compare --breakdown --json"
python3 - "$tmp/bdj" <<'PY' || fail "--breakdown --json step is not the table's"
import json, sys
run = json.load(open(sys.argv[1]))["runs"][0]
b = run["breakdown"]
assert b["step"]["measured_s"] == run["measured"]["step_time_s"] == 0.024, b["step"]
rows = ["gemm", "attention", "elementwise", "comm", "p2p", "optimizer", "other"]
assert abs(sum(b[r]["measured_s"] for r in rows) - 0.024) < 1e-12, b
PY

# --csv: the table's twin, a header with units in the names and a row per
# report with the same numbers; --csv with --json (or --breakdown) refused.
"$cmp" --csv "$tmp/good.json" "$tmp/wild.json" >"$tmp/csv" || fail "--csv failed"
cat "$tmp/csv"
python3 - "$tmp/csv" "$tmp" <<'PY' || fail "--csv output wrong"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 2, rows
for need in ("predicted_step_time_s", "measured_step_time_s", "step_time_rel_err",
             "predicted_peak_memory_bytes", "measured_peak_memory_bytes", "within_limits"):
    assert need in rows[0], (need, rows[0].keys())
g, w = rows
assert g["report"] == sys.argv[2] + "/good.json" and g["run"] == "tp2+sp pp1 dp1 mb1x4 1f1b [good]", g
assert abs(float(g["step_time_rel_err"]) - 0.1) < 1e-9 and g["within_limits"] == "yes", g
assert abs(float(w["step_time_rel_err"]) - 1.23) < 1e-9 and w["within_limits"] == "no", w
assert int(g["predicted_peak_memory_bytes"]) == 105000000, g
PY
"$cmp" --csv --json "$tmp/good.json" >"$tmp/cj" 2>"$tmp/e11"; rc=$?
[ "$rc" = 2 ] && [ ! -s "$tmp/cj" ] && grep -q -- '--csv and --json both given' "$tmp/e11" \
  || fail "--csv --json: exit $rc, $(cat "$tmp/e11")"
"$cmp" --csv --breakdown "$tmp/good.json" >/dev/null 2>"$tmp/e12" && fail "--csv --breakdown accepted"
grep -q -- '--csv holds the table only' "$tmp/e12" || fail "--csv --breakdown: $(cat "$tmp/e12")"

# Repeated runs of one plan (one label, told apart by report name): a 10x
# apart pair, far beyond their step-to-step ranges, is warned about, naming
# both reports; a pair within their ranges is not.
steps() { # file median step times...
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["measured"]["step_time_s"] = float(sys.argv[2])
r["step_times_s"] = [float(x) for x in sys.argv[3:]]
json.dump(r, open(sys.argv[1], "w"))
PY
}
mkdir -p "$tmp/rep"
for n in a b c; do report "$tmp/rep/$n.json" 0.030 0.024 100000000 100000000; done
steps "$tmp/rep/a.json" 0.024 0.023 0.024 0.025
steps "$tmp/rep/b.json" 0.240 0.238 0.240 0.242
steps "$tmp/rep/c.json" 0.025 0.023 0.025 0.027
"$cmp" "$tmp/rep/a.json" "$tmp/rep/b.json" >/dev/null 2>"$tmp/e13" || fail "repeated runs: exit $?"
cat "$tmp/e13"
grep -q "warning: two runs of one plan disagree beyond their noise: $tmp/rep/a.json 0.0240 s and $tmp/rep/b.json 0.2400 s (10.00x)" \
  "$tmp/e13" || fail "runs 10x apart not warned about: $(cat "$tmp/e13")"
"$cmp" "$tmp/rep/a.json" "$tmp/rep/c.json" >/dev/null 2>"$tmp/e14" || fail "repeated runs: exit $?"
grep -q "disagree" "$tmp/e14" && fail "runs within their noise warned about: $(cat "$tmp/e14")"

# A real pipeline run: every rank against its own stage's prediction.
# loop-gpt (tied embeddings: the LM head on the last stage) at PP 2 under
# 1F1B: stage 0 holds two micro-batches in flight, stage 1 one and the head,
# so the two stages' predictions differ (about 10 %).  fp32 storage (an
# h100-sxm profile with dtype_bytes 4) so the CPU executor runs what the
# plan costed; memory is counted, not timed, so the load does not matter.
if ! command -v mpirun >/dev/null 2>&1; then
  echo "test_compare: ok (no mpirun: the pipeline run skipped)"
  exit 0
fi
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
src=${PARALLAX_SOURCE_ROOT:?}
python3 - "$src/hw_profiles/h100-sxm.json" "$tmp/fp32.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["name"], d["dtype_bytes"] = "h100-fp32", 4
json.dump(d, open(sys.argv[2], "w"))
PY
"$build/plan" --model "$src/tests/loop/models/loop-gpt.json" --gpus 2 --hw "$tmp/fp32.json" \
  --seq 128 --tp 1 --pp 2 --dp 1 --micro-batch 2 --global-batch 8 --schedule 1f1b \
  --recompute none --zero 0 --overlap off -o "$tmp/pp2.plan.json" >"$tmp/pp2.plan.txt" 2>&1 \
  || fail "plan pp2: $(cat "$tmp/pp2.plan.txt")"
timeout 120 mpirun --oversubscribe -np 2 "$build/execute" --plan "$tmp/pp2.plan.json" \
  --steps 1 --warmup 0 --report "$tmp/pp2.json" >"$tmp/pp2.exec.txt" 2>&1 \
  || fail "execute pp2: $(tail -5 "$tmp/pp2.exec.txt")"
grep -A3 '^# rank' "$tmp/pp2.exec.txt"
grep -q '^# predicted peak per pipeline stage (bytes): [0-9]* [0-9]*$' "$tmp/pp2.exec.txt" \
  || fail "execute printed no per-stage prediction"
grep -Eq '^# rank +stage +peak_mem_bytes +predicted_bytes +rel_error' "$tmp/pp2.exec.txt" \
  || fail "execute's per-rank table has no stage / predicted columns"
python3 - "$tmp/pp2.json" <<'PY' || fail "per-stage memory in the report"
import json, sys
d = json.load(open(sys.argv[1]))
st = d["predicted_stage_peak_memory_bytes"]
assert len(st) == 2 and all(isinstance(v, int) and v > 0 for v in st), st
assert abs(st[0] - st[1]) > 0.02 * max(st), "stages do not differ: %s" % st
# the worst stage is the plan's single prediction
assert max(st) == d["predicted"]["peak_memory_bytes"], (st, d["predicted"])
assert d["per_rank_stage"] == [0, 1], d["per_rank_stage"]
pred = d["per_rank_predicted_peak_memory_bytes"]
meas = d["per_rank_peak_memory_bytes"]
assert pred == [st[s] for s in d["per_rank_stage"]], pred
for r, (p, m) in enumerate(zip(pred, meas)):
    e = (p - m) / m
    assert abs(e - d["per_rank_peak_memory_relative_error"][r]) < 1e-12
    assert abs(e) <= 0.10, "rank %d: predicted %d, measured %d (%+.1f%%)" % (r, p, m, 100 * e)
    print("rank %d stage %d: predicted %d measured %d (%+.1f%%)" % (r, r, p, m, 100 * e))
PY
"$cmp" --max-mem-err 0.10 "$tmp/pp2.json" >"$tmp/out4" || fail "pp2 run outside 10 %: $(cat "$tmp/out4")"
cat "$tmp/out4"
[ "$(grep -c 'loop-gpt tp1 pp2 dp1 mb2x4 1f1b  *[01]  *[01] |' "$tmp/out4")" = 2 ] \
  || fail "compare: no row per rank with its stage"
"$cmp" --json "$tmp/pp2.json" >"$tmp/j2" || fail "compare --json pp2"
python3 - "$tmp/j2" "$tmp/pp2.json" <<'PY' || fail "compare --json per rank"
import json, sys
c, d = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
run = c["runs"][0]
assert [x["stage"] for x in run["per_rank"]] == [0, 1]
assert [x["predicted_peak_memory_bytes"] for x in run["per_rank"]] == d["per_rank_predicted_peak_memory_bytes"]
assert abs(c["worst_rank_peak_memory_err"] - max(abs(e) for e in d["per_rank_peak_memory_relative_error"])) < 1e-12
PY

# A stage that is off while the worst-stage comparison holds: rank 1's own
# stage predicted 25 % low fails --max-mem-err 0.10 (exit 1, row outside); the
# worst-stage column alone would not have caught it.
python3 - "$tmp/pp2.json" "$tmp/skew.json" "$tmp/short.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
lo = int(d["per_rank_peak_memory_bytes"][1] * 0.75)
d["per_rank_predicted_peak_memory_bytes"][1] = lo
d["predicted_stage_peak_memory_bytes"][1] = lo
d["predicted"]["peak_memory_bytes"] = max(d["per_rank_peak_memory_bytes"])  # worst stage exact
json.dump(d, open(sys.argv[2], "w"))
d["per_rank_stage"] = [0]
json.dump(d, open(sys.argv[3], "w"))
PY
"$cmp" --max-mem-err 0.10 "$tmp/skew.json" >"$tmp/out5"; rc=$?
[ "$rc" = 1 ] || fail "a rank 25 % off its own stage passed (exit $rc): $(cat "$tmp/out5")"
grep -q ' +0.0% | *-25.0% r1 | outside$' "$tmp/out5" || fail "skewed run's row: $(cat "$tmp/out5")"
"$cmp" "$tmp/short.json" 2>"$tmp/e11" >/dev/null; rc=$?
[ "$rc" = 2 ] || fail "per_rank_stage of the wrong length: exit $rc, want 2"
grep -q 'short.json: per_rank_stage has 1 entries; expected 2' "$tmp/e11" \
  || fail "wrong length not named: $(cat "$tmp/e11")"
echo "test_compare: ok"
