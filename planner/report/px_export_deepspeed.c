/* px_export_deepspeed.c — a plan as a DeepSpeed 0.19.8 config (JSON read by
 * DeepSpeedConfig, docs/export.md), and what such a config cannot say. */
#include "px_export_formats.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

bool px_export_deepspeed_refusal(const px_plan *plan, char *why, size_t n)
{
    const px_parallel *p = &plan->par;
    bool uneven = false;
    for (int i = 1; i < p->n_chunks; i++)
        uneven = uneven || p->layers_per_chunk[i] != p->layers_per_chunk[0];
    if (p->pp > 1 && p->zero >= 2)
        return px_export_because(why, n, "ZeRO stage %d with pipeline parallelism (DeepSpeed's pipeline "
                               "engine runs ZeRO 0 and 1)", p->zero);
    if (p->ep > 1)
        return px_export_because(why, n, "expert parallelism (no DeepSpeed config key: the MoE layers "
                               "take ep_size in the model code, Megatron-DeepSpeed from the "
                               "megatron export)");
    if (uneven || (p->pp > 1 && plan->model.n_layers % p->pp != 0))
        return px_export_because(why, n, "an uneven pipeline split (PipelineModule's "
                               "partition_method balances the transformer layers); plan with "
                               "--partition uniform and a PP that divides the layers");
    if (p->tp > 1 && p->pp > 1)
        return px_export_because(why, n, "tensor parallelism with pipeline parallelism (AutoTP shards a "
                               "plain module; PipelineModule's topology has no TP axis without "
                               "Megatron-DeepSpeed)");
    if (p->cp > 1 && (p->tp > 1 || p->pp > 1))
        return px_export_because(why, n, "Ulysses sequence parallelism with tensor or pipeline "
                               "parallelism (the config's mesh is data_parallel_size x "
                               "sequence_parallel_size)");
    if (p->zero >= 3 && p->shard_group > 0 && p->shard_group < p->dp * p->cp)
        return px_export_because(why, n, "hybrid sharding over %d ranks (MiCS, mics_shard_size, was "
                               "removed from DeepSpeed 0.19; ZeRO++ hpZ keeps a secondary "
                               "copy, not replicated shards)", p->shard_group);
    if (plan->hw.dtype_bytes == 2 && p->precision != PX_PREC_BF16 &&
        p->precision != PX_PREC_FP16)
        return px_export_because(why, n, "precision %s (DeepSpeed's config runs bf16 or fp16)",
                       px_precision_name(p->precision));
    return false;
}

/* The number format: bf16 or fp16 (with DeepSpeed's dynamic loss scaling),
 * fp32 for 4-byte profiles. */
static const char *ds_dtype(const px_plan *plan)
{
    if (plan->hw.dtype_bytes != 2)
        return "fp32";
    return plan->par.precision == PX_PREC_FP16 ? "fp16" : "bf16";
}

/* PipelineModule's partition_method "type:REGEX" balances the layers whose
 * class name matches (case-insensitive): the transformer blocks, so every
 * stage holds L / pp of them whatever the embedding and head are. */
#define DS_LAYER_CLASSES "TransformerLayer|DecoderLayer|Block"

/* What DeepSpeed takes from the model code, not the config: the pipeline
 * module's stages and partition, per-layer checkpointing, the launch. */
static json_t *ds_model_code(const px_plan *plan, const plan_facts *f)
{
    const px_parallel *p = &plan->par;
    int per = f->per_node ? f->per_node : plan->hw.gpus_per_node;
    char launch[256];
    snprintf(launch, sizeof launch,
             f->nodes > 1 ? "deepspeed --hostfile HOSTFILE --num_nodes %d --num_gpus %d "
                            "train.py --deepspeed_config THIS_FILE"
                          : "deepspeed --num_nodes %d --num_gpus %d train.py "
                            "--deepspeed_config THIS_FILE",
             f->nodes, per);
    json_t *o = json_pack("{s:s, s:s}", "note",
                          "read by no DeepSpeed code: what the training script must pass",
                          "launch", launch);
    if (p->pp > 1)
        json_object_set_new(o, "PipelineModule",
                            json_pack("{s:i, s:s, s:i}", "num_stages", p->pp,
                                      "partition_method", "type:" DS_LAYER_CLASSES,
                                      "activation_checkpoint_interval",
                                      f->recompute == PX_RECOMPUTE_FULL ? 1 : 0));
    else if (f->recompute == PX_RECOMPUTE_FULL)
        json_object_set_new(o, "activation_checkpointing",
                            json_string("wrap every transformer layer in "
                                        "deepspeed.checkpointing.checkpoint (full recompute)"));
    return o;
}

