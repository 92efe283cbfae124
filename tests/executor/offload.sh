#!/usr/bin/env bash
# Optimizer offload (plan --offload optimizer [--offload-fraction F]) on the
# CPU executor: the leading share F of each rank's optimizer state on the
# host, stepped on a host thread.  For each split, fractions 1 and 0.5
# against the same plan without offload, 3 optimizer steps:
#   - losses (the report's, as printed) and every rank's final weights
#     (--dump-weights) byte-identical: the host runs the same arithmetic;
#   - the report's host bytes are ceil(F n) elements of the state (n: the
#     rank's optimizer elements; 12 bytes each in bf16 storage, master and
#     moments, 8 in fp32, the moments) and the device's optimizer bytes
#     drop by as much; the plan's host bytes are a rank's elements at 16
#     bytes (the cost model adds the master in fp32 and the gradient copy);
# Splits: tiny-llama (4 layers, seq 32) on one rank, DP 2 with ZeRO 1 and 3,
# TP 2, PP 2, DP 2 ZeRO-2 in bf16 storage, LoRA on DP 2 ZeRO-1; tiny-moe on
# DP 2 x EP 2 with ZeRO 1 (the experts' state after the dense shard's).
# Then: a checkpoint with offload (2 steps saved, the third resumed) equals
# 3 steps bit for bit; `execute --check` accepts optimizer offload on the
# CPU backend, refuses it on the CUDA one, and refuses parameter and
# activation offload naming them.
#   offload.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-offload.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
exe="$build/execute"
failed=0
losses() { python3 -c 'import json,sys; print(" ".join(repr(x) for x in json.load(open(sys.argv[1]))["losses"]))' "$1"; }

# run NAME NP EXEC-ARGS -- PLAN-ARGS...: plan and execute, weights dumped.
run() {
  local name=$1 np=$2
  shift 2
  local ex=()
  while [ "$1" != -- ]; do ex+=("$1"); shift; done
  shift
  "$mkplan" --model "$model" --layers 4 --seq 32 --micro-batch 1 "$@" \
    -o "$work/$name.json" 2>/dev/null || { echo "FAIL $name: px_mkplan $*"; return 1; }
  if ! timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$name.json" \
      --warmup 0 --report "$work/$name.r.json" \
      --dump-weights "$work/$name.w" "${ex[@]}" >"$work/$name.out" 2>&1; then
    echo "FAIL $name: execute exited non-zero"; cat "$work/$name.out"; return 1
  fi
}

# same NAME REF NP: losses and each rank's weights byte-identical.
same() {
  local r
  [ "$(losses "$work/$1.r.json")" = "$(losses "$work/$2.r.json")" ] ||
    { echo "losses differ: [$(losses "$work/$1.r.json")] vs [$(losses "$work/$2.r.json")]"; return 1; }
  for ((r = 0; r < $3; r++)); do
    cmp "$work/$1.w/rank$r.bin" "$work/$2.w/rank$r.bin" || return 1
  done
}

