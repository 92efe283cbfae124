#!/usr/bin/env bash
# test_compare.sh — `compare` on hand-made reports: the table has a row per
# run with the right relative errors, the limits decide the exit status
# (0 within, 1 outside, table printed either way), --json parses and
# carries the same numbers, and malformed or incomplete reports are named.
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
echo "test_compare: ok"
