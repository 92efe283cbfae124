/* px_export_formats.c — what every export format shares: the facts of a
 * plan the writers print, and what a format cannot express although the
 * framework runs it in general (px_export_format_check). */
#include "px_export_formats.h"
#include "px_export_finetune.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "px_hybrid.h"
#include "px_plan_check.h"

void px_export_facts_of(const px_plan *plan, plan_facts *f)
{
    const px_parallel *p = &plan->par;
    memset(f, 0, sizeof *f);
    f->seq = px_plan_seq_len(&plan->model, p);
    f->gbatch = px_parallel_global_batch(p);
    f->gpus = px_parallel_gpus(p);
    int gpn = plan->hw.gpus_per_node > 0 ? plan->hw.gpus_per_node : 1;
    f->nodes = (f->gpus + gpn - 1) / gpn;
    f->per_node = f->gpus < gpn ? f->gpus : f->gpus % gpn == 0 ? gpn : 0;
    f->layers_per_chunk = plan->model.n_layers / (p->pp * p->vpp);
    for (int i = 1; i < p->n_chunks; i++)
        f->uneven = f->uneven || p->layers_per_chunk[i] != p->layers_per_chunk[0];
    if (f->uneven) {
        f->first_layers = p->layers_per_chunk[0];
        f->last_layers = p->layers_per_chunk[p->n_chunks - 1];
    }
    f->recompute = p->n_layer_recompute > 0 ? (px_recompute)p->layer_recompute[0] : p->recompute;
    if (f->recompute >= PX_RECOMPUTE_COUNT)
        f->recompute = PX_RECOMPUTE_NONE;
    f->bf16 = plan->hw.dtype_bytes == 2;
}

/* A name safe inside comments, YAML and shell words: [A-Za-z0-9._-]. */
void px_export_safe_name(const char *s, char *out, size_t n)
{
    size_t i = 0;
    for (; s[i] && i + 1 < n; i++)
        out[i] = isalnum((unsigned char)s[i]) || strchr("._-", s[i]) ? s[i] : '_';
    out[i] = '\0';
}

/* Megatron names a split by its first and last stage when the middle
 * stages hold equal counts (vpp 1); any other split is a layout string. */
bool px_export_first_last_split(const px_parallel *p)
{
    if (p->vpp > 1)
        return false;
    for (int i = 2; i < p->n_chunks - 1; i++)
        if (p->layers_per_chunk[i] != p->layers_per_chunk[1])
            return false;
    return true;
}

bool px_export_recompute_mixed(const px_parallel *p)
{
    for (int i = 1; i < p->n_layer_recompute; i++)
        if (p->layer_recompute[i] != p->layer_recompute[0])
            return true;
    return false;
}

void px_export_layout(const px_plan *plan, px_buf *b)
{
    const px_parallel *p = &plan->par;
    for (int c = 0; c < p->n_chunks; c++) {
        px_buf_puts(b, c ? "|" : "E");
        for (int l = 0; l < p->layers_per_chunk[c]; l++)
            px_buf_puts(b, "t");
    }
    for (int i = 0; i < plan->model.n_mtp_modules; i++)
        px_buf_puts(b, "m");
    px_buf_puts(b, "L");
}

/* Transformer Engine's recipes as Megatron names them
 * (megatron/core/transformer/transformer_config.py fp8, fp8_recipe): delayed
 * and current per-tensor scaling with E4M3 forward / E5M2 gradients
 * ("hybrid"); the block-scaled recipes are E4M3 throughout. */
const char *px_export_fp8_format(px_precision p)
{
    switch (p) {
    case PX_PREC_FP8:
    case PX_PREC_FP8_CS: return "hybrid";
    case PX_PREC_FP8_BLOCK:
    case PX_PREC_MXFP8: return "e4m3";
    default: return NULL;
    }
}

const char *px_export_fp8_recipe(px_precision p)
{
    switch (p) {
    case PX_PREC_FP8: return "delayed";
    case PX_PREC_FP8_CS: return "tensorwise";
    case PX_PREC_FP8_BLOCK: return "blockwise";
    case PX_PREC_MXFP8: return "mxfp8";
    default: return NULL;
    }
}

const char *px_export_cp_comm_type(px_cp_comm c)
{
    return c == PX_CPC_ALLGATHER ? "all_gather" : c == PX_CPC_A2A ? "a2a" : "p2p";
}

