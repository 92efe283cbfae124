"""parallax (the installed package) against the command-line tools.

usage: test_parallax.py PLAN SOURCE_ROOT

Checks that parallax.plan(...) is exactly json.loads of `plan --json` for
several presets and fixed layouts (the search's own timings aside), that a
Hugging Face config given as a dict plans as the same config given as a
file, that bad input raises parallax.Error with the tool's message, that an
unknown keyword raises TypeError, and that explain, validate and export give
what plan --explain, validate --json and build/export give.
"""
import json
import os
import subprocess
import sys

import parallax

PLAN, SRC = sys.argv[1], sys.argv[2]
# The search's wall-clock timings differ from run to run; nothing else may.
TIMINGS = (("search", "elapsed_s"), ("search", "configs_per_s"), ("partition", "elapsed_s"))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def cli(*args):
    """plan's stdout and stderr, and its exit status."""
    r = subprocess.run([PLAN, *args], capture_output=True, text=True, timeout=120)
    return r.stdout, r.stderr, r.returncode


def flags(options):
    out = []
    for k, v in options.items():
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


def without_timings(doc):
    doc = json.loads(json.dumps(doc))
    for outer, inner in TIMINGS:
        check(inner in doc.get(outer, {}), "%s.%s present" % (outer, inner))
        doc.get(outer, {}).pop(inner, None)
    return doc


def first_difference(a, b, path=""):
    if type(a) is not type(b):
        return "%s: %r vs %r" % (path, a, b)
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return "%s.%s: only on one side" % (path, k)
            d = first_difference(a[k], b[k], path + "." + k)
            if d:
                return d
    elif isinstance(a, list):
        if len(a) != len(b):
            return "%s: %d vs %d entries" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, "%s[%d]" % (path, i))
            if d:
                return d
    elif a != b:
        return "%s: %r vs %r" % (path, a, b)
    return None


def same_as_cli(model, gpus, options, cli_model=None):
    """parallax.plan(model, gpus, **options) == plan --json ... (timings aside)."""
    got = parallax.plan(model=model, gpus=gpus, **options)
    out, err, rc = cli("--model", cli_model or model, "--gpus", str(gpus), "--json",
                       *flags(options))
    check(rc == 0, "plan --json %s %s %s: exit %d: %s" % (model, gpus, options, rc, err))
    if rc != 0:
        return got
    d = first_difference(without_timings(got), without_timings(json.loads(out)))
    check(d is None, "plan(%s, %d, %s) differs from plan --json at %s" % (
        cli_model or model, gpus, options, d))
    return got


# Presets with the layout fixed.  The stage partition program (GLPK) has a
# time limit, so a candidate it does not prove optimal may come out
# differently from run to run: the comparisons keep uniform splits.
same_as_cli("70b", 64, dict(tp=8, pp=4, dp=2, micro_batch=1, zero=1, recompute="selective",
                            schedule="1f1b"))
same_as_cli("mixtral-8x7b", 64, dict(tp=2, ep=8, pp=4, dp=8, micro_batch=1,
                                     global_batch=512, schedule="interleaved", vpp=2,
                                     partition="uniform"))
same_as_cli("tiny-llama", 4, dict(tp=2, pp=2, dp=1, micro_batch=2, global_batch=16, seq=256,
                                  overlap="off", grad_dtype="bf16", partition="uniform"))
# Presets searched (uniform splits: the analytic pass alone is deterministic).
same_as_cli("70b", 1024, dict(partition="uniform", top=5, tokens="2T"))
same_as_cli("qwen3-235b", 256, dict(partition="uniform", hw="h200", top=3))
same_as_cli("tiny-gpt", 2, dict(partition="uniform"))
# A recipe: its options are plan's, under the ones given beside it.
got = parallax.plan(recipe="llama3-70b-lora", gpus=16)
out, err, rc = cli("--recipe", "llama3-70b-lora", "--gpus", "16", "--json")
check(rc == 0, "plan --recipe --json: exit %d: %s" % (rc, err))
if rc == 0:
    d = first_difference(without_timings(got), without_timings(json.loads(out)))
    check(d is None, "plan(recipe=...) differs from plan --recipe at %s" % d)
    check(got["gpus"] == 16 and got["plan"]["parallel"]["finetune"]["mode"] == "lora",
          "the recipe's LoRA and the given GPU count")
