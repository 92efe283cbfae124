#!/usr/bin/env python3
"""Reads an export of `build/export` back with a real reader of its format
and checks every degree, batch and model dimension against the plan file.

  export_check.py TARGET EXPORT PLAN

megatron: an argparse mirror of the pretrain_gpt.py flags the exporter may
write (an unknown flag fails); nemo: PyYAML; torchtitan: tomllib, with the
rules torchtitan 0.2.2's own code applies (stage split, batch accumulation,
DDP/FSDP mesh, flavours); deepspeed: json, with DeepSpeedConfig's batch rule
and the keys it reads; slurm: the #SBATCH lines and `bash -n`.  The
export_real suite (tests/export_real) runs the frameworks themselves.
"""
import argparse
import json
import re
import shlex
import subprocess
import sys


def opt_offload(par):
    """The plan's optimizer offload object (Megatron's form), None otherwise."""
    off = par.get("offload")
    return off if off and off["kind"] == "optimizer" else None


def act_layers(par):
    """The leading layers whose activations the plan offloads (0: none)."""
    off = par.get("offload", {})
    return off.get("activation_layers", 0) if off.get("activations") else 0


def megatron_parser():
    p = argparse.ArgumentParser(prog="pretrain_gpt.py", allow_abbrev=False,
                                exit_on_error=False)
    ints = ["--tensor-model-parallel-size", "--pipeline-model-parallel-size",
            "--num-virtual-stages-per-pipeline-rank", "--decoder-first-pipeline-num-layers",
            "--decoder-last-pipeline-num-layers", "--context-parallel-size",
            "--expert-model-parallel-size", "--expert-tensor-parallel-size",
            "--micro-batch-size", "--global-batch-size", "--seq-length",
            "--max-position-embeddings", "--recompute-num-layers", "--num-layers",
            "--hidden-size", "--ffn-hidden-size", "--num-attention-heads", "--num-query-groups",
            "--kv-channels", "--num-experts", "--moe-router-topk", "--moe-ffn-hidden-size",
            "--moe-shared-expert-intermediate-size", "--q-lora-rank", "--kv-lora-rank",
            "--qk-head-dim", "--qk-pos-emb-head-dim", "--v-head-dim", "--mtp-num-layers",
            "--vocab-size", "--make-vocab-size-divisible-by",
            "--num-distributed-optimizer-instances", "--mamba-num-heads", "--mamba-head-dim",
            "--mamba-state-dim", "--mamba-num-groups"]
    for f in ints:
        p.add_argument(f, type=int)
    strs = {"--cp-comm-type": ["p2p", "a2a", "all_gather"],
            "--moe-token-dispatcher-type": ["alltoall"],
            "--fp8-format": ["hybrid", "e4m3"],
            "--fp8-recipe": ["delayed", "tensorwise", "blockwise", "mxfp8"],
            "--fp4-format": ["e2m1"], "--fp4-recipe": ["nvfp4"],
            "--data-parallel-sharding-strategy": ["optim", "optim_grads", "optim_grads_params"],
            "--recompute-granularity": ["full", "selective"],
            "--recompute-method": ["uniform", "block"],
            "--normalization": ["LayerNorm", "RMSNorm"],
            "--position-embedding-type": ["rope", "learned_absolute", "none"],
            "--attention-backend": ["flash", "fused", "unfused", "local", "auto"],
            "--tokenizer-type": ["NullTokenizer"], "--ckpt-format": ["fsdp_dtensor"],
            "--pipeline-model-parallel-layout": None, "--hybrid-layer-pattern": None,
            "--moe-layer-freq": None}
    for f, choices in strs.items():
        p.add_argument(f, choices=choices)
    p.add_argument("--optimizer-offload-fraction", type=float)
    p.add_argument("--cpu-offloading-num-layers", type=int, default=0)
    p.add_argument("--rotary-base", type=int)   # Megatron-LM: an integer
    for f in ["--rotary-percent", "--norm-epsilon", "--rope-scaling-factor"]:
        p.add_argument(f, type=float)
    p.add_argument("--use-rope-scaling", action="store_true")
    for f in ["--sequence-parallel", "--use-distributed-optimizer", "--use-megatron-fsdp",
              "--no-gradient-accumulation-fusion", "--overlap-grad-reduce",
              "--overlap-param-gather", "--tp-comm-overlap", "--grad-reduce-in-bf16", "--bf16",
              "--group-query-attention", "--swiglu", "--squared-relu", "--disable-bias-linear",
              "--add-qkv-bias",
              "--untie-embeddings-and-output-weights", "--qk-layernorm",
              "--multi-latent-attention", "--finetune", "--fp16", "--moe-grouped-gemm",
              "--fp8-param-gather", "--fp4-param-gather", "--optimizer-cpu-offload",
              "--use-precision-aware-optimizer"]:
        p.add_argument(f, action="store_true")
    return p


