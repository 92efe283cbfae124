#!/usr/bin/env python3
"""validate FILE --json and `plan` driven by shared/tools/published_runs.py (the data README's
mapping, run as a user would) give the same prediction for every usable row of both shared
published-runs files: relative difference <= 1e-9, and the same rows refused.
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
fail = 0
for path in files:
    out = subprocess.run([os.path.join(build, "validate"), path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"validate {path}: exit {out.returncode}: {out.stderr.strip()}")
        fail = 1
        continue
    by_id = {r["id"]: r for r in json.loads(out.stdout)["rows"]}
    n = 0
    for row in json.load(open(path)):
        if not pr.usable(row, "all", "all"):
            continue
        v = by_id[row["id"]]
        want = pr.predict(plan, row, tmp, helptext)
        if isinstance(want, str):
            if v.get("evaluated"):
                print(f"{row['id']}: plan refuses ({want}), validate predicts")
                fail = 1
            continue
        if not v.get("evaluated"):
            print(f"{row['id']}: plan predicts, validate refuses: {v['note']}")
            fail = 1
            continue
        pred = want[0]
        got = v["predicted"] if v["call"]["on"] != "step_time_s" else 1.0 / v["predicted"]
        if abs(got / pred - 1.0) > 1e-9:
            print(f"{row['id']}: validate {got!r} vs plan {pred!r}")
            fail = 1
        n += 1
    print(f"{os.path.basename(path)}: {n} rows predicted alike")
sys.exit(fail)
