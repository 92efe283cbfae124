#!/usr/bin/env bash
# Wall time, CPU time (user, all threads) and peak RSS of the `plan`
# command itself (process start, preset loading, search, output), median of
# 5, for each preset at 1024 or 2048 and 16384 GPUs (70b also at 2048 and
# 4096, where interleaved candidates need recomputation) and the whole
# --sweep-gpus 8..16384 call, then the in-process curve (bench_search: every
# preset at G = 8 ... 131072).  On a shared machine the CPU time is the
# steadier figure.
# Usage: bench/bench_plan.sh [BUILD_DIR]   (prints a table; no pass/fail)
set -u
build="${1:-${PARALLAX_BUILD_ROOT:-build}}"
plan="$build/plan"
[ -x "$plan" ] || { echo "no $plan: build first" >&2; exit 1; }
printf '# plan command, median of 5: wall ms, user CPU ms and peak RSS (KiB)\n%-52s %9s %9s %9s\n' \
  "command" "wall[ms]" "user[ms]" "RSS[KiB]"
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for args in "--model 70b --gpus 1024" "--model 70b --gpus 2048" "--model 70b --gpus 4096" \
            "--model 70b --gpus 16384" "--model gpt3-175b --gpus 1024" \
            "--model llama3-405b --gpus 16384" "--model mixtral-8x7b --gpus 2048" \
            "--model mixtral-8x7b --gpus 16384" "--model deepseek-v3 --gpus 2048" \
            "--model deepseek-v3 --gpus 16384" "--model qwen3-235b-a22b --gpus 2048" \
            "--model qwen3-235b-a22b --gpus 16384" \
            "--model 70b --sweep-gpus 8..16384"; do
  : > /tmp/bench_plan.$$
  for _ in 1 2 3 4 5; do
    # the child's wall time (ms, timed around the child alone, not the
    # interpreter's start), user CPU (ms) and peak RSS (KiB) as the kernel
    # accounts them
    ru=$(python3 -c 'import resource, subprocess, sys, time
t0 = time.perf_counter()
r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
wall = time.perf_counter() - t0
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%d %d %d" % (1000 * wall, 1000 * u.ru_utime, u.ru_maxrss) if r.returncode == 0 else "")' \
          "$plan" $args)
    [ -n "$ru" ] || { echo "plan $args failed" >&2; break; }
    echo "$ru" >> /tmp/bench_plan.$$
  done
  printf '%-52s %9s %9s %9s\n' "plan $args" "$(cut -d' ' -f1 /tmp/bench_plan.$$ | median)" \
    "$(cut -d' ' -f2 /tmp/bench_plan.$$ | median)" "$(cut -d' ' -f3 /tmp/bench_plan.$$ | median)"
done
rm -f /tmp/bench_plan.$$
echo
"$build/bench/bench_search" 3
