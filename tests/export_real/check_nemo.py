"""check_nemo.py --plan PLAN.json --export FILE  (or --batch LIST: common.main)

Hands a `build/export --to nemo` file to Megatron-Bridge's own config code
(requirements-nemo.txt): the recipe base every pre-training recipe of the
release starts from (recipes/common.py _pretrain_common) with the model
provider of the recipe the export names, the export applied twice -- as the
YAML file (process_config_with_overrides(config_filepath=...)) and as the
`# hydra:` overrides the launch line hands scripts/training/run_recipe.py
(process_config_with_overrides(cli_overrides=...)) -- then
runtime_config_update (mixed precision, comm overlap, ConfigContainer
.validate with every finalize()) under the launch line's world size.  Both
configs are compared with the plan field by field.  Prints `ok` or
`FAIL <field>: plan X, framework Y` (or the framework's exception).

The recipe functions themselves read the model's Hugging Face config from
the Hub (AutoBridge.from_hf_pretrained), which this offline check cannot;
the export overrides every dimension the plan has, so the base provider
only supplies what the plan does not say (RoPE base, init, ...).

Shims (docs/export.md, "The real-framework suite"): shim_transformer_engine
(Transformer Engine is GPU-only; Bridge imports it at module level).
"""
import contextlib
import io
import logging
import os
import re
import warnings

import common
import mcore_fields
import shim_transformer_engine


def bridge():
    shim_transformer_engine.install()
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    import megatron.bridge.recipes as recipes
    from megatron.bridge.recipes.common import _pretrain_common
    from megatron.bridge.training.config import runtime_config_update
    from megatron.bridge.training.utils.omegaconf_utils import process_config_with_overrides
    return recipes, _pretrain_common, runtime_config_update, process_config_with_overrides


def base_config(recipe, plan):
    """The recipe's starting point, offline: the common pre-training base and
    the provider class of the recipe's model family."""
    _, pretrain_common, _, _ = bridge()
    from megatron.bridge.models.gpt_provider import GPTModelProvider
    cfg = pretrain_common()
    if recipe.startswith("deepseek_v3"):
        from megatron.bridge.models.deepseek.deepseek_provider import DeepSeekV3ModelProvider
        cfg.model = DeepSeekV3ModelProvider()
    elif recipe.startswith("nemotron"):  # the Nemotron-H / Nemotron 3 recipes' Mamba provider
        from megatron.bridge.models.nemotronh.nemotron_h_provider import NemotronHModelProvider
        cfg.model = NemotronHModelProvider()
    else:
        cfg.model = GPTModelProvider(num_layers=1, hidden_size=64, num_attention_heads=1)
    cfg.tokenizer.tokenizer_type = "NullTokenizer"
    cfg.tokenizer.tokenizer_model = None
    cfg.tokenizer.vocab_size = plan["model"]["vocab"]
    return cfg


def build(text, path, plan, how):
    recipes, _, runtime_config_update, process = bridge()
    m = re.search(r"run_recipe\.py --recipe (\w+)", text)
    if not m:
        raise common.Mismatch("launch", "scripts/training/run_recipe.py --recipe NAME", "none")
    recipe = m.group(1)
    if not hasattr(recipes, recipe):
        raise common.Mismatch("recipe", recipe, "no such recipe in megatron.bridge.recipes")
    gpus = common.gpus(plan)
    env = mcore_fields.enter_launch_env(text, gpus)
    cfg = base_config(recipe, plan)
    with contextlib.redirect_stdout(io.StringIO()):
        if how == "yaml":
            cfg = process(cfg, config_filepath=path)
        else:
            hydra = re.findall(r"^# hydra: (\S+)$", text, re.M)
            cfg = process(cfg, cli_overrides=hydra)
        runtime_config_update(cfg)
    return cfg, env


def compare(cfg, env, plan):
    par = plan["parallel"]
    s = common.same
    mcore_fields.compare(cfg.model, plan)
    s("dp", par["dp"], cfg.data_parallel_size)
    s("micro_batch", par["micro_batch"], cfg.train.micro_batch_size)
    s("global_batch", common.global_batch(plan), cfg.train.global_batch_size)
    s("seq_len (model)", par["seq_len"], cfg.model.seq_length)
    s("seq_len (dataset)", par["seq_len"], cfg.dataset.sequence_length)
    z = par["zero"]
    s("zero (distributed optimizer)", z >= 1, cfg.ddp.use_distributed_optimizer)
    s("zero (optimizer)", z >= 1, cfg.optimizer.use_distributed_optimizer)
    s("zero (Megatron-FSDP)", z >= 2, bool(cfg.ddp.use_megatron_fsdp))
    if z >= 2:
        s("zero (sharding)", {2: "optim_grads", 3: "optim_grads_params"}[z],
          cfg.ddp.data_parallel_sharding_strategy)
        s("zero (checkpoint format)", "fsdp_dtensor", cfg.checkpoint.ckpt_format)
    s("shard_group", mcore_fields.optimizer_instances(plan),
      cfg.ddp.num_distributed_optimizer_instances)
    off = par.get("offload", {"kind": "none", "fraction": 1.0})
    s("offload (optimizer on the host)", off["kind"] == "optimizer",
      bool(cfg.optimizer.optimizer_cpu_offload))
    if off["kind"] == "optimizer":
        s("offload fraction", off["fraction"], cfg.optimizer.optimizer_offload_fraction)
    lead = off.get("activation_layers", 0) if off.get("activations") else 0
    s("offload (activations of the leading layers)", lead,
      cfg.model.cpu_offloading_num_layers if cfg.model.cpu_offloading else 0)
    s("grad_dtype", par["grad_dtype"], "fp32" if cfg.ddp.grad_reduce_in_fp32 else "bf16")
    s("vocab", plan["model"]["vocab"], cfg.model.vocab_size)
    m = plan["model"]
    s("norm epsilon", m.get("norm_eps", 1e-5), cfg.model.layernorm_epsilon)
    rope = m.get("rope_fraction", 1.0) > 0
    if m.get("block", "llama") == "llama" and m.get("attention", "standard") != "mla":
        s("position embedding", "rope" if rope else "none", cfg.model.position_embedding_type)
    if m.get("layer_pattern"):
        mcore_fields.compare_hybrid(cfg.model, m, cfg.model.hybrid_override_pattern)
    if m.get("block", "llama") == "llama" and m.get("attention", "standard") != "mla" and rope:
        s("RoPE base", m.get("rope_theta", 10000.0), float(cfg.model.rotary_base))
        s("RoPE share of a head", m.get("rope_fraction", 1.0), cfg.model.rotary_percent)
        s("Llama 3.1 RoPE scaling", m.get("rope_scaling") == "llama3", bool(cfg.model.rope_scaling))
    ft = par.get("finetune", {"mode": "none"})
    if ft["mode"] == "lora":
        s("LoRA dim", ft["lora_rank"], cfg.peft.dim)
        s("LoRA alpha", ft["lora_alpha"], cfg.peft.alpha)
    mcore_fields.compare_env(env, plan)


def check(plan, text, path):
    for how in ("yaml", "hydra"):
        try:
            compare(*build(text, path, plan, how), plan)
        except common.Mismatch as e:
            raise common.Mismatch("%s (%s)" % (e.field, how), e.plan, e.framework) from None


if __name__ == "__main__":
    common.main(check)
