#!/usr/bin/env python3
"""Published peak memory beside plan's prediction, row by row.

Usage (from the project's root):
  python3 bench/memory_published.py build/plan ../shared/data/published-runs-2.json[,...] \
      [--tools ../shared/tools] [--max-err X]
Every row whose `measured` gives memory_gb is turned into the plan call of
shared/data/README.md (shared/tools/published_runs.py row_args) and its
predicted peak, with the run's own micro-batch and recompute where the
row gives them in a form the mapping leaves out (local_batch_size; a
recompute named in words, "... default (selective)"), is set beside the
row's figure in the unit and convention
its framework reports (docs/cost-model.md, "Published peak memory"):
torchtitan logs the caching allocator's peak reserved bytes in GiB
(torch.cuda.memory_stats()["reserved_bytes.all.peak"]), which holds the
allocated peak, the workspaces it hands out and its cached blocks but not
the CUDA context nor NCCL's own buffers: the prediction's allocated_bytes +
workspace_bytes + allocator_cache_bytes of plans[0].memory (the worst
stage).  Prints one line per row and the mean and largest error; --max-err
X exits 1 when a row's |error| exceeds X."""
import json, os, re, sys, tempfile

GIB = 1024 ** 3


def per_gpu_batch(r):
    """The micro-batch memory depends on: a row that leaves micro_batch null but gives
    the per-GPU batch (local_batch_size) with no accumulation (global_batch =
    local_batch_size x dp: torchtitan's training.batch_size before it had gradient
    accumulation) ran that batch in one micro-batch; else the search picks it."""
    p = r["parallel"]
    lb, gb, dp = p.get("local_batch_size"), p.get("global_batch"), p.get("dp")
    if p.get("micro_batch") or not lb or not gb or not dp or p.get("grad_accum"):
        return []
    if gb != lb * dp:
        return []
    pp = p.get("pp") or 1
    if pp == 1:
        return ["--micro-batch", str(lb)]
    # with a pipeline torchtitan splits that batch into one micro-batch per
    # pipeline stage (its 2024 config_manager.py:
    # experimental.pipeline_parallel_microbatches, "the number of pipeline
    # stages, if unspecified"): pp of them under 1F1B; an interleaved row
    # does not say its stages, so its micro-batch is searched
    if (p.get("pp_schedule") or "").lower() == "1f1b" and lb % pp == 0:
        return ["--micro-batch", str(lb // pp)]
    return []


def run_recompute(r, args):
    """The recompute the run used, where the row names it in words the mapping
    does not read ("torchtitan llama3_8b.toml default (selective)"): the memory
    depends on it, and the search would otherwise pick its own."""
    if "--recompute" in args:
        return []
    rc = (r["parallel"].get("recompute") or "").lower()
    for mode in ("selective", "full"):
        if re.search(r"\b" + mode + r"\b", rc):
            return ["--recompute", mode]
    return []


def main():
    plan, paths = sys.argv[1], sys.argv[2]
    a = sys.argv
    tools = a[a.index("--tools") + 1] if "--tools" in a else os.path.join("..", "shared", "tools")
    max_err = float(a[a.index("--max-err") + 1]) if "--max-err" in a else None
    sys.path.insert(0, tools)
    import published_runs as pr
    helptext = pr.helptext_of(plan)
    rows = []
    for path in paths.split(","):
        rows += [r for r in json.load(open(path)) if r["measured"].get("memory_gb")]
    errs, bad = [], 0
    print(f"{'row':52} {'framework':10} {'pred GiB':>9} {'pub GiB':>8} {'err %':>7}  convention")
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            args = pr.row_args(plan, r, tmp, helptext)
            if not isinstance(args, str):
                args += per_gpu_batch(r) + run_recompute(r, args)
            if isinstance(args, str):
                print(f"{r['id'][:52]:52} refused: {args}")
                bad += 1
                continue
            import subprocess
            out = subprocess.run(args, capture_output=True, text=True, timeout=120)
            try:
                best = json.loads(out.stdout)["plans"][0]
            except Exception:
                print(f"{r['id'][:52]:52} refused: {(out.stderr.strip().splitlines() or ['?'])[-1][:100]}")
                bad += 1
                continue
            fw = pr.framework(r)
            mem = best["memory"]
            # the reserved peak (a plan without the runtime's parts: its total)
            pred = (mem.get("allocated_bytes", mem["total_bytes"]) +
                    mem.get("workspace_bytes", 0) + mem.get("allocator_cache_bytes", 0)) / GIB
            pub = r["measured"]["memory_gb"]  # GiB where the note says so (torchtitan)
            err = (pred - pub) / pub
            errs.append(err)
            conv = "reserved peak (caching allocator)" if fw == "torchtitan" else "as published"
            print(f"{r['id'][:52]:52} {fw:10} {pred:9.1f} {pub:8.1f} {err * 100:+7.1f}  {conv}")
    if errs:
        mean = sum(abs(e) for e in errs) / len(errs)
        worst = max(errs, key=abs)
        print(f"# {len(errs)} rows: mean |error| {mean * 100:.1f} %, largest {worst * 100:+.1f} %, refused {bad}")
    if max_err is not None and (bad or any(abs(e) > max_err for e in errs)):
        sys.exit(1)


if __name__ == "__main__":
    main()
