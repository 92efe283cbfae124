/* px_export_megatron.c — a plan as Megatron-LM pretrain_gpt.py arguments
 * (pretrain_hybrid.py for a hybrid Mamba-2 model), one flag a line
 * (docs/export.md). */
#include "px_export_formats.h"
#include "px_export_finetune.h"

#include <string.h>

#include "px_cost.h"
#include "px_hybrid.h"

static void arg(px_buf *b, const char *flag) { px_buf_printf(b, "%s\n", flag); }
static void arg_i(px_buf *b, const char *flag, int64_t v)
{
    px_buf_printf(b, "%s %lld\n", flag, (long long)v);
}

/* A hybrid model's layers: Megatron-LM's --hybrid-layer-pattern, the
 * plan's pipeline chunks separated by `|` in model order (Megatron takes
 * the segments as its stages, and their count over pp as the virtual
 * stages), and the Mamba-2 mixer's sizes. */
static void megatron_hybrid(const px_plan *plan, px_buf *b)
{
    const px_model *m = &plan->model;
    const px_parallel *p = &plan->par;
    int chunks = p->pp * p->vpp, split[PX_MAX_CHUNKS];
    if (p->n_chunks == chunks)
        memcpy(split, p->layers_per_chunk, (size_t)chunks * sizeof *split);
    else
        px_cost_default_split(m->n_layers, chunks, split);
    px_buf_puts(b, "--hybrid-layer-pattern ");
    int64_t at = 0;
    for (int c = 0; c < chunks; c++) {
        if (c > 0)
            px_buf_puts(b, "|");
        px_buf_printf(b, "%.*s", split[c], m->layer_pattern + at);
        at += split[c];
    }
    px_buf_puts(b, "\n");
    if (strchr(m->layer_pattern, 'M')) {
        arg_i(b, "--mamba-num-heads", m->mamba_heads);
        arg_i(b, "--mamba-head-dim", m->mamba_head_dim);
        arg_i(b, "--mamba-state-dim", m->mamba_state);
        arg_i(b, "--mamba-num-groups", m->mamba_groups);
    }
}

static void megatron_model(const px_plan *plan, px_buf *b)
{
    const px_model *m = &plan->model;
    arg_i(b, "--num-layers", m->n_layers);
    if (px_model_is_hybrid(m))
        megatron_hybrid(plan, b);
    arg_i(b, "--hidden-size", m->hidden);
    arg_i(b, "--ffn-hidden-size", m->ffn);
    arg_i(b, "--num-attention-heads", m->n_heads);
    if (m->n_kv_heads > 0 && m->n_kv_heads < m->n_heads) {
        arg(b, "--group-query-attention");
        arg_i(b, "--num-query-groups", m->n_kv_heads);
    }
    if (m->head_dim > 0 && m->head_dim * m->n_heads != m->hidden)
        arg_i(b, "--kv-channels", m->head_dim);
    if (m->block == PX_BLOCK_LLAMA) {
        arg(b, "--normalization RMSNorm");
        arg(b, m->mlp_act == PX_ACT_RELU2 ? "--squared-relu" : "--swiglu");
        if (m->rope_fraction == 0.0) {
            arg(b, "--position-embedding-type none"); /* no positional encoding */
        } else {
            arg(b, "--position-embedding-type rope");
            arg_i(b, "--rotary-base", (int64_t)m->rope_theta); /* Megatron takes an integer */
        }
        if (m->rope_fraction != 1.0 && m->rope_fraction != 0.0)
            px_buf_printf(b, "--rotary-percent %g\n", m->rope_fraction);
        if (m->rope_fraction != 0.0 && m->rope_scaling == PX_ROPE_LLAMA3) {
            /* Megatron's Llama 3.1 scaling */
            arg(b, "--use-rope-scaling");
            px_buf_printf(b, "--rope-scaling-factor %g\n", m->rope_factor);
        }
        arg(b, m->qkv_bias ? "--add-qkv-bias" : "--disable-bias-linear");
    } else {
        arg(b, "--normalization LayerNorm");
        arg(b, "--position-embedding-type learned_absolute");
    }
    px_buf_printf(b, "--norm-epsilon %g\n", m->norm_eps);
    if (!m->tied_embeddings)
        arg(b, "--untie-embeddings-and-output-weights");
    if (m->qk_norm)
        arg(b, "--qk-layernorm");
    if (m->n_experts > 0) {
        arg_i(b, "--num-experts", m->n_experts);
        arg_i(b, "--moe-router-topk", m->top_k);
        arg_i(b, "--moe-ffn-hidden-size", m->moe_ffn);
        if (m->n_shared_experts > 0)
            arg_i(b, "--moe-shared-expert-intermediate-size", m->n_shared_experts * m->moe_ffn);
        if (m->first_dense_layers > 0)
            px_buf_printf(b, "--moe-layer-freq ([0]*%lld+[1]*%lld)\n",
                          (long long)m->first_dense_layers,
                          (long long)(m->n_layers - m->first_dense_layers));
        else if (m->moe_layer_freq > 1)
            arg_i(b, "--moe-layer-freq", m->moe_layer_freq);
    }
    if (m->attn == PX_ATTN_MLA) {
        arg(b, "--multi-latent-attention");
        if (m->q_lora_rank > 0)
            arg_i(b, "--q-lora-rank", m->q_lora_rank);
        arg_i(b, "--kv-lora-rank", m->kv_lora_rank);
        arg_i(b, "--qk-head-dim", m->qk_nope_head_dim);
        arg_i(b, "--qk-pos-emb-head-dim", m->qk_rope_head_dim);
        arg_i(b, "--v-head-dim", m->v_head_dim);
    }
    if (m->n_mtp_modules > 0)
        arg_i(b, "--mtp-num-layers", m->n_mtp_modules);
    arg(b, "--tokenizer-type NullTokenizer");
    arg_i(b, "--vocab-size", m->vocab);
    arg(b, "--make-vocab-size-divisible-by 128");
}

