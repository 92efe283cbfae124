#!/usr/bin/env bash
# Bad input: non-zero exits with messages that say what is wrong.
set -u
PLAN="$1"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect_error "what" "regex on stderr" args...
expect_error() {
  local what="$1" re="$2"; shift 2
  "$PLAN" "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  [ $rc -ne 0 ] || fail "$what: exit 0"
  grep -qE -e "$re" "$tmp/err" || fail "$what: stderr lacks /$re/: $(cat "$tmp/err")"
  echo "ok: $what (exit $rc): $(head -c 200 "$tmp/err" | head -1)"
}
expect_error "unknown model lists the presets" 'unknown model.*llama3-70b.*seed-70b' --model nosuch --gpus 8
expect_error "unknown profile lists the profiles" 'unknown hardware profile.*h100-sxm.*tpu-v5p' --model 70b --gpus 8 --hw nosuch
expect_error "missing --gpus" '--gpus is required' --model 70b
expect_error "missing --model" '--model is required' --gpus 8
expect_error "bad --schedule" 'allowed values are gpipe, 1f1b, interleaved, zb-h1, zb-h2' --model 70b --gpus 8 --schedule foo
expect_error "bad --recompute" 'allowed values are none, selective, full' --model 70b --gpus 8 --recompute most
expect_error "bad --partition" 'allowed values are milp, uniform' --model 70b --gpus 8 --partition best
expect_error "bad --milp-time-limit" 'expected seconds' --model 70b --gpus 8 --milp-time-limit -1
expect_error "bad --grad-dtype" 'bf16, fp32' --model 70b --gpus 8 --grad-dtype fp8
expect_error "bad --zero" '--zero.*0\.\.3' --model 70b --gpus 8 --zero 4
expect_error "bad number" '--gpus "abc"' --model 70b --gpus abc
expect_error "unknown option" 'unknown option "--frobnicate"' --model 70b --gpus 8 --frobnicate 1
expect_error "GPUs nothing divides" 'no valid configuration.*heads not divisible' --model 70b --gpus 7 --pp 1
expect_error "model cannot fit: closest miss" 'fits in 76.0 GB.*closest miss.*GB over' --model 70b --gpus 8
expect_error "fixed tp not dividing heads" 'heads not divisible' --model 70b --gpus 48 --tp 3
printf '{\n  "name": "broken",\n  "block": "gpt",\n  "hidden": 64,,\n}\n' > "$tmp/bad.json"
expect_error "malformed model JSON: file:line:col" 'bad\.json:4:[0-9]+' --model "$tmp/bad.json" --gpus 8
echo PASS
