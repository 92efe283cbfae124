#!/usr/bin/env python3
"""Every model x framework x precision x hardware x GPU count through every
output path of the tools, each result checked.

The product: every model preset (models/) and every Hugging Face test config
(tests/spec/hf/*/config.json) x every framework (frameworks/, each rewritten
to allow every precision so that the cost code runs where the shipped
profile would refuse) x every precision x every hardware profile
(hw_profiles/) x GPU counts 1, 8, 64, 1024, 16384.  Each combination is
planned through one output path, cycled in order: the table, --json,
--explain, --html, or -o followed by `export` to every target and
`execute --check`; with --every-path, through all of them.  --json
additionally runs on every combination the checks need numbers from.  Each
combination also takes one set of options, cycled in order beside the
output paths (OPTIONS: none, each offload, fine-tuning, a release each
profile plans as its nearest documented state, the expert all-to-all
overlap, the DeepEP dispatcher), so that every pair of an output path and an option set recurs.

Checks:
- exit status 0, or 1 with one line on stderr ("TOOL: error: ...") that
  names an input (the model, framework, profile, or an option); never 2
  (usage), never a signal, never a sanitizer report;
- --json: every number finite; every "..._s" time and "..._bytes" size
  >= 0, the step time > 0, tokens/s > 0; the chosen plan's memory within
  the limit the output claims (mem_limit_bytes);
- text outputs (table, --explain, --html, exports): no "nan" or "inf";
- export: exit 0 for every target; execute --check: exit 0 or 1.

    combinations.py BUILD_DIR [--seed N] [--sample N] [--budget-s S] [--every-path]
                    [--no-options] [--models TEXT]
--sample 0 runs the whole product (bench/combinations.sh); the CI test
runs a fixed-seed sample that fits its time budget.  Run from anywhere: the
repository is found from this file."""
import argparse
import concurrent.futures
import itertools
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPUS = [1, 8, 64, 1024, 16384]
PRECISIONS = ["bf16", "fp16", "fp8", "fp8-cs", "fp8-rowwise", "fp8-block", "mxfp8", "nvfp4"]
EXPORTS = ["megatron", "nemo", "torchtitan", "deepspeed", "slurm"]
MODES = ["table", "json", "explain", "html", "export"]
# seventeen sets, prime to the five output paths, so that every pair recurs
OPTIONS = [[], ["--offload", "optimizer"], ["--offload", "activations"], ["--offload", "params"],
           ["--offload", "optimizer,activations"], ["--finetune", "lora"],
           ["--finetune", "full"], ["--framework-release", "2019"],
           ["--framework-release", "nemo-25.04"], ["--moe-a2a-overlap", "on"],
           ["--moe-a2a-overlap", "on", "--framework-release", "nemo-24.03"],
           ["--moe-dispatcher", "deepep"], ["--recompute-modules", "moe_act,layernorm"],
           ["--recompute-modules", "mla_up_proj,mlp,shared_experts"],
           ["--attention-kernel", "triton"], ["--attention-kernel", "unfused"],
           ["--tp-comm-overlap", "on"]]
OUTCOMES = {0: 0, 1: 0, "other": 0}  # of each combination's plan --json
OUTCOMES_LOCK = threading.Lock()
NONFINITE = re.compile(r"(?<![A-Za-z_])(nan|-?inf)(?![A-Za-z_])", re.I)
SAN = re.compile(r"AddressSanitizer|runtime error:|LeakSanitizer|UndefinedBehaviorSanitizer")


def inputs(work):
    models = sorted(os.path.join(ROOT, "models", f) for f in os.listdir(os.path.join(ROOT, "models"))
                    if f.endswith(".json"))
    hf = os.path.join(ROOT, "tests", "spec", "hf")
    models += sorted(os.path.join(hf, d, "config.json") for d in os.listdir(hf)
                     if os.path.isfile(os.path.join(hf, d, "config.json")))
    fws = []
    fdir = os.path.join(ROOT, "frameworks")
    for f in sorted(os.listdir(fdir)):
        if not f.endswith(".json"):
            continue
        with open(os.path.join(fdir, f)) as fh:
            doc = json.load(fh)
        doc["capabilities"]["precisions"] = PRECISIONS  # the cost code runs everywhere
        path = os.path.join(work, "all-precisions-" + f)
        with open(path, "w") as fh:
            json.dump(doc, fh)
        fws.append(path)
    hws = sorted(os.path.join(ROOT, "hw_profiles", f)
                 for f in os.listdir(os.path.join(ROOT, "hw_profiles")) if f.endswith(".json"))
    return models, fws, hws


