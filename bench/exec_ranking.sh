#!/usr/bin/env bash
# exec_ranking.sh [BUILD_DIR] — does `plan` pick the fastest plan?  Calibrates
# this machine (mpirun -np 2 calibrate --quick --mpi), asks `plan --top 12`
# for models/llama-4l-h512.json on 2 ranks (global batch 16, uniform splits
# so that what runs is what was ranked, --overlap off: the CPU executor's
# blocking communication), executes every one of the twelve and prints the
# predicted ranking beside the measured one (median of the timed steps),
# then the chosen plan against the fastest measured and Spearman's rank
# correlation of predicted and measured step time.
# Goals: the chosen plan within 5 % of the fastest of the twelve, rho >= 0.6.
# Env as bench/exec_fidelity.sh (PX_BENCH_STEPS, PX_BENCH_WARMUP,
# PX_BENCH_REPEAT, PX_BENCH_DIR, PX_BENCH_PROFILE).  A benchmark, not a
# test: exits 0 whether or not the goals are met.
. "$(dirname "$0")/exec_common.sh"
echo "# exec_ranking: plan --top 12 executed, llama-4l-h512 on 2 ranks, global batch 16"
calibrate
"$build/plan" --model "$model" --gpus 2 --hw "$profile" --global-batch 16 --overlap off \
  --partition uniform --top 12 --json >"$work/top.json" 2>"$work/top.err" ||
  { cat "$work/top.err" >&2; exit 1; }
# each row as a plan with every dimension fixed (the same configuration)
python3 - "$work/top.json" >"$work/rows.txt" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for i, p in enumerate(d["plans"]):
    q = p["parallel"]
    print("r%02d --tp %d --cp %d --pp %d --vpp %d --dp %d --zero %d --recompute %s --schedule %s "
          "--sp %s --micro-batch %d" % (i + 1, q["tp"], q["cp"], q["pp"], q["vpp"], q["dp"],
          q["zero"], q["recompute"], q["schedule"], "on" if q["sp"] else "off", p["micro_batch"]))
PY
names=()
while read -r name flags; do
  plan_fixed "$name" $flags
  names+=("$name")
done <"$work/rows.txt"
run_rounds "${names[@]}"
echo "# $warmup warm-up + $steps timed steps per run, $repeat runs per plan (the smaller median kept); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$repeat" "$work/rows.txt" "${names[@]}" <<'PY'
import json, os, sys
work, repeat, rows, names = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
flags = dict(l.split(" ", 1) for l in open(rows).read().splitlines())
def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(order):  # ties share their mean rank
        j = i
        while j + 1 < len(order) and v[order[j + 1]] == v[order[i]]: j += 1
        for k in range(i, j + 1): r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r
def pearson(a, b):
    n = len(a); ma, mb = sum(a) / n, sum(b) / n
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    den = (sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b)) ** 0.5
    return num / den if den else float("nan")
pred, meas = [], []
for n in names:
    med = [json.load(open(os.path.join(work, "%s.%d.json" % (n, k))))["measured"]["step_time_s"] for k in range(repeat)]
    r = json.load(open(os.path.join(work, "%s.0.json" % n)))
    pred.append(r["predicted"]["step_time_s"]); meas.append(min(med))
rp, rm = ranks(pred), ranks(meas)
print("%-4s %-84s | %8s %8s %8s | %5s %5s" % ("row", "configuration", "pred_s", "meas_s", "err", "pos", "pos"))
print("%-4s %-84s | %8s %8s %8s | %5s %5s" % ("", "", "", "median", "", "pred", "meas"))
for i, n in enumerate(names):
    print("%-4s %-84s | %8.3f %8.3f %+7.1f%% | %5.1f %5.1f%s" % (n, flags[n], pred[i], meas[i],
          100 * (pred[i] - meas[i]) / meas[i], rp[i], rm[i], "  <- chosen" if i == 0 else ""))
fast = min(meas)
print("# chosen (row 1) measured %.3f s, the fastest of the %d %.3f s (%s): chosen is %+.1f%% (goal <= 5%%)"
      % (meas[0], len(names), fast, names[meas.index(fast)], 100 * (meas[0] / fast - 1)))
print("# predicted spread %.1f%%, measured spread %.1f%% (slowest / fastest - 1)"
      % (100 * (max(pred) / min(pred) - 1), 100 * (max(meas) / fast - 1)))
print("# Spearman rho (predicted vs measured step time): %.2f (goal >= 0.6)" % pearson(rp, rm))
PY
exit 0
