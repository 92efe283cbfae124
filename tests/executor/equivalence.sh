#!/usr/bin/env bash
# Equivalence of every split with the single-rank run: for MODEL,
# the losses of 3 optimizer steps under each split equal the single-rank
# losses within 1e-5 relative, and the updated weight slices of several
# splits equal the matching slices of the single-rank weights.
#   equivalence.sh MODEL BUILD_DIR
# 8 layers (so PP 4 x vpp 2 has a layer per chunk), seq 32, global batch 4.
# tiny-moe (4 layers: one dense, three with 4 experts, top 2) runs its own list
# of expert-parallel splits: experts over DP (with edp 1 and 2), over the TP
# ranks of the attention, with pipeline stages, context parallelism, ZeRO 1-3
# (experts sharded over their expert-data-parallel group), a zero-bubble
# schedule and full recompute; and expert tensor parallelism (each expert's
# ffn split over etp ranks): etp alone, with ep, with ZeRO-1 and ZeRO-3 (edp 2),
# with TP (rows sliced over TP, and SP), with pipeline stages.
# tiny-mla (multi-head latent attention, MoE like tiny-moe) runs the splits
# that touch its projections: TP (replicated down projections and latent
# norms summed over TP; column-parallel ups, row-parallel output), SP, PP
# with zero-bubble schedules (an MLA layer's W is empty: B takes its weight
# gradients), DP with ZeRO 1 and 3, CP (the expanded k/v
# rows all-gathered), EP over DP and over the TP ranks, recompute modes.
# Weights: |diff| <= 1e-5 + 1e-4 |w|, AdamW at epsilon 1e-4 (--adam-eps).
# At the default 1e-8 an update is lr * sign(g) for a gradient near zero, so
# the fp32 rounding of a split's different summation order can flip it: up
# to 2 lr = 2e-3 a step, whatever the split's correctness (the BLAS of one
# CPU put an etp 2 weight 1.4e-4 off).  At 1e-4 the update is smooth in the
# gradient (its slope at most lr / epsilon = 10), so rounding differences of
# ~1e-9 stay below 1e-7 after 3 steps, while a wrong slice or a missing
# reduction moves a weight by lr times a fraction of its step, ~1e-4 or more.
set -u
model=$1
build=$2
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-equiv-$model.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0
layers=8
[ "$model" = tiny-moe ] && layers=4
[ "$model" = tiny-mla ] && layers=4
[ "$model" = tiny-qwen3 ] && layers=4

# run NAME NP DUMP PLAN-ARGS...: plan, execute, keep the report (and weights).
run() {
  local name=$1 np=$2 dump=$3
  shift 3
  "$mkplan" --model "$model" --layers "$layers" --seq 32 --micro-batch 1 --n-micro 4 "$@" \
    -o "$work/$name.json" 2>/dev/null || { echo "FAIL $name: px_mkplan $*"; return 1; }
  local extra=()
  [ "$dump" = dump ] && extra=(--dump-weights "$work/$name.w")
  if ! timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$name.json" \
      --steps 3 --warmup 0 --adam-eps 1e-4 --report "$work/$name.r.json" "${extra[@]}" \
      >"$work/$name.out" 2>&1; then
    echo "FAIL $name: execute exited non-zero"; cat "$work/$name.out"; return 1
  fi
}

# check NAME NP DUMP PLAN-ARGS...: run, then compare with the reference.
check() {
  local name=$1 dump=$3
  run "$@" || { failed=$((failed + 1)); return; }
  if ! "$cmp" losses "$work/ref.r.json" "$work/$name.r.json" 1e-5 >"$work/$name.cmp" 2>&1; then
    echo "FAIL $name: losses differ"; cat "$work/$name.cmp"; failed=$((failed + 1)); return
  fi
  if [ "$dump" = dump ] &&
     ! "$cmp" weights "$work/ref.w" "$work/$name.w" 1e-5 1e-4 >>"$work/$name.cmp" 2>&1; then
    echo "FAIL $name: weights differ"; cat "$work/$name.cmp"; failed=$((failed + 1)); return
  fi
  echo "ok   $name: $(tr '\n' ' ' <"$work/$name.cmp")"
}

run ref 1 dump || exit 1
echo "reference losses: $(grep -o '"losses".*' "$work/ref.r.json" | head -1)"
# tiny-qwen3 (qk_norm, 2 kv heads, 4 experts top 2 + 2 shared experts, one
# dense first layer): the qk_norm weights' gradients summed over TP with and
# without SP, the shared experts split over TP (SP, and the sliced routing
# without it), with EP, ETP, CP, pipeline stages under ZB-H1 (with and
# without full recompute), selective recompute and ZeRO 1-3.
if [ "$model" = tiny-qwen3 ]; then
  check tp2_sp            2 dump   --tp 2 --sp
  check ep2_tp2           2 dump   --ep 2 --tp 2
  check tp2sp_selective   2 nodump --tp 2 --sp --recompute selective
  check etp2_tp2          2 dump   --etp 2 --tp 2
  check cp2_ep2           2 dump   --cp 2 --ep 2
  check pp2_ep2_zbh1_full 4 nodump --pp 2 --ep 2 --dp 2 --n-micro 2 --schedule zb-h1 --recompute full
  check pp2_zbh1          2 dump   --pp 2 --schedule zb-h1
  check ep2_dp2_zero2     2 dump   --ep 2 --dp 2 --n-micro 2 --zero 2
  check ep2_tp2sp_dp2_z1  4 dump   --ep 2 --tp 2 --sp --dp 2 --n-micro 2 --zero 1
  check ep2_tp2sp_dp2_z3  4 dump   --ep 2 --tp 2 --sp --dp 2 --n-micro 2 --zero 3
  echo "$failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
