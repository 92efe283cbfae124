#!/usr/bin/env bash
# A vocabulary that tp does not divide: the executor pads the embedding and
# LM-head tables to a multiple of tp (px_caps_vocab_rows), and the padded rows
# take no part in the loss, so every split's losses equal the single-rank
# losses (within 1e-5 relative, as in equivalence.sh).  Vocabulary 251 (prime)
# on tiny-llama (separate LM head) and tiny-gpt (tied embeddings, across
# pipeline stages too); vocabulary 6 over tp 4 (tiny-gpt) leaves one TP rank
# with padding rows only (2 + 2 + 2 + 0).
#   vocab_pad.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-vocab.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0

# run NAME NP MODEL VOCAB PLAN-ARGS...
run() {
  local name=$1 np=$2 model=$3 vocab=$4
  shift 4
  "$mkplan" --model "$model" --layers 4 --vocab "$vocab" --seq 32 --micro-batch 1 \
    --n-micro 2 "$@" -o "$work/$name.json" 2>"$work/$name.mk" ||
    { echo "FAIL $name: px_mkplan $*: $(cat "$work/$name.mk")"; return 1; }
  timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$work/$name.json" --steps 2 \
    --warmup 0 --report "$work/$name.r.json" >"$work/$name.out" 2>&1 ||
    { echo "FAIL $name: execute exited non-zero"; cat "$work/$name.out"; return 1; }
}

# check NAME NP MODEL VOCAB REF PLAN-ARGS...
check() {
  local name=$1 np=$2 model=$3 vocab=$4 ref=$5
  shift 5
  run "$name" "$np" "$model" "$vocab" "$@" || { failed=$((failed + 1)); return; }
  if ! "$cmp" losses "$work/$ref.r.json" "$work/$name.r.json" 1e-5 >"$work/$name.cmp" 2>&1
  then
    echo "FAIL $name: losses differ from $ref"; cat "$work/$name.cmp"; failed=$((failed + 1))
    return
  fi
  echo "ok   $name: $(tr '\n' ' ' <"$work/$name.cmp")"
}

run llama_ref 1 tiny-llama 251 || exit 1
run gpt_ref 1 tiny-gpt 251 || exit 1
run six_gpt_ref 1 tiny-gpt 6 || exit 1
check llama_tp2        2 tiny-llama 251 llama_ref --tp 2
check llama_tp2_pp2_zb 4 tiny-llama 251 llama_ref --tp 2 --pp 2 --schedule zb-h1
check gpt_tp2_pp2      4 tiny-gpt   251 gpt_ref   --tp 2 --pp 2
check gpt_tp4_sp       4 tiny-gpt   251 gpt_ref   --tp 4 --sp
check six_gpt_tp4      4 tiny-gpt   6   six_gpt_ref --tp 4
[ $failed -eq 0 ] || { echo "$failed split(s) failed"; exit 1; }
echo "all splits match the single-rank losses"
