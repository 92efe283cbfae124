#!/usr/bin/env bash
# test_html_report.sh — `plan --html` and `compare --html`: the page is
# self-contained and carries one timeline row per pipeline stage and memory
# bars summing to the predicted peak (html_check.py page); headless Chromium
# renders it to a PNG that is not blank (html_check.py png).  compare labels
# two runs of one plan apart and draws both, measured beside predicted.
# Exits 77 (skipped) without chromium.
set -u
build=${PARALLAX_BUILD_ROOT:?}
here=$(cd "$(dirname "$0")" && pwd)
check="$here/html_check.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
chrome=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chrome" ] || { echo "test_html_report: skipped (no chromium: scripts/setup installs it)"; exit 77; }

render() { # page.html image.png
  HOME="$tmp" timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars \
    --window-size=1200,1400 --screenshot="$2" "file://$1" >"$tmp/chromium.log" 2>&1
  [ -s "$2" ] || fail "chromium wrote no image: $(tail -3 "$tmp/chromium.log")"
}

# 1. a pipeline plan (70B on 1024 GPUs: PP with a zero-bubble or interleaved schedule)
"$build/plan" --model 70b --gpus 1024 --top 3 --json --html "$tmp/plan.html" >"$tmp/plan.json" \
  2>"$tmp/err" || fail "plan --html: $(cat "$tmp/err")"
python3 "$check" page "$tmp/plan.html" "$tmp/plan.json" || fail "plan page"
render "$tmp/plan.html" "$tmp/plan.png"
python3 "$check" png "$tmp/plan.png" || fail "plan rendering"

# 2. a fixed 1F1B plan on a small model: two stages, eight micro-batches
"$build/plan" --model tiny-llama --gpus 2 --pp 2 --tp 1 --dp 1 --micro-batch 1 \
  --global-batch 8 --schedule 1f1b --recompute none --zero 0 --json \
  --html "$tmp/small.html" -o "$tmp/small.plan.json" >"$tmp/small.json" 2>"$tmp/err" \
  || fail "plan --html (tiny-llama): $(cat "$tmp/err")"
python3 "$check" page "$tmp/small.html" "$tmp/small.json" || fail "tiny-llama page"

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
echo "test_html_report: ok"
