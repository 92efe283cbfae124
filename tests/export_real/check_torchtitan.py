#!/usr/bin/env python3
"""Runs torchtitan's own code on a `build/export --to torchtitan` job file
and compares what torchtitan builds with the plan, field by field.

  check_torchtitan.py --plan PLAN.json --export FILE

torchtitan (requirements-torchtitan.txt) reads the TOML with its
ConfigManager, lays out the ranks with ParallelDims over a fake process
group of the plan's world size (its own dry-run backend), builds the model
flavour on the meta device, applies the model converters (float8 / MX), and
runs its pipeline stage builder (pipeline_llm) or parallelize function on
rank 0's part, as train.py does before the first step.  The stand-ins for a
GPU: the converters' capability check is answered "yes" (SM89/SM100), and
without CUDA the device mesh is a CPU one.
The batch arithmetic is train.py's own (global / (local x DP) accumulation
steps); it lives in Trainer.__init__, which needs a GPU and a dataset.

With --batch LIST (`PLAN EXPORT` lines) the framework is imported once
and each line prints `EXPORT: verdict`.  Prints `ok`, or `FAIL <field>:
plan X, framework Y`, or `FAIL torchtitan
raised ...`; exits 0 / 1.
"""
import json
import os
import sys
import warnings


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import main as common_main, same as eq  # noqa: E402


def quiet():
    warnings.filterwarnings("ignore")
    import logging
    logging.disable(logging.WARNING)
    os.environ.setdefault("LOCAL_RANK", "0")


