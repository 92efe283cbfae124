#!/bin/sh
# Calibrated predictions per family: for every family of the shared
# published-runs files (rows sharing `group`, GPU and mapped framework) with at
# least 4 usable rows, `calibrate --from-runs` fits the family's first 3 rows
# and `plan` predicts the rest with the fitted profiles
# (../shared/tools/fit_families.py).  Prints its per-family table, file by
# file; the goals (docs/calibration.md): mean |error| <= 5 %, every family
# <= 10 %.
#
#   bench/fit_families.sh [BUILD_DIR] [DATA_FILE ...]
#
# Run from the repository root (the tool reads hw_profiles/ from there).
set -u
B=${1:-build}
[ $# -gt 0 ] && shift
TOOL=../shared/tools/fit_families.py
[ -f "$TOOL" ] || { echo "no $TOOL beside the repository"; exit 1; }
[ $# -gt 0 ] || set -- ../shared/data/published-runs.json ../shared/data/published-runs-2.json
rc=0
for f in "$@"; do
  echo "== $f"
  python3 "$TOOL" "$B/plan" "$f" --max-err 0.05 || rc=1
done
exit $rc
