#!/usr/bin/env python3
"""The project's memory by kind beside Megatron-LM's theoretical_memory_usage.py
and DeepSpeed's estimate_zero2/3_model_states_mem_needs, on fixed layouts.

Usage: memory_reference.py PLAN SOURCE_ROOT VENV [--markdown FILE]
Megatron's module is imported with a two-function stand-in for its
megatron.training.utils (print_rank_0, is_hybrid_model); DeepSpeed's two
estimators are taken from its source by name (ast) and run as they are:
neither needs torch.  Megatron's arguments are the namespace its parse_args
builds for these flags (defaults of megatron/training/arguments.py for the
rest).  Exits 1 when an agreement asserted here fails."""
import ast, json, math, os, subprocess, sys, types
from argparse import Namespace

PLAN, ROOT, VENV = sys.argv[1:4]
MD = sys.argv[sys.argv.index("--markdown") + 1] if "--markdown" in sys.argv else None
SRC = os.path.join(VENV, "src")


def load_megatron():
    pkg = types.ModuleType("megatron"); pkg.__path__ = []
    tr = types.ModuleType("megatron.training"); tr.__path__ = [os.path.join(SRC, "megatron/training")]
    ut = types.ModuleType("megatron.training.utils")
    ut.print_rank_0 = lambda *a, **k: None
    ut.is_hybrid_model = lambda args: False
    sys.modules.update({"megatron": pkg, "megatron.training": tr, "megatron.training.utils": ut})
    import importlib
    return importlib.import_module("megatron.training.theoretical_memory_usage")


def load_deepspeed(path, name):
    tree = ast.parse(open(os.path.join(SRC, "deepspeed", path)).read())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name)
    ns = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), path, "exec"), ns)
    return ns[name]


MEG = load_megatron()
DS2 = load_deepspeed("deepspeed/runtime/zero/stage_1_and_2.py", "estimate_zero2_model_states_mem_needs")
DS3 = load_deepspeed("deepspeed/runtime/zero/stage3.py", "estimate_zero3_model_states_mem_needs")


def model(name):
    return json.load(open(os.path.join(ROOT, "models", name + ".json")))


