#!/usr/bin/env bash
# Peak memory per rank follows the pipeline schedule: the tracked
# peak of stage 0 is larger under GPipe (m micro-batches in flight) than under
# 1F1B (pp), stage 0 holds more than the last stage under 1F1B,
# interleaving holds more on stage 0 than plain 1F1B, ZB-H1 holds 1F1B's
# micro-batches (stage 0's peak within 5 % of 1F1B's: only one micro-batch's
# output gradients wait for W), and ZB-H2's longer warm-up raises stage 0's
# above 1F1B's and ZB-H1's.
#   memory.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0

run() { # NAME NP PLAN-ARGS...
  local name=$1 np=$2
  shift 2
  "$mkplan" --model tiny-llama --layers 8 --seq 32 --n-micro 8 "$@" -o "$work/$name.json" \
    2>/dev/null &&
  timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$name.json" --steps 1 \
    --warmup 0 --report "$work/$name.r.json" >"$work/$name.out" 2>&1 ||
    { echo "FAIL $name: run failed"; cat "$work/$name.out"; exit 1; }
}
expect() { # NAME CMP-ARGS...
  local name=$1
  shift
  if out=$("$cmp" "$@" 2>&1); then echo "ok   $name: $out"
  else echo "FAIL $name: $out"; failed=$((failed + 1)); fi
}

run gpipe 4 --pp 4 --schedule gpipe
run 1f1b 4 --pp 4 --schedule 1f1b
run inter 4 --pp 4 --vpp 2 --schedule interleaved
run zbh1 4 --pp 4 --schedule zb-h1
run zbh2 4 --pp 4 --schedule zb-h2
# rank = stage here (tp = 1, order tp-cp-ep-pp-dp)
expect "gpipe > 1f1b on stage 0" peak2 "$work/gpipe.r.json" 0 "$work/1f1b.r.json" 0
expect "1f1b: stage 0 > last stage" peak "$work/1f1b.r.json" 0 3
expect "1f1b: stage 1 > stage 2" peak "$work/1f1b.r.json" 1 2
expect "interleaved > 1f1b on stage 0" peak2 "$work/inter.r.json" 0 "$work/1f1b.r.json" 0
# ZB-H1 runs W right after B: stage 0 holds p = 4 micro-batches as under
# 1F1B, plus one micro-batch's output gradients (B -> W).
expect "zb-h1 ~ 1f1b on stage 0 (5 %)" peakclose "$work/zbh1.r.json" 0 "$work/1f1b.r.json" 0 0.05
expect "zb-h1 > 1f1b on stage 0 (its B -> W gradients)" peak2 "$work/zbh1.r.json" 0 "$work/1f1b.r.json" 0
expect "zb-h1 stage 0 > stage 3 (p - i in flight)" peak "$work/zbh1.r.json" 0 3
# ZB-H2's longer warm-up is the price of no bubble: stage 0 holds 2p - 1 = 7
# micro-batches (m = 8) where 1F1B and ZB-H1 hold p = 4.
expect "zb-h2 > 1f1b on stage 0" peak2 "$work/zbh2.r.json" 0 "$work/1f1b.r.json" 0
expect "zb-h2 > zb-h1 on stage 0" peak2 "$work/zbh2.r.json" 0 "$work/zbh1.r.json" 0

# The report's relative errors are the error of the prediction,
# (predicted - measured) / measured, as `compare` computes them.
expect "relative_error = (predicted - measured) / measured" relerr "$work/1f1b.r.json"

# ZeRO stages at DP 4 on a model whose weights dominate (8 layers, 8 tokens
# per micro-batch): each stage shards one more of optimizer state, gradients,
# weights, so the per-rank peak falls stage by stage.
for z in 0 1 2 3; do
  run zero$z 4 --seq 8 --n-micro 1 --dp 4 --zero $z
done
expect "zero-0 > zero-1 (dp 4)" peak2 "$work/zero0.r.json" 0 "$work/zero1.r.json" 0
expect "zero-1 > zero-2 (dp 4)" peak2 "$work/zero1.r.json" 0 "$work/zero2.r.json" 0
expect "zero-2 > zero-3 (dp 4)" peak2 "$work/zero2.r.json" 0 "$work/zero3.r.json" 0
echo "$failed failed"
[ "$failed" -eq 0 ]
