#!/usr/bin/env bash
# test_calibrate.sh CHECK_PROFILE — `calibrate --quick` (one process, then
# 2 MPI ranks with --mpi) finishes well under 30 s, prints progress on stderr
# only, writes a profile that check_profile accepts; bad arguments fail.
set -u
check_profile=$1
build=${PARALLAX_BUILD_ROOT:?}
cal=$build/calibrate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

t0=$(date +%s.%N)
"$cal" --cpu --quick -o "$tmp/one.json" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; fail "calibrate --quick exited $?"; }
t1=$(date +%s.%N)
elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
echo "calibrate --quick: ${elapsed} s"
awk -v e="$elapsed" 'BEGIN { exit !(e < 30) }' || fail "calibrate --quick took ${elapsed} s (limit 30 s)"
[ ! -s "$tmp/out" ] || fail "calibrate printed on stdout: $(head -c 200 "$tmp/out")"
n_progress=$(grep -c '^\[calibrate ' "$tmp/err")
[ "$n_progress" -ge 5 ] || fail "only $n_progress progress lines on stderr"
"$check_profile" "$tmp/one.json" || fail "check_profile rejected the one-process profile"

if command -v mpirun >/dev/null 2>&1; then
  mpirun --oversubscribe -np 2 "$cal" --cpu --quick --mpi -o "$tmp/two.json" 2>"$tmp/err2" \
    || { cat "$tmp/err2" >&2; fail "mpirun -np 2 calibrate --quick --mpi failed"; }
  grep -q 'allreduce *n=2' "$tmp/err2" || fail "no all-reduce progress line under --mpi"
  [ "$(grep -c '^\[calibrate ' "$tmp/err2")" -ge 8 ] || fail "rank 0 progress missing"
  "$check_profile" "$tmp/two.json" --ranks 2 || fail "check_profile rejected the 2-rank profile"
else
  echo "no mpirun: the --mpi part is skipped"
fi

if "$cal" --threads 0 -o "$tmp/x.json" 2>"$tmp/err3"; then fail "--threads 0 accepted"; fi
grep -q 'threads' "$tmp/err3" || fail "--threads 0: the message does not name the option"
if "$cal" --bogus 2>"$tmp/err4"; then fail "--bogus accepted"; fi
grep -q 'bogus' "$tmp/err4" || fail "unknown argument not named"
"$cal" --cpu --quick -o "$tmp/no/such/dir/p.json" 2>"$tmp/err5" && fail "unwritable path accepted"
grep -q 'no/such/dir' "$tmp/err5" || fail "unwritable path not named: $(cat "$tmp/err5")"
if ! { command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; }; then
  "$cal" --gpu -o "$tmp/g.json" 2>"$tmp/err6" && fail "--gpu succeeded without a GPU"
  grep -q -- '--gpu' "$tmp/err6" || fail "--gpu without a GPU: no message naming it"
fi
echo "test_calibrate: ok"