# memory NAME REF F BYTES: each rank's host bytes and optimizer drop (BYTES
# a state element: 12 bf16, 8 fp32).
memory() {
  python3 - "$work/$1.r.json" "$work/$2.r.json" "$3" "$4" <<'EOF'
import json, math, sys
off, ref = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
f, b = float(sys.argv[3]), int(sys.argv[4])
host = off["per_rank_host_bytes"]
for r, h in enumerate(host):
    o_ref = ref["per_rank_memory_at_peak_bytes"][r]["optimizer"]
    o_off = off["per_rank_memory_at_peak_bytes"][r]["optimizer"]
    want = math.ceil(f * (o_ref // b)) * b
    if h != want or h <= 0 or o_ref - o_off != h:
        sys.exit(f"rank {r}: host {h} bytes, want {want}; optimizer {o_ref} -> {o_off}")
# the plan's figure (one stage's GPU): the same elements at 16 bytes (the
# state with the fp32 master, and the fp32 gradient copy)
pred = off["predicted_host_bytes"]
if pred not in [h // b * 16 for h in host]:
    sys.exit(f"predicted host bytes {pred}: no rank's {host} at 16 bytes an element")
print(f"host {host} bytes (the plan's {pred} at 16 bytes an element)")
EOF
}

# check NAME NP BYTES EXEC-ARGS -- PLAN-ARGS...: the split without offload,
# then with fractions 1 and 0.5, compared.
check() {
  local name=$1 np=$2 b=$3 f
  shift 3
  local ex=()
  while [ "$1" != -- ]; do ex+=("$1"); shift; done
  shift
  ex+=(--steps 3)
  run "$name.none" "$np" "${ex[@]}" -- "$@" || { failed=$((failed + 1)); return; }
  for f in 1 0.5; do
    if ! run "$name.f$f" "$np" "${ex[@]}" -- "$@" --offload optimizer --offload-fraction "$f"; then
      failed=$((failed + 1)); continue
    fi
    if same "$name.f$f" "$name.none" "$np" >"$work/$name.f$f.cmp" 2>&1 &&
       memory "$name.f$f" "$name.none" "$f" "$b" >>"$work/$name.f$f.cmp" 2>&1; then
      echo "ok   $name fraction $f: bit-identical, $(tail -1 "$work/$name.f$f.cmp")"
    else
      echo "FAIL $name fraction $f: $(cat "$work/$name.f$f.cmp")"; failed=$((failed + 1))
    fi
  done
}

model=tiny-llama
check single 1 8 -- --n-micro 4 --zero 1
check dp2_zero1 2 8 -- --dp 2 --n-micro 2 --zero 1
check dp2_zero3 2 8 -- --dp 2 --n-micro 2 --zero 3
check tp2 2 8 -- --tp 2 --n-micro 4 --zero 1
check pp2 2 8 -- --pp 2 --n-micro 4 --zero 1
check bf16_dp2_zero2 2 12 --dtype bf16 -- --dp 2 --n-micro 2 --zero 2
check lora_dp2_zero1 2 8 -- --dp 2 --n-micro 2 --zero 1 --finetune lora --lora-rank 4 \
  --lora-alpha 8
model=tiny-moe
check moe_dp2_ep2_zero1 2 8 -- --dp 2 --ep 2 --n-micro 2 --zero 1

# Checkpoint: the host share saved and restored with the rest, bit-exact.
model=tiny-llama
split=(--dp 2 --n-micro 2 --zero 3 --offload optimizer --offload-fraction 0.5)
if run full 2 --dtype bf16 --steps 3 -- "${split[@]}" &&
   run first 2 --dtype bf16 --steps 2 --save "$work/ckpt" --save-interval 2 -- "${split[@]}" &&
   run resumed 2 --dtype bf16 --steps 3 --load "$work/ckpt" -- "${split[@]}"; then
  want=$(losses "$work/full.r.json")
  got="$(losses "$work/first.r.json") $(losses "$work/resumed.r.json")"
  if [ "$want" = "$got" ] && cmp -s "$work/full.w/rank0.bin" "$work/resumed.w/rank0.bin" &&
     cmp -s "$work/full.w/rank1.bin" "$work/resumed.w/rank1.bin"; then
    echo "ok   checkpoint: 3 losses and the weights bit-exact after resuming at step 2"
  else
    echo "FAIL checkpoint: losses [$got] vs [$want]"; failed=$((failed + 1))
  fi
else
  failed=$((failed + 1))
fi

# execute --check: optimizer offload on the CPU backend only; parameter and
# activation offload refused by name.
verdict() { # name, plan args, backend, expected message ("" accepts)
  "$mkplan" --model tiny-llama --layers 4 --seq 32 --micro-batch 1 --n-micro 2 $2 \
    -o "$work/$1.json" 2>/dev/null
  local rc=0
  "$exe" --check --plan "$work/$1.json" --backend "$3" >"$work/$1.out" 2>&1 || rc=$?
  if { [ -z "$4" ] && [ $rc = 0 ]; } || { [ -n "$4" ] && [ $rc != 0 ] && grep -q -- "$4" "$work/$1.out"; }
  then
    echo "ok   $1: $(head -c 200 "$work/$1.out" | tr '\n' ' ' | sed "s|$work/||g")"
  else
    echo "FAIL $1 (exit $rc): $(cat "$work/$1.out")"; failed=$((failed + 1))
  fi
}
verdict check_cpu "--dp 2 --zero 1 --offload optimizer --offload-fraction 0.5" cpu ""
verdict check_cuda "--dp 2 --zero 1 --offload optimizer" cuda \
  "offload = optimizer: cuda-executor does not offload the optimizer"
verdict check_params "--dp 2 --zero 3 --offload params" cpu \
  "offload = params: cpu-executor does not offload parameters"
verdict check_activations "--dp 2 --zero 1 --offload activations" cpu \
  "offload = activations: cpu-executor does not offload activations"
echo "$failed failed"
[ "$failed" -eq 0 ]