# underscores and booleans: no_sp=True is --no-sp
r = parallax.plan(model="70b", gpus=64, tp=8, pp=4, dp=2, micro_batch=1, no_sp=True)
check(r["plans"][0]["parallel"]["sp"] is False, "no_sp=True turns sequence parallelism off")

# A sweep: a list gives --sweep once per element; the document is plan's.
got = parallax.plan(model="70b", sweep=["gpus=256,512", "seq=4096,8192"], partition="uniform")
out, err, rc = cli("--model", "70b", "--sweep", "gpus=256,512", "--sweep", "seq=4096,8192",
                   "--partition", "uniform", "--json")
check(rc == 0, "plan --sweep --json: exit %d: %s" % (rc, err))
def sweep_without_timings(doc):
    doc = json.loads(json.dumps(doc))
    for p in doc["sweep"]:
        p.pop("elapsed_s")
    return doc
if rc == 0:
    d = first_difference(sweep_without_timings(got), sweep_without_timings(json.loads(out)))
    check(d is None, "plan(sweep=[...]) differs from plan --sweep --json at %s" % d)
check([(p["point"]["gpus"], p["point"]["seq"]) for p in got["sweep"]] ==
      [(256, 4096), (256, 8192), (512, 4096), (512, 8192)], "sweep=[...]: the product's points")

# A Hugging Face config as a dict plans as the same file does.
hf_path = os.path.join(SRC, "tests", "spec", "hf", "Qwen3-8B", "config.json")
with open(hf_path) as f:
    hf = json.load(f)
by_file = parallax.Model(hf_path)
by_dict = parallax.Model(hf, name=by_file.name)
check(by_dict.spec == by_file.spec, "Model(dict) == Model(config.json path)")
check(by_dict.params > 7e9 and by_dict.params < 9e9,
      "Qwen3-8B from a dict: %d parameters, 7e9..9e9" % by_dict.params)
same_as_cli(by_dict, 16, dict(tp=2, pp=2, dp=4, micro_batch=1, global_batch=64,
                                partition="uniform"),
            cli_model=hf_path)
# A downloaded model folder reads its config.json.
by_folder = parallax.Model(os.path.dirname(hf_path))
check(by_folder.spec == by_file.spec, "Model(folder) == Model(folder/config.json)")
r = parallax.plan(model=os.path.dirname(hf_path), gpus=8, partition="uniform", top=1)
check(r["model"] == by_file.name and r["params"] == by_file.params,
      "plan(model=folder) plans %s with %d parameters" % (r["model"], r["params"]))
check(parallax.Model("70b").spec == parallax.Model(parallax.Model("70b").spec).spec,
      "Model(preset).spec round-trips through Model(dict)")

# Bad input: parallax.Error carrying the tool's message.
for options, field in ((dict(model="70b", gpus=0), "--gpus"),
                       (dict(model="70b", gpus=8, schedule="best"), "--schedule"),
                       (dict(model="nosuch", gpus=8), "unknown model"),
                       (dict(model="70b", gpus=7, pp=1), "--gpus 7")):
    try:
        parallax.plan(**options)
        check(False, "plan(%s) raised nothing" % options)
    except parallax.Error as e:
        model = options.pop("model")
        gpus = options.pop("gpus")
        _, err, rc = cli("--model", model, "--gpus", str(gpus), *flags(options))
        first = err.splitlines()[0] if err else ""
        want = first[len("plan: error: "):] if first.startswith("plan: error: ") else \
            first[len("plan: "):]
        check(rc != 0 and str(e) == want,
              "Error message %r is the tool's %r" % (str(e), want))
        check(field in str(e), "Error message %r names %s" % (str(e), field))
try:
    parallax.plan(model="70b", gpus=8, bogus_option=1)
    check(False, "an unknown keyword raised nothing")
except TypeError as e:
    check("bogus_option" in str(e), "TypeError names the keyword: %s" % e)
try:
    parallax.Model({"hidden_size": 4096, "model_type": "llama"})
    check(False, "an incomplete HF dict raised nothing")
except parallax.Error as e:
    check("num_hidden_layers" in str(e), "incomplete HF dict: %s" % e)

# explain: the text of plan --explain (timing lines aside).
text = parallax.explain(model="70b", gpus=64, tp=8, pp=4, dp=2, micro_batch=1,
                        partition="uniform")
