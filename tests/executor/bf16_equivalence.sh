#!/usr/bin/env bash
# bf16 storage (execute --dtype bf16) on the CPU backend: activations and the
# compute copy of the weights in bf16, master weights, gradients and AdamW
# state in fp32.
#   bf16_equivalence.sh BUILD_DIR
# For tiny-llama (TP 2 + SP, PP 2 1F1B, DP 2 with ZeRO-1/2/3, CP 2), tiny-gpt
# (TP 2 + SP: LayerNorm, biases, learned positions) and tiny-moe (EP 2 x DP 2;
# EP 2 x expert TP 2 x DP 4: partial expert outputs summed in bf16) and
# tiny-mla (multi-head latent attention: TP 2 + SP, the k_rope gradient
# summed over heads in bf16; PP 2 with DP 2 and ZeRO-1) and tiny-qwen3
# (qk_norm and shared experts: TP 2 + SP x EP 2, PP 2 x EP 2),
# 3 steps of each bf16 split against
#   - the fp32 single-rank run (the reference every fp32 split equals to 1e-5
#     in equivalence.sh): losses within 5e-4 relative;
#   - the bf16 single-rank run: losses within 5e-4 relative where the split
#     moves the rounding points (TP/SP and CP round partial sums and gathered
#     rows to bf16; EP rounds expert rows, expert TP their partial sums),
#     1e-5 where it does not (PP, DP, ZeRO: the same bf16 values in the same
#     order, fp32 gradient sums).
# Why 5e-4: bf16 keeps 8 significant bits (unit roundoff 2^-9 = 2e-3 per
# value), but the loss is a mean over 128 tokens of log-sums computed in fp32
# from fp32-accumulated GEMMs, so rounding errors average out: bf16 vs fp32
# and bf16 across splits differ by <= 1e-4 here, a missing reduction or a
# wrong slice moves the loss by 1e-2 or more.
# Weights (the fp32 master, gathered for the dump): PP within
# equivalence.sh's 1e-4 + 1e-3 |w| (the same values summed in the same
# order); every split that sums gradients in another order (TP/SP, CP, EP,
# and DP with ZeRO-1/2/3, whose reduce-scatter adds the ranks' gradients in
# its own order) within the bound AdamW itself puts on a weight: each step
# moves a weight by lr * m_hat / (sqrt(v_hat) + eps) plus the decay, and
# |m_hat| / sqrt(v_hat) <= B_t for any gradients (Cauchy-Schwarz over the
# bias-corrected averages; B_t = 1.0000 for t = 1, 1.0004 for t = 2 at
# betas 0.9, 0.95).  Two runs whose gradients differ by rounding only
# (a near-zero gradient can flip sign) therefore differ by at most
# 2 lr sum_t B_t after the steps, plus the decay of that difference
# (lr * wd * 2 lr sum B_t, counted).  A wrong slice of weights drawn with std 0.02
# misses by more than that for most elements; the losses (1e-5 for DP) are
# the sharp check.
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-bf16-equiv.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0
# lr 1.1e-3, not 1e-3: the norm weights start at 1.0 (a bf16 grid point) and,
# not decayed, move by lr |m_hat / sqrt(v_hat)| ~ lr a step; at lr 1e-3 step 2
# puts them at 0.998, within 5e-5 of the bf16 rounding midpoint 1 - 2^-9, where
# the fp32 rounding of a DP gradient sum decides their bf16 copy (a loss
# change of 1.4e-5).  1.1e-3 keeps them >= 2e-4 from every midpoint for the
# three steps.
steps=3 lr=1.1e-3
# the AdamW bound above, for these steps and the default betas / weight decay
adam_atol=$(python3 - "$steps" "$lr" <<'PY'
import math, sys
steps, lr = int(sys.argv[1]), float(sys.argv[2])
b1, b2, wd = 0.9, 0.95, 0.1
total = 0.0
for t in range(1, steps + 1):
    # m_hat = sum a_i g_i, v_hat = sum c_i g_i^2: |m_hat|/sqrt(v_hat) <= sqrt(sum a_i^2 / c_i)
    a = [(1 - b1) * b1 ** (t - i) / (1 - b1 ** t) for i in range(1, t + 1)]
    c = [(1 - b2) * b2 ** (t - i) / (1 - b2 ** t) for i in range(1, t + 1)]
    total += math.sqrt(sum(x * x / y for x, y in zip(a, c)))
bound = 2 * lr * total
print(f"{bound * (1 + lr * wd * steps):.6g}")
PY
)
echo "# AdamW weight bound after $steps steps at lr $lr: $adam_atol"

