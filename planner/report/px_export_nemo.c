/* px_export_nemo.c — a plan as a Megatron-Bridge recipe override: YAML, and
 * the same keys as Hydra overrides for the release's run_recipe.py
 * (docs/export.md). */
#include "px_export_formats.h"
#include "px_export_finetune.h"

#include <string.h>

#include "px_hybrid.h"

/* One document written twice: YAML sections, and `# hydra: ++section.key=value`
 * lines (Hydra's override grammar) for scripts/training/run_recipe.py.  An
 * object section (a `_target_` the recipe may hold as a preset name or
 * None) is one Hydra dictionary, `section={key:value,...}`. */
typedef struct {
    px_buf *yaml, *hydra;
    const char *section;
    bool object;  /* the section is one Hydra dictionary */
    int n_object; /* its entries so far */
} nemo_doc;

static void end_section(nemo_doc *d)
{
    if (d->object)
        px_buf_puts(d->hydra, "}\n");
    d->object = false;
}
static void section(nemo_doc *d, const char *name)
{
    end_section(d);
    d->section = name;
    px_buf_printf(d->yaml, "%s:\n", name);
}
static void object_section(nemo_doc *d, const char *name, const char *target)
{
    section(d, name);
    d->object = true;
    d->n_object = 1;
    px_buf_printf(d->yaml, "  _target_: %s\n", target);
    px_buf_printf(d->hydra, "# hydra: ++%s={_target_:%s", name, target);
}
static void kv(nemo_doc *d, const char *key, const char *value)
{
    px_buf_printf(d->yaml, "  %s: %s\n", key, value);
    if (d->object)
        px_buf_printf(d->hydra, "%s%s:%s", d->n_object++ ? "," : "", key, value);
    else
        px_buf_printf(d->hydra, "# hydra: ++%s.%s=%s\n", d->section, key, value);
}
static void kv_i(nemo_doc *d, const char *key, int64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)v);
    kv(d, key, s);
}
static void kv_b(nemo_doc *d, const char *key, bool v) { kv(d, key, v ? "true" : "false"); }
static void kv_f(nemo_doc *d, const char *key, double v)
{
    char s[32];
    snprintf(s, sizeof s, "%.17g", v);
    kv(d, key, s);
}
/* A Python object by its import path (Bridge instantiates `_target_`
 * dictionaries; `_call_: false` takes the object itself). */
static void kv_object(nemo_doc *d, const char *key, const char *path)
{
    px_buf_printf(d->yaml, "  %s:\n    _target_: %s\n    _call_: false\n", key, path);
    if (d->object)
        px_buf_printf(d->hydra, "%s%s:{_target_:%s,_call_:false}", d->n_object++ ? "," : "", key,
                      path);
    else
        px_buf_printf(d->hydra, "# hydra: ++%s.%s={_target_:%s,_call_:false}\n", d->section, key,
                      path);
}

/* The recipe whose model provider the overrides start from, by the
 * model's architecture (the dimensions are all overridden). */
static const char *nemo_recipe(const px_model *m)
{
    if (px_model_is_hybrid(m)) /* Nemotron-H / Nemotron 3: the Mamba model provider */
        return m->n_experts > 0 ? "nemotron_3_nano_pretrain_config"
                                : "nemotronh_8b_pretrain_config";
    if (m->attn == PX_ATTN_MLA)
        return "deepseek_v3_pretrain_config";
    if (m->n_experts > 0)
        return "qwen3_235b_a22b_pretrain_config";
    if (m->qk_norm)
        return "qwen3_8b_pretrain_config";
    return "llama3_8b_pretrain_config";
}

static void nemo_split(const px_plan *plan, const plan_facts *f, nemo_doc *d)
{
    const px_parallel *p = &plan->par;
    kv_i(d, "tensor_model_parallel_size", p->tp);
    kv_i(d, "pipeline_model_parallel_size", p->pp);
    /* an uneven interleaved split is a layout, which carries the chunk count */
    if (p->vpp > 1 && !f->uneven)
        kv_i(d, "virtual_pipeline_model_parallel_size", p->vpp);
    else
        kv(d, "virtual_pipeline_model_parallel_size", "null");
    if (f->uneven && px_export_first_last_split(p)) {
        kv_i(d, "num_layers_in_first_pipeline_stage", f->first_layers);
        kv_i(d, "num_layers_in_last_pipeline_stage", f->last_layers);
        kv(d, "pipeline_model_parallel_layout", "null");
    } else if (f->uneven) {
        px_buf layout = {0};
        px_buf_puts(&layout, "\"");
        px_export_layout(plan, &layout);
        px_buf_puts(&layout, "\"");
        kv(d, "pipeline_model_parallel_layout", layout.failed ? "null" : layout.data);
        px_buf_free(&layout);
    } else {
        kv(d, "pipeline_model_parallel_layout", "null");
    }
    kv_i(d, "context_parallel_size", p->cp);
    if (p->cp > 1)
        kv(d, "cp_comm_type", px_export_cp_comm_type(p->cp_comm));
    kv_i(d, "expert_model_parallel_size", p->ep);
    kv_i(d, "expert_tensor_parallel_size", p->etp);
    kv_b(d, "sequence_parallel", p->tp > 1 && p->sp);
}

