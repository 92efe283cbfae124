#!/usr/bin/env python3
"""Reads an export of `build/export` back with a real reader of its format
and checks every degree, batch and model dimension against the plan file.

  export_check.py TARGET EXPORT PLAN

megatron: an argparse mirror of the pretrain_gpt.py flags the exporter may
write (an unknown flag fails); nemo: PyYAML; torchtitan: tomllib; deepspeed:
json; slurm: the #SBATCH lines and `bash -n`.
"""
import argparse
import json
import re
import shlex
import subprocess
import sys


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
            "--num-distributed-optimizer-instances"]
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
            "--position-embedding-type": ["rope", "learned_absolute"],
            "--attention-backend": ["flash", "fused", "unfused", "local", "auto"],
            "--tokenizer-type": ["NullTokenizer"], "--ckpt-format": ["fsdp_dtensor"],
            "--pipeline-model-parallel-layout": None,
            "--moe-layer-freq": None}
    for f, choices in strs.items():
        p.add_argument(f, choices=choices)
    for f in ["--sequence-parallel", "--use-distributed-optimizer", "--use-megatron-fsdp",
              "--no-gradient-accumulation-fusion", "--overlap-grad-reduce",
              "--overlap-param-gather", "--tp-comm-overlap", "--grad-reduce-in-bf16", "--bf16",
              "--group-query-attention", "--swiglu", "--disable-bias-linear", "--add-qkv-bias",
              "--untie-embeddings-and-output-weights", "--qk-layernorm",
              "--multi-latent-attention", "--finetune", "--fp16", "--moe-grouped-gemm",
              "--fp8-param-gather", "--fp4-param-gather"]:
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
    eq("TP", a.tensor_model_parallel_size, par["tp"])
    eq("PP", a.pipeline_model_parallel_size, par["pp"])
    layout = a.pipeline_model_parallel_layout
    assert not (layout and a.num_virtual_stages_per_pipeline_rank), \
        "both --pipeline-model-parallel-layout and --num-virtual-stages-per-pipeline-rank"
    vpp = len(layout.split("|")) // par["pp"] if layout else a.num_virtual_stages_per_pipeline_rank
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
    eq("FSDP strategy", a.data_parallel_sharding_strategy,
       {2: "optim_grads", 3: "optim_grads_params"}.get(par["zero"]))
    eq("recompute", a.recompute_granularity, None if rc == "none" else rc)
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


def check_torchtitan(text, plan):
    import tomllib
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    d = tomllib.loads(text)
    p, t = d["parallelism"], d["training"]
    eq("DP (replicate x shard)", p["data_parallel_replicate_degree"] *
       p["data_parallel_shard_degree"], par["dp"])
    eq("FSDP", p["data_parallel_shard_degree"] > 1 or par["dp"] == 1,
       par["zero"] >= 2 or par["dp"] == 1)
    eq("TP", p["tensor_parallel_degree"], par["tp"])
    eq("PP", p["pipeline_parallel_degree"], par["pp"])
    eq("CP", p["context_parallel_degree"], par["cp"])
    eq("EP", p["expert_parallel_degree"], par["ep"])
    eq("ETP", p["expert_tensor_parallel_degree"], par["etp"])
    if par["pp"] > 1:
        eq("micro-batch", p["pipeline_parallel_microbatch_size"], par["micro_batch"])
        if uneven:
            parts = p["module_fqns_per_model_part"]
            eq("model parts", [sum(x.startswith("layers.") for x in q) for q in parts], lpc)
            flat = [x for q in parts for x in q]
            eq("modules in order", flat, ["tok_embeddings"] +
               ["layers.%d" % i for i in range(m["n_layers"])] + ["norm", "output"])
        else:
            eq("layers per stage", p["pipeline_parallel_layers_per_stage"] * par["pp"] *
               par["vpp"], m["n_layers"])
        eq("schedule", p["pipeline_parallel_schedule"],
           {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "Interleaved1F1B",
            "zb-h1": "InterleavedZeroBubble"}[par["schedule"]])
    eq("local batch", t["local_batch_size"], par["micro_batch"] * par["num_microbatches"])
    eq("global batch", t["global_batch_size"], gb)
    eq("sequence", t["seq_len"], par["seq_len"])
    eq("activation checkpointing", d["activation_checkpoint"]["mode"], rc)
    dims = dict(re.findall(r"(\w+) = (\d+)", text.split("[job]")[0]))
    for k, pk in (("n_layers", "n_layers"), ("dim", "hidden"), ("n_heads", "n_heads"),
                  ("n_kv_heads", "n_kv_heads"), ("ffn_dim", "ffn"), ("vocab_size", "vocab")):
        eq("model " + k, int(dims[k]), m[pk])


def check_deepspeed(text, plan):
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    d = json.loads(text)
    eq("train_batch_size", d["train_batch_size"], gb)
    eq("micro-batch", d["train_micro_batch_size_per_gpu"], par["micro_batch"])
    eq("accumulation", d["gradient_accumulation_steps"], par["num_microbatches"])
    eq("ZeRO", d["zero_optimization"]["stage"], par["zero"])
    eq("pipeline stages", d["pipeline"]["stages"], par["pp"])
    eq("TP", d.get("tensor_parallel", {}).get("autotp_size", 1), par["tp"])
    eq("CP (Ulysses)", d.get("sequence_parallel_size", 1), par["cp"])
    eq("batch identity with CP", d["train_micro_batch_size_per_gpu"] *
       d["gradient_accumulation_steps"] * (g // (par["tp"] * par["pp"] * par["cp"])),
       d["train_batch_size"])
    eq("bf16", d["bf16"]["enabled"], plan["hw"]["dtype_bytes"] == 2)


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
