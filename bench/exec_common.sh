# exec_common.sh — sourced by bench/exec_fidelity.sh and bench/exec_ranking.sh:
# the environment, this machine's calibration taken in the same run, and one
# execute measured as the median of its timed steps.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${PARALLAX_BUILD_ROOT:-$src/build}}
build=$(cd "$build" && pwd)
export OPENBLAS_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for exe in calibrate plan execute compare; do
  [ -x "$build/$exe" ] || { echo "bench: $build/$exe is not built" >&2; exit 1; }
done
command -v mpirun >/dev/null || { echo "bench: no mpirun" >&2; exit 1; }
work=${PX_BENCH_DIR:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${PX_BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
model=$src/models/llama-4l-h512.json
# calibrate and execute run ahead of other autogroups' processes where the user
# may raise priorities (tests/loop/run_first.sh), as the loop test does
first=$src/tests/loop/run_first.sh
warmup=${PX_BENCH_WARMUP:-1}
steps=${PX_BENCH_STEPS:-4}
repeat=${PX_BENCH_REPEAT:-2}

# calibrate: this machine, in this run (PX_BENCH_PROFILE=FILE reuses a
# profile instead; the table's header says which).
calibrate() {
  echo "# load average at the start: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
  if [ -n "${PX_BENCH_PROFILE:-}" ]; then
    profile=$PX_BENCH_PROFILE
    echo "# profile: $profile (PX_BENCH_PROFILE, not calibrated in this run)"
    return
  fi
  profile=$work/calibrated.json
  "$first" mpirun --oversubscribe -np 2 "$build/calibrate" --cpu --quick --mpi --name bench-cpu \
    -o "$profile" </dev/null >"$work/calibrate.log" 2>&1 ||
    { cat "$work/calibrate.log" >&2; exit 1; }
  echo "# profile: calibrated in this run (mpirun -np 2 calibrate --quick --mpi): $(
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("peak %.1f GFLOP/s, attn_eff %.2f" % (d["peak_flops"]/1e9, d["attn_eff"]))' "$profile")"
}

# plan_fixed NAME FLAGS...: every dimension fixed by FLAGS, uniform split,
# the CPU executor's blocking communication (--overlap off).
plan_fixed() {
  local name=$1
  shift
  "$build/plan" --model "$model" --gpus 2 --hw "$profile" --global-batch 16 \
    --overlap off --partition uniform "$@" -o "$work/$name.plan.json" \
    >"$work/$name.plan.txt" 2>&1 || { cat "$work/$name.plan.txt" >&2; exit 1; }
}

# run_rounds NAME...: every configuration once per round, $repeat rounds,
# odd rounds in reverse order, so that a load that drifts during the run
# does not line up with the list (the ranking's list is in predicted order).
run_rounds() {
  local names=("$@") k i
  for ((k = 0; k < repeat; k++)); do
    for ((i = 0; i < ${#names[@]}; i++)); do
      if ((k % 2)); then run_exec "${names[${#names[@]} - 1 - i]}" "$k"
      else run_exec "${names[i]}" "$k"; fi
    done
  done
}

# run_exec NAME REPEAT: one execute of the plan, report $work/NAME.REPEAT.json
run_exec() {
  "$first" mpirun --oversubscribe -np 2 "$build/execute" --plan "$work/$1.plan.json" \
    --warmup "$warmup" --steps "$steps" --report "$work/$1.$2.json" \
    ${PX_BENCH_TRACE:+--trace "$work/$1.$2.trace.json"} </dev/null >"$work/$1.$2.out" 2>&1 ||
    { tail -5 "$work/$1.$2.out" >&2; exit 1; }
}