/* A hybrid model on the release's MambaModelProvider: its pattern
 * (hybrid_override_pattern, quoted: a `*` or `-` may start it) and the
 * Mamba-2 mixer's sizes. */
static void nemo_hybrid(const px_model *m, nemo_doc *d)
{
    px_buf pattern = {0};
    px_buf_printf(&pattern, "\"%s\"", m->layer_pattern);
    kv(d, "hybrid_override_pattern", pattern.failed ? "null" : pattern.data);
    px_buf_free(&pattern);
    if (m->mamba_heads > 0) {
        kv_i(d, "mamba_num_heads", m->mamba_heads);
        kv_i(d, "mamba_head_dim", m->mamba_head_dim);
        kv_i(d, "mamba_state_dim", m->mamba_state);
        kv_i(d, "mamba_num_groups", m->mamba_groups);
    }
}

static void nemo_shape(const px_plan *plan, const plan_facts *f, nemo_doc *d)
{
    const px_model *m = &plan->model;
    kv_i(d, "num_layers", m->n_layers);
    kv_i(d, "hidden_size", m->hidden);
    kv_i(d, "ffn_hidden_size", m->ffn);
    kv_i(d, "num_attention_heads", m->n_heads);
    kv_i(d, "num_query_groups", m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads);
    if (m->head_dim > 0)
        kv_i(d, "kv_channels", m->head_dim);
    bool llama = m->block == PX_BLOCK_LLAMA;
    kv(d, "normalization", llama ? "RMSNorm" : "LayerNorm");
    bool relu2 = m->mlp_act == PX_ACT_RELU2;
    kv_b(d, "gated_linear_unit", llama && !relu2);
    kv_object(d, "activation_func", relu2   ? "megatron.core.activations.squared_relu"
                                    : llama ? "torch.nn.functional.silu"
                                            : "torch.nn.functional.gelu");
    if (px_model_is_hybrid(m))
        nemo_hybrid(m, d);
    bool rope = llama && m->rope_fraction > 0.0;
    if (m->attn != PX_ATTN_MLA)
        kv(d, "position_embedding_type",
           rope ? "rope" : llama ? "none" : "learned_absolute");
    if (rope) {
        kv_i(d, "rotary_base", (int64_t)m->rope_theta);
        kv_f(d, "rotary_percent", m->rope_fraction);
        kv_b(d, "rope_scaling", m->rope_scaling == PX_ROPE_LLAMA3);
        if (m->rope_scaling == PX_ROPE_LLAMA3)
            kv_f(d, "rope_scaling_factor", m->rope_factor);
    }
    kv_f(d, "layernorm_epsilon", m->norm_eps);
    kv_b(d, "add_bias_linear", !llama);
    kv_b(d, "add_qkv_bias", !llama || m->qkv_bias);
    kv_b(d, "qk_layernorm", m->qk_norm);
    kv_b(d, "share_embeddings_and_output_weights", m->tied_embeddings);
    kv_i(d, "seq_length", f->seq);
    kv_i(d, "vocab_size", m->vocab);
    kv_i(d, "make_vocab_size_divisible_by", 128);
    if (m->n_experts > 0) { /* what the cost model prices (frameworks/megatron.json) */
        kv_i(d, "num_moe_experts", m->n_experts);
        kv_i(d, "moe_router_topk", m->top_k);
        kv_i(d, "moe_ffn_hidden_size", m->moe_ffn);
        if (m->n_shared_experts > 0)
            kv_i(d, "moe_shared_expert_intermediate_size", m->n_shared_experts * m->moe_ffn);
        if (m->first_dense_layers > 0) { /* one 0 (dense) or 1 (MoE) a layer */
            px_buf freq = {0};
            for (int64_t l = 0; l < m->n_layers; l++)
                px_buf_printf(&freq, "%s%d", l ? "," : "[", l >= m->first_dense_layers);
            px_buf_puts(&freq, "]");
            kv(d, "moe_layer_freq", freq.failed ? "1" : freq.data);
            px_buf_free(&freq);
        } else {
            kv_i(d, "moe_layer_freq", m->moe_layer_freq > 1 ? m->moe_layer_freq : 1);
        }
        /* top-k over all experts, as the cost model routes (the MLA recipe's
         * group-limited routing needs experts in multiples of its groups) */
        kv(d, "moe_router_num_groups", "null");
        kv(d, "moe_router_group_topk", "null");
        px_moe_dispatch dispatch = plan->par.moe_dispatcher;
        if (dispatch == PX_MOE_ALLTOALL) {
            kv(d, "moe_token_dispatcher_type", "alltoall");
        } else {
            kv(d, "moe_token_dispatcher_type", "flex");
            kv(d, "moe_flex_dispatcher_backend", px_moe_dispatch_name(dispatch));
        }
        kv_b(d, "moe_grouped_gemm", true);
    }
    if (m->attn == PX_ATTN_MLA) {
        kv_i(d, "q_lora_rank", m->q_lora_rank);
        kv_i(d, "kv_lora_rank", m->kv_lora_rank);
        kv_i(d, "qk_head_dim", m->qk_nope_head_dim);
        kv_i(d, "qk_pos_emb_head_dim", m->qk_rope_head_dim);
        kv_i(d, "v_head_dim", m->v_head_dim);
    }
    if (m->n_mtp_modules > 0)
        kv_i(d, "mtp_num_layers", m->n_mtp_modules);
    else
        kv(d, "mtp_num_layers", "null");
}