def run(cmd, timeout=300):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           errors="replace")
        return p.returncode, p.stdout, p.stderr, time.monotonic() - t0
    except subprocess.TimeoutExpired:
        return "timeout", "", "", time.monotonic() - t0


def names_input(err, combo, extra=()):
    """A refusal names what it refuses: an input file or name, or an option."""
    model, fw, hw, prec, gpus = combo
    keys = list(extra) + [os.path.basename(model), os.path.basename(os.path.dirname(model)),
            os.path.basename(model).replace(".json", ""), os.path.basename(fw),
            os.path.basename(hw), os.path.basename(hw).replace(".json", ""), prec, "--"]
    # or a file it read (an export target's framework profile)
    return any(k and k in err for k in keys) or re.search(r"\S+\.json\b", err) is not None


def check_exit(tool, rc, out, err, combo, findings, what, extra=()):
    if rc == "timeout":
        findings.append(f"{what}: timed out")
        return False
    if SAN.search(err):
        findings.append(f"{what}: sanitizer report: {err.strip()[:300]}")
        return False
    if rc < 0 or rc > 1:
        findings.append(f"{what}: exit {rc} (want 0, or 1 with an error): {err.strip()[:300]}")
        return False
    if rc == 1:
        lines = [l for l in err.splitlines() if l.strip()]
        if len(lines) != 1 or not lines[0].startswith(f"{tool}: "):
            findings.append(f"{what}: refusal is not one line \"{tool}: ...\": {err[:300]!r}")
        elif not names_input(lines[0], combo, extra):
            findings.append(f"{what}: refusal names no input: {lines[0][:300]}")
        return False
    return True


def walk_numbers(x, path, bad):
    if isinstance(x, dict):
        for k, v in x.items():
            walk_numbers(v, f"{path}.{k}", bad)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if (k.endswith("_s") or k.endswith("_bytes")) and v < 0:
                    bad.append(f"{path}.{k} = {v} < 0")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk_numbers(v, f"{path}[{i}]", bad)
    elif isinstance(x, float) and not math.isfinite(x):
        bad.append(f"{path} = {x}")


def check_json(out, what, findings):
    try:
        doc = json.loads(out, parse_constant=lambda c: float(c))
    except ValueError as e:
        findings.append(f"{what}: --json output is not JSON: {e}")
        return
    bad = []
    walk_numbers(doc, "", bad)
    if not isinstance(doc, dict) or "plan" not in doc:
        findings.append(f"{what}: --json output has no plan")
        return
    pred = doc["plan"].get("prediction", {})
    step = pred.get("time", {}).get("step_s", pred.get("step_s"))
    if not (isinstance(step, (int, float)) and step > 0):
        bad.append(f"step_s = {step!r} (want > 0)")
    if not pred.get("tokens_per_s", 0) > 0:
        bad.append(f"tokens_per_s = {pred.get('tokens_per_s')!r} (want > 0)")
    mem = pred.get("memory", {}).get("total_bytes")
    limit = doc.get("mem_limit_bytes")
    if not isinstance(mem, int) or not isinstance(limit, int) or mem > limit:
        bad.append(f"memory {mem!r} bytes over the limit it claims, {limit!r}")
    for b in bad[:5]:
        findings.append(f"{what}: {b}")


def check_text(text, what, findings):
    m = NONFINITE.search(text)
    if m:
        lo = max(0, m.start() - 60)
        findings.append(f"{what}: non-finite number: ...{text[lo:m.end() + 20]!r}")


def one(build, combo, modes, work, findings, opts=()):
    model, fw, hw, prec, gpus = combo
    base = [os.path.join(build, "plan"), "--model", model, "--framework", fw, "--hw", hw,
            "--precision", prec, "--gpus", str(gpus), *opts]
    what = (f"plan --model {os.path.relpath(model, ROOT)} --framework "
            f"{os.path.basename(fw)} --hw {os.path.basename(hw)} --precision {prec} "
            f"--gpus {gpus}{''.join(' ' + o for o in opts)}")
    runs = 0
    rc, out, err, _ = run(base + ["--json"])
    runs += 1
    with OUTCOMES_LOCK:
        OUTCOMES[rc if rc in (0, 1) else "other"] += 1
    if check_exit("plan", rc, out, err, combo, findings, what + " --json"):
        check_json(out, what + " --json", findings)
    if rc != 0:
        return runs
    for mode in modes:
        runs += one_path(build, base, what, combo, mode, work, findings)
    return runs


