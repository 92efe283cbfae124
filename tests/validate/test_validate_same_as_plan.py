#!/usr/bin/env python3
"""validate FILE --json and `plan` run on the command line shared/tools/published_runs.py makes of
each row (the data README's mapping, as a user would write it) give the same prediction for every
usable row of both shared published-runs files: relative difference <= 1e-9, and the same rows
refused.  The stage partitioner stops by GLPK's work, so a row whose programs run to their limit
is predicted alike too; only a row whose programs the clock stopped in either run (a machine far
slower or busier than usual: plan's partition.clock_limited, validate's time_limited) may
legitimately differ: such rows must be predicted by both, and are counted.
Exits 77 (skipped) when ../shared/data or the tool is absent ($PARALLAX_SHARED_DIR overrides
../shared).
usage: test_validate_same_as_plan.py BUILD_DIR SOURCE_DIR"""
import json, os, subprocess, sys, tempfile

build, src = sys.argv[1], sys.argv[2]
shared = os.environ.get("PARALLAX_SHARED_DIR") or os.path.join(src, "..", "shared")
files = [os.path.join(shared, "data", f) for f in ("published-runs.json", "published-runs-2.json")]
tool = os.path.join(shared, "tools")
if not all(os.path.exists(f) for f in files) or not os.path.exists(os.path.join(tool, "published_runs.py")):
    print("skip: ../shared/data or ../shared/tools/published_runs.py absent")
    sys.exit(77)
sys.path.insert(0, tool)
import published_runs as pr  # noqa: E402

os.chdir(src)  # the tool reads hw_profiles/ relative to the working directory
plan = os.path.join(build, "plan")
helptext = pr.helptext_of(plan)
tmp = tempfile.mkdtemp()


def plan_row(row):
    """(prediction on the compared quantity, clock-limited) by the tool's command line; a str when refused."""
    args = pr.row_args(plan, row, tmp, helptext)
    if isinstance(args, str):
        return args
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return (out.stderr.strip().splitlines() or ["?"])[-1]
    doc = json.loads(out.stdout)
    best, part = doc["plans"][0], doc["partition"]
    key, _ = pr.measured(row)
    value = {"tok": best["tokens_per_s"] / row["hardware"]["num_gpus"], "mfu": best["mfu"],
             "step": best["step_time_s"]}[key]
    return value, part["clock_limited"] > 0


fail = 0
for path in files:
    out = subprocess.run([os.path.join(build, "validate"), path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"validate {path}: exit {out.returncode}: {out.stderr.strip()}")
        fail = 1
        continue
    by_id = {r["id"]: r for r in json.loads(out.stdout)["rows"]}
    same = timed = 0
    for row in json.load(open(path)):
        if not pr.usable(row, "all", "all"):
            continue
        v = by_id[row["id"]]
        want = plan_row(row)
        if isinstance(want, str):
            if v.get("evaluated"):
                print(f"{row['id']}: plan refuses ({want}), validate predicts")
                fail = 1
            continue
        if not v.get("evaluated"):
            print(f"{row['id']}: plan predicts, validate refuses: {v['note']}")
            fail = 1
            continue
        pred, plan_timed = want
        if plan_timed or v["time_limited"]:
            timed += 1
            continue
        if abs(v["predicted"] / pred - 1.0) > 1e-9:
            print(f"{row['id']}: validate {v['predicted']!r} vs plan {pred!r}")
            fail = 1
        same += 1
    print(f"{os.path.basename(path)}: {same} rows predicted alike, {timed} clock-limited rows "
          f"predicted by both")
sys.exit(fail)