def eq(what, got, want):
    assert got == want, "%s: export has %r, the plan %r" % (what, got, want)


def facts(plan):
    par, m = plan["parallel"], plan["model"]
    g = par["tp"] * par["cp"] * par["pp"] * par["dp"]
    gb = par["micro_batch"] * par["num_microbatches"] * par["dp"]
    eq("batch.global_batch_sequences", plan["batch"]["global_batch_sequences"], gb)
    lpc = par["layers_per_chunk"]
    uneven = len(set(lpc)) > 1
    rc = par["layer_recompute"][0] if par["layer_recompute"] else par["recompute"]
    return par, m, g, gb, uneven, lpc, rc


def check_split(what, first, last, layout, par):
    """The split as first/last stage counts or a layout string (E t... | ... L)."""
    lpc, pp, vpp = par["layers_per_chunk"], par["pp"], par["vpp"]
    if len(set(lpc)) <= 1:
        eq(what + " split", (first, last, layout), (None, None, None))
        return
    if layout is not None:
        parts = layout.split("|")
        assert parts[0].startswith("E") and parts[-1].endswith("L"), layout
        eq(what + " layout chunks", [p.count("t") for p in parts], lpc)
        eq(what + " first/last", (first, last), (None, None))
    else:
        eq(what + " first stage", first, lpc[0])
        eq(what + " last stage", last, lpc[-1])
        middle = (sum(lpc) - first - last) // (pp - 2) if pp > 2 else None
        assert pp <= 2 or all(x == middle for x in lpc[1:-1]), lpc


def check_block(n, par, m):
    """--recompute-method block N: full on the first N layers of every chunk."""
    lpc = par["layers_per_chunk"] or [m["n_layers"] // (par["pp"] * par["vpp"])] * (
        par["pp"] * par["vpp"])
    want, i = [], 0
    for c in lpc:
        want += ["full"] * n + ["none"] * (c - n)
    eq("per-layer recompute (block)", want, par["layer_recompute"])


# What Megatron-LM's own parse_args + validate_args taught
# (tests/export_real, PX_EXPORT_REAL=1): the export must say these, and
# validate_args rejects the pairs below.
CP_COMM = {"p2p": "p2p", "all-gather": "all_gather", "a2a": "a2a"}
FP8 = {"fp8": ("hybrid", "delayed"), "fp8-cs": ("hybrid", "tensorwise"),
       "fp8-block": ("e4m3", "blockwise"), "mxfp8": ("e4m3", "mxfp8")}


def optimizer_instances(par):
    ranks, shard = par["dp"] * par["cp"], par.get("shard_group", 0)
    return ranks // shard if 0 < shard < ranks and par["zero"] >= 1 else 1


def check_launch(text, plan, g):
    """torchrun with a rendezvous and node rank on every node, srun with the
    ranks in the environment; CUDA_DEVICE_MAX_CONNECTIONS=1 for TP or CP > 1
    (validate_args asserts it), unset under Megatron-FSDP (asserted not 1)."""
    par = plan["parallel"]
    m = re.search(r"^#\s+(env [^\n]*?)?torchrun --nnodes (\d+) --nproc-per-node (\d+) "
                  r"--node-rank \$NODE_RANK --rdzv-backend c10d --rdzv-endpoint "
                  r"\$MASTER_ADDR:\d+ --rdzv-id \S+", text, re.M)
    assert m, "no torchrun line with a rendezvous and node rank"
    eq("GPUs (torchrun)", int(m.group(2)) * int(m.group(3)), g)
    sr = re.search(r"^#\s+srun --nodes (\d+) --ntasks-per-node (\d+)", text, re.M)
    assert sr, "no srun line"
    eq("GPUs (srun)", int(sr.group(1)) * int(sr.group(2)), g)
    for var in ("RANK=$SLURM_PROCID", "WORLD_SIZE=$SLURM_NTASKS", "LOCAL_RANK=$SLURM_LOCALID",
                "MASTER_ADDR=", "MASTER_PORT="):
        assert var in text, "the srun line sets no " + var
    env = (m.group(1) or "").strip()
    want = ("env -u CUDA_DEVICE_MAX_CONNECTIONS" if par["zero"] >= 2 else
            "env CUDA_DEVICE_MAX_CONNECTIONS=1" if par["tp"] > 1 or par["cp"] > 1 else "")
    eq("launch environment", env, want)