/* The GEMMs' number format: fp16 with loss scaling, bf16, or a
 * Transformer Engine low-precision recipe over bf16. */
static void megatron_precision(const px_plan *plan, const plan_facts *f, px_buf *b)
{
    px_precision prec = plan->par.precision;
    if (prec == PX_PREC_FP16) {
        arg(b, "--fp16");
        return;
    }
    if (f->bf16)
        arg(b, "--bf16");
    if (px_export_fp8_format(prec)) {
        px_buf_printf(b, "--fp8-format %s\n--fp8-recipe %s\n", px_export_fp8_format(prec),
                      px_export_fp8_recipe(prec));
        if (plan->par.quantized_params)
            arg(b, "--fp8-param-gather");
    } else if (prec == PX_PREC_NVFP4) {
        arg(b, "--fp4-format e2m1");
        arg(b, "--fp4-recipe nvfp4");
        if (plan->par.quantized_params)
            arg(b, "--fp4-param-gather");
    }
}

static void megatron_parallel(const px_plan *plan, const plan_facts *f, px_buf *b)
{
    const px_parallel *p = &plan->par;
    arg_i(b, "--tensor-model-parallel-size", p->tp);
    arg_i(b, "--pipeline-model-parallel-size", p->pp);
    /* An uneven interleaved split is a layout, which carries the chunk count
     * itself: validate_args forbids it beside --num-virtual-stages-... */
    if (px_model_is_hybrid(&plan->model)) {
        /* the pattern's `|` segments say the split (megatron_hybrid) */
    } else if (f->uneven && px_export_first_last_split(p)) {
        arg_i(b, "--decoder-first-pipeline-num-layers", f->first_layers);
        arg_i(b, "--decoder-last-pipeline-num-layers", f->last_layers);
    } else if (f->uneven) {
        px_buf_puts(b, "--pipeline-model-parallel-layout ");
        px_export_layout(plan, b);
        px_buf_puts(b, "\n");
    } else if (p->vpp > 1) {
        arg_i(b, "--num-virtual-stages-per-pipeline-rank", p->vpp);
    }
    arg_i(b, "--context-parallel-size", p->cp);
    if (p->cp > 1)
        px_buf_printf(b, "--cp-comm-type %s\n", px_export_cp_comm_type(p->cp_comm));
    arg_i(b, "--expert-model-parallel-size", p->ep);
    if (plan->model.n_experts > 0) { /* what the cost model prices (frameworks/megatron.json) */
        arg_i(b, "--expert-tensor-parallel-size", p->etp);
        if (p->moe_dispatcher == PX_MOE_ALLTOALL) {
            arg(b, "--moe-token-dispatcher-type alltoall");
        } else {
            arg(b, "--moe-token-dispatcher-type flex");
            px_buf_printf(b, "--moe-flex-dispatcher-backend %s\n",
                          px_moe_dispatch_name(p->moe_dispatcher));
        }
        arg(b, "--moe-grouped-gemm");
    }
    if (p->tp > 1 && p->sp)
        arg(b, "--sequence-parallel");
    arg_i(b, "--micro-batch-size", p->micro_batch);
    arg_i(b, "--global-batch-size", f->gbatch);
    arg_i(b, "--seq-length", f->seq);
    int64_t maxpos = plan->model.max_positions > f->seq ? plan->model.max_positions : f->seq;
    arg_i(b, "--max-position-embeddings", maxpos);
    if (p->zero >= 1)
        arg(b, "--use-distributed-optimizer");
    if (p->offload.kind == PX_OFFLOAD_OPTIMIZER) { /* megatron/core/optimizer/cpu_offloading */
        arg(b, "--optimizer-cpu-offload");
        px_buf_printf(b, "--optimizer-offload-fraction %g\n", p->offload.fraction);
        arg(b, "--use-precision-aware-optimizer");
    }
    if (p->zero >= 2) { /* Megatron-FSDP: optim_grads = ZeRO-2, optim_grads_params = ZeRO-3 */
        arg(b, "--use-megatron-fsdp");
        arg(b, p->zero == 2 ? "--data-parallel-sharding-strategy optim_grads"
                            : "--data-parallel-sharding-strategy optim_grads_params");
        arg(b, "--no-gradient-accumulation-fusion");
        arg(b, "--ckpt-format fsdp_dtensor");
    }
    if (px_export_optimizer_instances(p) > 1) /* shard within groups, replicate across */
        arg_i(b, "--num-distributed-optimizer-instances", px_export_optimizer_instances(p));
    if (px_export_recompute_mixed(p)) { /* full on the first N layers of each chunk */
        arg(b, "--recompute-granularity full");
        arg(b, "--recompute-method block");
        arg_i(b, "--recompute-num-layers", px_export_block_recompute_layers(plan));
    } else if (f->recompute == PX_RECOMPUTE_SELECTIVE) {
        arg(b, "--recompute-granularity selective");
        if (p->recompute_modules != PX_RCM_DEFAULT) { /* argparse's nargs: space-separated */
            px_buf_puts(b, "--recompute-modules");
            for (int k = 0; k < PX_RCM_COUNT; k++)
                if (p->recompute_modules & (1u << k))
                    px_buf_printf(b, " %s", px_rc_module_names[k]);
            px_buf_puts(b, "\n");
        }
    } else if (f->recompute == PX_RECOMPUTE_FULL) {
        arg(b, "--recompute-granularity full");
        arg(b, "--recompute-method uniform");
        arg(b, "--recompute-num-layers 1");
    }
    if (p->offload.activations) /* the first N layers' activations on the host */
        arg_i(b, "--cpu-offloading-num-layers", p->offload.act_layers);
    if (p->dp_overlap && p->dp > 1) {
        arg(b, "--overlap-grad-reduce");
        if (p->zero >= 1)
            arg(b, "--overlap-param-gather");
    }
    if (p->tp_comm_overlap && p->tp > 1 && p->sp) /* the backward's async all-reduce: default */
        arg(b, "--tp-comm-overlap");
    if (p->moe_a2a_overlap)
        arg(b, "--overlap-moe-expert-parallel-comm");
    if (!p->grad_fp32)
        arg(b, "--grad-reduce-in-bf16");
    /* Megatron-Core's AttnBackend: flash (flash-attn 2 or 3), fused (cuDNN's
     * kernels through Transformer Engine), unfused (the scores stored) */
    if (!p->flash_attention)
        arg(b, "--attention-backend unfused");
    else if (p->attn_kernel == PX_AK_NATIVE)
        arg(b, "--attention-backend fused");
    else
        arg(b, "--attention-backend flash");
    megatron_precision(plan, f, b);
}

