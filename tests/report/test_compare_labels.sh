#!/usr/bin/env bash
# compare labels runs of the same plan apart: two reports with the same
# split get their report's file name appended (and a count where the names
# repeat too); the run column holds the whole label; --json carries the
# same labels.
set -u
build=${PARALLAX_BUILD_ROOT:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
report() { # file step
  cat >"$1" <<JSON
{"world_size": 2,
 "parallel": {"tp": 2, "pp": 1, "dp": 1, "vpp": 1, "sp": true, "micro_batch": 1,
              "num_microbatches": 4, "zero": 0, "schedule": "1f1b", "recompute": "selective"},
 "predicted": {"step_time_s": 0.1, "tokens_per_s": 5120, "mfu": 0.5, "hfu": 0.5,
               "peak_memory_bytes": 1000},
 "measured": {"step_time_s": $2, "tokens_per_s": 5000, "mfu": 0.4, "hfu": 0.4,
              "peak_memory_bytes": 1000}}
JSON
}
mkdir -p "$tmp/x" "$tmp/y"
report "$tmp/slow-node.json" 0.2
report "$tmp/fast-node.json" 0.1
report "$tmp/x/r.json" 0.11
report "$tmp/y/r.json" 0.12
report "$tmp/other.json" 0.1
sed -i 's/"tp": 2/"tp": 1/' "$tmp/other.json"
"$build/compare" "$tmp/slow-node.json" "$tmp/fast-node.json" "$tmp/x/r.json" "$tmp/y/r.json" \
  "$tmp/other.json" >"$tmp/out" 2>"$tmp/err" || fail "compare: $(cat "$tmp/err")"
cat "$tmp/out"
label='tp2+sp pp1 dp1 mb1x4 1f1b rc:selective'
for tail in "[slow-node]" "[fast-node]" "[r]" "[r #2]"; do
  grep -qF "$label $tail " "$tmp/out" || fail "no row labelled \"$label $tail\""
done
grep -qF 'tp1 pp1 dp1 mb1x4 1f1b rc:selective  ' "$tmp/out" || fail "a unique label changed"
grep -qF 'tp1 pp1 dp1 mb1x4 1f1b rc:selective [' "$tmp/out" && fail "a unique label got a tail"
"$build/compare" --json "$tmp/slow-node.json" "$tmp/fast-node.json" >"$tmp/j" || fail "--json"
python3 - "$tmp/j" <<'PY' || fail "--json labels"
import json, sys
runs = json.load(open(sys.argv[1]))["runs"]
labels = [r["run"] for r in runs]
assert len(set(labels)) == 2 and all(l.endswith("node]") for l in labels), labels
PY
echo "test_compare_labels: ok"
