#!/usr/bin/env bash
# The plan contract: what `plan` writes, `execute` runs.
#  1. For each tiny preset on 1, 2, 4 and 8 GPUs: the chosen plan as written
#     (-o, its stage split included) and every plan of `plan --top 20`
#     (--write-top) run one step under mpirun (CPU backend, oversubscribed),
#     all of one GPU count in one launch (execute --plans DIR).  Identical
#     plan files run once.  tiny-mla (multi-head latent attention
#     with MoE layers) runs `--top 3`: its attention is the one difference
#     from tiny-moe, and exec_equivalence_tiny-mla covers it under every
#     split; 20 plans more per GPU count would add minutes to CI.  tiny-qwen3
#     (qk_norm, MoE with shared experts) runs `--top 8`: its ranked plans
#     past 8 vary the schedule and ZeRO stage of the same split again.
#  2. For the big presets on 8 ... 16384 GPUs: `execute --check --plans` (one
#     process, no mpirun) accepts the chosen plan and every ranked plan, or
#     refuses it by name for the one combination the CPU executor does not run:
#     multi-token prediction (DeepSeek-V3's module) with context parallelism,
#     checked after every other rule.  Any other refusal (multi-head latent
#     attention, qk_norm, shared experts, MTP without CP: they run) fails.
#   plan_contract.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-contract.XXXXXX")
trap 'rm -rf "$work"' EXIT
plan="$build/plan"
exe="$build/execute"
failed=0
runs=0
checks=0
t0=$(date +%s)

# plans DIR ARGS...: the chosen plan and the ranked ones into DIR.
plans() {
  local dir=$1
  shift
  mkdir -p "$dir"
  "$plan" "$@" --write-top "$dir" -o "$dir/chosen.json" >"$dir/plan.out" 2>&1 ||
    { echo "FAIL plan $*: $(tail -2 "$dir/plan.out")"; failed=$((failed + 1)); return 1; }
}

for model in tiny-gpt tiny-llama tiny-moe tiny-mla tiny-qwen3; do
  for gpus in 1 2 4 8; do
    dir="$work/$model-$gpus"
    top=20
    [ "$model" = tiny-mla ] && top=3
    [ "$model" = tiny-qwen3 ] && top=8
    plans "$dir" --model "$model" --gpus "$gpus" --global-batch 8 --top "$top" || continue
    n_ranked=$(ls "$dir"/plan-*.json | wc -l)
    declare -A seen=()
    for f in "$dir"/chosen.json "$dir"/plan-*.json; do
      key=$(sed -n '/"parallel"/,/}/p' "$f" | md5sum | cut -d' ' -f1)
      [ -n "${seen[$key]:-}" ] && { rm "$f"; continue; }
      seen[$key]=1
      runs=$((runs + 1))
    done
    unset seen
    # the distinct plans, one after another in one launch (execute --plans)
    out="$work/$model-$gpus.out"
    if ! timeout 600 mpirun --oversubscribe -np "$gpus" "$exe" --plans "$dir" --steps 1 \
        --warmup 0 </dev/null >"$out" 2>&1; then
      echo "FAIL $model on $gpus GPUs, $(grep '^# plan ' "$out" | tail -1): execute exited non-zero"
      tail -5 "$out"; failed=$((failed + 1))
    elif [ "$(grep -c '^# plan ' "$out")" -ne "$(ls "$dir"/*.json | wc -l)" ]; then
      echo "FAIL $model on $gpus GPUs: $(grep -c '^# plan ' "$out") plans ran of $(ls "$dir"/*.json | wc -l)"
      failed=$((failed + 1))
    fi
    echo "ran   $model on $gpus GPUs: $n_ranked ranked plans + the chosen one"
  done
done
t1=$(date +%s)

for model in llama3-70b llama3-405b gpt3-175b mixtral-8x7b deepseek-v3 qwen3-235b-a22b; do
  for gpus in 8 64 512 4096 16384; do
    dir="$work/$model-$gpus"
    mkdir -p "$dir"
    if ! "$plan" --model "$model" --gpus "$gpus" --top 20 --write-top "$dir" \
        -o "$dir/chosen.json" >"$dir/plan.out" 2>&1; then
      # the search's own answer that nothing fits is no plan to check
      if grep -q "error: no configuration of .* fits in" "$dir/plan.out"; then
        echo "none  $model on $gpus GPUs: nothing fits"; continue
      fi
      echo "FAIL plan $model $gpus: $(tail -2 "$dir/plan.out")"; failed=$((failed + 1)); continue
    fi
    # every plan of the directory in one process (execute --check --plans):
    # one line each, "PATH: runs on ..." or the refusal
    n_files=$(ls "$dir"/*.json | wc -l)
    checks=$((checks + n_files))
    chk="$work/$model-$gpus.chk"
    "$exe" --check --plans "$dir" >"$chk" 2>&1
    n_ok=$(grep -c ": runs on the cpu-executor: " "$chk")
    # only MTP with CP may refuse a planned plan
    mtp='unsupported: cp = [0-9]+ with n_mtp_modules = [0-9]+: '
    n_mtp=$(grep -Ec "$mtp" "$chk")
    refused=""
    [ "$n_mtp" -gt 0 ] && refused=" multi-token prediction with cp > 1"
    if [ $((n_ok + n_mtp)) -ne "$n_files" ] || grep -v ": runs on the cpu-executor: " "$chk" |
        grep -Evq "$mtp"; then
      echo "FAIL $model on $gpus GPUs: $n_ok of $n_files plans accepted, $n_mtp refused for MTP with CP:"
      grep -v ": runs on the cpu-executor: " "$chk" | grep -Ev "$mtp" | head -5
      failed=$((failed + 1))
    fi
    echo "check $model on $gpus GPUs: $(ls "$dir"/plan-*.json | wc -l) ranked plans + the chosen one${refused:+, refused by the cpu-executor:$refused}"
  done
done
t2=$(date +%s)
echo "$runs plans executed in $((t1 - t0)) s, $checks plans checked in $((t2 - t1)) s"
[ $failed -eq 0 ] || { echo "$failed failed"; exit 1; }
