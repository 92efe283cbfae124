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

Where the recipe only fits with a recompute the search chose (the rows leave
recompute unpublished), two more columns: the gain over the same recipe
without recompute on a copy of its hardware profile whose memory is not the
limit (the part of the gain that is the recompute charged to make the
recipe fit, where the run kept its memory by other means, such as Megatron's
--recompute-modules, that `plan` does not describe), and the gain over the
recipe without recompute but with its activations offloaded as the
framework offloads them (`--offload activations`), where that fits.
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


def unbounded_memory(args, tmp):
    """args with --hw replaced by a copy of its profile whose memory is not the limit."""
    a = list(args)
    i = a.index("--hw")
    path = a[i + 1] if a[i + 1].endswith(".json") else os.path.join("hw_profiles", a[i + 1] + ".json")
    with open(path) as f:
        prof = json.load(f)
    prof["hbm_bytes"] = 4 * 10**12
    out = os.path.join(tmp, os.path.basename(path) + ".unbounded.json")
    with open(out, "w") as f:
        json.dump(prof, f)
    a[i + 1] = out
    return a


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
    print(f"{'row':64} {'recipe':34} {'planner':34}   gain  recipe err  gain w/o rc"
          f"  gain w/ act. offload")
    unfit, adjusted, offl = [], [], []
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
        nofit, off = "", ""
        if "rc:" in lay_rec:
            t_nr, _ = run_plan(unbounded_memory(args, tmp) + ["--recompute", "none"])
            if t_nr is not None:
                unfit.append(t_free / t_nr - 1.0)
                nofit = f"{100 * unfit[-1]:+6.1f}%"
            t_off, _ = run_plan(args + ["--offload", "activations", "--recompute", "none"])
            if t_off is not None:
                offl.append(t_free / t_off - 1.0)
                off = f"{100 * offl[-1]:+6.1f}%"
        adjusted.append(unfit[-1] if nofit else g)
        print(f"{r['id']:64} {lay_rec:34} {lay_free:34} {100 * g:+6.1f}%  {err}     "
              f"{nofit:7}      {off}")
    if gains:
        print(f"{len(gains)} rows: median gain {100 * statistics.median(gains):+.1f}%, "
              f"largest {100 * max(gains):+.1f}%, above 20%: {sum(g > 0.2 for g in gains)}")
    if unfit:
        print(f"{len(unfit)} recipes fit only with a recompute: gain over them without it "
              f"median {100 * statistics.median(unfit):+.1f}%, largest {100 * max(unfit):+.1f}%, "
              f"above 20%: {sum(g > 0.2 for g in unfit)}")
        print(f"all {len(adjusted)} rows, those recipes without recompute: median gain "
              f"{100 * statistics.median(adjusted):+.1f}%, largest {100 * max(adjusted):+.1f}%, "
              f"above 20%: {sum(g > 0.2 for g in adjusted)}")
    if offl:
        print(f"{len(offl)} of them fit with their activations offloaded instead: gain over "
              f"them median {100 * statistics.median(offl):+.1f}%, largest "
              f"{100 * max(offl):+.1f}%, above 20%: {sum(g > 0.2 for g in offl)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