static json_t *ds_config(const px_plan *plan, const plan_facts *f)
{
    const px_parallel *p = &plan->par;
    const char *dt = ds_dtype(plan);
    json_t *root = json_pack(
        "{s:I, s:I, s:{s:i, s:b, s:b, s:b}, s:{s:b}, s:{s:b}, s:s, s:{s:s}, s:f, s:i, s:b}",
        "train_micro_batch_size_per_gpu", (json_int_t)p->micro_batch,
        "gradient_accumulation_steps", (json_int_t)p->n_micro, "zero_optimization", "stage",
        p->zero, "overlap_comm", p->dp_overlap, "contiguous_gradients", 1, "reduce_scatter", 1,
        "bf16", "enabled", !strcmp(dt, "bf16"), "fp16", "enabled", !strcmp(dt, "fp16"),
        "communication_data_type", p->grad_fp32 ? "fp32" : dt, "data_types",
        "grad_accum_dtype", p->grad_fp32 ? "fp32" : dt, "gradient_clipping", 1.0,
        "steps_per_print", 10, "wall_clock_breakdown", 0);
    if (!root)
        return NULL;
    /* Under AutoTP DeepSpeedConfig counts every rank as a data rank (no mpu:
     * world = all GPUs), so train_batch_size would be tp x the real batch;
     * left out, it is derived as micro x accumulation x that world. */
    if (p->tp == 1)
        json_object_set_new(root, "train_batch_size", json_integer(f->gbatch));
    if (p->tp > 1)
        json_object_set_new(root, "tensor_parallel", json_pack("{s:i}", "autotp_size", p->tp));
    json_t *zo = json_object_get(root, "zero_optimization");
    if (p->offload.kind != PX_OFFLOAD_NONE) /* ZeRO-Offload: state and step on the host */
        json_object_set_new(zo, "offload_optimizer",
                            json_pack("{s:s,s:b}", "device", "cpu", "pin_memory", 1));
    if (p->offload.kind == PX_OFFLOAD_PARAMS) /* ZeRO-Infinity: the stage-3 shards too */
        json_object_set_new(zo, "offload_param",
                            json_pack("{s:s,s:b}", "device", "cpu", "pin_memory", 1));
    if (p->cp > 1) { /* Ulysses over a data_parallel x sequence_parallel mesh */
        json_object_set_new(root, "sequence_parallel_size", json_integer(p->cp));
        json_object_set_new(root, "data_parallel_size", json_integer(p->dp));
    }
    if (p->pp > 1)
        json_object_set_new(root, "pipeline",
                            json_pack("{s:i}", "activation_checkpoint_interval",
                                      f->recompute == PX_RECOMPUTE_FULL ? 1 : 0));
    /* deepspeed.checkpointing.configure: the pipeline engine's own
     * checkpointing needs it only to offload */
    if (f->recompute == PX_RECOMPUTE_FULL && (p->pp == 1 || p->offload.activations)) {
        json_t *ac = json_pack("{s:b, s:b, s:I}", "partition_activations", 0,
                               "contiguous_memory_optimization", 0, "number_checkpoints",
                               (json_int_t)plan->model.n_layers);
        if (p->offload.activations) /* the checkpoints on the host */
            json_object_set_new(ac, "cpu_checkpointing", json_true());
        json_object_set_new(root, "activation_checkpointing", ac);
    }
    json_object_set_new(root, "parallax_model_code", ds_model_code(plan, f));
    return root;
}

px_status px_export_deepspeed(const px_plan *plan, px_buf *b, px_error *err)
{
    plan_facts f;
    px_export_facts_of(plan, &f);
    json_t *root = ds_config(plan, &f);
    if (!root)
        return PX_FAIL(err, PX_ERR_NOMEM, "deepspeed export: building the JSON failed");
    char *s = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
    json_decref(root);
    if (!s)
        return PX_FAIL(err, PX_ERR_NOMEM, "deepspeed export: writing the JSON failed");
    px_buf_puts(b, s);
    px_buf_puts(b, "\n");
    free(s);
    return PX_OK;
}