def one_path(build, base, what, combo, mode, work, findings):
    """One output path (besides the --json run) of a combination that plans."""
    runs = 0
    if mode in ("table", "explain"):
        extra = [] if mode == "table" else ["--explain"]
        rc, out, err, _ = run(base + extra)
        runs += 1
        if check_exit("plan", rc, out, err, combo, findings, f"{what} {' '.join(extra)}"):
            check_text(out, f"{what} {' '.join(extra)}", findings)
    elif mode == "html":
        html = os.path.join(work, "r.html")
        rc, out, err, _ = run(base + ["--html", html])
        runs += 1
        if check_exit("plan", rc, out, err, combo, findings, what + " --html"):
            with open(html, errors="replace") as f:
                check_text(re.sub(r"<script.*?</script>", "", f.read(), flags=re.S),
                           what + " --html", findings)
    elif mode == "export":
        plan = os.path.join(work, "p.json")
        rc, out, err, _ = run(base + ["-o", plan])
        runs += 1
        if not check_exit("plan", rc, out, err, combo, findings, what + " -o"):
            return runs
        for target in EXPORTS:
            rc, out, err, _ = run([os.path.join(build, "export"), "--plan", plan, "--to", target])
            runs += 1
            w = f"{what} -o; export --to {target}"
            # another framework's export may refuse the plan: one line naming it
            if check_exit("export", rc, out, err, combo, findings, w, [target]):
                check_text(out, w, findings)
        rc, out, err, _ = run([os.path.join(build, "execute"), "--plan", plan, "--check"])
        runs += 1
        if rc == "timeout" or SAN.search(err) or rc not in (0, 1):
            findings.append(f"{what} -o; execute --check: exit {rc}: {err.strip()[:200]}")
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sample", type=int, default=0, help="combinations to run; 0: all")
    ap.add_argument("--jobs", type=int, default=1, help="combinations run at once")
    ap.add_argument("--progress", type=int, default=0,
                    help="print a progress line every N combinations (0: none)")
    ap.add_argument("--every-path", action="store_true",
                    help="every output path for every combination (else one, cycled)")
    ap.add_argument("--no-options", action="store_true",
                    help="no option set: each combination as its five inputs give it")
    ap.add_argument("--models", default="",
                    help="only the models whose path contains this text (a family's product)")
    ap.add_argument("--budget-s", type=float, default=0,
                    help="start no combination after this many seconds (0: none); the "
                         "combinations run are then a uniform sample")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    with tempfile.TemporaryDirectory(prefix="px-combos.") as work:
        models, fws, hws = inputs(work)
        models = [m for m in models if a.models in m]
        product = list(itertools.product(models, fws, hws, PRECISIONS, GPUS))
        total = len(product)
        rng = random.Random(a.seed)
        # in the seed's order even for the whole product: a run stopped early
        # (--budget-s) is a uniform sample
        chosen = rng.sample(product, a.sample if 0 < a.sample < total else total)
        findings, runs, done = [], 0, 0
        t0 = time.monotonic()

        def task(i):
            if a.budget_s and time.monotonic() - t0 > a.budget_s:
                return None
            mine = []
            with tempfile.TemporaryDirectory(dir=work) as wd:
                modes = MODES if a.every_path else [MODES[i % len(MODES)]]
                opts = [] if a.no_options else OPTIONS[i % len(OPTIONS)]
                n = one(build, chosen[i], modes, wd, mine, opts)
            return n, mine

        with concurrent.futures.ThreadPoolExecutor(max(1, a.jobs)) as pool:
            for res in pool.map(task, range(len(chosen))):
                if res is None:
                    continue
                runs += res[0]
                done += 1
                for f in res[1]:
                    print("FINDING", f, flush=True)
                if a.progress and done % a.progress == 0:
                    print(f"# {done} of {len(chosen)} combinations, {len(findings)} findings, "
                          f"{time.monotonic() - t0:.0f} s", flush=True)
                findings += res[1]
        took = time.monotonic() - t0
        print(f"combinations: {done} of {total} (models {len(models)} x frameworks {len(fws)} x "
              f"hardware {len(hws)} x precisions {len(PRECISIONS)} x GPU counts {len(GPUS)}), "
              f"seed {a.seed}, {'every output path, ' if a.every_path else ''}"
              f"{'no option sets, ' if a.no_options else ''}"
              f"{runs} tool runs in {took:.1f} s; planned {OUTCOMES[0]}, refused "
              f"{OUTCOMES[1]}; {len(findings)} findings")
        if done < len(chosen):
            print(f"# stopped by --budget-s {a.budget_s:g}: {done} of {len(chosen)} "
                  f"combinations ran (a uniform sample: the order is the seed's)")
        return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
