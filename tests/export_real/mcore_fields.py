"""mcore_fields.py — what a Megatron-Core TransformerConfig must hold for a
plan (Megatron-LM's core_transformer_config_from_args and Megatron-Bridge's
model provider are both one), and the launch lines both exports write."""
import os
import re
import shlex

import common

# The plan's CP flavour as Transformer Engine names it (cp_comm_type).
CP_COMM = {"p2p": "p2p", "all-gather": "all_gather", "a2a": "a2a"}
# The plan's precision as Megatron's (fp8 format, fp8 recipe).
FP8 = {"fp8": ("hybrid", "delayed"), "fp8-cs": ("hybrid", "tensorwise"),
       "fp8-block": ("e4m3", "blockwise"), "mxfp8": ("e4m3", "mxfp8")}


def optimizer_instances(plan):
    par = plan["parallel"]
    ranks, shard = par["dp"] * par["cp"], par.get("shard_group", 0)
    return ranks // shard if 0 < shard < ranks and par["zero"] >= 1 else 1


def launch_env(text, gpus):
    """The environment the torchrun line sets; checks the launch lines."""
    tr = re.search(r"^#\s+(env [^\n]*?)?torchrun --nnodes (\d+) --nproc-per-node (\d+) "
                   r"--node-rank \$NODE_RANK --rdzv-backend c10d --rdzv-endpoint "
                   r"\$MASTER_ADDR:\d+ --rdzv-id \S+", text, re.M)
    if not tr:
        raise common.Mismatch("launch", "a torchrun line with rendezvous and node rank",
                              "none")
    nodes, per = int(tr.group(2)), int(tr.group(3))
    common.same("launch GPUs (torchrun)", gpus, nodes * per)
    sr = re.search(r"^#\s+srun --nodes (\d+) .*?--ntasks-per-node (\d+)", text, re.M)
    if not sr:
        raise common.Mismatch("launch", "an srun line", "none")
    common.same("launch GPUs (srun)", gpus, int(sr.group(1)) * int(sr.group(2)))
    for var in ("RANK=$SLURM_PROCID", "WORLD_SIZE=$SLURM_NTASKS", "LOCAL_RANK=$SLURM_LOCALID",
                "MASTER_ADDR=", "MASTER_PORT="):
        if var not in text:
            raise common.Mismatch("launch (srun)", var, "absent")
    env = {}
    words = shlex.split(tr.group(1) or "")
    i = 1
    while i < len(words):
        if words[i] == "-u":
            env[words[i + 1]] = None
            i += 2
        else:
            k, v = words[i].split("=", 1)
            env[k] = v
            i += 1
    return env




def enter_launch_env(text, gpus):
    """Sets the torchrun line's environment in this process (as rank 0 of a
    world of gpus) and returns it."""
    env = launch_env(text, gpus)
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE=str(gpus))
    return env


def layout_counts(cfg):
    """Transformer layers per chunk in model order, from Megatron's own layout
    object (None when the split is not given as a layout)."""
    from megatron.core.transformer.enums import LayerType
    from megatron.core.transformer.pipeline_parallel_layer_layout import (
        PipelineParallelLayerLayout)
    lay = cfg.pipeline_model_parallel_layout
    if lay is None:
        return None
    if isinstance(lay, str):
        lay = PipelineParallelLayerLayout.from_str(lay, cfg.pipeline_model_parallel_size)
    counts = []
    for vp in range(len(lay.layout[0])):
        for pp in range(len(lay.layout)):
            counts.append(sum(1 for t in lay.layout[pp][vp] if t == LayerType.decoder))
    return counts


def compare_env(env, plan):
    par = plan["parallel"]
    want = "1" if (par["tp"] > 1 or par["cp"] > 1) and par["zero"] < 2 else None
    common.same("CUDA_DEVICE_MAX_CONNECTIONS", want, env.get("CUDA_DEVICE_MAX_CONNECTIONS"))


def split_of(cfg, plan, segments=None):
    """Layers per chunk in model order as the config says them (segments: a
    hybrid pattern's, which say them instead)."""
    m, pp = plan["model"], plan["parallel"]["pp"]
    if segments is not None:
        return segments
    got = layout_counts(cfg)
    if got is not None:
        return got
    first = getattr(cfg, "num_layers_in_first_pipeline_stage", None)
    last = getattr(cfg, "num_layers_in_last_pipeline_stage", None)
    if pp == 1:
        return [m["n_layers"]]
    inner = pp - (first is not None) - (last is not None)
    mid = (m["n_layers"] - (first or 0) - (last or 0)) // inner if inner else None
    return [first if first is not None else mid] + [mid] * (pp - 2) + \
        [last if last is not None else mid]


