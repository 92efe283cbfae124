#!/usr/bin/env bash
# --data FILE: a flat file of little-endian uint32 token ids drives
# the step (losses differ from the synthetic run), gives the same losses under
# a split (TP 2 x DP 2 vs one rank), and a bad file is a clear error.
#   data.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-data.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
cmp="$build/tests/executor/px_cmp"
exe="$build/execute"
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

"$cmp" tokens "$work/tokens.bin" 1000 256 || exit 1
"$mkplan" --model tiny-gpt --n-micro 4 -o "$work/one.json" 2>/dev/null || exit 1
"$mkplan" --model tiny-gpt --n-micro 2 --tp 2 --dp 2 -o "$work/split.json" 2>/dev/null || exit 1
run() { # NAME NP PLAN ARGS...
  local name=$1 np=$2 plan=$3
  shift 3
  timeout 120 mpirun --oversubscribe -np "$np" "$exe" --plan "$plan" --steps 2 --warmup 0 \
    --report "$work/$name.r.json" "$@" >"$work/$name.out" 2>&1
}
run synthetic 1 "$work/one.json" || fail "synthetic run"
run file_one 1 "$work/one.json" --data "$work/tokens.bin" || fail "file run (1 rank)"
run file_split 4 "$work/split.json" --data "$work/tokens.bin" || fail "file run (4 ranks)"
if out=$("$cmp" differ "$work/synthetic.r.json" "$work/file_one.r.json"); then
  echo "ok   the file is used: $out"
else fail "file and synthetic losses agree: $out"; fi
if out=$("$cmp" losses "$work/file_one.r.json" "$work/file_split.r.json" 1e-5 2>&1); then
  echo "ok   same losses under TP 2 x DP 2: $out"
else fail "split changes the file losses: $out"; fi

"$cmp" tokens "$work/big.bin" 1000 300 || exit 1   # ids up to 299 >= vocab 256
run bad_id 1 "$work/one.json" --data "$work/big.bin" && fail "ids >= vocab accepted"
grep -q "is >= vocab = 256" "$work/bad_id.out" && echo "ok   ids >= vocab: $(grep -o 'token file.*' "$work/bad_id.out" | head -1)" ||
  fail "no clear message for ids >= vocab"
head -c 3999 "$work/tokens.bin" >"$work/odd.bin"
run odd 1 "$work/one.json" --data "$work/odd.bin" && fail "odd-sized file accepted"
grep -q "not a multiple of 4" "$work/odd.out" && echo "ok   odd size: $(grep -o 'token file.*' "$work/odd.out" | head -1)" ||
  fail "no clear message for an odd-sized file"
echo "$failed failed"
[ "$failed" -eq 0 ]
