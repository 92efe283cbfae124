#!/usr/bin/env bash
# MoE activation memory, predicted against measured: `plan` with an fp32
# profile (the CPU executor's dtype) writes tiny-moe plans — EP 2 over DP 2,
# PP 2 + EP 2, micro-batches of 2 and 8 — and `execute` runs them on MPI
# ranks; the predicted peak (worst rank) must be within 10 % of the tracked
# allocator's peak.  The routed-token buffers (top_k copies of each token:
# received rows, gate/up outputs, the combine buffer), the router
# probabilities and the routing tables are what makes MoE layers differ.
#   test_moe_memory.sh PLAN EXECUTE
set -u
PLAN=$1
EXE=$2
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# fp32, 1 GB of memory: nothing is rejected for memory
sed 's/"hbm_bytes": 7000000/"hbm_bytes": 1000000000/; s/"name": "tiny-hbm"/"name": "cpu-fp32"/' \
  "$here/../partition/tiny-hbm.json" > "$tmp/cpu.json"
common="--model tiny-moe --hw $tmp/cpu.json --cp 1 --etp 1 --zero 0 --recompute none
        --schedule 1f1b --global-batch 16 --overlap off"
run() { # NAME NP PLAN-ARGS...
  local name=$1 np=$2; shift 2
  "$PLAN" $common --gpus "$np" "$@" -o "$tmp/$name.json" > "$tmp/$name.plan" 2>&1 \
    || fail "$name: plan: $(cat "$tmp/$name.plan")"
  timeout 120 mpirun --oversubscribe -np "$np" "$EXE" --plan "$tmp/$name.json" --steps 1 \
    --warmup 0 --report "$tmp/$name.r.json" > "$tmp/$name.out" 2>&1 \
    || fail "$name: execute: $(tail -5 "$tmp/$name.out")"
  python3 - "$tmp/$name.r.json" "$name" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
p, m = d["predicted"]["peak_memory_bytes"], d["measured"]["peak_memory_bytes"]
err = (p - m) / m
print(f"  {sys.argv[2]:10s} predicted {p:9.0f} measured {m:9.0f} error {100 * err:+.1f} %")
if abs(err) > 0.10:
    sys.exit(f"FAIL: {sys.argv[2]}: predicted peak memory off by {100 * err:+.1f} % (limit 10 %)")
PY
}
run ep2-dp2 2 --tp 1 --pp 1 --dp 2 --ep 2 --micro-batch 2
run ep2-dp2-mb8 2 --tp 1 --pp 1 --dp 2 --ep 2 --micro-batch 8
run pp2-ep2 4 --tp 1 --pp 2 --dp 2 --ep 2 --micro-batch 2
run tp2-ep2 4 --tp 2 --pp 1 --dp 2 --ep 2 --micro-batch 2
echo PASS
