#!/usr/bin/env bash
# Faults during `execute` on the CPU backend under mpirun:
# - divergence: PX_EXECUTE_INJECT_NAN=1:2 (rank 1's loss and gradients NaN
#   at step 2) and a learning rate of 1e30 both stop the job at the step that
#   diverged, with a message naming it and a non-zero exit; the report keeps
#   every step run so far (NaN as null, non_finite_losses true, diverged_step);
# - a stopped rank (SIGSTOP) ends the whole job within --timeout S (plus the
#   watchdog's period and mpirun's teardown), naming the waiting rank and the
#   operation;
# - a report aimed at a device (/dev/full) is refused before the run.
#   faults.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
work=$(mktemp -d "${TMPDIR:-/tmp}/px-faults.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkplan="$build/tests/executor/px_mkplan"
exe="$build/execute"
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
"$mkplan" --model tiny-llama --tp 2 --seq 32 --micro-batch 1 --n-micro 2 -o "$work/tp2.json" \
  2>/dev/null || exit 1

# diverge NAME STEP ARGS...: the job stops at STEP, exits non-zero, and the
# report holds STEP + 1 losses with the last one null.
diverge() {
  local name=$1 step=$2; shift 2
  timeout 120 mpirun --oversubscribe -np 2 "$exe" --plan "$work/tp2.json" --warmup 1 \
    --steps 6 --report "$work/$name.json" "$@" </dev/null >"$work/$name.out" 2>&1
  local rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then fail "$name: exit $rc"; cat "$work/$name.out"; return; fi
  grep -q "diverged at step $step: loss .*nan" "$work/$name.out" ||
    { fail "$name: no 'diverged at step $step' message"; cat "$work/$name.out"; return; }
  python3 - "$work/$name.json" "$step" <<'PY' || { fail "$name: report"; return; }
import json, math, sys
r = json.load(open(sys.argv[1])); step = int(sys.argv[2])
L, G = r["losses"], r["grad_norms"]
assert len(L) == step + 1 and len(G) == step + 1, (L, G)
assert L[-1] is None and G[-1] is None, (L, G)
assert all(isinstance(x, float) and math.isfinite(x) for x in L[:-1] + G[:-1]), (L, G)
assert r["non_finite_losses"] is True and r["diverged_step"] == step, r
PY
  echo "ok   $name: stopped at step $step (exit $rc), report keeps $((step + 1)) losses, the last null"
}
PX_EXECUTE_INJECT_NAN=1:2 diverge inject_nan 2
diverge lr_1e30 1 --lr 1e30

# --- a stopped rank: the job ends within the timeout ---
timeout_s=5
mpirun --oversubscribe -np 2 "$exe" --plan "$work/tp2.json" --steps 1000000 \
  --timeout $timeout_s </dev/null >"$work/stop.out" 2>&1 &
mp=$!
for _ in $(seq 600); do [ "$(grep -c ' timed ' "$work/stop.out")" -gt 2 ] && break; sleep 0.1; done
victim=""
for p in $(pgrep -P $mp); do
  tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
done
if [ -z "$victim" ]; then
  fail "sigstop: rank 1 not found"; kill $mp
else
  t0=$(date +%s.%N)
  kill -STOP "$victim"
  # mpirun ends the job; if it did not within a minute the test fails (a hang)
  for _ in $(seq 600); do kill -0 $mp 2>/dev/null || break; sleep 0.1; done
  t1=$(date +%s.%N)
  if kill -0 $mp 2>/dev/null; then
    fail "sigstop: the job still runs 60 s after rank 1 stopped (--timeout $timeout_s)"
    kill -CONT "$victim"; kill $mp
  fi
  wait $mp; rc=$?
  kill -CONT "$victim" 2>/dev/null
  took=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  if [ $rc -eq 0 ]; then
    fail "sigstop: exit 0"
  elif ! grep -Eq "rank 0: timeout: .* did not complete within $timeout_s s" "$work/stop.out"; then
    fail "sigstop: no message naming the rank and the operation"; cat "$work/stop.out"
  else
    echo "ok   sigstop: job ended $took s after SIGSTOP (exit $rc): $(grep -m1 'timeout:' "$work/stop.out")"
  fi
fi

# --- the report to a full disk fails loudly ---
timeout 120 mpirun --oversubscribe -np 2 "$exe" --plan "$work/tp2.json" --steps 1 \
  --report /dev/full </dev/null >"$work/full.out" 2>&1
rc=$?
if [ $rc -ne 0 ] && grep -q -- "--report /dev/full: is not a regular file" "$work/full.out" &&
   [ -c /dev/full ]; then
  echo "ok   report_dev_full: exit $rc, $(grep -m1 'regular' "$work/full.out")"
else
  fail "report_dev_full: exit $rc"; cat "$work/full.out"
fi

[ $failed -eq 0 ] || { echo "$failed fault check(s) failed"; exit 1; }
echo "all fault checks passed"