px_status px_export_megatron(const px_plan *plan, const px_export_opts *o, px_buf *b,
                             px_error *err)
{
    (void)o;
    (void)err;
    plan_facts f;
    px_export_facts_of(plan, &f);
    char name[64], hw[64];
    px_export_safe_name(plan->model.name, name, sizeof name);
    px_export_safe_name(plan->hw.name, hw, sizeof hw);
    const char *entry = px_model_is_hybrid(&plan->model) ? "pretrain_hybrid.py" : "pretrain_gpt.py";
    px_buf_printf(b,
                  "# Megatron-LM %s arguments: %s on %d GPUs (%s), %d node(s),\n"
                  "# from a Parallax plan (docs/export.md).  Checked with Megatron-LM commit\n"
                  "# " PX_EXPORT_MEGATRON_LM_COMMIT " (megatron-core " PX_EXPORT_MEGATRON_CORE
                  "): parse_args, validate_args.\n"
                  "# Add the data, optimizer and schedule arguments (--data-path, --lr,\n"
                  "# --train-iters, ...) and your tokenizer in place of NullTokenizer.\n",
                  entry, name, f.gpus, hw, f.nodes);
    char command[96];
    snprintf(command, sizeof command, "%s $(grep -v \"^#\" THIS_FILE)", entry);
    px_export_launch(plan, &f, command, b);
    megatron_parallel(plan, &f, b);
    megatron_model(plan, b);
    px_export_finetune_megatron(plan, b);
    return PX_OK;
}