int px_export_optimizer_instances(const px_parallel *p)
{
    int ranks = p->dp * p->cp; /* ZeRO 0 shards nothing */
    return p->zero >= 1 && p->shard_group > 0 && p->shard_group < ranks ? ranks / p->shard_group
                                                                         : 1;
}

/* Megatron's per-layer recompute (--recompute-method block
 * --recompute-num-layers N): px_parallel_block_recompute, the one rule. */
int px_export_block_recompute_layers(const px_plan *plan)
{
    return px_parallel_block_recompute(&plan->par, plan->model.n_layers);
}

/* CUDA_DEVICE_MAX_CONNECTIONS=1 orders TP / CP communication before compute
 * (Megatron's validate_args asserts it below Blackwell); Megatron-FSDP
 * asserts it is not 1, so it is unset there. */
void px_export_launch(const px_plan *plan, const plan_facts *f, const char *command, px_buf *b)
{
    const px_parallel *p = &plan->par;
    int per_node = f->per_node ? f->per_node : plan->hw.gpus_per_node;
    int nodes = (f->gpus + per_node - 1) / per_node;
    const char *env = p->zero >= 2                ? "env -u CUDA_DEVICE_MAX_CONNECTIONS "
                      : p->tp > 1 || p->cp > 1 ? "env CUDA_DEVICE_MAX_CONNECTIONS=1 "
                                                 : "";
    px_buf_printf(b,
                  "# Launch on each of the %d node(s) (NODE_RANK 0..%d, MASTER_ADDR the first):\n"
                  "#   %storchrun --nnodes %d --nproc-per-node %d --node-rank $NODE_RANK "
                  "--rdzv-backend c10d --rdzv-endpoint $MASTER_ADDR:29500 --rdzv-id parallax \\\n"
                  "#     %s\n"
                  "# or under Slurm, one task a GPU:\n"
                  "#   srun --nodes %d --ntasks-per-node %d --gpus-per-node %d bash -c '%s"
                  "RANK=$SLURM_PROCID WORLD_SIZE=$SLURM_NTASKS LOCAL_RANK=$SLURM_LOCALID \\\n"
                  "#     MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -1) "
                  "MASTER_PORT=29500 \\\n"
                  "#     python %s'\n",
                  nodes, nodes - 1, env, nodes, per_node, command, nodes, per_node, per_node,
                  *env ? env : "env ", command);
}

static px_status format_refuse(px_error *err, px_export_target t, const char *what)
{
    return PX_FAIL(err, PX_ERR_UNSUPPORTED, "%s cannot run this plan as exported: %s",
                   px_export_target_name(t), what);
}

/* Model fields the framework targets do not write: a hybrid Mamba-2 stack
 * to nemo (its export writes a GPT model provider; the megatron export
 * writes pretrain_hybrid.py's --hybrid-layer-pattern and --mamba-* sizes,
 * for Megatron-Core's default convolution; torchtitan's profile and the
 * slurm script's executor run no Mamba layers, and their capability check
 * refuses it by that feature), a squared-ReLU MLP but to megatron
 * (--squared-relu), a Gemma layer (GeGLU, its extra norms) and RoPE on part
 * of a head.  Megatron-LM has --rotary-percent, which the megatron and nemo
 * exports write; DeepSpeed's config holds no model and the executor refuses
 * them itself. */
static px_status model_check(const px_model *m, px_export_target t, px_error *err)
{
    /* Megatron-Core's MambaMixer takes d_conv from its constructor's
     * default, which no argument sets */
    if (strchr(m->layer_pattern, 'M') && m->mamba_conv != 4 &&
        (t == PX_EXPORT_MEGATRON || t == PX_EXPORT_NEMO))
        return format_refuse(err, t,
                             "a Mamba-2 convolution other than 4 taps (model field "
                             "mamba.conv): Megatron-LM's MambaMixer runs 4 and no argument "
                             "changes it");
    if (t == PX_EXPORT_DEEPSPEED || t == PX_EXPORT_SLURM)
        return PX_OK;
    if (m->mlp_act == PX_ACT_RELU2 && t == PX_EXPORT_TORCHTITAN)
        return format_refuse(err, t, "a squared-ReLU MLP (model field mlp_act = relu2, "
                                     "Nemotron): the exported model is SwiGLU");
    if (m->mlp_act == PX_ACT_GELU)
        return format_refuse(err, t, "a GeGLU MLP (model field mlp_act = gelu, Gemma): the "
                                     "exported model is SwiGLU");
    if (m->sandwich_norms)
        return format_refuse(err, t, "the extra norms of a Gemma 2 / 3 layer (model field "
                                     "sandwich_norms)");
    if (m->rope_fraction != 1.0 && t == PX_EXPORT_TORCHTITAN)
        return format_refuse(err, t, "RoPE on part of each head, or none (model field "
                                     "rope_fraction): torchtitan's models rotate whole heads");
    return PX_OK;
}