static void nemo_recompute(const px_plan *plan, const plan_facts *f, nemo_doc *d)
{
    if (px_export_recompute_mixed(&plan->par)) {
        kv(d, "recompute_granularity", "full");
        kv(d, "recompute_method", "block");
        kv_i(d, "recompute_num_layers", px_export_block_recompute_layers(plan));
    } else if (f->recompute == PX_RECOMPUTE_SELECTIVE) {
        kv(d, "recompute_granularity", "selective");
        if (plan->par.recompute_modules != PX_RCM_DEFAULT) {
            char list[128], value[132];
            px_rc_modules_format(plan->par.recompute_modules, list, sizeof list);
            snprintf(value, sizeof value, "[%s]", list);
            kv(d, "recompute_modules", value);
        }
    } else if (f->recompute == PX_RECOMPUTE_FULL) {
        kv(d, "recompute_granularity", "full");
        kv(d, "recompute_method", "uniform");
        kv_i(d, "recompute_num_layers", 1);
    } else {
        kv(d, "recompute_granularity", "null");
    }
    if (plan->par.offload.activations) { /* the first N layers' activations on the host */
        kv_b(d, "cpu_offloading", true);
        kv_i(d, "cpu_offloading_num_layers", plan->par.offload.act_layers);
        kv_b(d, "cpu_offloading_activations", true);
    }
}

/* Bridge's MixedPrecisionConfig, written out: its presets (bf16_mixed, ...)
 * fix grad_reduce_in_fp32 and overwrite the DDP's, so the plan's gradient
 * dtype needs the explicit form. */
static void nemo_precision(const px_plan *plan, const plan_facts *f, nemo_doc *d)
{
    const px_parallel *p = &plan->par;
    bool fp16 = p->precision == PX_PREC_FP16;
    const char *dtype = fp16 ? "torch.float16" : f->bf16 ? "torch.bfloat16" : "torch.float32";
    object_section(d, "mixed_precision",
                   "megatron.bridge.training.mixed_precision.MixedPrecisionConfig");
    kv_b(d, "fp16", fp16);
    kv_b(d, "bf16", !fp16 && f->bf16);
    kv_b(d, "fp32", !fp16 && !f->bf16);
    kv_object(d, "params_dtype", dtype);
    kv_object(d, "pipeline_dtype", dtype);
    kv_b(d, "grad_reduce_in_fp32", p->grad_fp32);
    const char *fmt = px_export_fp8_format(p->precision);
    if (fmt) {
        kv(d, "fp8", fmt);
        kv(d, "fp8_recipe", px_export_fp8_recipe(p->precision));
        kv_b(d, "fp8_param_gather", p->quantized_params);
        kv_b(d, "reuse_grad_buf_for_mxfp8_param_ag",
             p->precision == PX_PREC_MXFP8 && p->quantized_params);
    } else if (p->precision == PX_PREC_NVFP4) {
        kv(d, "fp4", "e2m1");
        kv(d, "fp4_recipe", "nvfp4");
    }
}

