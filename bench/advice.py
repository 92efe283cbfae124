#!/usr/bin/env python3
"""How much faster than a tuned recipe the planner says its own layout is.

For every Megatron-Bridge pre-training row of published-runs-2.json, two
`plan` calls by the data README's mapping (shared/tools/published_runs.py):
the recipe as published (its layout fixed), and the same call with the
layout left free (tp, pp, vpp, cp, ep, dp, micro-batch, ZeRO and recompute
dropped; GPUs, global batch, sequence, precision and framework kept).  The
predicted gain of the planner's choice over the recipe is
tokens/s(choice) / tokens/s(recipe) - 1.  A tuned recipe leaves little on the
table, so large gains point at wrong relative costs.

Run from the project root:
  python3 bench/advice.py [build/plan] [path/to/published-runs-2.json]
The shared folder is found as ../shared, ../../shared or $PX_SHARED.
Prints one line a row (with the recipe's own prediction error against the
measured tokens/s per GPU, + = too fast) and the median and largest gain;
exits 0.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

LAYOUT_FLAGS = {"--tp", "--pp", "--dp", "--cp", "--vpp", "--ep", "--micro-batch", "--zero",
                "--shard-group", "--recompute"}


def shared_dir():
    for d in (os.environ.get("PX_SHARED"), "../shared", "../../shared"):
        if d and os.path.isdir(os.path.join(d, "tools")):
            return d
    sys.exit("advice.py: no shared folder (../shared, ../../shared or $PX_SHARED)")


def drop_layout(args):
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in LAYOUT_FLAGS:
            skip = True
            continue
        out.append(a)
    return out


def run_plan(args):
    """(tokens/s of the best plan, its layout string) or (None, why)."""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=300)
        best = json.loads(out.stdout)["plans"][0]
    except subprocess.TimeoutExpired:
        return None, "timeout"
    except (ValueError, KeyError, IndexError):
        return None, ((out.stderr.strip().splitlines() or ["?"])[-1])[:100]
    p = dict(best["parallel"], mb=best["micro_batch"])
    keys = (("tp", "TP"), ("pp", "PP"), ("vpp", "VPP"), ("cp", "CP"), ("ep", "EP"),
            ("dp", "DP"), ("mb", "mb"), ("zero", "Z"), ("recompute", "rc:"))
    lay = " ".join(f"{n}{p[k]}" for k, n in keys
                   if k in ("tp", "pp", "dp", "mb") or p.get(k) not in (None, 1, 0, "none"))
    return best["tokens_per_s"], lay


def main():
    plan = sys.argv[1] if len(sys.argv) > 1 else "build/plan"
    shared = shared_dir()
    data = sys.argv[2] if len(sys.argv) > 2 else os.path.join(shared, "data",
                                                              "published-runs-2.json")
    sys.path.insert(0, os.path.join(shared, "tools"))
    import published_runs as pr
    helptext = pr.helptext_of(plan)
    rows = json.load(open(data))
    rows = rows["rows"] if isinstance(rows, dict) else rows
    rows = [r for r in rows if r["id"].startswith("mbridge-") and "-pretrain-" in r["id"]
            and pr.usable(r, "all", "all")]
    gains = []
    tmp = tempfile.mkdtemp(prefix="advice-")
    print(f"{'row':64} {'recipe':34} {'planner':34}   gain  recipe err")
    for r in rows:
        args = pr.row_args(plan, r, tmp, helptext)
        if isinstance(args, str):
            print(f"{r['id']:64} refused: {args}")
            continue
        t_rec, lay_rec = run_plan(args)
        t_free, lay_free = run_plan(drop_layout(args))
        if t_rec is None or t_free is None:
            why = lay_rec if t_rec is None else lay_free
            print(f"{r['id']:64} {'recipe' if t_rec is None else 'free'} refused: {why}")
            continue
        g = t_free / t_rec - 1.0
        gains.append(g)
        # the recipe's own prediction against the measurement (+ = too fast)
        meas = r["measured"].get("tokens_per_sec_per_gpu")
        err = f"{100 * (t_rec / r['hardware']['num_gpus'] / meas - 1):+6.1f}%" if meas else "     -"
        print(f"{r['id']:64} {lay_rec:34} {lay_free:34} {100 * g:+6.1f}%  {err}")
    if gains:
        print(f"{len(gains)} rows: median gain {100 * statistics.median(gains):+.1f}%, "
              f"largest {100 * max(gains):+.1f}%, above 20%: {sum(g > 0.2 for g in gains)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
