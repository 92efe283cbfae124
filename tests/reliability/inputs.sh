#!/usr/bin/env bash
# Hostile inputs to the planner: every file of corpus/ (models, Hugging Face
# configs, hardware profiles, plans; see make_corpus.py) is refused with
# its own clear error (the file and the field, the value and the allowed
# range: the .expect regex) and a non-zero exit that is not a crash; the
# command-line sizes are bounded the same way; outputs are atomic and a
# failed write is loud.
#   inputs.sh BUILD_DIR
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
plan="$build/plan"
readback="$build/tests/cli/plan_readback"
work=$(mktemp -d "${TMPDIR:-/tmp}/px-inputs.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
n=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# refused WHAT REGEX CMD...: exit 1 or 2 (never 0, never a signal), stderr
# matching REGEX.
refused() {
  local what=$1 re=$2; shift 2
  n=$((n + 1))
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -ge 126 ]; then
    fail "$what: exit $rc (want a refusal, not success or a crash)"; head -c 600 "$work/err"; return
  fi
  grep -Eq -e "$re" "$work/err" ||
    { fail "$what: stderr lacks /$re/: $(head -c 400 "$work/err")"; return; }
}

for f in "$here"/corpus/*/*.json; do
  kind=$(basename "$(dirname "$f")")
  name="$kind/$(basename "$f" .json)"
  re=$(cat "${f%.json}.expect")
  case $kind in
    model|hf) refused "$name" "$re" "$plan" --model "$f" --gpus 8 ;;
    profile) refused "$name" "$re" "$plan" --model tiny-llama --hw "$f" --gpus 8 ;;
    plan) refused "$name" "$re" "$readback" "$f" ;;
  esac
  # the message names the file it is about
  grep -q "$(basename "$f")" "$work/err" || fail "$name: the message does not name the file"
done
echo "corpus: $n malformed inputs checked"

# command-line sizes
refused "--tokens-per-step 1e30" 'tokens-per-step "1e30": out of range \(allowed: 1\.\.1125899906842624' \
  "$plan" --model llama3-8b --gpus 8 --tokens-per-step 1e30
refused "--global-batch x --seq overflow" 'more than 1125899906842624 \(2\^50\) tokens a step' \
  "$plan" --model llama3-8b --gpus 8 --global-batch 1099511627776 --seq 1099511627776
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
  "$plan" --model tiny-llama --gpus 1 -o "$work/p1.json" >/dev/null 2>&1
  refused "execute --lr 1e309" '--lr "1e309": is not a finite number' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --lr 1e309
  refused "execute --init-std 1e39" '--init-std "1e39": is not a finite number' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --init-std 1e39
  refused "execute --adam-eps 0" '--adam-eps "0": must be > 0' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --adam-eps 0
  refused "execute --timeout 0" '--timeout "0": is not a number of seconds' \
    mpirun -np 1 "$build/execute" --plan "$work/p1.json" --timeout 0
fi

# atomic outputs: a full disk fails loudly ...
refused "plan -o /dev/full" '/dev/full.*No space left on device' \
  "$plan" --model tiny-llama --gpus 2 -o /dev/full
# ... and a write that fails half-way (a file-size limit: EFBIG) leaves the
# previous plan whole, with no temporary file beside it.
"$plan" --model tiny-llama --gpus 2 -o "$work/good.json" >/dev/null 2>&1 || fail "plan -o good.json"
cp "$work/good.json" "$work/before.json"
(trap '' XFSZ; ulimit -f 1; exec "$plan" --model tiny-llama --gpus 4 -o "$work/good.json") \
  >/dev/null 2>"$work/err"
rc=$?
if [ $rc -eq 0 ] || ! grep -q "write failed: File too large.*previous file.*unchanged" "$work/err"; then
  fail "plan -o with a failing write: exit $rc: $(cat "$work/err")"
elif ! cmp -s "$work/good.json" "$work/before.json"; then
  fail "plan -o with a failing write destroyed the previous plan"
elif ls "$work"/good.json.tmp.* >/dev/null 2>&1; then
  fail "plan -o with a failing write left a temporary file"
else
  echo "ok   a failed plan write (exit $rc) leaves the previous plan unchanged"
fi

[ $failed -eq 0 ] || { echo "$failed input check(s) failed"; exit 1; }
echo "all input checks passed"
