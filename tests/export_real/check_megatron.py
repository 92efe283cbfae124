"""check_megatron.py --plan PLAN.json --export FILE  (or --batch LIST: common.main)

Hands a `build/export --to megatron` file to Megatron-LM's own argument code
(megatron/training/arguments.py at the commit of MEGATRON_LM_COMMIT:
parse_args, validate_args, core_transformer_config_from_args) under the
environment and world size of the export's launch line, then compares what
Megatron built with the plan field by field.  Prints `ok` or
`FAIL <field>: plan X, framework Y` (or the framework's exception); exit 0/1.

Shims (no GPU here; docs/export.md, "The real-framework suite"):
  shim_typing_override   Python 3.11 has no typing.override (3.12); the
                         typing_extensions one is put in its place.
  shim_device_arch       validate_args asks the GPU's compute capability
                         (torch.cuda); answered with the plan's GPU (H100: 9.0).
  shim_transformer_engine  Transformer Engine (GPU-only) is not installed:
                         Megatron's version probe answers TE_VERSION and
                         TE's fused RoPE counts as present; no TE code runs.
Nothing else of Megatron is replaced.
"""
import contextlib
import io
import os
import shlex
import sys

sys.path.insert(0, os.path.join(sys.prefix, "src", "Megatron-LM"))  # setup_venv.sh
import common  # noqa: E402
import mcore_fields  # noqa: E402


def shim_typing_override():
    import typing
    if not hasattr(typing, "override"):
        import typing_extensions
        typing.override = typing_extensions.override


def arch_of(hw_name):
    n = hw_name.lower()
    for key, arch in (("v100", 7), ("a100", 8), ("h100", 9), ("h200", 9), ("h800", 9),
                      ("b200", 10), ("b300", 10)):
        if key in n:
            return arch
    raise common.Mismatch("GPU", hw_name, "no compute capability known to the checker")


def shim_device_arch(arch):
    import torch
    import megatron.training.arguments as A
    A.get_device_arch_version = lambda: arch
    torch.cuda.get_device_capability = lambda device=None: (arch, 0)


TE_VERSION = "2.12.0"  # the newest Megatron-Bridge 0.3.1 takes (<2.13)


def shim_transformer_engine():
    from packaging.version import Version
    import megatron.core.utils as U
    U._te_version = Version(TE_VERSION)
    import megatron.core.models.common.embeddings.rope_utils as R
    if R.fused_apply_rotary_pos_emb is None:
        R.fused_apply_rotary_pos_emb = lambda *a, **k: None


def megatron_argv(text):
    argv = []
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            argv += shlex.split(line)
    # What the export leaves to the user (data, optimizer, iterations).
    return argv + ["--mock-data", "--train-iters", "10", "--lr", "1e-4"]


def build(text, plan):
    gpus = common.gpus(plan)
    env = mcore_fields.enter_launch_env(text, gpus)
    shim_typing_override()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        import warnings
        warnings.simplefilter("ignore")
        from megatron.training import arguments as A
        from megatron.training.argument_utils import core_transformer_config_from_args
        shim_device_arch(arch_of(plan["hw"]["name"]))
        shim_transformer_engine()
        sys.argv = ["pretrain_gpt.py"] + megatron_argv(text)
        args = A.parse_args()
        A.validate_args(args, {})
        cfg = core_transformer_config_from_args(args)
    return args, cfg, env


def hybrid_segments(args):
    """Layers per pipeline segment of --hybrid-layer-pattern (None without)."""
    pattern = args.hybrid_layer_pattern
    return [len(seg) for seg in pattern.split("/")[0].split("|")] if pattern else None


def compare(args, cfg, env, plan):
    """What Megatron-LM's arguments add to the Megatron-Core config."""
    par = plan["parallel"]
    s = common.same
    mcore_fields.compare(cfg, plan, hybrid_segments(args))
    if plan["model"].get("layer_pattern"):
        pattern = args.hybrid_layer_pattern
        mcore_fields.compare_hybrid(
            cfg, plan["model"], pattern.split("/")[0].replace("|", "") if pattern else None)
    s("dp", par["dp"], args.data_parallel_size)
    s("micro_batch", par["micro_batch"], args.micro_batch_size)
    s("global_batch", common.global_batch(plan), args.global_batch_size)
    s("seq_len", par["seq_len"], args.seq_length)
    z = par["zero"]
    s("zero (distributed optimizer)", z >= 1, args.use_distributed_optimizer)
    s("zero (Megatron-FSDP)", z >= 2, bool(args.use_megatron_fsdp))
    if z >= 2:
        s("zero (sharding)", {2: "optim_grads", 3: "optim_grads_params"}[z],
          args.data_parallel_sharding_strategy)
    s("shard_group", mcore_fields.optimizer_instances(plan), args.num_distributed_optimizer_instances)
    off = par.get("offload", {"kind": "none", "fraction": 1.0})
    s("offload (optimizer on the host)", off["kind"] == "optimizer", bool(args.optimizer_cpu_offload))
    if off["kind"] == "optimizer":
        s("offload fraction", off["fraction"], args.optimizer_offload_fraction)
    lead = off.get("activation_layers", 0) if off.get("activations") else 0
    s("offload (activations of the leading layers)", lead,
      cfg.cpu_offloading_num_layers if cfg.cpu_offloading else 0)
    s("grad_dtype", par["grad_dtype"], "bf16" if args.grad_reduce_in_bf16 else "fp32")
    s("vocab", plan["model"]["vocab"], args.vocab_size)
    m = plan["model"]
    s("norm epsilon", m.get("norm_eps", 1e-5), args.layernorm_epsilon)  # --norm-epsilon
    rope = m.get("rope_fraction", 1.0) > 0
    if m.get("block", "llama") == "llama":
        s("position embedding", "rope" if rope else "none", args.position_embedding_type)
    if m.get("block", "llama") == "llama" and m.get("attention", "standard") != "mla" and rope:
        s("RoPE base", m.get("rope_theta", 10000.0), float(args.rotary_base))
        s("RoPE share of a head", m.get("rope_fraction", 1.0), args.rotary_percent)
        s("Llama 3.1 RoPE scaling", m.get("rope_scaling") == "llama3", bool(args.use_rope_scaling))
    mcore_fields.compare_env(env, plan)


if __name__ == "__main__":
    common.main(lambda plan, text, path: compare(*build(text, plan), plan))
