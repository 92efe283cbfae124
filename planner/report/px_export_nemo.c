/* px_export_nemo.c — a plan as a Megatron-Bridge / NeMo 2 recipe override
 * (YAML, docs/export.md). */
#include "px_export_formats.h"
#include "px_export_finetune.h"

#include <string.h>

static void y_i(px_buf *b, const char *key, int64_t v)
{
    px_buf_printf(b, "  %s: %lld\n", key, (long long)v);
}
static void y_b(px_buf *b, const char *key, bool v)
{
    px_buf_printf(b, "  %s: %s\n", key, v ? "true" : "false");
}

static void nemo_model(const px_plan *plan, const plan_facts *f, px_buf *b)
{
    const px_parallel *p = &plan->par;
    const px_model *m = &plan->model;
    px_buf_puts(b, "model:\n");
    y_i(b, "tensor_model_parallel_size", p->tp);
    y_i(b, "pipeline_model_parallel_size", p->pp);
    if (p->vpp > 1)
        y_i(b, "virtual_pipeline_model_parallel_size", p->vpp);
    else
        px_buf_puts(b, "  virtual_pipeline_model_parallel_size: null\n");
    if (f->uneven && px_export_first_last_split(p)) {
        y_i(b, "num_layers_in_first_pipeline_stage", f->first_layers);
        y_i(b, "num_layers_in_last_pipeline_stage", f->last_layers);
    } else if (f->uneven) { /* as Megatron's --pipeline-model-parallel-layout */
        px_buf_puts(b, "  pipeline_model_parallel_layout: \"");
        for (int c = 0; c < p->n_chunks; c++) {
            px_buf_puts(b, c ? "|" : "E");
            for (int l = 0; l < p->layers_per_chunk[c]; l++)
                px_buf_puts(b, "t");
        }
        px_buf_puts(b, "L\"\n");
    }
    y_i(b, "context_parallel_size", p->cp);
    y_i(b, "expert_model_parallel_size", p->ep);
    y_i(b, "expert_tensor_parallel_size", p->etp);
    y_b(b, "sequence_parallel", p->tp > 1 && p->sp);
    y_i(b, "num_layers", m->n_layers);
    y_i(b, "hidden_size", m->hidden);
    y_i(b, "ffn_hidden_size", m->ffn);
    y_i(b, "num_attention_heads", m->n_heads);
    y_i(b, "num_query_groups", m->n_kv_heads > 0 ? m->n_kv_heads : m->n_heads);
    if (m->head_dim > 0)
        y_i(b, "kv_channels", m->head_dim);
    y_i(b, "seq_length", f->seq);
    y_i(b, "vocab_size", m->vocab);
    if (m->n_experts > 0) {
        y_i(b, "num_moe_experts", m->n_experts);
        y_i(b, "moe_router_topk", m->top_k);
        y_i(b, "moe_ffn_hidden_size", m->moe_ffn);
    }
    if (px_export_recompute_mixed(p))
        px_buf_printf(b, "  recompute_granularity: full\n  recompute_method: block\n"
                         "  recompute_num_layers: %d\n", px_export_block_recompute_layers(plan));
    else if (f->recompute == PX_RECOMPUTE_SELECTIVE)
        px_buf_puts(b, "  recompute_granularity: selective\n");
    else if (f->recompute == PX_RECOMPUTE_FULL)
        px_buf_puts(b, "  recompute_granularity: full\n  recompute_method: uniform\n"
                       "  recompute_num_layers: 1\n");
    else
        px_buf_puts(b, "  recompute_granularity: null\n");
    y_b(b, "bf16", f->bf16);
}

px_status px_export_nemo(const px_plan *plan, px_buf *b, px_error *err)
{
    (void)err;
    const px_parallel *p = &plan->par;
    plan_facts f;
    px_export_facts_of(plan, &f);
    char name[64];
    px_export_safe_name(plan->model.name, name, sizeof name);
    px_buf_printf(b, "# Megatron-Bridge / NeMo 2 recipe override: %s on %d GPUs (%d node(s)),\n"
                     "# from a Parallax plan (docs/export.md; Megatron-Bridge 0.1 / NeMo 25.09\n"
                     "# and later).  Apply on top of the model's recipe, e.g.\n"
                     "#   python run_recipe.py --config-file THIS_FILE\n",
                  name, f.gpus, f.nodes);
    nemo_model(plan, &f, b);
    px_buf_puts(b, "train:\n");
    y_i(b, "global_batch_size", f.gbatch);
    y_i(b, "micro_batch_size", p->micro_batch);
    px_buf_puts(b, "dataset:\n");
    y_i(b, "sequence_length", f.seq);
    px_buf_puts(b, "ddp:\n");
    y_b(b, "use_distributed_optimizer", p->zero >= 1);
    y_b(b, "overlap_grad_reduce", p->dp_overlap && p->dp > 1);
    y_b(b, "overlap_param_gather", p->dp_overlap && p->dp > 1 && p->zero >= 1);
    y_b(b, "grad_reduce_in_fp32", p->grad_fp32);
    if (p->zero >= 2) {
        y_b(b, "use_megatron_fsdp", true);
        px_buf_printf(b, "  data_parallel_sharding_strategy: %s\n",
                      p->zero == 2 ? "optim_grads" : "optim_grads_params");
    }
    px_buf_puts(b, "optimizer:\n");
    y_b(b, "use_distributed_optimizer", p->zero >= 1);
    y_b(b, "bf16", f.bf16);
    px_buf_puts(b, "comm_overlap:\n");
    y_b(b, "tp_comm_overlap", p->tp_overlap && p->tp > 1 && p->sp);
    px_export_finetune_nemo(plan, b);
    return PX_OK;
}
