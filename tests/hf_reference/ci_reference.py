#!/usr/bin/env python3
"""The executor's first step against stored transformers numbers, without
torch: for each tests/hf_reference/data/*.json (written by hf_reference.py
--write-data), run plan + execute on its config (one rank, fp32) and compare
the loss, the gradients (AdamW's first moment) at the stored elements, each
tensor's largest gradient and gradient norm (within the bound times its
layer's largest gradient), and the updated weights, with
hf_reference.py's fp32 bounds (px_run.tolerances, px_run.update_bound).

Usage: ci_reference.py BUILD_DIR DATA_DIR     exits 1 on a disagreement."""
import glob, json, math, os, sys, tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import px_run  # noqa: E402


def check_case(build, rec, work):
    """Messages of the disagreements (empty: agrees) and a summary line."""
    cfg = rec["config"]
    tol = px_run.tolerances(cfg)
    ex = px_run.execute(build, cfg, px_run.ONE_RANK, work)
    bad = []
    loss_err = abs(ex["loss"] - rec["loss"]) / abs(rec["loss"])
    if loss_err > tol["loss_rel"]:
        bad.append(f"loss {ex['loss']:.9g}, transformers {rec['loss']:.9g}: relative "
                   f"{loss_err:.2e} > {tol['loss_rel']:.2e}")
    worst_g = worst_u = 0.0
    for tid, t in rec["tensors"].items():
        R, C, g = ex["grads"][int(tid)]
        w0, w1 = ex["p0"][int(tid)][2], ex["p1"][int(tid)][2]
        if R * C != t["n"]:
            bad.append(f"tensor {tid}: {R * C} elements, the data has {t['n']}")
            continue
        dg = tol["grad_rel"] * t["grad_scale"]
        gmax = max(abs(x) for x in g)
        norm = math.sqrt(sum(x * x for x in g))
        if abs(gmax - t["grad_max"]) > dg:
            bad.append(f"tensor {tid}: largest |gradient| {gmax:.7g}, transformers "
                       f"{t['grad_max']:.7g} (bound {dg:.2e})")
        if abs(norm - t["grad_norm"]) > math.sqrt(t["n"]) * dg:
            bad.append(f"tensor {tid}: gradient norm {norm:.7g}, transformers {t['grad_norm']:.7g}")
        for i, g_ref, w_ref in zip(t["index"], t["grad"], t["updated"]):
            e = abs(g[i] - g_ref)
            worst_g = max(worst_g, e / t["grad_scale"])
            if e > dg:
                bad.append(f"tensor {tid} element {i}: gradient {g[i]:.7g}, transformers "
                           f"{g_ref:.7g} (bound {dg:.2e})")
            u = abs(w1[i] - w_ref)
            worst_u = max(worst_u, u / px_run.LR)
            if u > px_run.update_bound(g_ref, w0[i], w_ref, dg):
                bad.append(f"tensor {tid} element {i}: updated weight {w1[i]:.9g}, "
                           f"torch.optim.AdamW {w_ref:.9g}")
    summary = (f"loss rel err {loss_err:.1e} (<= {tol['loss_rel']:.1e}), grad err {worst_g:.1e} "
               f"(<= {tol['grad_rel']:.1e}), update err {worst_u:.1e} lr")
    return bad, summary


def main():
    build, data = sys.argv[1:3]
    files = sorted(glob.glob(os.path.join(data, "*.json")))
    if not files:
        print(f"ci_reference.py: no data in {data}")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory(prefix="px-hfdata-") as tmp:
        for i, path in enumerate(files):
            rec = json.load(open(path))
            try:
                bad, summary = check_case(build, rec, os.path.join(tmp, str(i)))
            except px_run.ExecError as e:
                bad, summary = [str(e)], "did not run"
            failed += bool(bad)
            print(f"{'FAIL' if bad else 'ok  '} {rec['name']}: {summary}")
            for b in bad[:10]:
                print("     " + b)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
