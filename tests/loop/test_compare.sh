#!/usr/bin/env bash
# test_compare.sh — `compare` on hand-made reports: the table has a row per
# run with the right relative errors, the limits decide the exit status
# (0 within, 1 outside, table printed either way), --json parses and
# carries the same numbers, and malformed or incomplete reports are named;
# limits outside (0, 1] and negative or non-numeric step times or memory are
# refused; a report whose plan file is gone gets a warning.
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
              "n_micro": 4, "zero": 0, "schedule": "1f1b", "recompute": "none"},
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
[ "$(grep -c ' | yes$' "$tmp/out2")" = 2 ] || fail "expected 2 runs within the limits (good, slow at -20%)"
[ "$(grep -c ' | NO$' "$tmp/out2")" = 1 ] || fail "expected 1 run outside the limits"
"$cmp" --max-time-err 0.15 "$tmp/slow.json" >/dev/null && fail "-20% step time passed a 15% limit"
"$cmp" "$tmp/fat.json" >/dev/null || fail "without limits every run passes"

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
echo "test_compare: ok"
