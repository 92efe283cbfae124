#!/usr/bin/env python3
"""Runs DeepSpeed's own code on a `build/export --to deepspeed` config and
compares what DeepSpeed builds with the plan, field by field.

  check_deepspeed.py --plan PLAN.json --export FILE

DeepSpeed (requirements-deepspeed.txt) reads the JSON with DeepSpeedConfig
inside a world of the plan's size (a fake torch.distributed process group
under deepspeed.comm), as deepspeed.initialize() constructs it: with no mpu
for a plain module (AutoTP counts every rank; Ulysses builds its
data_parallel x sequence_parallel mesh), and with the PipelineModule's grid
as the mpu under pipeline parallelism.  The PipelineModule is built from the
arguments the export's `parallax_model_code` names (one stand-in layer a
transformer block, plus an embedding and a head) and its partition compared
with the plan's stages.  The one stand-in: DeepSpeed's CPU collective
kernels (shared-memory and oneCCL ops, compiled on first use) are not built.

With --batch LIST (`PLAN EXPORT` lines) the framework is imported once
and each line prints `EXPORT: verdict`.  Prints `ok`, or `FAIL <field>:
plan X, framework Y`, or `FAIL deepspeed
raised ...`; exits 0 / 1.
"""
import json
import os
import sys
import warnings


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import main as common_main, same as eq  # noqa: E402


def init_world(world):
    warnings.filterwarnings("ignore")
    import logging
    logging.disable(logging.WARNING)
    os.environ.setdefault("LOCAL_RANK", "0")
    import torch.distributed as tdist
    from torch.testing._internal.distributed.fake_pg import FakeStore
    tdist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    import deepspeed.comm as dist
    import deepspeed.comm.ccl
    import deepspeed.comm.torch
    ds_ccl, ds_torch = sys.modules["deepspeed.comm.ccl"], sys.modules["deepspeed.comm.torch"]
    # the CPU accelerator's collective kernels (compiled on first use): no
    # part of the config
    ds_torch.build_shm_op = ds_ccl.build_ccl_op = lambda: None
    dist.init_distributed(dist_backend="fake", auto_mpi_discovery=False,
                          dist_init_required=False)
    return dist


def pipeline_module(hint, n_layers):
    """DeepSpeed's PipelineModule over stand-in layers, as the hint says."""
    import torch.nn as nn
    from deepspeed.pipe import LayerSpec, PipelineModule

    class Embedding(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Linear(1, 1)

    class TransformerLayer(Embedding):
        pass

    class Head(Embedding):
        pass

    layers = [LayerSpec(Embedding)] + [LayerSpec(TransformerLayer)] * n_layers + [LayerSpec(Head)]
    return PipelineModule(layers=layers, num_stages=hint["num_stages"],
                          partition_method=hint["partition_method"],
                          activation_checkpoint_interval=hint["activation_checkpoint_interval"])


def check(plan, path):
    par, m = plan["parallel"], plan["model"]
    world = par["tp"] * par["cp"] * par["pp"] * par["dp"]
    cfg_dict = json.load(open(path))
    dist = init_world(world)
    from deepspeed.runtime.config import DeepSpeedConfig
    hint = cfg_dict.get("parallax_model_code", {})
    rc = par["layer_recompute"][0] if par["layer_recompute"] else par["recompute"]
    if par["pp"] > 1:
        pm = pipeline_module(hint["PipelineModule"], m["n_layers"])
        per_stage = [sum(1 for i in range(pm.parts[s], pm.parts[s + 1])
                         if 1 <= i <= m["n_layers"]) for s in range(pm.num_stages)]
        want = par["layers_per_chunk"] or [m["n_layers"] // par["pp"]] * par["pp"]
        eq("transformer layers per stage (PipelineModule)", want, per_stage)
        cfg = DeepSpeedConfig(cfg_dict, pm.mpu())
        eq("full recompute (pipeline activation_checkpoint_interval)", rc == "full",
           cfg.pipeline["activation_checkpoint_interval"] == 1 and
           pm.activation_checkpoint_interval == 1)
    else:
        mesh = None
        if "sequence_parallel_size" in cfg_dict and "data_parallel_size" in cfg_dict:
            mesh = dist.initialize_mesh_device(
                (cfg_dict["data_parallel_size"], cfg_dict["sequence_parallel_size"]),
                ("data_parallel", "sequence_parallel"))
        cfg = DeepSpeedConfig(cfg_dict, None, mesh_device=mesh)
        ac = "activation_checkpointing" in cfg_dict and "activation_checkpointing" in hint
        eq("full recompute (activation_checkpointing, every layer)", rc == "full",
           ac and cfg.activation_checkpointing_config.number_checkpoints == m["n_layers"])
    tp = cfg.tensor_parallel_config.autotp_size or 1
    eq("TP (autotp_size)", par["tp"], tp)
    eq("CP (Ulysses sequence_parallel_size)", par["cp"], cfg_dict.get("sequence_parallel_size", 1))
    eq("micro-batch", par["micro_batch"], cfg.train_micro_batch_size_per_gpu)
    eq("micro-batches a step", par["num_microbatches"], cfg.gradient_accumulation_steps)
    # without an mpu AutoTP's ranks count as data ranks: DeepSpeed's
    # world_size and train_batch_size are TP times the data-parallel ones
    eq("data-parallel ranks", par["dp"], int(cfg.world_size) // tp)
    eq("global batch", plan["batch"]["global_batch_sequences"], cfg.train_batch_size // tp)
    eq("ZeRO stage", par["zero"], cfg.zero_optimization_stage)
    off = par.get("offload", {"kind": "none"})["kind"] in ("optimizer", "params")
    dev = cfg.zero_config.offload_optimizer.device if cfg.zero_config.offload_optimizer else "none"
    eq("offload (optimizer on the host)", "cpu" if off else "none", str(getattr(dev, "value", dev)))
    prm = cfg.zero_config.offload_param.device if cfg.zero_config.offload_param else "none"
    eq("offload (parameters on the host)",
       "cpu" if par.get("offload", {}).get("kind") == "params" else "none",
       str(getattr(prm, "value", prm)))
    eq("offload (checkpoints on the host)", bool(par.get("offload", {}).get("activations")),
       bool(cfg.activation_checkpointing_config.cpu_checkpointing))
    if par["zero"] >= 1:
        eq("overlap_comm (dp_overlap)", par["dp_overlap"], cfg.zero_config.overlap_comm)
    bf16 = plan["hw"]["dtype_bytes"] == 2
    prec = par.get("precision", "bf16")
    eq("bf16", bf16 and prec == "bf16", cfg.bfloat16_config.enabled)
    eq("fp16", bf16 and prec == "fp16", cfg.float16_config.enabled)
    import torch
    lowp = torch.float16 if prec == "fp16" else torch.bfloat16
    want = torch.float32 if par["grad_dtype"] == "fp32" or not bf16 else lowp
    eq("gradient reduce dtype", want, cfg.communication_data_type)
    eq("gradient accumulation dtype", {torch.float32: "fp32", torch.bfloat16: "bf16",
                                       torch.float16: "fp16"}[want], cfg.grad_accum_dtype)


def reset_world():
    """Ends the fake world so that the next plan gets its own size."""
    import torch.distributed as tdist
    if tdist.is_initialized():
        tdist.destroy_process_group()
    import deepspeed.comm.comm as ds_comm
    ds_comm.cdb = None  # deepspeed.comm re-wraps the next world


def main():
    common_main(lambda plan, text, path: check(plan, path), after=reset_world)


if __name__ == "__main__":
    main()
