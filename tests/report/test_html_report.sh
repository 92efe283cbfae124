#!/usr/bin/env bash
# test_html_report.sh — `plan --html` and `compare --html`: the page is
# self-contained and carries one timeline row per pipeline stage, its steady
# state collapsed at 64 micro-batches (VPP 5) and drawn whole at 8, axes with
# units, memory bars summing to the predicted peak and a caption whose
# pipeline part is within the step (html_check.py page); headless Chromium
# renders it to a PNG that is not blank (html_check.py png) and its DOM keeps
# the labels (the elision mark, the cut axis, the measured tick).  compare
# labels two runs of one plan apart and draws both, measured beside
# predicted.  plan --sweep --html draws three charts.  Exits 77 (skipped)
# without chromium; html_structure.sh checks the pages without a browser.
set -u
build=${PARALLAX_BUILD_ROOT:?}
here=$(cd "$(dirname "$0")" && pwd)
check="$here/html_check.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT; [ -n "${KEEP_PNG:-}" ] && trap 'cp "$tmp"/*.png "$KEEP_PNG"/; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
chrome=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chrome" ] || { echo "test_html_report: skipped (no chromium: scripts/setup installs it)"; exit 77; }

render() { # page.html image.png
  HOME="$tmp" timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1200,1400 --screenshot="$2" "file://$1" >"$tmp/chromium.log" 2>&1
  [ -s "$2" ] || fail "chromium wrote no image: $(tail -3 "$tmp/chromium.log")"
}
dom() { # page.html dom.html: the document as the browser parsed it
  HOME="$tmp" timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --dump-dom \
    "file://$1" >"$2" 2>"$tmp/chromium.log"
  [ -s "$2" ] || fail "chromium dumped no DOM: $(tail -3 "$tmp/chromium.log")"
}

# 1. a pipeline plan (70B on 1024 GPUs: PP with a zero-bubble or interleaved schedule)
"$build/plan" --model 70b --gpus 1024 --top 3 --json --html "$tmp/plan.html" >"$tmp/plan.json" \
  2>"$tmp/err" || fail "plan --html: $(cat "$tmp/err")"
python3 "$check" page "$tmp/plan.html" "$tmp/plan.json" || fail "plan page"
grep -q 'data-collapsed="1"' "$tmp/plan.html" || fail "64 micro-batches, VPP 5: not collapsed"
render "$tmp/plan.html" "$tmp/plan.png"
python3 "$check" png "$tmp/plan.png" || fail "plan rendering"
dom "$tmp/plan.html" "$tmp/plan.dom"
grep -Eq '<g class="elision"[^>]*data-elided-microbatches="[1-9]' "$tmp/plan.dom" \
  || fail "the browser's DOM has no elision mark"
grep -q 'axis from ' "$tmp/plan.dom" || fail "plans within 10 %: the step axis is not cut"

# 2. a fixed 1F1B plan on a small model: two stages, eight micro-batches
"$build/plan" --model tiny-llama --gpus 2 --pp 2 --tp 1 --dp 1 --micro-batch 1 \
  --global-batch 8 --schedule 1f1b --recompute none --zero 0 --json \
  --html "$tmp/small.html" -o "$tmp/small.plan.json" >"$tmp/small.json" 2>"$tmp/err" \
  || fail "plan --html (tiny-llama): $(cat "$tmp/err")"
python3 "$check" page "$tmp/small.html" "$tmp/small.json" || fail "tiny-llama page"
grep -q 'data-collapsed="0"' "$tmp/small.html" || fail "8 micro-batches collapsed"
render "$tmp/small.html" "$tmp/small.png"
python3 "$check" png "$tmp/small.png" || fail "tiny-llama rendering"

# 3. compare: two reports of the same plan, labelled apart, both drawn
report() { # file measured_step_s
  cat >"$1" <<JSON
{"plan": "$tmp/small.plan.json", "world_size": 2,
 "predicted": {"step_time_s": 0.01, "tokens_per_s": 25600, "mfu": 0.1, "hfu": 0.1,
               "peak_memory_bytes": 1000000},
 "measured": {"step_time_s": $2, "tokens_per_s": $(awk -v t="$2" 'BEGIN{print 256/t}'),
              "mfu": 0.08, "hfu": 0.08, "peak_memory_bytes": 1100000}}
JSON
}
report "$tmp/run-a.json" 0.012
report "$tmp/run-b.json" 0.014
"$build/compare" --html "$tmp/cmp.html" "$tmp/run-a.json" "$tmp/run-b.json" >"$tmp/cmp.txt" \
  2>"$tmp/err" || fail "compare --html: $(cat "$tmp/err")"
cat "$tmp/cmp.txt"
grep -q '\[run-a\] ' "$tmp/cmp.txt" && grep -q '\[run-b\] ' "$tmp/cmp.txt" \
  || fail "runs of one plan not labelled apart"
python3 - "$tmp/cmp.html" <<'PY' || fail "compare page"
import re, sys
t = open(sys.argv[1]).read()
assert "<script" not in t.lower()
assert len(re.findall(r'<tr class="measured-row"', t)) == 2, "two measured rows"
assert len(re.findall(r'<section class="run-detail"', t)) == 2, "both runs drawn"
assert len(re.findall(r'class="stage-row"', t)) == 4, "two stages a run"
assert "[run-a]" in t and "[run-b]" in t
PY
render "$tmp/cmp.html" "$tmp/cmp.png"
python3 "$check" png "$tmp/cmp.png" || fail "compare rendering"
dom "$tmp/cmp.html" "$tmp/cmp.dom"
[ "$(grep -o 'measured 0.01[24] s</text>' "$tmp/cmp.dom" | wc -l)" -eq 2 ] \
  || fail "compare: the measured ticks are not labelled"

# 4. a sweep: three charts against the GPU count, one series per profile
"$build/plan" --model 70b --sweep gpus=256,512 --sweep hw=h100-sxm,h200 --partition uniform \
  --html "$tmp/sweep.html" >"$tmp/sweep.txt" 2>"$tmp/err" || fail "plan --sweep --html: $(cat "$tmp/err")"
render "$tmp/sweep.html" "$tmp/sweep.png"
dom "$tmp/sweep.html" "$tmp/sweep.dom"
[ "$(grep -o '<svg class="sweep-chart' "$tmp/sweep.dom" | wc -l)" -eq 3 ] || fail "sweep: not 3 charts"
[ "$(grep -o '<circle class="point"' "$tmp/sweep.dom" | wc -l)" -eq 12 ] || fail "sweep: not 4 points a chart"
echo "test_html_report: ok"
