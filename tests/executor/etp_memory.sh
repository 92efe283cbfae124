#!/usr/bin/env bash
# Expert tensor parallelism, memory predicted against measured: `plan` (fp32
# profile, the CPU executor's dtype) writes tiny-moe plans with etp 2 (etp
# alone over DP 2 with micro-batches of 8, and EP 2 x etp 2 over DP 4);
# `execute` runs them and the predicted peak (worst rank) must be within 10 %
# of the tracked allocator's peak.  Under etp the rows an expert group
# receives are all-gathered over etp (etp times the rows, fe / etp of the ffn
# each): a planner or executor that forgot either factor misses by more.
# The executor keeps the combine buffer at this rank's own n_send rows where
# px_cost.c counts etp times as many (docs/executor.md), which shows as a
# few % of over-prediction at micro-batch 8.
#   etp_memory.sh BUILD_DIR
set -u
build=$1
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/px-etp-memory.XXXXXX")
trap 'rm -rf "$work"' EXIT
failed=0
# fp32, 1 GB of memory: nothing is rejected for memory
sed 's/"hbm_bytes": 7000000/"hbm_bytes": 1000000000/; s/"name": "tiny-hbm"/"name": "cpu-fp32"/' \
  "$src/tests/partition/tiny-hbm.json" >"$work/cpu.json"
common="--model tiny-moe --hw $work/cpu.json --cp 1 --zero 0 --recompute none
        --schedule 1f1b --global-batch 16 --overlap off --tp 1 --pp 1"
run() { # NAME NP PLAN-ARGS...
  local name=$1 np=$2
  shift 2
  if ! "$build/plan" $common --gpus "$np" "$@" -o "$work/$name.json" >"$work/$name.plan" 2>&1; then
    echo "FAIL $name: plan: $(cat "$work/$name.plan")"; failed=$((failed + 1)); return
  fi
  if ! grep -q '"etp": 2' "$work/$name.json"; then
    echo "FAIL $name: the plan does not have etp 2"; failed=$((failed + 1)); return
  fi
  if ! timeout 120 mpirun --oversubscribe -np "$np" "$build/execute" --plan "$work/$name.json" \
      --steps 1 --warmup 0 --report "$work/$name.r.json" >"$work/$name.out" 2>&1; then
    echo "FAIL $name: execute: $(tail -5 "$work/$name.out")"; failed=$((failed + 1)); return
  fi
  python3 - "$work/$name.r.json" "$name" <<'PY' || failed=$((failed + 1))
import json, sys
d = json.load(open(sys.argv[1]))
p, m = d["predicted"]["peak_memory_bytes"], d["measured"]["peak_memory_bytes"]
err = (p - m) / m
ok = abs(err) <= 0.10
print(f"{'ok  ' if ok else 'FAIL'} {sys.argv[2]}: predicted {p} measured {m} error {100 * err:+.1f} % (limit 10 %)")
sys.exit(0 if ok else 1)
PY
}
run etp2_dp2_mb8   2 --dp 2 --ep 1 --etp 2 --micro-batch 8
run ep2_etp2_dp4   4 --dp 4 --ep 2 --etp 2 --micro-batch 2
echo "$failed failed"
[ "$failed" -eq 0 ]