def compare_hybrid(cfg, m, pattern):
    """A hybrid Mamba-2 model: the layer pattern the framework holds (its
    stage separators removed), the mixer's sizes and the squared-ReLU MLP."""
    from megatron.core.activations import squared_relu
    s = common.same
    s("layer_pattern", m.get("layer_pattern"), pattern)
    mb = m.get("mamba")
    if mb:
        s("mamba heads", mb["heads"], cfg.mamba_num_heads)
        s("mamba head_dim", mb["head_dim"], cfg.mamba_head_dim)
        s("mamba state", mb["state"], cfg.mamba_state_dim)
        s("mamba groups", mb["groups"], cfg.mamba_num_groups)
    s("squared-ReLU MLP", m.get("mlp_act") == "relu2", cfg.activation_func is squared_relu)
    s("gated MLP", m.get("mlp_act") != "relu2", bool(cfg.gated_linear_unit))


def compare(cfg, plan, segments=None):
    par, m = plan["parallel"], plan["model"]
    s = common.same
    s("tp", par["tp"], cfg.tensor_model_parallel_size)
    s("pp", par["pp"], cfg.pipeline_model_parallel_size)
    vpp = cfg.virtual_pipeline_model_parallel_size
    if vpp is None and layout_counts(cfg) is not None:
        vpp = len(layout_counts(cfg)) // par["pp"] or None
        vpp = vpp if vpp and vpp > 1 else None
    s("vpp", par["vpp"] if par["vpp"] > 1 else None, vpp)
    s("cp", par["cp"], cfg.context_parallel_size)
    s("ep", par["ep"], cfg.expert_model_parallel_size)
    if m["n_experts"] > 0:
        s("etp", par["etp"], cfg.expert_tensor_parallel_size)
    s("sp", par["tp"] > 1 and par["sp"], cfg.sequence_parallel)
    chunks = common.chunks(plan)
    if chunks is not None:
        s("layers_per_chunk", chunks, split_of(cfg, plan, segments))
    rc = common.recompute(plan)
    got = (cfg.recompute_granularity, cfg.recompute_method, cfg.recompute_num_layers)
    want = {"none": (None, None, None), "selective": ("selective", None, None),
            "full": ("full", "uniform", 1)}.get(rc["kind"], ("full", "block", rc.get("n")))
    if rc["kind"] in ("none", "selective"):
        got = (got[0], None, None)
    s("recompute", want, got)
    prec = par["precision"]
    s("precision (fp16)", prec == "fp16", bool(cfg.fp16))
    s("precision (bf16)", prec != "fp16" and plan["hw"]["dtype_bytes"] == 2, bool(cfg.bf16))
    s("precision (fp8)", FP8.get(prec), (cfg.fp8, cfg.fp8_recipe) if cfg.fp8 else None)
    s("precision (fp4)", "e2m1" if prec == "nvfp4" else None, getattr(cfg, "fp4", None))
    s("quantized_params", par.get("quantized_params", False) and prec in FP8,
      bool(getattr(cfg, "fp8_param", False)))
    if par["cp"] > 1:
        s("cp_comm", CP_COMM[par["cp_comm"]], cfg.cp_comm_type)
    if m["n_experts"] > 0:
        s("moe dispatcher", "alltoall", cfg.moe_token_dispatcher_type)
        s("moe grouped gemm", True, cfg.moe_grouped_gemm)
        s("n_experts", m["n_experts"], cfg.num_moe_experts)
        s("top_k", m["top_k"], cfg.moe_router_topk)
        s("moe_ffn", m["moe_ffn"], cfg.moe_ffn_hidden_size)
    s("n_layers", m["n_layers"], cfg.num_layers)
    s("hidden", m["hidden"], cfg.hidden_size)
    s("ffn", m["ffn"], cfg.ffn_hidden_size)
    s("n_heads", m["n_heads"], cfg.num_attention_heads)
    s("n_kv_heads", m["n_kv_heads"] or m["n_heads"], cfg.num_query_groups or m["n_heads"])
    s("n_mtp_modules", m["n_mtp_modules"] or None, cfg.mtp_num_layers)