if [ "$model" = tiny-moe ]; then
  check ep2_dp2           2 dump   --ep 2 --dp 2 --n-micro 2
  check ep2_dp4           4 dump   --ep 2 --dp 4 --n-micro 1
  check ep2_tp2           2 dump   --ep 2 --tp 2
  check ep2_tp2sp_dp2_z1  4 nodump --ep 2 --tp 2 --sp --dp 2 --n-micro 2 --zero 1
  check pp2_ep2_dp2       4 dump   --pp 2 --ep 2 --dp 2 --n-micro 2
  check pp2_ep2_zbh1_full 4 nodump --pp 2 --ep 2 --dp 2 --n-micro 2 --schedule zb-h1 --recompute full
  check cp2_ep4_dp2       4 nodump --cp 2 --ep 4 --dp 2 --n-micro 2
  check ep2_dp4_zero2     4 nodump --ep 2 --dp 4 --n-micro 1 --zero 2
  check ep2_dp4_zero3     4 dump   --ep 2 --dp 4 --n-micro 1 --zero 3
  check ep2_tp2sp_dp2_z3  4 dump   --ep 2 --tp 2 --sp --dp 2 --n-micro 2 --zero 3
  check etp2_dp2          2 dump   --etp 2 --dp 2 --n-micro 2
  check ep2_etp2_dp4      4 dump   --ep 2 --etp 2 --dp 4 --n-micro 1
  check ep2_etp2_dp4_z1   4 dump   --ep 2 --etp 2 --dp 4 --n-micro 1 --zero 1
  check etp2_dp4_z3       4 dump   --etp 2 --dp 4 --n-micro 1 --zero 3
  check etp2_tp2          2 dump   --etp 2 --tp 2
  check ep2_etp2_tp2sp_z1 4 dump   --ep 2 --etp 2 --tp 2 --sp --dp 2 --n-micro 2 --zero 1
  check pp2_etp2_zbh1     4 nodump --pp 2 --etp 2 --dp 2 --n-micro 2 --schedule zb-h1 --recompute full
  echo "$failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
if [ "$model" = tiny-mla ]; then
  check tp2              2 dump   --tp 2
  check tp2_sp_sel       2 dump   --tp 2 --sp --recompute selective
  check tp4_sp           4 nodump --tp 4 --sp
  check pp2_1f1b         2 nodump --pp 2 --schedule 1f1b
  check pp2_zbh2         2 nodump --pp 2 --schedule zb-h2
  check pp4_zbh1_full    4 dump   --pp 4 --schedule zb-h1 --recompute full
  check dp2_zero1        2 dump   --dp 2 --n-micro 2 --zero 1
  check ep2_dp2_zero3    2 dump   --ep 2 --dp 2 --n-micro 2 --zero 3
  check cp2              2 dump   --cp 2
  check cp2_tp2_sp       4 dump   --cp 2 --tp 2 --sp
  check ep2_tp2sp_dp2_z1 4 dump   --ep 2 --tp 2 --sp --dp 2 --n-micro 2 --zero 1
  check tp2_pp2_dp2_z3   8 nodump --tp 2 --sp --pp 2 --dp 2 --n-micro 2 --zero 3
  echo "$failed failed"
  [ "$failed" -eq 0 ]
  exit
fi
check tp2            2 dump   --tp 2
check tp2_sp         2 dump   --tp 2 --sp
check pp2_1f1b       2 nodump --pp 2 --schedule 1f1b
check pp2_gpipe      2 nodump --pp 2 --schedule gpipe
check pp4_v2         4 dump   --pp 4 --vpp 2 --schedule interleaved
check pp4_zbh1       4 dump   --pp 4 --schedule zb-h1
check pp4_v2_zbh1    4 dump   --pp 4 --vpp 2 --schedule zb-h1
check tp2sp_pp2_zbh1 4 nodump --tp 2 --sp --pp 2 --schedule zb-h1 --recompute full
check pp2_zbh2       2 dump   --pp 2 --schedule zb-h2
check pp4_zbh2       4 nodump --pp 4 --schedule zb-h2
check dp2            2 nodump --dp 2 --n-micro 2
check dp2_zero1      2 dump   --dp 2 --n-micro 2 --zero 1
check dp2_zero2      2 dump   --dp 2 --n-micro 2 --zero 2
check dp2_zero3      2 dump   --dp 2 --n-micro 2 --zero 3
check tp2_dp2_zero3  4 dump   --tp 2 --sp --dp 2 --n-micro 2 --zero 3
check pp2_dp2_z3_zb  4 nodump --pp 2 --dp 2 --n-micro 2 --zero 3 --schedule zb-h1 --recompute full
check tp2_pp2_dp2    8 dump   --tp 2 --pp 2 --dp 2 --n-micro 2 --sp --zero 1
check tp2_sp_pp2_b2  4 nodump --tp 2 --sp --pp 2 --micro-batch 2 --n-micro 2
check cp2            2 dump   --cp 2
check cp4_selective  4 nodump --cp 4 --recompute selective
check cp2_tp2_sp     4 dump   --cp 2 --tp 2 --sp
check cp2_pp2_dp2_z1 8 nodump --cp 2 --pp 2 --dp 2 --n-micro 2 --zero 1
check uneven_pp2     2 dump   --pp 2 --chunks 6,2
check uneven_pp3     3 nodump --pp 3 --chunks 2,4,2 --schedule gpipe
check rc_selective   2 nodump --tp 2 --sp --recompute selective
check rc_full        2 nodump --pp 2 --recompute full
check rc_per_layer   2 nodump --pp 2 --layer-recompute none,full,selective,full,none,selective,full,none
check no_flash_tp2   2 nodump --tp 2 --no-flash
echo "$failed failed"
[ "$failed" -eq 0 ]
