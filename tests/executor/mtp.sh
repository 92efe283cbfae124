#!/usr/bin/env bash
# Multi-token prediction (docs/executor.md, "Multi-token prediction"): every
# split of a model with MTP modules against its single-rank run, losses
# within 1e-5 relative and the updated weights |diff| <= 1e-5 + 1e-4 |w| at
# --adam-eps 1e-4, as equivalence.sh checks them.
#  - tiny-llama (4 layers) with 1 module: TP 2, TP 2 + SP with selective
#    recompute, PP 2 under 1F1B, interleaved (vpp 2) and ZB-H1, DP 2 with
#    ZeRO-1 and ZeRO-3, full recompute, and TP 2 + SP x PP 2 x DP 2 ZeRO-1;
#    with tied embeddings, PP 2 (the LM head's copy serves the modules);
#  - tiny-llama with 2 modules: TP 2 + SP, interleaved PP 2, DP 2 ZeRO-3;
#  - tiny-mla (MLA, MoE) with 1 module: TP 2, TP 2 + SP, PP 2 ZB-H1 with full
#    recompute, EP 2 x DP 2 ZeRO-3.
# Then `execute --check`: the CPU executor refuses MTP with CP, with LoRA
# and with seq_len <= D by name, the CUDA executor refuses MTP.
#   mtp.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-mtp.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0
model=
mtp=
tag=

# run NAME NP PLAN-ARGS...: plan, execute, keep the report and weights.
run() {
  local name=$1 np=$2
  shift 2
  "$mkplan" --model "$model" --layers 4 --mtp "$mtp" --seq 32 --micro-batch 1 --n-micro 4 \
    "$@" -o "$work/$tag-$name.json" 2>/dev/null ||
    { echo "FAIL $tag $name: px_mkplan $*"; return 1; }
  if ! timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$tag-$name.json" \
      --steps 3 --warmup 0 --adam-eps 1e-4 --report "$work/$tag-$name.r.json" \
      --dump-weights "$work/$tag-$name.w" >"$work/$tag-$name.out" 2>&1; then
    echo "FAIL $tag $name: execute exited non-zero"; cat "$work/$tag-$name.out"; return 1
  fi
}

# check NAME NP PLAN-ARGS...: run, then compare with this suite's reference.
check() {
  local name=$1
  run "$@" || { failed=$((failed + 1)); return; }
  if ! "$cmp" losses "$work/$tag-ref.r.json" "$work/$tag-$name.r.json" 1e-5 \
      >"$work/$tag-$name.cmp" 2>&1; then
    echo "FAIL $tag $name: losses differ"; cat "$work/$tag-$name.cmp"
    failed=$((failed + 1)); return
  fi
  if ! "$cmp" weights "$work/$tag-ref.w" "$work/$tag-$name.w" 1e-5 1e-4 \
      >>"$work/$tag-$name.cmp" 2>&1; then
    echo "FAIL $tag $name: weights differ"; cat "$work/$tag-$name.cmp"
    failed=$((failed + 1)); return
  fi
  echo "ok   $tag $name: $(tr '\n' ' ' <"$work/$tag-$name.cmp")"
}

# suite MODEL MTP TAG: the reference run of MODEL with MTP modules.
suite() {
  model=$1 mtp=$2 tag=$3
  run ref 1 || { failed=$((failed + 1)); return 1; }
  # the reported loss holds the MTP term: the report says how much
  grep -q '"mtp_losses"' "$work/$tag-ref.r.json" ||
    { echo "FAIL $tag: the report has no mtp_losses"; failed=$((failed + 1)); }
}

if suite tiny-llama 1 llama-mtp1; then
  check tp2              2 --tp 2
  check tp2_sp_sel       2 --tp 2 --sp --recompute selective
  check pp2_1f1b         2 --pp 2
  check pp2_vpp2         2 --pp 2 --vpp 2 --schedule interleaved
  check pp2_zbh1         2 --pp 2 --schedule zb-h1
  check dp2_zero1        2 --dp 2 --n-micro 2 --zero 1
  check dp2_zero3        2 --dp 2 --n-micro 2 --zero 3
  check full             1 --recompute full
  check tp2sp_pp2_dp2_z1 8 --tp 2 --sp --pp 2 --dp 2 --n-micro 2 --zero 1
fi
sed 's/"vocab": 256,/"vocab": 256,\n  "tied_embeddings": true,/' \
  "$(dirname "$0")/../../models/tiny-llama.json" >"$work/tiny-llama-tied.json"
if suite "$work/tiny-llama-tied.json" 1 llama-tied-mtp1; then
  check pp2_1f1b         2 --pp 2
fi
if suite tiny-llama 2 llama-mtp2; then
  check tp2_sp           2 --tp 2 --sp
  check pp2_vpp2         2 --pp 2 --vpp 2 --schedule interleaved
  check dp2_zero3        2 --dp 2 --n-micro 2 --zero 3
fi
if suite tiny-mla 1 mla-mtp1; then
  check tp2              2 --tp 2
  check tp2_sp           2 --tp 2 --sp
  check pp2_zbh1_full    2 --pp 2 --schedule zb-h1 --recompute full
  check ep2_dp2_zero3    2 --ep 2 --dp 2 --n-micro 2 --zero 3
fi

# execute --check: what stays refused, by name.
expect_check() {
  local name=$1 pattern=$2
  shift 2
  if "$exe" --check "$@" >"$work/$name.check" 2>&1; then
    echo "FAIL check $name: accepted"; failed=$((failed + 1)); return
  fi
  if ! grep -Eq "$pattern" "$work/$name.check"; then
    echo "FAIL check $name: $(cat "$work/$name.check")"; failed=$((failed + 1)); return
  fi
  echo "ok   check $name"
}
"$mkplan" --model tiny-llama --mtp 1 --cp 2 -o "$work/cp2.json" 2>/dev/null
expect_check cp2 "cp = 2 with n_mtp_modules = 1: .*allowed: cp = 1" --plan "$work/cp2.json"
"$mkplan" --model tiny-llama --mtp 1 --finetune lora -o "$work/lora.json" 2>/dev/null
expect_check lora "finetune = lora with n_mtp_modules = 1" --plan "$work/lora.json"
"$mkplan" --model tiny-llama --mtp 2 --seq 2 -o "$work/seq2.json" 2>/dev/null
expect_check seq2 "seq_len = 2 with n_mtp_modules = 2: .*allowed: seq_len > n_mtp_modules" \
  --plan "$work/seq2.json"
"$mkplan" --model tiny-llama --mtp 1 -o "$work/one.json" 2>/dev/null
expect_check cuda "multi-token prediction .* not supported by cuda-executor" \
  --plan "$work/one.json" --backend cuda
echo "$failed failed"
[ "$failed" -eq 0 ]