def check_hybrid(a, m, par):
    """pretrain_hybrid.py: the plan's layer pattern cut into its pipeline
    chunks by `|` (the segments are Megatron's stages, pp x vpp of them),
    and the Mamba-2 sizes; no other split argument beside it."""
    pattern = m.get("layer_pattern")
    eq("hybrid layer pattern", (a.hybrid_layer_pattern or "").replace("|", ""), pattern or "")
    if not pattern:
        return
    segments = [len(s) for s in a.hybrid_layer_pattern.split("|")]
    chunks = par["pp"] * par["vpp"]
    lpc = par["layers_per_chunk"] or [m["n_layers"] // chunks] * chunks
    eq("hybrid segments", segments, lpc)
    eq("split arguments beside the pattern",
       (a.decoder_first_pipeline_num_layers, a.decoder_last_pipeline_num_layers,
        a.pipeline_model_parallel_layout, a.num_virtual_stages_per_pipeline_rank),
       (None, None, None, None))
    mb = m.get("mamba")
    eq("Mamba sizes", (a.mamba_num_heads, a.mamba_head_dim, a.mamba_state_dim, a.mamba_num_groups),
       (mb["heads"], mb["head_dim"], mb["state"], mb["groups"]) if mb else (None,) * 4)


def check_megatron(text, plan):
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    argv = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            argv += shlex.split(line)
    a = megatron_parser().parse_args(argv)
    ft = plan["parallel"].get("finetune", {"mode": "none"})["mode"]
    eq("finetune", a.finetune, ft == "full")
    check_launch(text, plan, g)
    llama = m.get("block", "llama") == "llama"
    rope = llama and m.get("rope_fraction", 1.0) > 0
    eq("position embedding", a.position_embedding_type,
       "rope" if rope else "none" if llama else "learned_absolute")
    eq("RoPE base", a.rotary_base, int(m.get("rope_theta", 10000.0)) if rope else None)
    eq("MLP", (a.swiglu, a.squared_relu),
       (llama and m.get("mlp_act", "silu") != "relu2", m.get("mlp_act") == "relu2"))
    check_hybrid(a, m, par)
    eq("norm epsilon", a.norm_epsilon, m.get("norm_eps", 1e-5))
    eq("Llama 3.1 RoPE scaling", a.use_rope_scaling, m.get("rope_scaling") == "llama3")
    eq("TP", a.tensor_model_parallel_size, par["tp"])
    eq("PP", a.pipeline_model_parallel_size, par["pp"])
    layout = a.pipeline_model_parallel_layout
    assert not (layout and a.num_virtual_stages_per_pipeline_rank), \
        "both --pipeline-model-parallel-layout and --num-virtual-stages-per-pipeline-rank"
    segments = a.hybrid_layer_pattern.split("|") if a.hybrid_layer_pattern else None
    vpp = (len(layout.split("|")) // par["pp"] if layout else
           len(segments) // par["pp"] if segments else a.num_virtual_stages_per_pipeline_rank)
    eq("VPP", vpp if vpp and vpp > 1 else None, par["vpp"] if par["vpp"] > 1 else None)
    if layout:
        eq("MTP layers in the layout", layout.count("m"), m["n_mtp_modules"])
        assert "m" not in layout or layout.endswith("mL"), "MTP layers must end the layout"
    eq("CP", a.context_parallel_size, par["cp"])
    eq("EP", a.expert_model_parallel_size, par["ep"])
    eq("ETP", a.expert_tensor_parallel_size, par["etp"] if m["n_experts"] > 0 else None)
    eq("DP (derived)", g // (a.tensor_model_parallel_size * a.pipeline_model_parallel_size *
                             a.context_parallel_size), par["dp"])
    eq("SP", a.sequence_parallel, par["tp"] > 1 and par["sp"])
    eq("micro-batch", a.micro_batch_size, par["micro_batch"])
    eq("global batch", a.global_batch_size, gb)
    eq("micro-batches (derived)", a.global_batch_size // (a.micro_batch_size * par["dp"]),
       par["num_microbatches"])
    eq("sequence", a.seq_length, par["seq_len"])
    eq("distributed optimizer", a.use_distributed_optimizer, par["zero"] >= 1)
    off = opt_offload(par)  # Megatron-Core's optimizer CPU offload
    eq("optimizer offload", a.optimizer_cpu_offload, off is not None)
    eq("offload fraction", a.optimizer_offload_fraction, off["fraction"] if off else None)
    eq("precision-aware optimizer (offload needs it)", a.use_precision_aware_optimizer,
       off is not None)
    eq("activation offload (leading layers)", a.cpu_offloading_num_layers, act_layers(par))
    eq("FSDP strategy", a.data_parallel_sharding_strategy,
       {2: "optim_grads", 3: "optim_grads_params"}.get(par["zero"]))
    eq("recompute", a.recompute_granularity, None if rc == "none" else rc)
    if not a.hybrid_layer_pattern:  # (a hybrid pattern's segments say the split)
        check_split("megatron", a.decoder_first_pipeline_num_layers,
                    a.decoder_last_pipeline_num_layers, a.pipeline_model_parallel_layout, par)
    if a.recompute_method == "block":
        check_block(a.recompute_num_layers, par, m)
    prec = par["precision"]
    eq("fp16", a.fp16, prec == "fp16")
    eq("bf16", a.bf16, prec != "fp16" and plan["hw"]["dtype_bytes"] == 2)
    eq("fp8 format/recipe", (a.fp8_format, a.fp8_recipe) if a.fp8_format else None,
       FP8.get(prec))
    eq("fp8 param gather", a.fp8_param_gather, prec in FP8 and par.get("quantized_params", False))
    eq("CP flavour", a.cp_comm_type, CP_COMM[par["cp_comm"]] if par["cp"] > 1 else None)
    eq("MoE dispatcher", a.moe_token_dispatcher_type, "alltoall" if m["n_experts"] else None)
    eq("MoE grouped GEMM", a.moe_grouped_gemm, m["n_experts"] > 0)
    eq("checkpoint format", a.ckpt_format, "fsdp_dtensor" if par["zero"] >= 2 else None)
    eq("distributed optimizer instances", a.num_distributed_optimizer_instances or 1,
       optimizer_instances(par))
    eq("MTP", a.mtp_num_layers, m["n_mtp_modules"] or None)
    eq("layers", a.num_layers, m["n_layers"])
    eq("hidden", a.hidden_size, m["hidden"])
    eq("ffn", a.ffn_hidden_size, m["ffn"])
    eq("heads", a.num_attention_heads, m["n_heads"])
    eq("kv heads", a.num_query_groups,
       m["n_kv_heads"] if m["n_kv_heads"] < m["n_heads"] else None)
    eq("vocab", a.vocab_size, m["vocab"])
    eq("experts", a.num_experts, m["n_experts"] if m["n_experts"] > 0 else None)


def hydra_flat(text):
    """The `# hydra: ++key=value` lines as {dotted key: value text}."""
    return dict(re.findall(r"^# hydra: \+\+([\w.]+)=(.*)$", text, re.M))


def yaml_flat(d, prefix=""):
    """The YAML's leaves as {dotted key: value}, objects as Hydra writes them."""
    out = {}
    for k, v in d.items():
        key = prefix + k
        if isinstance(v, dict) and prefix == "" and "_target_" in v:
            out[key] = v  # an object section: one Hydra dictionary
        elif isinstance(v, dict) and "_target_" not in v:
            out.update(yaml_flat(v, key + "."))
        else:
            out[key] = v
    return out


def hydra_value(text):
    """A Hydra override value in the forms the export writes, as YAML reads it."""
    import yaml
    if text.startswith("{"):  # {k:v,...}: nested dictionaries of plain words
        body = re.sub(r"(\w+):", r"\1: ", text)
        return yaml.safe_load(body.replace(",", ", "))
    return yaml.safe_load(text)


def check_nemo(text, plan):
    import yaml
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    d = yaml.safe_load(text)
    check_launch(text, plan, g)
    assert re.search(r"scripts/training/run_recipe\.py --recipe \w+_(pretrain|peft)_config",
                     text) or "run_recipe.py --recipe" in text, "no run_recipe.py launch"
    # the Hydra lines the launch hands run_recipe.py say what the YAML says
    hy, ya = hydra_flat(text), yaml_flat(d)
    eq("Hydra keys", sorted(hy), sorted(ya))
    for k, v in hy.items():
        eq("Hydra " + k, hydra_value(v), ya[k])
    mo = d["model"]
    llama = m.get("block", "llama") == "llama"
    rope = llama and m.get("rope_fraction", 1.0) > 0
    if m.get("attention", "standard") != "mla":
        eq("position embedding", mo["position_embedding_type"],
           "rope" if rope else "none" if llama else "learned_absolute")
    if rope:
        eq("RoPE base", mo["rotary_base"], int(m.get("rope_theta", 10000.0)))
        eq("Llama 3.1 RoPE scaling", mo["rope_scaling"], m.get("rope_scaling") == "llama3")
    relu2 = m.get("mlp_act") == "relu2"
    eq("MLP", (mo["gated_linear_unit"], mo["activation_func"]["_target_"]),
       (llama and not relu2, "megatron.core.activations.squared_relu" if relu2 else
        "torch.nn.functional.silu" if llama else "torch.nn.functional.gelu"))
    eq("hybrid layer pattern", mo.get("hybrid_override_pattern"), m.get("layer_pattern"))
    mb = m.get("mamba")
    eq("Mamba sizes", tuple(mo.get(k) for k in ("mamba_num_heads", "mamba_head_dim",
                                                "mamba_state_dim", "mamba_num_groups")),
       (mb["heads"], mb["head_dim"], mb["state"], mb["groups"]) if mb else (None,) * 4)
    if m.get("layer_pattern"):  # the release's Mamba stack: no virtual stages, no layout
        eq("hybrid split", (mo["virtual_pipeline_model_parallel_size"],
                            mo.get("pipeline_model_parallel_layout")), (None, None))
        assert "nemotron" in text.split("--recipe ")[1].split()[0], "not a Nemotron-H recipe"
    eq("norm epsilon", mo["layernorm_epsilon"], m.get("norm_eps", 1e-5))
    eq("TP", mo["tensor_model_parallel_size"], par["tp"])
    eq("PP", mo["pipeline_model_parallel_size"], par["pp"])
    layout = mo.get("pipeline_model_parallel_layout")
    vpp = mo["virtual_pipeline_model_parallel_size"]
    assert not (layout and vpp), "both a layout and a virtual pipeline size"
    vpp = len(layout.split("|")) // par["pp"] if layout else vpp
    eq("VPP", vpp if vpp and vpp > 1 else None, par["vpp"] if par["vpp"] > 1 else None)
    if layout:
        eq("MTP layers in the layout", layout.count("m"), m["n_mtp_modules"])
    eq("CP", mo["context_parallel_size"], par["cp"])
    eq("CP flavour", mo.get("cp_comm_type"), CP_COMM[par["cp_comm"]] if par["cp"] > 1 else None)
    eq("EP", mo["expert_model_parallel_size"], par["ep"])
    eq("ETP", mo["expert_tensor_parallel_size"], par["etp"])
    eq("SP", mo["sequence_parallel"], par["tp"] > 1 and par["sp"])
    check_split("nemo", mo.get("num_layers_in_first_pipeline_stage"),
                mo.get("num_layers_in_last_pipeline_stage"), layout, par)
    for k, pk in (("num_layers", "n_layers"), ("hidden_size", "hidden"), ("ffn_hidden_size", "ffn"),
                  ("num_attention_heads", "n_heads"), ("num_query_groups", "n_kv_heads"),
                  ("vocab_size", "vocab")):
        eq(k, mo[k], m[pk])
    eq("seq_length", mo["seq_length"], par["seq_len"])
    eq("dataset.sequence_length (the field finalize() keeps)", d["dataset"]["sequence_length"],
       par["seq_len"])
    eq("recompute", mo["recompute_granularity"], None if rc == "none" else rc)
    if m["n_experts"]:
        eq("MoE dispatcher", mo["moe_token_dispatcher_type"], "alltoall")
        eq("MoE grouped GEMM", mo["moe_grouped_gemm"], True)
    eq("global batch", d["train"]["global_batch_size"], gb)
    eq("micro-batch", d["train"]["micro_batch_size"], par["micro_batch"])
    eq("distributed optimizer", d["ddp"]["use_distributed_optimizer"], par["zero"] >= 1)
    off = opt_offload(par)
    eq("optimizer offload", d["optimizer"].get("optimizer_cpu_offload", False), off is not None)
    eq("offload fraction", d["optimizer"].get("optimizer_offload_fraction"),
       off["fraction"] if off else None)
    eq("activation offload", d["model"].get("cpu_offloading", False), act_layers(par) > 0)
    eq("activation offload (leading layers)", d["model"].get("cpu_offloading_num_layers", 0),
       act_layers(par))
    eq("Megatron-FSDP", d["ddp"]["use_megatron_fsdp"], par["zero"] >= 2)
    eq("checkpoint format (Bridge asserts fsdp_dtensor under Megatron-FSDP)",
       d["checkpoint"]["ckpt_format"], "fsdp_dtensor" if par["zero"] >= 2 else "torch_dist")
    eq("distributed optimizer instances", d["ddp"]["num_distributed_optimizer_instances"],
       optimizer_instances(par))
    mp, prec = d["mixed_precision"], par["precision"]
    eq("mixed_precision", mp["_target_"],
       "megatron.bridge.training.mixed_precision.MixedPrecisionConfig")
    eq("fp16", mp["fp16"], prec == "fp16")
    eq("bf16", mp["bf16"], prec != "fp16" and plan["hw"]["dtype_bytes"] == 2)
    eq("fp8 format/recipe", (mp["fp8"], mp["fp8_recipe"]) if "fp8" in mp else None, FP8.get(prec))
    eq("gradient dtype (mixed_precision overwrites ddp's)", mp["grad_reduce_in_fp32"],
       par["grad_dtype"] == "fp32")
    eq("gradient dtype (ddp)", d["ddp"]["grad_reduce_in_fp32"], par["grad_dtype"] == "fp32")
    ft = plan["parallel"].get("finetune", {"mode": "none"})
    megatron_modules = {"qkv": "linear_qkv", "proj": "linear_proj", "fc1": "linear_fc1",
                        "fc2": "linear_fc2"}
    if ft["mode"] == "lora":
        pe = d["peft"]
        eq("peft target", pe["_target_"], "megatron.bridge.peft.lora.LoRA")
        eq("LoRA modules", pe["target_modules"], [megatron_modules[t] for t in ft["lora_targets"]])
        eq("LoRA dim", pe["dim"], ft["lora_rank"])
        eq("LoRA alpha", pe["alpha"], ft["lora_alpha"])
    else:
        eq("peft", d.get("peft"), None)
    eq("base checkpoint (Bridge asserts one for PEFT)",
       "pretrained_checkpoint" in d.get("checkpoint", {}), ft["mode"] != "none")
    eq("finetune mode", "--mode finetune" in text, ft["mode"] != "none")


# torchtitan 0.2.2's flavours (torchtitan/models/*/__init__.py): layers,
# dim, heads, kv heads, dense ffn, vocab, routed experts
TITAN_FLAVORS = {
    ("llama3", "8B"): (32, 4096, 32, 8, 14336, 128256, 0),
    ("llama3", "70B"): (80, 8192, 64, 8, 28672, 128256, 0),
    ("llama3", "405B"): (126, 16384, 128, 8, 53248, 128256, 0),
    ("qwen3", "0.6B"): (28, 1024, 16, 8, 3072, 151936, 0),
    ("qwen3", "1.7B"): (28, 2048, 16, 8, 6144, 151936, 0),
    ("qwen3", "4B"): (36, 2560, 32, 8, 9728, 151936, 0),
    ("qwen3", "8B"): (36, 4096, 32, 8, 12288, 151936, 0),
    ("qwen3", "14B"): (40, 5120, 40, 8, 17408, 151936, 0),
    ("qwen3", "32B"): (64, 5120, 64, 8, 25600, 151936, 0),
    ("qwen3", "30B-A3B"): (48, 2048, 32, 4, 6144, 151936, 128),
    ("qwen3", "235B-A22B"): (94, 4096, 64, 4, 12288, 151936, 128),
    ("deepseek_v3", "16B"): (27, 2048, 16, 16, 10944, 102400, 64),
    ("deepseek_v3", "236B"): (60, 5120, 128, 128, 12288, 102400, 160),
    ("deepseek_v3", "671B"): (61, 7168, 128, 128, 18432, 129280, 256),
}


def titan_stages(p, n_layers):
    """Transformer layers of each stage as pipeline_llm builds them (0.2.2)."""
    parts = p.get("module_fqns_per_model_part")
    if parts is not None:
        return [sum(x.startswith("layers.") for x in q) for q in parts]
    k = p["pipeline_parallel_layers_per_stage"]
    first = p.get("pipeline_parallel_first_stage_less_layers", 1)  # torchtitan's defaults
    last = p.get("pipeline_parallel_last_stage_less_layers", 1)
    stages = -(-(n_layers + first + last) // k)
    eff, extra = divmod(n_layers + first + last, stages)
    out = []
    for i in range(stages):
        n = eff + (i < extra) - (first if i == 0 else 0) - (last if i == stages - 1 else 0)
        out.append(n)
    return out


def check_torchtitan(text, plan):
    """The rules torchtitan 0.2.2's own code applies (export_real suite)."""
    import tomllib
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    d = tomllib.loads(text)
    p, t = d["parallelism"], d["training"]
    rep, shard = p["data_parallel_replicate_degree"], p["data_parallel_shard_degree"]
    params_off = par.get("offload", {}).get("kind") == "params"
    eq("parameter offload (FSDP2's CPUOffloadPolicy)", t.get("enable_cpu_offload", False),
       params_off)
    assert not params_off or shard > 1, "torchtitan applies FSDP, and its offload, only with shards"
    cp, ddp = par["cp"], par["dp"] * par["cp"]
    eq("DP (replicate x shard)", rep * shard, par["dp"])
    if par["zero"] == 0:
        eq("ZeRO-0 is DDP (replicate)", (rep, shard), (par["dp"], 1))
        assert par["dp"] == 1 or par["tp"] * par["pp"] * cp == 1, "DDP > 1D (torchtitan refuses)"
        assert cp == 1, "ZeRO-0 with CP: torchtitan shards over CP"
    else:
        group = par.get("shard_group", 0)
        want = group if par["zero"] == 3 and 0 < group < ddp else ddp
        eq("FSDP shard group (shard x CP)", shard * cp, want)
        eq("reshard after forward", p["fsdp_reshard_after_forward"],
           "always" if par["zero"] == 3 else "never")
    eq("TP", p["tensor_parallel_degree"], par["tp"])
    eq("PP", p["pipeline_parallel_degree"], par["pp"])
    eq("CP", p["context_parallel_degree"], cp)
    eq("EP", p["expert_parallel_degree"], par["ep"])
    if par["ep"] > 1:
        assert p["expert_tensor_parallel_degree"] in (1, par["tp"]), "ETP must be 1 or TP"
    # train.py: accumulation = global / (local x DP); with PP each forward is
    # local_batch_size sequences split into micro-batches of the PP size
    local = t["local_batch_size"]
    eq("global batch", t["global_batch_size"], gb)
    accum = t["global_batch_size"] // (local * par["dp"])
    if par["pp"] > 1:
        mbs = p["pipeline_parallel_microbatch_size"]
        eq("micro-batch", mbs, par["micro_batch"])
        eq("micro-batches", accum * local // mbs, par["num_microbatches"])
        want_lpc = lpc or [m["n_layers"] // (par["pp"] * par["vpp"])] * (par["pp"] * par["vpp"])
        eq("layers per stage (pipeline_llm)", titan_stages(p, m["n_layers"]), want_lpc)
        eq("schedule", p["pipeline_parallel_schedule"],
           {"gpipe": "GPipe", "1f1b": "1F1B",
            "interleaved": "Interleaved1F1B" if par["vpp"] > 1 else "1F1B",
            "zb-h1": "InterleavedZeroBubble"}[par["schedule"]])
    else:
        eq("micro-batch (local_batch_size)", local, par["micro_batch"])
        eq("micro-batches (accumulation)", accum, par["num_microbatches"])
    eq("sequence", t["seq_len"], par["seq_len"])
    eq("activation checkpointing", d["activation_checkpoint"]["mode"], rc)
    mo = d["model"]
    fl = TITAN_FLAVORS.get((mo["name"], mo["flavor"]))
    assert fl is not None, "no torchtitan 0.2.2 flavour %s %s" % (mo["name"], mo["flavor"])
    eq("model (flavour dimensions)", fl, (m["n_layers"], m["hidden"], m["n_heads"],
                                          m["n_kv_heads"], m["ffn"], m["vocab"], m["n_experts"]))
    assert not (mo["name"] == "qwen3" and par["pp"] > 1), "qwen3 has no pipelining_fn (0.2.2)"
    conv = mo.get("converters", [])
    prec = par.get("precision", "bf16")
    q = d.get("quantize", {}).get("linear", {})
    if prec == "mxfp8":
        eq("converters", conv[0], "quantize.linear.mx")
    elif prec in ("fp8-cs", "fp8-rowwise"):
        eq("converters", conv[0], "quantize.linear.float8")
        eq("float8 recipe", q["float8"].get("recipe_name", "tensorwise"),
           "rowwise" if prec == "fp8-rowwise" else "tensorwise")
    else:
        eq("converters", conv, [])
    # the quantised grouped GEMM (experts) is a torchao prototype: refused
    assert not (conv and m["n_experts"] > 0), "low-precision experts"
    nodes = -(-g // plan["hw"]["gpus_per_node"])
    if nodes > 1:
        assert re.search(r"torchrun --nnodes %d .*--rdzv-backend c10d --rdzv-endpoint" % nodes,
                         text), "multi-node torchrun without rendezvous"


def check_deepspeed(text, plan):
    """DeepSpeedConfig's batch rule and what it reads (export_real suite)."""
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    d = json.loads(text)
    eq("micro-batch", d["train_micro_batch_size_per_gpu"], par["micro_batch"])
    eq("accumulation", d["gradient_accumulation_steps"], par["num_microbatches"])
    # without an mpu AutoTP's ranks count as data ranks: no train_batch_size
    # under TP (DeepSpeed derives it), else micro x accumulation x DP
    eq("train_batch_size", d.get("train_batch_size"), gb if par["tp"] == 1 else None)
    eq("ZeRO", d["zero_optimization"]["stage"], par["zero"])
    assert "mics_shard_size" not in d["zero_optimization"], "MiCS was removed in 0.19"
    kind = par.get("offload", {}).get("kind", "none")
    eq("optimizer offload (ZeRO-Offload)", d["zero_optimization"].get("offload_optimizer"),
       {"device": "cpu", "pin_memory": True} if kind != "none" else None)
    eq("parameter offload (ZeRO-Infinity)", d["zero_optimization"].get("offload_param"),
       {"device": "cpu", "pin_memory": True} if kind == "params" else None)
    assert kind != "params" or par["zero"] == 3, "offload_param is a stage-3 option"
    eq("activation offload (cpu_checkpointing)",
       d.get("activation_checkpointing", {}).get("cpu_checkpointing", False),
       bool(par.get("offload", {}).get("activations")))
    eq("TP", d.get("tensor_parallel", {}).get("autotp_size", 1), par["tp"])
    eq("CP (Ulysses)", d.get("sequence_parallel_size", 1), par["cp"])
    if par["cp"] > 1:
        eq("Ulysses mesh", d["data_parallel_size"] * par["cp"], g)
    hint = d["parallax_model_code"]
    assert "stages" not in d.get("pipeline", {}), "pipeline.stages is read by no DeepSpeed code"
    if par["pp"] > 1:
        pm = hint["PipelineModule"]
        eq("pipeline stages (PipelineModule)", pm["num_stages"], par["pp"])
        assert pm["partition_method"].startswith("type:"), pm
        eq("pipeline recompute", d["pipeline"]["activation_checkpoint_interval"],
           1 if rc == "full" else 0)
    else:
        eq("full recompute", "activation_checkpointing" in d and "activation_checkpointing" in
           hint, rc == "full")
    prec = par.get("precision", "bf16")
    bf16 = plan["hw"]["dtype_bytes"] == 2
    eq("bf16", d["bf16"]["enabled"], bf16 and prec == "bf16")
    eq("fp16", d["fp16"]["enabled"], bf16 and prec == "fp16")


def check_slurm(text, plan, path):
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    sb = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)", text, re.M))
    nodes = int(sb["nodes"])
    tasks = int(sb["ntasks-per-node"]) * nodes if "ntasks-per-node" in sb else int(sb["ntasks"])
    eq("tasks", tasks, g)
    gpn = plan["hw"]["gpus_per_node"]
    eq("nodes", nodes, -(-g // gpn))
    if plan["hw"]["dtype_bytes"] == 2 and "gpus-per-node" in sb:
        eq("GPUs per node", int(sb["gpus-per-node"]), int(sb["ntasks-per-node"]))
    assert re.search(r"srun --mpi=pmix \"\$EXECUTE\" --plan \"\$PLAN\"", text), "no srun line"
    subprocess.run(["bash", "-n", path], check=True)


if __name__ == "__main__":
    target, path, plan_path = sys.argv[1:4]
    text = open(path).read()
    plan = json.load(open(plan_path))
    if target == "slurm":
        check_slurm(text, plan, path)
    else:
        globals()["check_" + target](text, plan)
    print("%s export ok: %s" % (target, path))
