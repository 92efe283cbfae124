#!/usr/bin/env bash
# Wall time of the `plan` command itself (process start, preset loading,
# search, output), best of 5, next to the in-process search benchmark.
# Usage: bench/bench_plan.sh [BUILD_DIR]   (prints a table; no pass/fail)
set -u
build="${1:-${PARALLAX_BUILD_ROOT:-build}}"
plan="$build/plan"
[ -x "$plan" ] || { echo "no $plan: build first" >&2; exit 1; }
printf '# plan command wall time, best of 5\n%-40s %10s\n' "command" "wall[ms]"
for args in "--model 70b --gpus 1024" "--model 70b --gpus 16384" \
            "--model mixtral-8x7b --gpus 2048" "--model deepseek-v3 --gpus 2048"; do
  best=999999
  for _ in 1 2 3 4 5; do
    t0=$(date +%s%N)
    "$plan" $args > /dev/null || { echo "plan $args failed" >&2; break; }
    t1=$(date +%s%N)
    ms=$(( (t1 - t0) / 1000000 ))
    [ "$ms" -lt "$best" ] && best=$ms
  done
  printf '%-40s %10d\n' "plan $args" "$best"
done
echo
"$build/bench/bench_search" 5
