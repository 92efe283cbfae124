#!/usr/bin/env bash
# LoRA fine-tuning (plan --finetune lora) on the executor: for tiny-llama and
# tiny-gpt (4 layers, seq 32), every split against the single-rank run of the
# same plan, 3 optimizer steps:
#   - losses within 1e-5 relative;
#   - adapter slices (--dump-weights, ids >= 2^40) within |diff| <= 1e-5 +
#     1e-4 |w| of the single-rank adapters (AdamW epsilon 1e-4, as
#     equivalence.sh explains);
#   - the frozen base (ids < 2^40) byte-identical to the initial weights (a
#     run at --lr 0 and no weight decay) on every rank of every split;
#   - the adapters moved (B starts at zero);
#   - the single-rank run's gradients and optimizer bytes are the adapters'
#     only (4 and 8 bytes an adapter element: fp32, no ZeRO), and DP 2
#     ZeRO-1's weights, grads and optimizer bytes are the plan's prediction.
# Splits: TP 2, TP 2 + SP, PP 2 (1F1B, GPipe, interleaved vpp 2; tiny-gpt's
# tied embedding then has a frozen copy on each end stage), DP 2 with ZeRO 1,
# 2 and 3, CP 2, ZB-H1 (also over vpp 2) and ZB-H2, full and selective
# recompute, and TP 2 x PP 2 x DP 2 on 8 ranks.  tiny-llama runs rank 4,
# alpha 8 on all four targets, tiny-gpt the defaults (rank 32, alpha 32) on
# qkv and fc2 only.  Then: `execute --check` accepts a LoRA plan on the CPU
# backend and refuses it on the CUDA one by name, and refuses a bad
# lora_rank or target naming the field; bf16 storage on TP 2 + SP x DP 2
# ZeRO-2 keeps its base byte-identical too; a checkpoint: 2 steps saved and
# 1 resumed equal 3 steps bit for bit.
#   lora.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-lora.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
lora0=1099511627776 # PX_TID_LORA0: adapter ids from here
failed=0
top=9223372036854775807 # every id
losses() { python3 -c 'import json,sys; print(" ".join(repr(x) for x in json.load(open(sys.argv[1]))["losses"]))' "$1"; }

# run NAME NP EXEC-ARGS -- PLAN-ARGS...: plan and execute, weights dumped.
run() {
  local name=$1 np=$2
  shift 2
  local ex=()
  while [ "$1" != -- ]; do ex+=("$1"); shift; done
  shift
  "$mkplan" --model "$model" --layers 4 --seq 32 --micro-batch 1 --n-micro 4 \
    --finetune lora "${lora[@]}" "$@" -o "$work/$name.json" 2>/dev/null ||
    { echo "FAIL $name: px_mkplan $*"; return 1; }
  if ! timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$name.json" \
      --warmup 0 --adam-eps 1e-4 --report "$work/$name.r.json" \
      --dump-weights "$work/$name.w" "${ex[@]}" >"$work/$name.out" 2>&1; then
    echo "FAIL $name: execute exited non-zero"; cat "$work/$name.out"; return 1
  fi
}

# check NAME NP PLAN-ARGS...: run 3 steps, compare with the reference.
check() {
  local name=$1 np=$2
  shift 2
  run "$name" "$np" --steps 3 -- "$@" || { failed=$((failed + 1)); return; }
  local c="$work/$name.cmp"
  if ! "$cmp" losses "$work/ref.r.json" "$work/$name.r.json" 1e-5 >"$c" 2>&1; then
    echo "FAIL $name: losses differ"; cat "$c"; failed=$((failed + 1)); return
  fi
  if ! "$cmp" weights "$work/ref.w" "$work/$name.w" 1e-5 1e-4 "$lora0" "$top" >>"$c" 2>&1; then
    echo "FAIL $name: adapters differ"; cat "$c"; failed=$((failed + 1)); return
  fi
  if ! "$cmp" weights "$work/init.w" "$work/$name.w" 0 0 0 "$lora0" >>"$c" 2>&1; then
    echo "FAIL $name: the frozen base changed"; cat "$c"; failed=$((failed + 1)); return
  fi
  echo "ok   $name: $(tr '\n' ' ' <"$c")"
}

