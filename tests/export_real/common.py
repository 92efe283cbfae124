"""common.py — what every check_<target>.py shares: the plan's facts and the
one-line verdict (`ok`, `FAIL <field>: plan X, framework Y`, or the
framework's own exception; PX_EXPORT_REAL_TRACE=1 prints its traceback)."""
import os
import sys
import traceback


class Mismatch(Exception):
    def __init__(self, field, plan, framework):
        self.field, self.plan, self.framework = field, plan, framework
        super().__init__("%s: plan %s, framework %s" % (field, plan, framework))


def same(field, plan_value, framework_value):
    if plan_value != framework_value:
        raise Mismatch(field, plan_value, framework_value)


def gpus(plan):
    p = plan["parallel"]
    return p["tp"] * p["cp"] * p["pp"] * p["dp"]


def global_batch(plan):
    p = plan["parallel"]
    return p["micro_batch"] * p["num_microbatches"] * p["dp"]


def chunks(plan):
    """Layers per pipeline chunk in model order when the split is uneven,
    else None (a uniform split)."""
    lpc = plan["parallel"]["layers_per_chunk"]
    return lpc if lpc and len(set(lpc)) > 1 else None


def recompute(plan):
    """{"kind": none|selective|full|block, "n": N for block}."""
    p, m = plan["parallel"], plan["model"]
    per = p["layer_recompute"]
    if not per or len(set(per)) == 1:
        return {"kind": per[0] if per else p["recompute"]}
    n_chunks = p["pp"] * p["vpp"]
    lpc = p["layers_per_chunk"] or [m["n_layers"] // n_chunks] * n_chunks
    i, ns = 0, set()
    for c in lpc:
        k = 0
        while k < c and per[i + k] == "full":
            k += 1
        ns.add(k)
        i += c
    return {"kind": "block", "n": ns.pop() if len(ns) == 1 else -1}


def verdict(check):
    """Runs check(); returns `ok` or the FAIL line.  What the framework
    prints goes to stderr: stdout holds the verdicts."""
    import contextlib
    try:
        with contextlib.redirect_stdout(sys.stderr):
            check()
    except Mismatch as e:
        return "FAIL %s" % e
    except BaseException as e:  # the framework's own rejection, in one line
        if isinstance(e, KeyboardInterrupt):
            raise
        if isinstance(e, SystemExit) and e.code in (0, None):
            e = RuntimeError("the framework exited")
        if os.environ.get("PX_EXPORT_REAL_TRACE"):
            traceback.print_exc()
        where = traceback.extract_tb(e.__traceback__)[-1]
        msg = " ".join(str(e).split()) or type(e).__name__
        return "FAIL framework: %s: %s (%s:%d)" % (type(e).__name__, msg[:300],
                                                   where.filename.split("/")[-1], where.lineno)
    return "ok"


def main(check, after=None):
    """The checkers' command line: --plan PLAN.json --export FILE prints one
    verdict line (exit 0 ok, 1 FAIL); --batch LIST checks every `PLAN EXPORT`
    line of LIST with the framework imported once and prints `EXPORT: verdict`
    a line (exit 1 if any FAIL).  check(plan, text, path) raises on a mismatch;
    after(), when given, runs after each check (a fake world torn down)."""
    import argparse
    import json
    ap = argparse.ArgumentParser()
    ap.add_argument("--plan")
    ap.add_argument("--export")
    ap.add_argument("--batch")
    a = ap.parse_args()
    if a.batch:
        pairs = [ln.split() for ln in open(a.batch) if ln.strip()]
    elif a.plan and a.export:
        pairs = [(a.plan, a.export)]
    else:
        ap.error("give --plan and --export, or --batch")
    bad = 0
    for plan_path, export_path in pairs:
        v = verdict(lambda: check(json.load(open(plan_path)), open(export_path).read(),
                                 export_path))
        if after:
            after()
        bad += v != "ok"
        print("%s: %s" % (export_path, v) if a.batch else v, flush=True)
    sys.exit(1 if bad else 0)
