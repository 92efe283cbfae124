#!/bin/sh
# The validate front ends: build/validate and plan --validate print the same
# table, exit 0 with --check while the bounds hold, 1 on a bad file, 2 on a bad
# option.
set -u
B="${PARALLAX_BUILD_ROOT:?}"
S="${PARALLAX_SOURCE_ROOT:?}"
DATA="$S/tests/validate/data/published-megatron.json"
fail=0
out=$("$B/validate" "$DATA" --check) || { echo "validate --check exited $?"; fail=1; }
rows=$(printf '%s\n' "$out" | grep -c -E '^(narayanan21|korthikanti22|mcore24)-')
# 48 rows in the main table, 5 again in the layer table, 12 in the ratio table
[ "$rows" -ge 48 ] || { echo "only $rows row lines"; fail=1; }
printf '%s\n' "$out" | grep -q '^# bounds .*: pass$' || { echo "no passing bounds line"; fail=1; }
plan_out=$("$B/plan" --validate "$DATA") || { echo "plan --validate exited $?"; fail=1; }
[ "$plan_out" = "$out" ] || { echo "plan --validate differs from validate"; fail=1; }
"$B/validate" "$DATA" --json | grep -q '"within_bounds": true' || { echo "--json: no within_bounds true"; fail=1; }
"$B/validate" "$DATA" --explain korthikanti22-22B-seqsel | grep -q '^step ' || { echo "--explain: no step line"; fail=1; }
RUNS="$S/tests/validate/data/published-runs.json"
runs=$("$B/validate" "$RUNS" --check-families) || { echo "validate published-runs --check-families exited $?"; fail=1; }
printf '%s\n' "$runs" | grep -q '^# families' || { echo "published-runs: no families table"; fail=1; }
printf '%s\n' "$runs" | grep -q '^all  ' || { echo "published-runs: no all line"; fail=1; }
printf '%s\n' "$runs" | grep -q '^all fp8 or moe ' || { echo "published-runs: no all fp8 or moe line"; fail=1; }
printf '%s\n' "$runs" | grep -q 'fp8 not modelled' && { echo "published-runs: fp8 rows refused"; fail=1; }
"$B/validate" "$RUNS" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["families"] and d["all_usable"]["usable"] >= 240, d["all_usable"]
assert d["all_lowp_moe"]["predicted"] >= 100, d["all_lowp_moe"]
refused = [r for r in d["rows"] if r["usable"] and r["refused"]]
assert all(r["note"] for r in refused)
' || { echo "published-runs --json: families / refused rows"; fail=1; }
"$B/validate" /nonexistent/published.json >/dev/null 2>&1
rc=$?
[ "$rc" -eq 1 ] || { echo "missing file: exit $rc, want 1 (a library error, as plan --validate)"; fail=1; }
err=$("$B/validate" "$DATA" --max-vpp 4 2>&1 >/dev/null)
rc=$?
[ "$rc" -eq 2 ] || { echo "unknown option --max-vpp: exit $rc, want 2"; fail=1; }
"$B/validate" "$DATA" --explain no-such-row >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || { echo "unknown --explain id: exit $rc, want 2"; fail=1; }
[ $fail -eq 0 ] && echo "validate_cli: ok"
exit $fail