for model in tiny-llama tiny-gpt; do
  if [ "$model" = tiny-llama ]; then
    lora=(--lora-rank 4 --lora-alpha 8)
  else
    lora=(--lora-targets qkv,fc2)
  fi
  echo "== $model ${lora[*]}"
  run init 1 --steps 1 --lr 0 --weight-decay 0 -- || exit 1
  run ref 1 --steps 3 -- || exit 1
  echo "reference losses: $(losses "$work/ref.r.json")"
  if ! "$cmp" weights "$work/init.w" "$work/ref.w" 0 0 0 "$lora0" >"$work/base.cmp"; then
    echo "FAIL $model: the single-rank run changed its frozen base"; cat "$work/base.cmp"
    failed=$((failed + 1))
  fi
  if "$cmp" weights "$work/init.w" "$work/ref.w" 0 0 "$lora0" "$top" >/dev/null 2>&1; then
    echo "FAIL $model: the adapters did not move"; failed=$((failed + 1))
  fi
  if ! python3 - "$work/ref.r.json" "$work/ref.w/rank0.tsv" "$lora0" <<'PY'; then
import json, sys
rep, tsv, lora0 = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3])
n = sum(int(f[4]) * int(f[6]) for f in (l.split() for l in open(tsv)) if int(f[0]) >= lora0)
kinds = rep["per_rank_memory_at_peak_bytes"][0]
ok = n > 0 and kinds["grads"] == 4 * n and kinds["optimizer"] == 8 * n
print(("ok  " if ok else "FAIL") + " memory: %d adapter elements, grads %d B, optimizer %d B"
      % (n, kinds["grads"], kinds["optimizer"]))
sys.exit(0 if ok else 1)
PY
    failed=$((failed + 1))
  fi
  check tp2            2 --tp 2
  check tp2_sp         2 --tp 2 --sp
  check pp2_1f1b       2 --pp 2 --schedule 1f1b
  check pp2_v2         2 --pp 2 --vpp 2 --schedule interleaved
  check dp2_zero1      2 --dp 2 --n-micro 2 --zero 1
  check dp2_zero2      2 --dp 2 --n-micro 2 --zero 2
  check dp2_zero3      2 --dp 2 --n-micro 2 --zero 3
  check cp2            2 --cp 2
  check pp2_zbh1_sp    4 --pp 2 --tp 2 --sp --schedule zb-h1
  check pp2_v2_zbh1    2 --pp 2 --vpp 2 --schedule zb-h1
  check pp2_gpipe      2 --pp 2 --schedule gpipe
  check rc_selective   2 --tp 2 --sp --recompute selective
  check rc_full_zbh2   2 --pp 2 --schedule zb-h2 --recompute full
  check tp2_pp2_dp2    8 --tp 2 --sp --pp 2 --dp 2 --n-micro 2 --zero 3
  # the cost model's LoRA bytes (frozen base, adapters' grads and state) as run
  if "$cmp" kinds "$work/dp2_zero1.r.json" "$work/dp2_zero1.json" >"$work/kinds.cmp" 2>&1; then
    echo "ok   kinds_dp2_zero1: $(cat "$work/kinds.cmp")"
  else
    echo "FAIL kinds_dp2_zero1: $(cat "$work/kinds.cmp")"; failed=$((failed + 1))
  fi
done

# execute --check: LoRA runs on the CPU backend, not on the CUDA one.
"$exe" --check --plan "$work/ref.json" >"$work/check.out" 2>&1 ||
  { echo "FAIL check: cpu refused a LoRA plan"; cat "$work/check.out"; failed=$((failed + 1)); }
