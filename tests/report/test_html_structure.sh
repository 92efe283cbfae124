#!/usr/bin/env bash
# test_html_structure.sh — the HTML pages' structure, no browser needed (the
# rendering is test_html_report.sh's): plan --html at 64 micro-batches and
# VPP 5 collapses the timeline's steady state (what is drawn stays bounded,
# the mark says how many micro-batches it leaves out) and at 8 draws every
# op; every chart has an axis with a unit; the caption's pipeline part is
# within the step (html_check.py page); compare --html labels its measured
# ticks and scales memory to the data; plan --sweep --html draws three
# charts, a cross where a point has no plan.
set -u
build=${PARALLAX_BUILD_ROOT:?}
here=$(cd "$(dirname "$0")" && pwd)
check="$here/html_check.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$build/plan" --model 70b --gpus 1024 --top 5 --json --html "$tmp/plan.html" >"$tmp/plan.json" \
  2>"$tmp/err" || fail "plan --html: $(cat "$tmp/err")"
python3 - "$tmp/plan.json" <<'PY' || exit 1
import json, sys
p = json.load(open(sys.argv[1]))["plans"][0]
if p["num_microbatches"] * p["parallel"]["vpp"] < 64:
    sys.exit("FAIL: the chosen plan has %d micro-batches x VPP %d: the collapse is not exercised"
             % (p["num_microbatches"], p["parallel"]["vpp"]))
PY
python3 "$check" page "$tmp/plan.html" "$tmp/plan.json" || fail "70b page"
grep -q 'data-collapsed="1"' "$tmp/plan.html" || fail "70b: the steady state is drawn whole"
grep -q 'axis from ' "$tmp/plan.html" || fail "70b: plans within 10 % on an axis from 0"

"$build/plan" --model tiny-llama --gpus 2 --pp 2 --tp 1 --dp 1 --micro-batch 1 \
  --global-batch 8 --schedule 1f1b --recompute none --zero 0 --json \
  --html "$tmp/small.html" -o "$tmp/small.plan.json" >"$tmp/small.json" 2>"$tmp/err" \
  || fail "plan --html (tiny-llama): $(cat "$tmp/err")"
python3 "$check" page "$tmp/small.html" "$tmp/small.json" || fail "tiny-llama page"
grep -q 'data-collapsed="0"' "$tmp/small.html" || fail "8 micro-batches: collapsed"

# compare: the measured tick labelled; 1.26 MB of memory on an axis in MB
cat >"$tmp/run.json" <<JSON
{"plan": "$tmp/small.plan.json", "world_size": 2,
 "predicted": {"step_time_s": 0.01, "tokens_per_s": 25600, "mfu": 0.1, "hfu": 0.1,
               "peak_memory_bytes": 1000000},
 "measured": {"step_time_s": 0.012, "tokens_per_s": 21333, "mfu": 0.08, "hfu": 0.08,
              "peak_memory_bytes": 1100000}}
JSON
"$build/compare" --html "$tmp/cmp.html" "$tmp/run.json" >/dev/null 2>"$tmp/err" \
  || fail "compare --html: $(cat "$tmp/err")"
grep -q 'class="tick-label meas-label"[^>]*>measured 0.012 s<' "$tmp/cmp.html" \
  || fail "compare: the measured tick has no label"
python3 - "$tmp/cmp.html" <<'PY' || exit 1
import re, sys
t = open(sys.argv[1]).read()
svg = re.search(r'<svg class="memory"[^>]*data-axis-max-bytes="([0-9.e+]+)"', t)
peak = max(int(x) for x in re.findall(r'<g class="mem-bar"[^>]*data-total-bytes="(\d+)"', t))
top = float(svg.group(1))
if not peak <= top <= 2 * peak:
    sys.exit("FAIL: memory axis to %.3g bytes for a largest stage of %d bytes" % (top, peak))
PY

# a sweep: one point without a plan (8 GPUs), three charts, a cross on each
"$build/plan" --model 70b --sweep gpus=8,256,512 --sweep hw=h100-sxm,h200 --partition uniform \
  --json --html "$tmp/sweep.html" >"$tmp/sweep.json" 2>"$tmp/err" \
  || fail "plan --sweep --html: $(cat "$tmp/err")"
python3 - "$tmp/sweep.html" "$tmp/sweep.json" <<'PY' || exit 1
import json, re, sys
t = open(sys.argv[1]).read()
pts = json.load(open(sys.argv[2]))["sweep"]
ok = sum(1 for p in pts if "best" in p)
charts = re.findall(r'<svg class="sweep-chart (\w+)"', t)
assert charts == ["step", "mfu", "memory"], charts
assert len(re.findall(r'<circle class="point"', t)) == 3 * ok, (ok, "points a chart")
assert len(re.findall(r'<text class="no-plan"', t)) == 3 * (len(pts) - ok)
assert 0 < ok < len(pts), "the sweep should have points with and without a plan"
assert len(re.findall(r'<g class="axis-y"[^>]*data-unit="(s|%|GB)"', t)) == 3
for bad in ("<script", "<link", " src=", "url("):
    assert bad not in t.lower(), bad
PY
echo "test_html_structure: ok"