def model_dims(cfg, margs, model, m, seq):
    """The flavour's shape against the plan's model."""
    eq("model layers", m["n_layers"], len(model.layers))
    eq("model hidden", m["hidden"], margs.dim)
    eq("model heads", m["n_heads"], margs.n_heads)
    eq("model vocab", m["vocab"], model.tok_embeddings.weight.shape[0])
    eq("max sequence (model args)", seq, margs.max_seq_len)
    name = cfg.model.name
    if name in ("llama3", "qwen3"):
        eq("model kv heads", m["n_kv_heads"], margs.n_kv_heads)
    if name == "llama3":
        eq("model ffn", m["ffn"], model.layers["0"].feed_forward.w1.out_features)
    if name == "qwen3":
        eq("model head_dim", m["head_dim"], margs.head_dim)
        eq("model ffn", m["ffn"], margs.hidden_dim)
        eq("q/k norm", bool(m.get("qk_norm")), margs.qk_norm)
        eq("MoE", m["n_experts"] > 0, margs.moe_enabled)
    if name == "deepseek_v3":
        eq("model ffn", m["ffn"], margs.inter_dim)
        eq("dense layers first", m["first_dense_layers"], margs.n_dense_layers)
        for k in ("q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                  "v_head_dim"):
            eq("MLA " + k, m[k], getattr(margs, k))
    if m["n_experts"] > 0:
        ma = margs.moe_args
        eq("experts", m["n_experts"], ma.num_experts)
        eq("top-k", m["top_k"], ma.top_k)
        eq("expert ffn", m["moe_ffn"], margs.moe_inter_dim)
        eq("shared experts", m["n_shared_experts"], ma.num_shared_experts)


def precision_of(model, converters):
    """The GEMM precision of the transformer layers after the converters."""
    kinds = set()
    for fqn, mod in model.named_modules():
        cls = type(mod).__name__
        if cls == "Float8Linear":
            if fqn.startswith("output"):
                kinds.add("output converted")
                continue
            from torchao.float8.config import ScalingGranularity
            g = mod.config.cast_config_input.scaling_granularity
            kinds.add("fp8-rowwise" if g == ScalingGranularity.AXISWISE else "fp8-cs")
        elif cls == "MXLinear":
            kinds.add("output converted" if fqn.startswith("output") else "mxfp8")
    if not kinds:
        return "bf16", False
    gather = any(getattr(c, "config", None) is not None and
                 getattr(c.config, "enable_fsdp_float8_all_gather", False)
                 for c in converters.converters)
    return ",".join(sorted(kinds)), gather


def stage_layers(names):
    return [sum(1 for x in part if x.startswith("layers.")) for part in names]


def fsdp_of(block):
    """(shard size, replicate size, resharded after forward, param, reduce dtype)."""
    from torch.distributed.fsdp import FSDPModule
    if not isinstance(block, FSDPModule):
        return None
    group = block._get_fsdp_state()._fsdp_param_group
    mi = group.mesh_info
    rep = getattr(mi, "replicate_mesh_size", 1)
    fp = group.fsdp_params[0].mp_policy
    return (mi.shard_mesh_size, rep, group.post_forward_mesh_info is not None,
            fp.param_dtype, fp.reduce_dtype)


def check(plan, path):
    quiet()
    import torch
    from torchtitan.config import ConfigManager
    from torchtitan.distributed import ParallelDims
    from torchtitan.distributed import utils as dist_utils
    from torchtitan.distributed import pipeline_parallel as pp_mod
    from torchtitan.protocols.train_spec import get_train_spec
    from torchtitan.protocols.model_converter import build_model_converters
    import torchtitan.components.quantization.float8 as f8
    import torchtitan.components.quantization.mx as mx

    par, m = plan["parallel"], plan["model"]
    seq = par["seq_len"] or m["seq_len"]
    world = par["tp"] * par["cp"] * par["pp"] * par["dp"]
    cfg = ConfigManager().parse_args(["--job.config_file", path])
    P = cfg.parallelism
    dist_utils.init_fake_mode(world)
    if not torch.cuda.is_available():  # torchtitan assumes "cuda" when it finds no device
        import torchtitan.distributed.parallel_dims as pdm
        pdm.device_type = "cpu"
    pd = ParallelDims(dp_shard=P.data_parallel_shard_degree,
                      dp_replicate=P.data_parallel_replicate_degree,
                      cp=P.context_parallel_degree, tp=P.tensor_parallel_degree,
                      pp=P.pipeline_parallel_degree, ep=P.expert_parallel_degree,
                      etp=P.expert_tensor_parallel_degree, world_size=world)
    pd.build_mesh()
    eq("TP", par["tp"], pd.tp)
    eq("PP", par["pp"], pd.pp)
    eq("CP", par["cp"], pd.cp)
    eq("EP", par["ep"], pd.ep)
    if par["ep"] > 1:
        eq("ETP", par["etp"], pd.etp)
    eq("sequence", seq, cfg.training.seq_len)
    eq("parameter offload (CPUOffloadPolicy)", par.get("offload", {}).get("kind") == "params",
       cfg.training.enable_cpu_offload and pd.fsdp_enabled)
    if par["cp"] > 1:
        eq("CP flavour", {"p2p": "alltoall", "all-gather": "allgather"}.get(par["cp_comm"]),
           P.context_parallel_rotate_method)
    eq("async TP (tp_overlap)", par["tp_overlap"] and par["tp"] > 1,
       P.enable_async_tensor_parallel)

    # train.py: the batch mesh is dp_replicate x dp_shard; accumulation steps
    # = global / (local x batch degree), each a forward of local_batch_size
    # sequences (with PP: split into micro-batches of the PP micro-batch size)
    batch = pd.get_mesh("batch").size() if pd.dp_enabled else 1
    local, gbs = cfg.training.local_batch_size, cfg.training.global_batch_size
    assert gbs % (local * batch) == 0, "global batch not a multiple of local x DP (train.py)"
    accum = gbs // (local * batch)
    eq("DP (batch mesh)", par["dp"], batch)
    eq("global batch", plan["batch"]["global_batch_sequences"], gbs)

    spec = get_train_spec(cfg.model.name)
    import copy
    margs = copy.deepcopy(spec.model_args[cfg.model.flavor])
    margs.update_from_config(cfg)
    with torch.device("meta"):
        model = spec.model_cls(margs)
    model_dims(cfg, margs, model, m, seq)

    f8.has_cuda_capability = mx.has_cuda_capability = lambda *a: True  # no SM89/SM100 here
    converters = build_model_converters(cfg, pd)
    converters.convert(model)
    prec, gather = precision_of(model, converters)
    eq("precision", par.get("precision", "bf16"), prec)
    if prec == "fp8-cs":
        eq("fp8 weight all-gather (quantized_params)",
           par.get("quantized_params", True) and par["zero"] >= 2, gather)

    loss_fn = spec.build_loss_fn(cfg, parallel_dims=pd)
    if pd.pp_enabled:
        if not spec.pipelining_fn:  # train.py's own check
            raise RuntimeError("Pipeline Parallel is enabled but %s does not support "
                               "pipelining" % cfg.model.name)
        seen = {}
        split = pp_mod.pipeline_module_split

        def recording_split(model_, mesh, sched, dev, names):
            seen["names"] = names
            return split(model_, mesh, sched, dev, names)

        pp_mod.pipeline_module_split = recording_split
        schedule, parts, _, _ = spec.pipelining_fn(model, pd, cfg, torch.device("cpu"), margs,
                                                    spec.parallelize_fn, loss_fn)
        pp_mod.pipeline_module_split = split
        names = seen["names"]
        lpc = par["layers_per_chunk"] or [m["n_layers"] // (par["pp"] * par["vpp"])] * (
            par["pp"] * par["vpp"])
        eq("layers per pipeline chunk", lpc, stage_layers(names))
        flat = [x for part in names for x in part]
        eq("modules in model order", ["tok_embeddings"] + ["layers.%d" % i for i in
                                                          range(m["n_layers"])] +
           ["norm", "output"], flat)
        eq("chunks on a rank (VPP)", par["vpp"], len(parts))
        eq("rank 0's layers", sum(lpc[0::par["pp"]]), sum(len(p.layers) for p in parts))
        want = {"gpipe": "ScheduleGPipe", "1f1b": "Schedule1F1B",
                "interleaved": "ScheduleInterleaved1F1B" if par["vpp"] > 1 else "Schedule1F1B",
                "zb-h1": "ScheduleInterleavedZeroBubble"}[par["schedule"]]
        eq("pipeline schedule", want, type(schedule).__name__)
        eq("micro-batch (sequences a forward)", par["micro_batch"],
           P.pipeline_parallel_microbatch_size)
        eq("micro-batches a step", par["num_microbatches"], accum * schedule._n_microbatches)
    else:
        parts = [spec.parallelize_fn(model, pd, cfg)]
        eq("micro-batch (sequences a forward)", par["micro_batch"], local)
        eq("micro-batches a step", par["num_microbatches"], accum)

    check_sharding(plan, cfg, parts[0])
    return None


def check_sharding(plan, cfg, part):
    """ZeRO stage, hybrid sharding, mixed precision and recompute as applied."""
    import torch
    par = plan["parallel"]
    blocks = list(part.layers.values())
    block = blocks[0]
    ac = type(block).__name__.endswith("CheckpointWrapper")  # FSDP<cls> once sharded
    rc = par["layer_recompute"][0] if par["layer_recompute"] else par["recompute"]
    eq("recompute", rc, cfg.activation_checkpoint.mode if ac else "none")
    inner = getattr(block, "_checkpoint_wrapped_module", block)
    fs = fsdp_of(block) or fsdp_of(inner)
    ddp = par["dp"] * par["cp"]
    bf16 = plan["hw"]["dtype_bytes"] == 2
    if fs is None:
        from torch.distributed._composable.replicate import replicate
        replicated = replicate.state(part) is not None if ddp > 1 else False
        eq("ZeRO-0 (DDP)", par["zero"] == 0 and ddp > 1, replicated)
        return
    shard, rep, reshard, pdt, rdt = fs
    eq("ZeRO stage (FSDP)", par["zero"], 3 if reshard else 2)
    group = par.get("shard_group", 0)
    want_shard = group if par["zero"] >= 3 and 0 < group < ddp else ddp
    eq("FSDP shard group", want_shard, shard)
    eq("FSDP replicas (hybrid sharding)", ddp // want_shard, rep)
    eq("param dtype", torch.bfloat16 if bf16 else torch.float32, pdt)
    eq("gradient reduce dtype", torch.float32 if par["grad_dtype"] == "fp32" else torch.bfloat16,
       rdt)


def reset_world():
    """Ends the fake world so that the next plan gets its own size."""
    import torch.distributed as tdist
    if tdist.is_initialized():
        tdist.destroy_process_group()


def main():
    common_main(lambda plan, text, path: check(plan, path), after=reset_world)


if __name__ == "__main__":
    main()