if "$exe" --check --plan "$work/ref.json" --backend cuda >"$work/check.out" 2>&1 ||
   ! grep -q 'finetune = lora: cuda-executor does not run it' "$work/check.out"; then
  echo "FAIL check: --backend cuda: $(cat "$work/check.out")"; failed=$((failed + 1))
else
  echo "ok   check: accepted on cpu, refused on cuda"
fi

# Bad LoRA settings in a plan: refused naming the field and what is allowed.
refuse() { # name, sed expression, expected message
  sed "$2" "$work/ref.json" >"$work/$1.json"
  if "$exe" --check --plan "$work/$1.json" >"$work/$1.out" 2>&1 || ! grep -q -- "$3" "$work/$1.out"
  then
    echo "FAIL $1: $(cat "$work/$1.out")"; failed=$((failed + 1))
  else
    echo "ok   $1: $(cat "$work/$1.out")"
  fi
}
refuse bad_rank 's/"lora_rank": [0-9]*/"lora_rank": 0/' 'parallel.finetune.lora_rank: expected an integer 1..65536'
refuse bad_target 's/"qkv"/"gate"/' 'parallel.finetune.lora_targets: expected a non-empty array of qkv, proj, fc1, fc2'

# bf16 storage (fp32 master and moments of the adapters, ZeRO-2 pieces): the
# frozen base's bf16 copy stays the initial one, the losses follow fp32's.
model=tiny-llama
lora=(--lora-rank 4 --lora-alpha 8)
if run ref 1 --steps 3 -- && run init 1 --steps 1 --lr 0 --weight-decay 0 --dtype bf16 -- &&
   run bf16 4 --steps 3 --dtype bf16 -- --tp 2 --sp --dp 2 --n-micro 2 --zero 2; then
  if "$cmp" weights "$work/init.w" "$work/bf16.w" 0 0 0 "$lora0" >"$work/bf16.cmp" 2>&1 &&
     "$cmp" losses "$work/ref.r.json" "$work/bf16.r.json" 2e-2 >>"$work/bf16.cmp" 2>&1; then
    echo "ok   bf16_tp2sp_dp2_z2: $(tr '\n' ' ' <"$work/bf16.cmp")"
  else
    echo "FAIL bf16_tp2sp_dp2_z2"; cat "$work/bf16.cmp"; failed=$((failed + 1))
  fi
else
  failed=$((failed + 1))
fi

# Checkpoint: 2 steps saved, the third resumed (the base rebuilt from the
# seed the manifest checks, the adapters and their moments loaded): the same
# losses and weights, bit for bit, as 3 steps in one run, on TP 2 x DP 2
# with ZeRO 1.
model=tiny-llama
lora=(--lora-rank 4 --lora-alpha 8)
split=(--tp 2 --dp 2 --n-micro 2 --zero 1)
if run full 4 --steps 3 -- "${split[@]}" &&
   run first 4 --steps 2 --save "$work/ckpt" --save-interval 2 -- "${split[@]}" &&
   run resumed 4 --steps 3 --load "$work/ckpt" -- "${split[@]}"; then
  want=$(losses "$work/full.r.json")
  got="$(losses "$work/first.r.json") $(losses "$work/resumed.r.json")"
  same=1
  for r in 0 1 2 3; do
    cmp -s "$work/full.w/rank$r.bin" "$work/resumed.w/rank$r.bin" || same=0
  done
  if [ "$want" = "$got" ] && [ $same = 1 ]; then
    echo "ok   checkpoint: 3 losses and 4 ranks' weights bit-exact after resuming at step 2"
  else
    echo "FAIL checkpoint: losses [$got] vs [$want], weights equal: $same"
    failed=$((failed + 1))
  fi
else
  failed=$((failed + 1))
fi
echo "$failed failed"
[ "$failed" -eq 0 ]
