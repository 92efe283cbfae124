#!/usr/bin/env bash
# exec_flops.sh [BUILD_DIR] — the executor benchmark: the executor's achieved
# FLOP/s for a GEMM-heavy plan on one rank against the calibrated GEMM peak
# (the best GEMM shape `calibrate` measured, the profile's peak_flops).  The
# goal is >= 70% of that peak for the whole step, attention and element-wise
# work included.  Prints a table; exits 0 whether or not the goal is met
# (a benchmark, not a test), non-zero only when something fails to run.
#
# Run it on an otherwise idle machine: `meson test -C build --benchmark` or
# bench/exec_flops.sh build.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${PARALLAX_BUILD_ROOT:-$src/build}}
build=$(cd "$build" && pwd)
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for exe in calibrate plan execute; do
  [ -x "$build/$exe" ] || { echo "exec_flops: $build/$exe is not built" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The loop test's cached calibration when it is fresh, else a quick one.
profile=$build/loop-cache/calibrated.json
if [ ! -f "$profile" ] || [ "$build/calibrate" -nt "$profile" ]; then
  profile=$work/calibrated.json
  "$build/calibrate" --cpu --quick -o "$profile" 2>"$work/calibrate.log" \
    || { cat "$work/calibrate.log" >&2; exit 1; }
fi

# GEMM-heavy: wide layers (h 1024, SwiGLU f 2816), short sequences (64) so
# the attention core is a few percent of the FLOPs, a small vocabulary.
cat >"$work/bench-llama.json" <<'JSON'
{"name": "bench-llama", "block": "llama", "hidden": 1024, "n_layers": 4, "n_heads": 8,
 "n_kv_heads": 8, "ffn": 2816, "vocab": 2048, "seq_len": 64,
 "description": "GEMM-heavy model of bench/exec_flops.sh"}
JSON
"$build/plan" --model "$work/bench-llama.json" --gpus 1 --hw "$profile" --seq 64 \
  --tp 1 --pp 1 --dp 1 --micro-batch 4 --global-batch 8 --zero 0 --recompute none --overlap off \
  --schedule 1f1b --explain -o "$work/plan.json" >"$work/plan.txt" 2>&1 \
  || { cat "$work/plan.txt" >&2; exit 1; }
mpirun -np 1 "$build/execute" --plan "$work/plan.json" --steps 3 --warmup 1 \
  --report "$work/report.json" >"$work/exec.txt" 2>&1 || { cat "$work/exec.txt" >&2; exit 1; }

python3 - "$work/report.json" "$profile" "$work/plan.txt" <<'PY'
import json, sys
rep = json.load(open(sys.argv[1]))
hw = json.load(open(sys.argv[2]))
peak = hw["peak_flops"]
meas = rep["measured"]
step = meas["step_time_s"]
flops = rep["model_flops_per_step"]
achieved = flops / step
pred = rep["predicted"]["step_time_s"]
print("# exec_flops: executor FLOP/s on one rank vs the calibrated GEMM peak (goal >= 70%)")
print("# model bench-llama: h 1024, 4 layers, SwiGLU 2816, seq 64, 8 sequences a step")
print("# peak = best GEMM shape measured by calibrate (%s)" % hw.get("name", "?"))
print("%-24s %14s" % ("quantity", "value"))
print("%-24s %14.4f" % ("step time [s]", step))
print("%-24s %14.4f" % ("predicted step [s]", pred))
print("%-24s %14.3e" % ("model FLOPs per step", flops))
print("%-24s %14.2f" % ("achieved [GFLOP/s]", achieved / 1e9))
print("%-24s %14.2f" % ("GEMM peak [GFLOP/s]", peak / 1e9))
print("%-24s %13.1f%%" % ("achieved / peak", 100.0 * achieved / peak))
print("%-24s %14s" % ("goal (>= 70%) met", "yes" if achieved >= 0.7 * peak else "no"))
# Where the cost model says the time goes (plan --explain), to show what
# keeps the step from the GEMM peak.
parts = {}
for line in open(sys.argv[3]):
    for key in ("GEMMs (fwd+bwd)", "attention core", "memory-bound ops, head, loss",
                "optimizer step"):
        if line.strip().startswith(key):
            parts[key] = float(line.split()[-1])
if parts:
    print("# predicted breakdown of the step (plan --explain)")
    for key, val in parts.items():
        print("%-30s %8.4f s %6.1f%%" % (key, val, 100.0 * val / pred))
PY