out, _, _ = cli("--model", "70b", "--gpus", "64", "--tp", "8", "--pp", "4", "--dp", "2",
                "--micro-batch", "1", "--partition", "uniform", "--explain")
def steady(t):
    return [l for l in t.splitlines() if not l.startswith("# searched")]
check(steady(text) == steady(out) and "# memory per GPU" in text,
      "explain() is plan --explain's text")

# validate: validate --json's document.
data = os.path.join(SRC, "tests", "validate", "data", "published-megatron.json")
v = parallax.validate(file=data)
check(v.get("within_bounds") is True, "validate(): within_bounds true")
# export: the plan dict (and its file) exported as build/export does.
EXPORT = os.path.join(os.path.dirname(PLAN), "export")
plan_file = os.path.abspath("plan-1f1b.json")
p1 = parallax.plan(model="70b", gpus=64, tp=8, pp=4, dp=2, micro_batch=1, schedule="1f1b",
                   partition="uniform", output=plan_file)
ex = subprocess.run([EXPORT, "--plan", plan_file, "--to", "megatron"], capture_output=True,
                    text=True, timeout=60)
check(ex.returncode == 0, "export --to megatron: %s" % ex.stderr)
check(parallax.export(p1["plan"], to="megatron") == ex.stdout,
      "export(plan dict, megatron) is build/export's file")
check(parallax.export(plan_file, to="megatron") == ex.stdout,
      "export(plan path, megatron) is build/export's file")
try:
    parallax.export(plan_file, to="megatron", bogus=1)
    check(False, "export() with an unknown keyword raised nothing")
except TypeError as e:
    check("bogus" in str(e) and "plan_path" in str(e),
          "export() TypeError names the keyword and the options: %s" % e)
check("--tensor-model-parallel-size 8\n" in ex.stdout, "megatron export: TP 8")
zb = parallax.plan(model="70b", gpus=64, tp=8, pp=4, dp=2, micro_batch=1, schedule="zb-h1",
                   partition="uniform")
try:
    parallax.export(zb["plan"], to="megatron")  # Megatron-LM runs 1f1b and interleaved
    check(False, "a zb-h1 plan exported to megatron")
except parallax.Error as e:
    check("zb-h1" in str(e) and e.status == "unsupported", "export refusal: %s" % e)
try:
    parallax.export(p1["plan"], to="maxtext")
    check(False, "export to maxtext raised nothing")
except parallax.Error as e:
    check("maxtext has no exporter" in str(e), "export to maxtext: %s" % e)

# calibrate_from_runs is calibrate --from-runs: the same fitted profiles
runs = [r for r in json.load(open(os.path.join(SRC, "tests/validate/data/published-runs.json")))
        if r["id"] in ("dgxc-v25.04-llama3-8b-bf16-h100-8gpu",
                       "dgxc-v25.04-llama3-70b-bf16-h100-64gpu")]
fit = parallax.calibrate_from_runs(runs, hw="h100-sxm", framework="megatron")
check(fit["hw"]["fitted"]["runs"] == [r["id"] for r in runs], "fitted.runs: %s" % fit["hw"].get("fitted"))
check(len(fit["fit"]["runs"]) == 2 and fit["fit"]["sse_fitted"] <= fit["fit"]["sse_base"],
      "fit table: %s" % fit["fit"])
runs_file = os.path.join(os.getcwd(), "runs.json")
json.dump(runs, open(runs_file, "w"))
prefix = os.path.join(os.getcwd(), "fitted")
r = subprocess.run([os.path.join(os.path.dirname(PLAN), "calibrate"), "--from-runs", runs_file,
                    "--hw", "h100-sxm", "--framework", "megatron", "-o", prefix],
                   capture_output=True, text=True, timeout=300)
check(r.returncode == 0, "calibrate --from-runs: %s" % r.stderr)
if r.returncode == 0:
    check(json.load(open(prefix + ".hw.json")) == fit["hw"], "the hw profile is calibrate's")
    check(json.load(open(prefix + ".framework.json")) == fit["framework"],
          "the framework profile is calibrate's")
try:
    parallax.calibrate_from_runs([{"id": "x"}], hw="h100-sxm", framework="megatron")
    check(False, "a row without fields raised nothing")
except parallax.Error as e:
    check("runs[0]" in str(e) and "hardware.gpu" in str(e), "bad row: %s" % e)

check(parallax.__version__ == cli("--version")[0].split()[-1], "__version__ is plan --version")
print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
