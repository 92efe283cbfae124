#!/usr/bin/env bash
# Zero-bubble memory, predicted against measured: `calibrate --quick` makes
# an fp32 profile of this machine (the CPU executor's dtype), `plan` with
# every dimension fixed writes tiny-llama (8 layers) plans under ZB-H1 and
# ZB-H2, and `execute` runs them on 4 MPI ranks.  The predicted peak (the
# worst stage) must be within 10 % of the largest per-rank peak of the
# tracked allocator.  What makes ZB differ from 1F1B: the micro-batches in
# flight between F and W (ZB-H1 p - i, ZB-H2 2p - 1) and the output
# gradients (and the last stage's logits gradient) the ones past B keep for
# W (docs/cost-model.md, "Zero-bubble gradients").
#   zb_memory.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/px-zbmem.XXXXXX")
trap 'rm -rf "$work"' EXIT
cmp="$build/tests/executor/px_cmp"
hw="$work/cpu.json"
if ! "$build/calibrate" --quick -o "$hw" >"$work/calibrate.out" 2>&1; then
  echo "FAIL: calibrate --quick:"; tail -5 "$work/calibrate.out"; exit 1
fi
failed=0

run() { # NAME PLAN-ARGS...
  local name=$1
  shift
  "$build/plan" --model "$here/tiny-llama-8l.json" --gpus 4 --hw "$hw" --cp 1 --dp 1 \
    --micro-batch 1 --zero 0 --global-batch 8 --micro-batches 8 --overlap off \
    --partition uniform "$@" -o "$work/$name.json" >"$work/$name.plan" 2>&1 ||
    { echo "FAIL $name: plan:"; cat "$work/$name.plan"; exit 1; }
  timeout 120 mpirun --oversubscribe -np 4 "$build/execute" --plan "$work/$name.json" \
    --steps 1 --warmup 0 --report "$work/$name.r.json" >"$work/$name.out" 2>&1 ||
    { echo "FAIL $name: execute:"; tail -5 "$work/$name.out"; exit 1; }
  if out=$("$cmp" predpeak "$work/$name.r.json" 0.10 2>&1); then echo "ok   $name: $out"
  else echo "FAIL $name: $out"; failed=$((failed + 1)); fi
}

run zb-h1 --tp 1 --pp 4 --vpp 1 --recompute none --schedule zb-h1
run zb-h2 --tp 1 --pp 4 --vpp 1 --recompute none --schedule zb-h2
# TP 2 with SP (the row-parallel gradients kept as sequence shards) and full
# recompute (B rebuilds the activations and W still needs them)
run zb-h2-tp2-sp --tp 2 --pp 2 --vpp 1 --recompute none --schedule zb-h2
run zb-h2-full --tp 1 --pp 4 --vpp 1 --recompute full --schedule zb-h2
echo "$failed failed"
[ "$failed" -eq 0 ]
