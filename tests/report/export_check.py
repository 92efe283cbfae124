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
            "--vocab-size", "--make-vocab-size-divisible-by"]
    for f in ints:
        p.add_argument(f, type=int)
    strs = {"--cp-comm-type": ["p2p", "a2a", "allgather"],
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
              "--multi-latent-attention", "--finetune"]:
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


def check_megatron(text, plan):
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    argv = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            argv += shlex.split(line)
    a = megatron_parser().parse_args(argv)
    ft = plan["parallel"].get("finetune", {"mode": "none"})["mode"]
    eq("finetune", a.finetune, ft == "full")
    nodes, per = map(int, re.search(r"torchrun --nnodes (\d+) --nproc-per-node (\d+)",
                                     text).groups())
    eq("GPUs (torchrun)", nodes * per, g)
    eq("TP", a.tensor_model_parallel_size, par["tp"])
    eq("PP", a.pipeline_model_parallel_size, par["pp"])
    eq("VPP", a.num_virtual_stages_per_pipeline_rank, par["vpp"] if par["vpp"] > 1 else None)
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
    eq("bf16", a.bf16, plan["hw"]["dtype_bytes"] == 2)
    eq("layers", a.num_layers, m["n_layers"])
    eq("hidden", a.hidden_size, m["hidden"])
    eq("ffn", a.ffn_hidden_size, m["ffn"])
    eq("heads", a.num_attention_heads, m["n_heads"])
    eq("kv heads", a.num_query_groups,
       m["n_kv_heads"] if m["n_kv_heads"] < m["n_heads"] else None)
    eq("vocab", a.vocab_size, m["vocab"])
    eq("experts", a.num_experts, m["n_experts"] if m["n_experts"] > 0 else None)


def check_nemo(text, plan):
    import yaml
    par, m, g, gb, uneven, lpc, rc = facts(plan)
    d = yaml.safe_load(text)
    mo = d["model"]
    eq("TP", mo["tensor_model_parallel_size"], par["tp"])
    eq("PP", mo["pipeline_model_parallel_size"], par["pp"])
    eq("VPP", mo["virtual_pipeline_model_parallel_size"], par["vpp"] if par["vpp"] > 1 else None)
    eq("CP", mo["context_parallel_size"], par["cp"])
    eq("EP", mo["expert_model_parallel_size"], par["ep"])
    eq("ETP", mo["expert_tensor_parallel_size"], par["etp"])
    eq("SP", mo["sequence_parallel"], par["tp"] > 1 and par["sp"])
    check_split("nemo", mo.get("num_layers_in_first_pipeline_stage"),
                mo.get("num_layers_in_last_pipeline_stage"),
                mo.get("pipeline_model_parallel_layout"), par)
    for k, pk in (("num_layers", "n_layers"), ("hidden_size", "hidden"), ("ffn_hidden_size", "ffn"),
                  ("num_attention_heads", "n_heads"), ("num_query_groups", "n_kv_heads"),
                  ("vocab_size", "vocab")):
        eq(k, mo[k], m[pk])
    eq("seq_length", mo["seq_length"], par["seq_len"])
    eq("recompute", mo["recompute_granularity"], None if rc == "none" else rc)
    eq("global batch", d["train"]["global_batch_size"], gb)
    eq("micro-batch", d["train"]["micro_batch_size"], par["micro_batch"])
    eq("distributed optimizer", d["ddp"]["use_distributed_optimizer"], par["zero"] >= 1)
    eq("bf16", mo["bf16"], plan["hw"]["dtype_bytes"] == 2)
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
    eq("base checkpoint", "pretrained_checkpoint" in d.get("checkpoint", {}), ft["mode"] == "full")


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