# run NAME NP DTYPE MODEL PLAN-ARGS...: plan, execute 3 steps, keep report + weights.
run() {
  local name=$1 np=$2 dtype=$3 model=$4
  shift 4
  "$mkplan" --model "$model" --layers 4 --seq 32 --micro-batch 1 --n-micro 4 "$@" \
    -o "$work/$name.json" 2>/dev/null || { echo "FAIL $name: px_mkplan $*"; return 1; }
  if ! timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$name.json" \
      --steps "$steps" --warmup 0 --lr "$lr" --dtype "$dtype" --report "$work/$name.r.json" \
      --dump-weights "$work/$name.w" >"$work/$name.out" 2>&1; then
    echo "FAIL $name: execute exited non-zero"; cat "$work/$name.out"; return 1
  fi
  if ! grep -q "^# storage: $dtype" "$work/$name.out"; then
    echo "FAIL $name: execute did not run $dtype storage"; cat "$work/$name.out"; return 1
  fi
}

expect() { # LABEL PX_CMP-ARGS...
  local label=$1
  shift
  if out=$("$cmp" "$@" 2>&1); then echo "ok   $label: $(echo "$out" | tail -1)"
  else echo "FAIL $label: $(echo "$out" | tail -3)"; failed=$((failed + 1)); fi
}

# check NAME NP MODEL LOSS_RTOL W_ATOL W_RTOL PLAN-ARGS...: a bf16 split against
# the model's fp32 and bf16 single-rank runs.
check() {
  local name=$1 np=$2 model=$3 lrtol=$4 watol=$5 wrtol=$6
  shift 6
  run "$name" "$np" bf16 "$model" "$@" || { failed=$((failed + 1)); return; }
  expect "$name vs fp32 1 rank (losses)" losses "$work/$model.f32.r.json" "$work/$name.r.json" 5e-4
  expect "$name vs bf16 1 rank (losses)" losses "$work/$model.bf16.r.json" "$work/$name.r.json" \
    "$lrtol"
  expect "$name vs bf16 1 rank (weights)" weights "$work/$model.bf16.w" "$work/$name.w" \
    "$watol" "$wrtol"
}

for model in tiny-llama tiny-gpt tiny-moe tiny-mla tiny-qwen3; do
  run "$model.f32" 1 fp32 "$model" || exit 1
  run "$model.bf16" 1 bf16 "$model" || exit 1
  expect "$model: bf16 vs fp32, 1 rank (losses)" losses "$work/$model.f32.r.json" \
    "$work/$model.bf16.r.json" 5e-4
  # bf16 must not be fp32 under another name: the losses differ at all
  expect "$model: bf16 is not fp32" differ_any "$work/$model.f32.r.json" "$work/$model.bf16.r.json"
done

check tp2_sp      2 tiny-llama 5e-4 "$adam_atol" 0 --tp 2 --sp
check pp2_1f1b    2 tiny-llama 1e-5 1e-4 1e-3 --pp 2 --schedule 1f1b
check dp2_zero1   2 tiny-llama 1e-5 "$adam_atol" 0 --dp 2 --n-micro 2 --zero 1
check dp2_zero2   2 tiny-llama 1e-5 "$adam_atol" 0 --dp 2 --n-micro 2 --zero 2
check dp2_zero3   2 tiny-llama 1e-5 "$adam_atol" 0 --dp 2 --n-micro 2 --zero 3
check cp2         2 tiny-llama 5e-4 "$adam_atol" 0 --cp 2
check gpt_tp2_sp  2 tiny-gpt   5e-4 "$adam_atol" 0 --tp 2 --sp
check moe_ep2_dp2 2 tiny-moe   5e-4 "$adam_atol" 0 --ep 2 --dp 2 --n-micro 2
check moe_ep2_etp2 4 tiny-moe  5e-4 "$adam_atol" 0 --ep 2 --etp 2 --dp 4 --n-micro 1
check mla_tp2_sp  2 tiny-mla   5e-4 "$adam_atol" 0 --tp 2 --sp
check mla_pp2_dp2_z1 4 tiny-mla 1e-5 "$adam_atol" 0 --pp 2 --dp 2 --n-micro 2 --zero 1
check qwen3_tp2sp_ep2 2 tiny-qwen3 5e-4 "$adam_atol" 0 --tp 2 --sp --ep 2
check qwen3_pp2_ep2   4 tiny-qwen3 5e-4 "$adam_atol" 0 --pp 2 --ep 2 --dp 2 --n-micro 2
echo "$failed failed"
[ "$failed" -eq 0 ]