/* A named attention kernel where the target can say it: Megatron-LM's
 * --attention-backend runs flash-attn 2 or 3 (flash) and cuDNN's kernels
 * (fused), not FlashAttention 1 or the Triton port; the NeMo recipe
 * override leaves the backend to Transformer Engine's choice (cuDNN's, the
 * GPU's own); torchtitan's SDPA runs flash-attn 2; the slurm script's
 * executor runs its own kernel (it refuses the others).  DeepSpeed's config
 * holds no model: the model's code chooses. */
static px_status attention_check(const px_parallel *p, px_export_target t, px_error *err)
{
    px_attn_kernel k = p->flash_attention ? p->attn_kernel : PX_AK_FRAMEWORK;
    bool says;
    switch (t) {
    case PX_EXPORT_MEGATRON: says = k != PX_AK_FLASH1 && k != PX_AK_TRITON; break;
    case PX_EXPORT_NEMO:
    case PX_EXPORT_SLURM: says = k == PX_AK_FRAMEWORK || k == PX_AK_NATIVE; break;
    case PX_EXPORT_TORCHTITAN: says = k == PX_AK_FRAMEWORK || k == PX_AK_FLASH2; break;
    default: says = true; break;
    }
    if (says)
        return PX_OK;
    char what[160];
    snprintf(what, sizeof what,
             "the attention kernel %s (parallel.attention_kernel): the export cannot choose it; "
             "plan with --attention-kernel framework",
             px_attn_kernel_name(k));
    return format_refuse(err, t, what);
}

px_status px_export_format_check(const px_plan *plan, px_export_target t, px_error *err)
{
    const px_parallel *p = &plan->par;
    plan_facts f;
    px_export_facts_of(plan, &f);
    px_status st = px_export_finetune_check(plan, t, err);
    if (st == PX_OK)
        st = model_check(&plan->model, t, err);
    if (st == PX_OK)
        st = attention_check(p, t, err);
    if (st != PX_OK)
        return st;
    switch (t) {
    case PX_EXPORT_MEGATRON:
    case PX_EXPORT_NEMO:
        /* validate_args: "--fp8-param-gather only supported with distributed
         * optimizer, torch fsdp2, megatron fsdp" (the same for fp4) */
        if (p->quantized_params && p->zero == 0 &&
            (px_export_fp8_format(p->precision) || p->precision == PX_PREC_NVFP4))
            return format_refuse(err, t, "low-precision weights kept quantised "
                                         "(quantized_params) without the distributed "
                                         "optimizer (Megatron gathers fp8/fp4 weights only "
                                         "with ZeRO >= 1); plan with --zero 1");
        if (px_export_recompute_mixed(p) && px_export_block_recompute_layers(plan) < 0)
            return format_refuse(err, t, "a recompute choice per layer other than full "
                                         "recompute of the first N layers of every stage "
                                         "(--recompute-method block); plan with "
                                         "--partition uniform");
        /* the release's MambaStack (_select_layers_for_pipeline_parallel)
         * asserts no virtual stages and cuts by first / last stage counts */
        if (t == PX_EXPORT_NEMO && px_model_is_hybrid(&plan->model) &&
            (p->vpp > 1 || (f.uneven && !px_export_first_last_split(p))))
            return format_refuse(err, t, "a hybrid Mamba-2 model over virtual pipeline "
                                         "stages or an uneven split other than its first "
                                         "and last stages (Megatron-Bridge " 
                                         PX_EXPORT_MEGATRON_BRIDGE "'s Mamba stack runs "
                                         "neither); export to megatron cuts the pattern "
                                         "into any split");
        return PX_OK;
    default:
        return PX_OK;
    }
}

bool px_export_because(char *why, size_t n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, n, fmt, ap);
    va_end(ap);
    return true;
}