static void nemo_body(const px_plan *plan, const plan_facts *f, nemo_doc *d)
{
    const px_parallel *p = &plan->par;
    section(d, "model");
    nemo_split(plan, f, d);
    nemo_shape(plan, f, d);
    nemo_recompute(plan, f, d);
    section(d, "train");
    kv_i(d, "global_batch_size", f->gbatch);
    kv_i(d, "micro_batch_size", p->micro_batch);
    section(d, "dataset"); /* GPTDatasetConfig's field; seq_length is its alias */
    kv_i(d, "sequence_length", f->seq);
    section(d, "ddp");
    kv_b(d, "use_distributed_optimizer", p->zero >= 1);
    kv_b(d, "overlap_grad_reduce", p->dp_overlap && p->dp > 1);
    kv_b(d, "overlap_param_gather", p->dp_overlap && p->dp > 1 && p->zero >= 1);
    kv_b(d, "grad_reduce_in_fp32", p->grad_fp32);
    kv_b(d, "use_megatron_fsdp", p->zero >= 2);
    kv(d, "data_parallel_sharding_strategy",
       p->zero == 2 ? "optim_grads" : p->zero == 3 ? "optim_grads_params" : "no_shard");
    kv_i(d, "num_distributed_optimizer_instances", px_export_optimizer_instances(p));
    section(d, "optimizer");
    kv_b(d, "use_distributed_optimizer", p->zero >= 1);
    if (p->offload.kind == PX_OFFLOAD_OPTIMIZER) { /* Megatron-Core's OptimizerConfig */
        kv_b(d, "optimizer_cpu_offload", true);
        kv_f(d, "optimizer_offload_fraction", p->offload.fraction);
        kv_b(d, "use_precision_aware_optimizer", true);
    }
    section(d, "checkpoint"); /* Bridge asserts fsdp_dtensor under Megatron-FSDP */
    kv(d, "ckpt_format", p->zero >= 2 ? "fsdp_dtensor" : "torch_dist");
    if (p->finetune.mode != PX_FT_NONE) /* Bridge asserts one for PEFT: fill in */
        kv(d, "pretrained_checkpoint", "/path/to/the/base/model/megatron/checkpoint");
    nemo_precision(plan, f, d);
    object_section(d, "comm_overlap", "megatron.bridge.training.comm_overlap.CommOverlapConfig");
    kv_b(d, "tp_comm_overlap", p->tp_comm_overlap && p->tp > 1 && p->sp);
    if (p->moe_a2a_overlap)
        kv_b(d, "overlap_moe_expert_parallel_comm", true);
    end_section(d);
}

px_status px_export_nemo(const px_plan *plan, px_buf *b, px_error *err)
{
    plan_facts f;
    px_export_facts_of(plan, &f);
    char name[64];
    px_export_safe_name(plan->model.name, name, sizeof name);
    px_buf yaml = {0}, hydra = {0};
    nemo_doc d = {&yaml, &hydra, "", false, 0};
    nemo_body(plan, &f, &d);
    px_export_finetune_nemo(plan, &yaml, &hydra);
    px_buf_printf(b,
                  "# Megatron-Bridge recipe override: %s on %d GPUs (%d node(s)), from a Parallax\n"
                  "# plan (docs/export.md).  Checked with Megatron-Bridge " PX_EXPORT_MEGATRON_BRIDGE
                  " (megatron-core " PX_EXPORT_BRIDGE_CORE "):\n"
                  "# process_config_with_overrides, runtime_config_update.  The recipe gives the\n"
                  "# data, optimizer and tokenizer; this file the split, batch, precision and shape.\n"
                  "# The keys again as Hydra overrides (`# hydra: ++key=value` lines) for the release's\n"
                  "# scripts/training/run_recipe.py, recipe %s:\n",
                  name, f.gpus, f.nodes, nemo_recipe(&plan->model));
    char command[256];
    snprintf(command, sizeof command,
             "scripts/training/run_recipe.py --recipe %s%s $(sed -n \"s/^# hydra: //p\" THIS_FILE)",
             nemo_recipe(&plan->model),
             plan->par.finetune.mode != PX_FT_NONE ? " --mode finetune" : "");
    px_export_launch(plan, &f, command, b);
    if (!hydra.failed && hydra.data)
        px_buf_puts(b, hydra.data);
    if (!yaml.failed && yaml.data)
        px_buf_puts(b, yaml.data);
    bool failed = yaml.failed || hydra.failed;
    px_buf_free(&yaml);
    px_buf_free(&hydra);
    return failed ? PX_FAIL(err, PX_ERR_NOMEM, "nemo export: out of memory") : PX_OK;
}