def plan(name, gpus, fw, **kw):
    args = [PLAN, "--model", name, "--gpus", str(gpus), "--framework", fw, "--hw", "b300",
            "--no-milp", "--json"]
    for k, v in kw.items():
        args += ["--" + k.replace("_", "-"), str(v)]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"plan {' '.join(args[1:])}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def megatron_args(m, tp, pp, dp, vpp, mb, seq, zero, rc, sp, ep=1, etp=1):
    h = m["hidden"]
    q = 128 * tp  # --make-vocab-size-divisible-by 128, times tp
    return Namespace(
        hidden_size=h, num_layers=m["n_layers"], num_attention_heads=m["n_heads"],
        kv_channels=h // m["n_heads"], ffn_hidden_size=m["ffn"],
        group_query_attention=m.get("n_kv_heads", m["n_heads"]) != m["n_heads"],
        num_query_groups=m.get("n_kv_heads", m["n_heads"]),
        swiglu=m["block"] == "llama", normalization="RMSNorm" if m["block"] == "llama" else "LayerNorm",
        num_experts=m.get("n_experts"), moe_ffn_hidden_size=m.get("moe_ffn"),
        moe_router_topk=m.get("top_k", 2), moe_layer_freq=1, moe_shared_expert_intermediate_size=None,
        moe_latent_size=None, mtp_num_layers=None, multi_latent_attention=False,
        add_bias_linear=m["block"] == "gpt", moe_shared_expert_gate=False,
        padded_vocab_size=-(-m["vocab"] // q) * q,
        untie_embeddings_and_output_weights=not m.get("tied_embeddings", False),
        tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp, data_parallel_size=dp,
        expert_model_parallel_size=ep, expert_tensor_parallel_size=etp,
        world_size=tp * pp * dp, virtual_pipeline_model_parallel_size=vpp if vpp > 1 else None,
        use_distributed_optimizer=zero >= 1, seq_length=seq, micro_batch_size=mb,
        sequence_parallel=sp, recompute_granularity=rc if rc != "none" else None)


def korthikanti_layer(m, t, s, b, rc, sp):
    """Bytes one GPT layer keeps (Korthikanti et al. 2022, table 2), flash-style
    attention: the selective rows (no s x s scores)."""
    h = m["hidden"]
    if rc == "full":
        return 2 * s * b * h / (t if sp else 1)
    return s * b * h * (34 / t if sp else 10 + 24 / t)


ROWS = []


def row(cfg, kind, ours, ref, tol, reason=""):
    dev = (ours - ref) / ref if ref else 0.0
    ok = tol is None or abs(dev) <= tol
    ROWS.append((cfg, kind, ours / 1e9, ref / 1e9, dev * 100, "yes" if tol is not None else "no", reason, ok))


def megatron_case(name, gpus, tp, pp, dp, vpp=1, mb=1, seq=None, zero=1, rc="selective", sp=True, ep=1,
                  gb=None):
    m = model(name)
    seq = seq or m["seq_len"]
    kw = dict(tp=tp, pp=pp, dp=dp, micro_batch=mb, seq=seq, zero=zero, recompute=rc,
              sp="on" if sp and tp > 1 else "off",
              schedule="interleaved" if vpp > 1 else "1f1b")
    if vpp > 1:
        kw["vpp"] = vpp
    if ep > 1:
        kw["ep"] = ep
    if gb:
        kw["global_batch"] = gb
    d = plan(name, gpus, "megatron", **kw)
    p = d["plans"][0]; mem = p["memory"]; bd = p["breakdown"]
    cfg = f"{name} TP{tp} PP{pp}{'x' + str(vpp) if vpp > 1 else ''} DP{dp}{' EP' + str(ep) if ep > 1 else ''} ZeRO-{zero} {rc}{' SP' if sp and tp > 1 else ''} mb{mb} s{seq}"
    a = megatron_args(m, tp, pp, dp, vpp, mb, seq, zero, rc, sp and tp > 1, ep,
                      p["parallel"]["etp"])
    states = MEG.compute_weight_and_optimizer_memory(a)
    if m["block"] == "gpt" and mem["worst_stage"] == 0:
        # Megatron's formula leaves out the learned position table (max_positions x h, whole on
        # every TP rank of the first stage), which GPT's block has: added here, by its own bytes
        per = 18 if zero == 0 else 6 + 12 / dp
        states += per * m["max_positions"] * m["hidden"]
    ours = mem["weights_bytes"] + mem["grads_bytes"] + mem["optimizer_bytes"]
    if mem["worst_stage"] == 0:
        row(cfg, "weights+grads+optimizer", ours, states, 0.01)
    else:
        row(cfg, "weights+grads+optimizer", ours, states, None,
            f"worst stage is {mem['worst_stage']}; Megatron's formula describes the first")
    t = tp; tsp = sp and tp > 1
    if m["block"] == "gpt" and rc != "none":
        k = korthikanti_layer(m, t, seq, mb, rc, tsp)
        row(cfg, "one layer's activations (Korthikanti)", bd["layer_activation_bytes"], k, 0.05)
    else:
        k = korthikanti_layer(m, t, seq, mb, "selective" if rc == "none" else rc, tsp)
        row(cfg, "one layer's activations (Korthikanti)", bd["layer_activation_bytes"], k, None,
            "GPT block only: GQA, the gated MLP's three matrices and RMSNorm change the sum"
            if m["block"] != "gpt" else "flash attention keeps no s x s scores")
    if tsp and rc == "selective" and pp > 1 and mem["worst_stage"] == 0:
        act = MEG.compute_activation_memory(a, num_microbatches=p["num_microbatches"])
        ours_act = mem["activations_bytes"] + bd["buf_embedding_bytes"]
        if m["block"] == "gpt":
            row(cfg, "stage-0 activations (Megatron formula)", ours_act, act, 0.05)
        else:
            row(cfg, "stage-0 activations (Megatron formula)", ours_act, act, None,
                "Megatron's (18 + 4f/h)sbh/t is GPT's block; it has no GQA nor gated MLP")


def deepspeed_case(name, gpus, zero, mb=1, rc="full"):
    m = model(name)
    d = plan(name, gpus, "deepspeed", tp=1, pp=1, dp=gpus, micro_batch=mb, zero=zero, recompute=rc)
    p = d["plans"][0]; mem = p["memory"]; bd = p["breakdown"]
    P = d["params"]
    cfg = f"{name} DeepSpeed ZeRO-{zero} DP{gpus}"
    ours = mem["weights_bytes"] + mem["grads_bytes"] + mem["optimizer_bytes"]
    nodes = max(1, gpus // 8)
    if zero == 2:
        _, gpu = DS2(P, num_gpus_per_node=min(gpus, 8), num_nodes=nodes, cpu_offload=False)
        row(cfg, "model states (estimate_zero2)", ours, gpu, 0.01)
    else:
        h = m["hidden"]
        layer = (P - 2 * m["vocab"] * h) / m["n_layers"]
        big = max(m["vocab"] * h, layer)
        _, gpu, largest = DS3(P, big, num_gpus_per_node=min(gpus, 8), num_nodes=nodes,
                              cpu_offload=False, cpu_offload_params=False)
        row(cfg, "gathered largest module (estimate_zero3)", bd["buf_p2p_bytes"], largest, 0.01)
        row(cfg, "sharded states (estimate_zero3)", ours, gpu - largest, None,
            "stage3.py holds 16-bit shard 2 + 16-bit grad 2 + fp32 master 4 + Adam 8 + the step's fp32 grad 4 = 20 bytes; the estimator counts 18")
        if abs(ours - 20 * P / gpus) > 0.01 * ours:
            ROWS.append((cfg, "20/N bytes rule", ours / 1e9, 20 * P / gpus / 1e9, 0, "yes", "", False))


megatron_case("llama3-8b", 8, 1, 1, 8, zero=0, rc="selective", seq=8192)
megatron_case("llama3-8b", 8, 2, 1, 4, mb=2, seq=4096)
megatron_case("llama3-8b", 64, 4, 2, 8, rc="full")
megatron_case("llama3-70b", 256, 8, 1, 32, seq=8192)
megatron_case("llama3-70b", 256, 8, 4, 8)
megatron_case("llama3-70b", 512, 8, 8, 8, vpp=5)
megatron_case("llama3-70b", 128, 4, 8, 4, zero=0, rc="full")
megatron_case("llama3-405b", 1152, 8, 9, 16, vpp=7, gb=2304)
megatron_case("llama3-405b", 768, 8, 6, 16, rc="full")
megatron_case("gpt3-175b", 1024, 8, 16, 8)
megatron_case("gpt3-175b", 1024, 8, 16, 8, mb=4, sp=False, rc="selective")
megatron_case("gpt3-175b", 1024, 8, 16, 8, vpp=6, rc="full")
megatron_case("gpt3-175b", 512, 8, 8, 8, zero=0, rc="none")
megatron_case("mixtral-8x7b", 64, 2, 1, 32, ep=8)
megatron_case("mixtral-8x7b", 64, 4, 4, 4, ep=4, rc="full")
deepspeed_case("llama3-8b", 8, 2)
deepspeed_case("llama3-8b", 64, 2)
deepspeed_case("llama3-8b", 8, 3)
deepspeed_case("llama3-70b", 64, 3)
deepspeed_case("llama3-70b", 256, 3)
deepspeed_case("llama3-70b", 64, 2)
deepspeed_case("mixtral-8x7b", 64, 2)

hdr = "| configuration | kind | project GB | reference GB | diff % | asserted | reason when not |\n|---|---|---:|---:|---:|---|---|\n"
body = "".join(f"| {c} | {k} | {o:.3f} | {r:.3f} | {d:+.2f} | {a} | {why} |\n" for c, k, o, r, d, a, why, _ in ROWS)
print(hdr + body)
n_cfg = len({r[0] for r in ROWS}); n_ok = sum(1 for r in ROWS if r[5] == "yes" and r[7])
n_as = sum(1 for r in ROWS if r[5] == "yes")
print(f"{n_cfg} configurations, {n_as} agreements asserted, {n_ok} hold")
if MD:
    with open(MD + ".tmp", "w") as f:
        f.write(hdr + body)
    os.replace(MD + ".tmp", MD)
bad = [r for r in ROWS if not r[7]]
for r in bad:
    print(f"FAIL: {r[0]}: {r[1]}: project {r[2]:.3f} GB vs reference {r[3]:.3f} GB ({r[4]:+.2f} %)", file=sys.stderr)
sys.exit(1 if bad else 0)
