#!/usr/bin/env bash
# test_calibrate.sh CHECK_PROFILE — `calibrate --quick` (one process, then
# 2 MPI ranks with --mpi) uses well under 30 s of CPU time, prints progress
# on stderr only, writes a profile that check_profile accepts; bad arguments
# fail.
#
# The verdicts do not depend on the machine's load: the limit is on the CPU
# time calibrate used (user + system, its work), not on the wall clock,
# which other processes stretch; the calibrations and check_profile (which
# times a GEMM and a triad of its own) run ahead of the other
# processes (run_first.sh) and, with one BLAS thread (the executor's one rank
# per core), time their GEMMs and element-wise kernels with the thread CPU
# clock, so check_profile's sanity ranges hold on a busy machine.
set -u
check_profile=$1
build=${PARALLAX_BUILD_ROOT:?}
cal=$build/calibrate
first=${PARALLAX_SOURCE_ROOT:?}/tests/loop/run_first.sh
export OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

TIMEFORMAT='%R %U %S'
{ time "$first" "$cal" --cpu --quick -o "$tmp/one.json" >"$tmp/out" 2>"$tmp/err"; } 2>"$tmp/time" \
  || { cat "$tmp/err" >&2; fail "calibrate --quick failed"; }
read -r wall user sys <"$tmp/time"
cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", u + s }')
echo "calibrate --quick: ${cpu} s of CPU time (${wall} s wall, load average $(cut -d' ' -f1 /proc/loadavg))"
awk -v c="$cpu" 'BEGIN { exit !(c < 30) }' || fail "calibrate --quick used ${cpu} s of CPU time (limit 30 s)"
[ ! -s "$tmp/out" ] || fail "calibrate printed on stdout: $(head -c 200 "$tmp/out")"
n_progress=$(grep -c '^\[calibrate ' "$tmp/err")
[ "$n_progress" -ge 5 ] || fail "only $n_progress progress lines on stderr"
"$first" "$check_profile" "$tmp/one.json" || fail "check_profile rejected the one-process profile"

if command -v mpirun >/dev/null 2>&1; then
  "$first" mpirun --oversubscribe -np 2 "$cal" --cpu --quick --mpi -o "$tmp/two.json" 2>"$tmp/err2" \
    || { cat "$tmp/err2" >&2; fail "mpirun -np 2 calibrate --quick --mpi failed"; }
  grep -q 'allreduce *n=2' "$tmp/err2" || fail "no all-reduce progress line under --mpi"
  [ "$(grep -c '^\[calibrate ' "$tmp/err2")" -ge 8 ] || fail "rank 0 progress missing"
  "$first" "$check_profile" "$tmp/two.json" --ranks 2 || fail "check_profile rejected the 2-rank profile"
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
