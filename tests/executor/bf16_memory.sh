#!/usr/bin/env bash
# bf16 storage: memory by kind follows the cost model's dtype_bytes 2
# accounting, the dtype comes from the plan's hardware profile, and the
# --dtype option and unsupported settings fail clearly.
#   bf16_memory.sh BUILD_DIR
# - A plan on h100-sxm (dtype_bytes 2) runs bf16 without --dtype, and its
#   measured weights, grads and optimizer bytes at peak equal the plan's
#   predicted bytes exactly (2 B/param weights, 4 grads, 12 optimizer: fp32
#   master + two moments), under ZeRO-0 and ZeRO-1 (DP 2).
# - The same plans forced to --dtype fp32: bf16 / fp32 = 1/2 for weights
#   (also under ZeRO-3, whose gathered windows are bf16 too), 1 for grads,
#   3/2 for the optimizer (the master joins the two moments).
# - A CPU-test plan (dtype_bytes 4) runs fp32 without --dtype.
# - --dtype fp16 is refused naming the allowed values; grad_dtype = bf16 with
#   bf16 storage is refused (PX_ERR_UNSUPPORTED) naming the field.
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-bf16-mem.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0

fail() { echo "FAIL $*"; failed=$((failed + 1)); }
expect() { # LABEL PX_CMP-ARGS...
  local label=$1
  shift
  if out=$("$cmp" "$@" 2>&1); then echo "ok   $label: $out"
  else fail "$label: $out"; fi
}
# run NAME NP STORAGE [EXECUTE-ARGS...]: one step; STORAGE is the dtype the
# "# storage:" line must name.
run() {
  local name=$1 np=$2 storage=$3
  shift 3
  if ! timeout 60 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$name.json" \
      --steps 1 --warmup 0 --report "$work/$name.r.json" "$@" >"$work/$name.out" 2>&1; then
    fail "$name: execute exited non-zero"; cat "$work/$name.out"; return 1
  fi
  grep -q "^# storage: $storage" "$work/$name.out" ||
    { fail "$name: expected $storage storage: $(grep '^# storage' "$work/$name.out")"; return 1; }
  echo "ok   $name runs $storage"
}
plan() { # NAME PLAN-ARGS...
  local name=$1
  shift
  "$mkplan" --model tiny-llama --layers 4 --seq 32 --micro-batch 1 "$@" -o "$work/$name.json" \
    2>/dev/null || { fail "px_mkplan $*"; return 1; }
}

for z in 0 1 3; do
  plan "z$z" --n-micro 2 --dp 2 --zero "$z" --hw h100-sxm || continue
  run "z$z" 2 bf16 || continue
  cp "$work/z$z.json" "$work/z$z.f32.json"   # the same plan, run in fp32 storage
  run "z$z.f32" 2 fp32 --dtype fp32 || continue
  [ "$z" -lt 2 ] && expect "zero $z: measured = predicted (dtype_bytes 2)" kinds \
    "$work/z$z.r.json" "$work/z$z.json"
  expect "zero $z: weights bf16 / fp32" kindratio "$work/z$z.f32.r.json" "$work/z$z.r.json" 0 weights 1 2
  expect "zero $z: grads bf16 / fp32" kindratio "$work/z$z.f32.r.json" "$work/z$z.r.json" 0 grads 1 1
  expect "zero $z: optimizer bf16 / fp32" kindratio "$work/z$z.f32.r.json" "$work/z$z.r.json" 0 optimizer 3 2
done
# the peak: activations are bf16 too (norm statistics and lse
# stay fp32), which outweighs the fp32 master here
expect "peak memory bf16 < fp32" peak2 "$work/z1.f32.r.json" 0 "$work/z1.r.json" 0
# the report names the storage; the CPU backend has no device clock or pool
if python3 - "$work/z1.r.json" "$work/z1.f32.r.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["dtype"] == "bf16" and b["dtype"] == "fp32", (a["dtype"], b["dtype"])
for r in (a, b):
    assert "device_step_times_s" not in r and "per_rank_device_reserved_peak_bytes" not in r
PY
then echo "ok   report dtype bf16 / fp32, no device keys on the CPU"
else fail "report dtype / device keys"; fi

plan cpu --n-micro 2 && run cpu 1 fp32

# errors
plan err --n-micro 2
if out=$(mpirun --oversubscribe -np 1 "$exe" --plan "$work/err.json" --dtype fp16 2>&1); then
  fail "--dtype fp16 accepted"
elif ! grep -q -- '--dtype "fp16": allowed values are bf16, fp32' <<<"$out"; then
  fail "--dtype fp16: unclear message: $out"
else echo "ok   --dtype fp16 refused: $(grep -m1 dtype <<<"$out")"; fi
sed 's/"grad_dtype"[[:space:]]*:[[:space:]]*"fp32"/"grad_dtype": "bf16"/' "$work/z0.json" >"$work/g16.json"
grep -q '"grad_dtype": "bf16"' "$work/g16.json" || fail "could not write a grad_dtype = bf16 plan"
if out=$(mpirun --oversubscribe -np 2 "$exe" --plan "$work/g16.json" --steps 1 2>&1); then
  fail "grad_dtype = bf16 accepted in bf16 storage"
elif ! grep -q "unsupported: grad_dtype = bf16" <<<"$out"; then
  fail "grad_dtype = bf16: unclear message: $out"
else echo "ok   grad_dtype = bf16 refused: $(grep -m1 grad_dtype <<<"$out")"; fi
# ... and accepted in fp32 storage, where gradients are fp32 anyway
mpirun --oversubscribe -np 2 "$exe" --plan "$work/g16.json" --steps 1 --warmup 0 --dtype fp32 \
  >"$work/g16.out" 2>&1 && echo "ok   grad_dtype = bf16 runs in fp32 storage" ||
  { fail "grad_dtype = bf16 in fp32 storage"; cat "$work/g16.out"; }
echo "$failed failed"
[ "$failed" -eq 0 ]
