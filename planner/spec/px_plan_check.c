/* px_plan_check.c — the rules of a legal plan and the built-in capability
 * sets (px_plan_check.h). */
#include "px_plan_check.h"

#include <stdio.h>
#include <string.h>

/* Marks the refusal being returned (st, already in err) as the lack of
 * capability `cap` (px_error.cap; NULL: a rule no capability lifts). */
static px_status lacks(px_error *err, const char *cap, px_status st)
{
    if (err)
        err->cap = cap;
    return st;
}

/* ---- capability sets ---------------------------------------------------- */

static void caps_all(px_caps *c, const char *name)
{
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    for (int s = 0; s < PX_SCHED_COUNT; s++)
        c->schedules[s] = true;
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
        c->recompute[r] = true;
    for (int z = 0; z < 4; z++)
        c->zero[z] = true;
    c->per_layer_recompute = c->block_recompute = true;
    c->uneven_stages = c->uneven_virtual_chunks = true;
    c->sp = c->tp_without_sp = c->ep = c->etp = true;
    c->hybrid_shard = true;
    c->cp_flavours = PX_CP_RING_P2P | PX_CP_ALL_GATHER | PX_CP_ALL_TO_ALL;
    c->grad_bf16 = true;
    c->precisions = PX_PREC_ALL;
    c->model_features = PX_FEAT_MLA | PX_FEAT_QK_NORM | PX_FEAT_SHARED_EXPERTS |
                        PX_FEAT_DENSE_FIRST | PX_FEAT_MTP | PX_FEAT_MOE | PX_FEAT_GPT_BLOCK |
                        PX_FEAT_LLAMA_BLOCK | PX_FEAT_MAMBA;
    c->moe_gpt_block = true;
    c->max_zero_with_pp = 3;
    c->tp_with_pp = true;
    c->empty_end_chunks = true;
    c->finetune = (1u << PX_FT_COUNT) - 1;
    c->offload_optimizer = c->offload_fraction = c->offload_params = true;
    c->offload_activations = PX_ACT_OFFLOAD_ANY;
    c->moe_a2a_overlap = true;
    c->tp_comm_overlap = true;
    c->moe_deepep = c->moe_hybridep = true;
    c->recompute_modules = c->recompute_modules_quantized = true;
}

/* Everything the cost model prices.  The vocabulary is padded as Megatron
 * pads it (--make-vocab-size-divisible-by 128, times tp), so tp need not
 * divide it; zb-h1 over virtual chunks is not priced. */
void px_caps_parallax(px_caps *c)
{
    caps_all(c, "parallax");
    c->pads_vocab = true;
    c->vocab_pad_multiple = 128;
    c->zb_virtual_chunks = false;
}

/* What the engine (executor/px_exec.c) runs, on either backend: the ring CP
 * (KV blocks passed around), experts in SwiGLU (llama) blocks, fp32 or bf16
 * storage (px_exec's pick_dtype checks the storage against the gradients).
 * It pads the vocabulary only to a multiple of tp: no kernel needs more
 * alignment, and the padding stays below tp rows.  Multi-head latent
 * attention runs as low-rank projections around the attention core
 * (executor/px_mla.c); qk_norm and shared experts run on the existing
 * kernels (executor/px_qknorm.c, px_shared_expert.c).  Multi-token
 * prediction runs on the CPU backend only (px_caps_cpu_executor). */
static void caps_engine(px_caps *c, const char *name)
{
    caps_all(c, name);
    c->cp_flavours = PX_CP_RING_P2P;
    c->pads_vocab = true;
    c->vocab_pad_multiple = 1;
    c->precisions = PX_PREC_BIT(PX_PREC_BF16);
    c->model_features = PX_FEAT_DENSE_FIRST | PX_FEAT_MOE | PX_FEAT_GPT_BLOCK |
                        PX_FEAT_LLAMA_BLOCK | PX_FEAT_QK_NORM | PX_FEAT_SHARED_EXPERTS |
                        PX_FEAT_MLA;
    c->zb_virtual_chunks = true;
    c->moe_gpt_block = false;
    c->hybrid_shard = false; /* ZeRO-3 shards over the whole data-parallel group */
    c->empty_end_chunks = false; /* every chunk runs at least one layer */
    /* every weight trains; the CPU executor adds LoRA (px_caps_cpu_executor) */
    c->finetune = 1u << PX_FT_NONE | 1u << PX_FT_FULL;
    c->offload_optimizer = c->offload_fraction = false; /* the CPU executor adds it */
    c->offload_params = false;
    c->offload_activations = PX_ACT_OFFLOAD_NONE;        /* activations stay on the device */
    c->moe_a2a_overlap = false; /* each layer's all-to-all runs where it is issued */
    c->tp_comm_overlap = false; /* each TP collective runs where it is issued */
    c->moe_deepep = c->moe_hybridep = false; /* MPI's all-to-all of every copy */
    c->recompute_modules = false; /* selective reruns the attention core */
}

/* Any consumer's: what some consumer runs (plan I/O reads a plan against it,
 * then each consumer checks its own set). */
void px_caps_any(px_caps *c)
{
    caps_all(c, "any consumer");
    c->pads_vocab = true;
    c->vocab_pad_multiple = 1;
    c->zb_virtual_chunks = true;
}

void px_caps_cpu_executor(px_caps *c)
{
    caps_engine(c, "cpu-executor");
    /* LoRA adapters on a frozen base (executor/px_lora.c) */
    c->finetune |= 1u << PX_FT_LORA;
    /* the optimizer state's leading share, any fraction, stepped on a host
     * thread (executor/px_offload.c, px_host_step.c) */
    c->offload_optimizer = c->offload_fraction = true;
    /* multi-token-prediction modules on the last stage (executor/px_mtp.c) */
    c->model_features |= PX_FEAT_MTP;
}

/* The CUDA backend runs the same engine with a kernel for every CPU one
 * (kernels/cuda/), so the same set, but for MLA: its attention kernel takes
 * head widths 16, 32, 64 and 128 only, and MLA's query/key width (nope +
 * rope: 192 in DeepSeek-V3) is none of them. */
void px_caps_cuda_executor(px_caps *c)
{
    caps_engine(c, "cuda-executor");
    c->model_features &= ~(unsigned)PX_FEAT_MLA;
}

/* ---- model features ----------------------------------------------------- */

unsigned px_model_features(const px_model *m)
{
    unsigned f = m->block == PX_BLOCK_GPT ? PX_FEAT_GPT_BLOCK : PX_FEAT_LLAMA_BLOCK;
    if (m->attn == PX_ATTN_MLA)
        f |= PX_FEAT_MLA;
    if (m->qk_norm)
        f |= PX_FEAT_QK_NORM;
    if (m->n_experts > 0) {
        f |= PX_FEAT_MOE;
        if (m->n_shared_experts > 0)
            f |= PX_FEAT_SHARED_EXPERTS;
        if (m->first_dense_layers > 0)
            f |= PX_FEAT_DENSE_FIRST;
    }
    if (m->n_mtp_modules > 0)
        f |= PX_FEAT_MTP;
    if (strchr(m->layer_pattern, 'M'))
        f |= PX_FEAT_MAMBA;
    return f;
}

const char *px_model_feature_name(unsigned feature)
{
    switch (feature) {
    case PX_FEAT_MLA: return "multi-head latent attention (attn \"mla\")";
    case PX_FEAT_QK_NORM: return "qk_norm (RMSNorm on q and k per head)";
    case PX_FEAT_SHARED_EXPERTS: return "shared experts (n_shared_experts > 0)";
    case PX_FEAT_DENSE_FIRST: return "leading dense layers (first_dense_layers > 0)";
    case PX_FEAT_MTP: return "multi-token prediction (n_mtp_modules > 0)";
    case PX_FEAT_MOE: return "mixture of experts (n_experts > 0)";
    case PX_FEAT_GPT_BLOCK: return "GPT blocks (block \"gpt\")";
    case PX_FEAT_LLAMA_BLOCK: return "llama blocks (block \"llama\")";
    case PX_FEAT_MAMBA: return "Mamba-2 layers ('M' in layer_pattern)";
    default: return "?";
    }
}

px_status px_rule_features(const px_model *m, const px_caps *caps, px_error *err)
{
    unsigned missing = px_model_features(m) & ~caps->model_features;
    for (unsigned bit = 1; missing; bit <<= 1)
        if (missing & bit)
            return lacks(err, "model_features", PX_FAIL(err, PX_ERR_UNSUPPORTED, "model \"%s\": %s is not supported by %s",
                           m->name, px_model_feature_name(bit), caps->name));
    if (m->n_experts > 0 && m->block == PX_BLOCK_GPT && !caps->moe_gpt_block)
        return lacks(err, "moe_gpt_block", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model \"%s\": %s runs experts in llama blocks (SwiGLU) only; the "
                       "model has GPT blocks",
                       m->name, caps->name));
    return PX_OK;
}

/* The shape rules every consumer shares (px_model_validate checks a model as
 * it is read; a plan built in code is checked here too). */
static px_status check_model_shape(const px_model *m, px_error *err)
{
    if (m->n_layers < 1 || m->hidden < 1 || m->n_heads < 1 || m->n_kv_heads < 1 ||
        m->head_dim < 1 || m->vocab < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model \"%s\": n_layers, hidden, n_heads, n_kv_heads, head_dim must be "
                       ">= 1 and vocab >= 2",
                       m->name);
    if (m->n_heads % m->n_kv_heads != 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model \"%s\": n_heads = %lld must be a multiple of n_kv_heads = %lld",
                       m->name, (long long)m->n_heads, (long long)m->n_kv_heads);
    if (m->block == PX_BLOCK_LLAMA && m->attn == PX_ATTN_STANDARD && m->head_dim % 2 != 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model \"%s\": head_dim = %lld must be even for RoPE", m->name,
                       (long long)m->head_dim);
    return PX_OK;
}

/* ---- the rules ------------------------------------------------------------ */

int64_t px_plan_seq_len(const px_model *m, const px_parallel *par)
{
    return par->seq_len > 0 ? par->seq_len : m->seq_len;
}

int64_t px_caps_vocab_rows(const px_caps *c, int64_t vocab, int tp)
{
    if (!c->pads_vocab || tp < 1)
        return vocab;
    int64_t q = (int64_t)(c->vocab_pad_multiple > 0 ? c->vocab_pad_multiple : 1) * tp;
    return (vocab + q - 1) / q * q;
}

px_status px_rule_tp(const px_model *m, int tp, const px_caps *caps, px_error *err)
{
    if (tp < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "tp = %d: must be >= 1", tp);
    if (m->n_heads % tp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "tp = %d does not divide the %lld attention heads of %s: each "
                       "tensor-parallel rank needs whole heads",
                       tp, (long long)m->n_heads, m->name);
    if (m->n_kv_heads % tp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "tp = %d does not divide the %lld kv heads of %s (each tensor-parallel "
                       "rank needs whole kv heads): tp <= %lld",
                       tp, (long long)m->n_kv_heads, m->name, (long long)m->n_kv_heads);
    if (m->ffn > 0 && m->ffn % tp)
        return PX_FAIL(err, PX_ERR_INVALID, "tp = %d does not divide the ffn size %lld of %s",
                       tp, (long long)m->ffn, m->name);
    /* Megatron-Core's MambaMixer splits both over TP (mamba_mixer.py's
     * asserts) */
    if (strchr(m->layer_pattern, 'M') && (m->mamba_heads % tp || m->mamba_groups % tp))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "tp = %d does not divide the %lld Mamba-2 heads and the %lld groups of %s "
                       "(each tensor-parallel rank needs whole heads and groups)",
                       tp, (long long)m->mamba_heads, (long long)m->mamba_groups, m->name);
    /* the shared experts are one tensor-parallel MLP of n_shared moe_ffn */
    if (m->n_experts > 0 && (m->n_shared_experts * m->moe_ffn) % tp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "tp = %d does not divide the shared experts' ffn size n_shared_experts x "
                       "moe_ffn = %lld of %s",
                       tp, (long long)(m->n_shared_experts * m->moe_ffn), m->name);
    if (!caps->pads_vocab && m->vocab % tp)
        return lacks(err, "pads_vocab", PX_FAIL(err, PX_ERR_INVALID,
                       "tp = %d does not divide the vocabulary %lld of %s (%s does not pad it)",
                       tp, (long long)m->vocab, m->name, caps->name));
    return PX_OK;
}

px_status px_rule_cp(int64_t seq, int cp, const px_caps *caps, px_error *err)
{
    if (cp < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "cp = %d: must be >= 1", cp);
    if (seq < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "seq_len = %lld: must be >= 1", (long long)seq);
    if (cp == 1)
        return PX_OK;
    if (!caps->cp_flavours)
        return lacks(err, "cp_flavours", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "cp = %d: %s runs no context parallelism; allowed: 1", cp, caps->name));
    if (seq % (2 * (int64_t)cp))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "cp = %d: the sequence length %lld must be a multiple of 2 x cp = %d "
                       "(each rank holds two of 2 cp chunks, which balances causal attention)",
                       cp, (long long)seq, 2 * cp);
    return PX_OK;
}

px_status px_rule_mamba_cp(const px_model *m, int tp, int cp, px_error *err)
{
    if (cp < 2 || tp < 1 || !strchr(m->layer_pattern, 'M'))
        return PX_OK;
    int64_t heads = m->mamba_heads / tp, groups = m->mamba_groups / tp;
    if (heads % cp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "cp = %d does not divide the %lld Mamba-2 heads of a tensor-parallel rank "
                       "of %s (context parallelism splits a Mamba layer by heads)",
                       cp, (long long)heads, m->name);
    if (groups < 1 || (groups < cp ? cp % groups : groups % cp))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "cp = %d and the %lld Mamba-2 groups of a tensor-parallel rank of %s: one "
                       "must divide the other (context parallelism splits or repeats the groups)",
                       cp, (long long)groups, m->name);
    return PX_OK;
}

px_status px_rule_sp(const px_model *m, int64_t seq, int tp, int cp, bool sp,
                     int64_t micro_batch, const px_caps *caps, px_error *err)
{
    if (tp < 2 || cp < 1)
        return PX_OK;
    if (sp && !caps->sp)
        return lacks(err, "sp", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "sp = true: %s runs no sequence parallelism; allowed: false", caps->name));
    if (!sp && !caps->tp_without_sp)
        return lacks(err, "tp_without_sp", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "sp = false with tp = %d: %s runs tensor parallelism with sequence "
                       "parallelism only",
                       tp, caps->name));
    if (sp && (seq / cp) % tp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "sequence parallelism: tp = %d must divide seq_len / cp = %lld", tp,
                       (long long)(seq / cp));
    if (m->n_experts > 0 && (seq / cp * micro_batch) % tp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "mixture of experts: tp = %d must divide the tokens of a micro-batch "
                       "(seq_len / cp x micro_batch = %lld): each TP rank routes a slice",
                       tp, (long long)(seq / cp * micro_batch));
    return PX_OK;
}

px_status px_rule_moe_a2a_overlap(const px_model *m, int ep, int pp, int vpp, bool any_full,
                                  const px_caps *caps, px_error *err)
{
    if (!caps->moe_a2a_overlap)
        return lacks(err, "moe_a2a_overlap",
                     PX_FAIL(err, PX_ERR_UNSUPPORTED,
                             "moe_a2a_overlap = true: %s runs each layer's all-to-all where it "
                             "is issued; allowed: false",
                             caps->name));
    if (m->n_experts <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_a2a_overlap = true: %s has no experts, so no all-to-all to overlap",
                       m->name);
    if (ep < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_a2a_overlap = true with ep = %d: the overlap hides the all-to-all "
                       "of expert parallelism; allowed: ep > 1",
                       ep);
    if (pp > 1 && vpp < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_a2a_overlap = true with pp = %d, vpp = %d: Megatron-Core overlaps "
                       "a pipeline's micro-batches chunk by chunk; allowed: vpp > 1 (or pp 1)",
                       pp, vpp);
    if (any_full)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_a2a_overlap = true with full recompute: Megatron-Core refuses "
                       "the overlap with recompute_granularity full; allowed: recompute none "
                       "or selective");
    if (m->n_mtp_modules > 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_a2a_overlap = true with %lld multi-token-prediction modules: "
                       "Megatron-Core overlaps at most one; allowed: 0 or 1",
                       (long long)m->n_mtp_modules);
    return PX_OK;
}

/* Whether some layer of m is of a kind that has(kind). */
static bool model_has(const px_model *m, bool (*has)(px_layer_kind))
{
    for (int64_t l = 0; l < m->n_layers; l++)
        if (has(px_model_layer_kind(m, l)))
            return true;
    return false;
}

px_status px_rule_recompute_modules(const px_model *m, unsigned set, bool any_selective,
                                    px_precision precision, const px_caps *caps, px_error *err)
{
    if (set == PX_RCM_DEFAULT)
        return PX_OK;
    char list[128];
    px_rc_modules_format(set, list, sizeof list);
    if (set == 0 || (set & ~PX_RCM_ALL))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "recompute_modules = [%s]: allowed: one or more of core_attn, moe_act, "
                       "layernorm, mla_up_proj, mlp, moe, shared_experts",
                       list);
    if (!caps->recompute_modules)
        return lacks(err, "recompute_modules",
                     PX_FAIL(err, PX_ERR_UNSUPPORTED,
                             "recompute_modules = [%s]: %s's selective recompute reruns the "
                             "attention core only; allowed: core_attn",
                             list, caps->name));
    if (!any_selective)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "recompute_modules = [%s] without selective recompute: the list says "
                       "what a selective layer reruns; allowed: recompute selective in some "
                       "layer, or core_attn alone",
                       list);
    bool experts = m->n_experts > 0, mla = m->attn == PX_ATTN_MLA;
    struct {
        px_rc_module mod;
        bool applies;
        const char *needs;
    } need[] = {
        {PX_RCM_MOE_ACT, experts, "experts"},
        {PX_RCM_MOE, experts, "experts"},
        {PX_RCM_SHARED_EXPERTS, experts && m->n_shared_experts > 0, "shared experts"},
        {PX_RCM_MLA_UP_PROJ, mla, "multi-latent attention"},
        {PX_RCM_MLP, model_has(m, px_layer_has_dense_mlp), "a dense MLP layer"},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if ((set & (1u << need[i].mod)) && !need[i].applies)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "recompute_modules = [%s]: %s needs %s, which %s has none of; "
                           "allowed: the modules of the model's layers",
                           list, px_rc_module_names[need[i].mod], need[i].needs, m->name);
    unsigned discards = (1u << PX_RCM_MOE_ACT) | (1u << PX_RCM_LAYERNORM);
    if ((set & discards) && precision != PX_PREC_BF16 && precision != PX_PREC_FP16) {
        if (precision == PX_PREC_FP8)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "recompute_modules = [%s] with precision fp8: Megatron-Core refuses "
                           "moe_act and layernorm recompute under delayed scaling; allowed: "
                           "another precision, or neither module",
                           list);
        if (!caps->recompute_modules_quantized)
            return lacks(err, "recompute_modules_quantized",
                         PX_FAIL(err, PX_ERR_UNSUPPORTED,
                                 "recompute_modules = [%s] with precision %s: %s recomputes "
                                 "moe_act and layernorm in bf16 or fp16 only; allowed: "
                                 "those precisions, or neither module",
                                 list, px_precision_name(precision), caps->name));
    }
    return PX_OK;
}

px_status px_rule_moe_dispatcher(const px_model *m, px_moe_dispatch d, int ep, int etp,
                                 const px_caps *caps, px_error *err)
{
    if (d == PX_MOE_ALLTOALL)
        return PX_OK;
    if ((int)d < 0 || d >= PX_MOE_DISPATCH_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_dispatcher = %d: allowed alltoall, deepep, hybridep", (int)d);
    bool runs = d == PX_MOE_DEEPEP ? caps->moe_deepep : caps->moe_hybridep;
    if (!runs)
        return lacks(err, d == PX_MOE_DEEPEP ? "moe_deepep" : "moe_hybridep",
                     PX_FAIL(err, PX_ERR_UNSUPPORTED,
                             "moe_dispatcher = %s: %s does not run it; allowed: alltoall",
                             px_moe_dispatch_name(d), caps->name));
    if (m->n_experts <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_dispatcher = %s: %s has no experts to dispatch to",
                       px_moe_dispatch_name(d), m->name);
    if ((int64_t)ep * etp < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "moe_dispatcher = %s with ep = %d, etp = %d: the flex dispatcher needs "
                       "more than one expert rank; allowed: ep x etp > 1",
                       px_moe_dispatch_name(d), ep, etp);
    return PX_OK;
}

px_status px_rule_expert_fold(int tp, int cp, int dp, int ep, int etp, px_error *err)
{
    if (tp < 1 || cp < 1 || dp < 1 || ep < 1 || etp < 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "tp %d, cp %d, dp %d, ep %d, etp %d: each must be >= 1", tp, cp, dp, ep,
                       etp);
    int64_t dense = (int64_t)tp * cp * dp;
    if (dense % ((int64_t)ep * etp))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "ep x etp = %d x %d must divide tp x cp x dp = %lld (experts are folded "
                       "over the GPUs of one pipeline stage)",
                       ep, etp, (long long)dense);
    return PX_OK;
}

px_status px_rule_experts(const px_model *m, int tp, int cp, int dp, int ep, int etp,
                          const px_caps *caps, px_error *err)
{
    if (ep < 1 || etp < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "ep = %d, etp = %d: each must be >= 1", ep, etp);
    if (m->n_experts <= 0) {
        if (ep != 1 || etp != 1)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "ep = %d, etp = %d: ep and etp (expert parallelism) need a "
                           "mixture-of-experts model; %s is dense (no experts): allowed ep = "
                           "etp = 1",
                           ep, etp, m->name);
        return PX_OK;
    }
    if (ep > 1 && !caps->ep)
        return lacks(err, "ep", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "ep = %d: %s runs no expert parallelism; allowed: 1", ep, caps->name));
    /* without the capability, experts run at the attention's tp (Megatron
     * before --expert-tensor-parallel-size) or unsplit (MegaBlocks):
     * docs/framework-schema.md, "etp" */
    if (etp != tp && etp != 1 && !caps->etp)
        return lacks(err, "etp", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "etp = %d: %s runs experts at the attention's tp = %d or unsplit "
                       "(etp 1) only (capability etp)",
                       etp, caps->name, tp));
    if (m->n_experts % ep)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "ep = %d does not divide the %lld experts of %s (each EP rank holds E / "
                       "ep experts)",
                       ep, (long long)m->n_experts, m->name);
    px_status st = px_rule_expert_fold(tp, cp, dp, ep, etp, err);
    if (st != PX_OK)
        return st;
    if (m->moe_ffn % etp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "etp = %d does not divide the expert ffn size moe_ffn = %lld of %s",
                       etp, (long long)m->moe_ffn, m->name);
    return PX_OK;
}

px_status px_rule_schedule(int pp, int vpp, px_schedule schedule, const px_caps *caps,
                           px_error *err)
{
    if (pp < 1 || vpp < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "pp = %d, vpp = %d: each must be >= 1", pp, vpp);
    if ((int)schedule < 0 || schedule >= PX_SCHED_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "schedule %d: allowed gpipe, 1f1b, interleaved, zb-h1, zb-h2",
                       (int)schedule);
    if (pp > 1 && !caps->schedules[schedule])
        return lacks(err, "schedules", PX_FAIL(err, PX_ERR_UNSUPPORTED, "schedule \"%s\" is not run by %s",
                       px_schedule_name(schedule), caps->name));
    if (vpp > 1 && pp < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "vpp = %d without pipeline parallelism (pp = %d): virtual stages "
                       "interleave the chunks of pp >= 2 stages; allowed: vpp 1 or pp >= 2",
                       vpp, pp);
    bool zb_chunks = schedule == PX_SCHED_ZB_H1 && caps->zb_virtual_chunks;
    /* a zero-bubble schedule over chunks is a capability; gpipe or 1f1b over
     * chunks means nothing */
    bool zb = schedule == PX_SCHED_ZB_H1 || schedule == PX_SCHED_ZB_H2;
    if (vpp > 1 && schedule != PX_SCHED_INTERLEAVED && !zb_chunks)
        return lacks(err, schedule == PX_SCHED_ZB_H1 ? "zb_virtual_chunks" : NULL,
                     PX_FAIL(err, zb ? PX_ERR_UNSUPPORTED : PX_ERR_INVALID,
                       "vpp = %d needs schedule \"interleaved\"%s (schedule \"%s\")", vpp,
                       caps->zb_virtual_chunks ? " or \"zb-h1\"" : "",
                       px_schedule_name(schedule)));
    if (schedule == PX_SCHED_INTERLEAVED && vpp < 2)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "schedule \"interleaved\" needs vpp >= 2 virtual stages (vpp = %d)", vpp);
    return PX_OK;
}

px_status px_rule_pipeline(const px_model *m, int pp, int vpp, px_schedule schedule,
                           const px_caps *caps, px_error *err)
{
    px_status st = px_rule_schedule(pp, vpp, schedule, caps, err);
    if (st != PX_OK)
        return st;
    if ((int64_t)pp * vpp > m->n_layers)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "pp x vpp = %d exceeds the %lld layers of %s: every chunk needs a "
                       "layer",
                       pp * vpp, (long long)m->n_layers, m->name);
    if (pp * vpp > PX_MAX_CHUNKS)
        return PX_FAIL(err, PX_ERR_INVALID, "pp x vpp = %d: at most %d pipeline chunks",
                       pp * vpp, PX_MAX_CHUNKS);
    return PX_OK;
}

px_status px_rule_pipeline_end_slots(const px_model *m, int pp, int vpp, px_schedule schedule,
                                     const px_caps *caps, px_error *err)
{
    int64_t chunks = (int64_t)pp * vpp;
    bool end_slots = vpp > 1 && caps && caps->empty_end_chunks && caps->uneven_virtual_chunks &&
                     chunks > m->n_layers && chunks <= m->n_layers + 2 &&
                     chunks <= PX_MAX_CHUNKS;
    return end_slots ? px_rule_schedule(pp, vpp, schedule, caps, err)
                     : px_rule_pipeline(m, pp, vpp, schedule, caps, err);
}

px_status px_rule_batch(int pp, int vpp, px_schedule schedule, int64_t micro_batch,
                        int64_t n_micro, px_error *err)
{
    if (micro_batch < 1 || n_micro < 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "micro_batch = %lld, num_microbatches = %lld: each must be >= 1",
                       (long long)micro_batch, (long long)n_micro);
    /* The interleaved schedule runs the micro-batches in groups of pp
     * through each virtual stage (Megatron's rule). */
    if (vpp > 1 && (schedule == PX_SCHED_INTERLEAVED || schedule == PX_SCHED_ZB_H1) &&
        n_micro % pp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "schedule \"%s\" over vpp = %d chunks: num_microbatches = %lld must be a "
                       "multiple of pp = %d (micro-batches go through a virtual stage in "
                       "groups of pp)",
                       px_schedule_name(schedule), vpp, (long long)n_micro, pp);
    return PX_OK;
}

/* The stored split: pp·vpp chunks of >= 1 layer adding up to the model (the
 * first and the last may be empty where the consumer runs the embedding or
 * the loss as a chunk of its own), and the per-layer recompute choices. */
static px_status check_split(const px_model *m, const px_parallel *p, const px_caps *caps,
                             px_error *err)
{
    int chunks = p->pp * p->vpp;
    bool uneven = m->n_layers % chunks != 0;
    if (p->n_chunks != 0) {
        if (p->n_chunks != chunks)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "layers_per_chunk has %d entries: must have pp x vpp = %d",
                           p->n_chunks, chunks);
        int64_t sum = 0;
        for (int i = 0; i < chunks; i++) {
            bool end = i == 0 || i == chunks - 1;
            if (p->layers_per_chunk[i] < (end && caps->empty_end_chunks ? 0 : 1))
                return lacks(err, end && p->layers_per_chunk[i] == 0 ? "empty_end_chunks" : NULL,
                             PX_FAIL(err, PX_ERR_INVALID,
                               "layers_per_chunk[%d] = %d: every pipeline chunk needs at "
                               "least one layer",
                               i, p->layers_per_chunk[i]));
            sum += p->layers_per_chunk[i];
            uneven = uneven || p->layers_per_chunk[i] != p->layers_per_chunk[0];
        }
        if (sum != m->n_layers)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "layers_per_chunk sums to %lld: must equal the %lld layers",
                           (long long)sum, (long long)m->n_layers);
    }
    if (uneven && !caps->uneven_stages)
        return lacks(err, "uneven_stages", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "%s runs equal pipeline chunks only: pp x vpp = %d must divide the "
                       "%lld layers",
                       caps->name, chunks, (long long)m->n_layers));
    if (uneven && p->vpp > 1 && !caps->uneven_virtual_chunks)
        return lacks(err, "uneven_virtual_chunks", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "%s runs equal virtual chunks only: pp x vpp = %d must divide the %lld "
                       "layers",
                       caps->name, chunks, (long long)m->n_layers));
    if (p->n_layer_recompute != 0) {
        if (p->n_layer_recompute != m->n_layers)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "layer_recompute has %d entries, the model has %lld layers",
                           p->n_layer_recompute, (long long)m->n_layers);
        bool block = caps->block_recompute && px_parallel_block_recompute(p, m->n_layers) >= 0;
        if (!caps->per_layer_recompute && !block)
            return lacks(err, "per_layer_recompute", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "layer_recompute: %s runs one recompute mode for every layer%s",
                           caps->name,
                           caps->block_recompute ? ", or full recompute of the first N layers "
                                                   "of every pipeline chunk and none for the "
                                                   "rest (--recompute-method block)"
                                                 : ""));
        for (int i = 0; i < p->n_layer_recompute; i++)
            if (p->layer_recompute[i] >= PX_RECOMPUTE_COUNT ||
                !caps->recompute[p->layer_recompute[i]])
                return lacks(err, "recompute", PX_FAIL(err, PX_ERR_INVALID,
                               "layer_recompute[%d] = %d: allowed none, selective, full (as %s "
                               "runs them)",
                               i, p->layer_recompute[i], caps->name));
    }
    return PX_OK;
}

/* ZeRO stage, recompute mode, gradient dtype and attention storage. */
static px_status check_options(const px_parallel *p, const px_caps *caps, px_error *err)
{
    if (p->zero < 0 || p->zero > 3)
        return PX_FAIL(err, PX_ERR_INVALID, "zero = %d: allowed 0, 1, 2, 3", p->zero);
    if (!caps->zero[p->zero])
        return lacks(err, "zero", PX_FAIL(err, PX_ERR_UNSUPPORTED, "zero = %d is not run by %s", p->zero,
                       caps->name));
    if ((int)p->recompute < 0 || p->recompute >= PX_RECOMPUTE_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "recompute = %d: allowed none, selective, full",
                       (int)p->recompute);
    if (p->n_layer_recompute == 0 && !caps->recompute[p->recompute])
        return lacks(err, "recompute", PX_FAIL(err, PX_ERR_UNSUPPORTED, "recompute \"%s\" is not run by %s",
                       px_recompute_name(p->recompute), caps->name));
    if (!p->grad_fp32 && !caps->grad_bf16)
        return lacks(err, "grad_bf16", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "grad_dtype = bf16: %s keeps fp32 main gradients; allowed: fp32",
                       caps->name));
    if (!p->flash_attention && caps->needs_flash_attention)
        return lacks(err, "needs_flash_attention", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "flash_attention = false: %s does not store the s x s attention scores",
                       caps->name));
    if (p->pp > 1 && p->zero > caps->max_zero_with_pp)
        return lacks(err, "max_zero_with_pp", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "zero = %d with pp = %d: %s runs ZeRO up to stage %d with pipeline "
                       "parallelism", p->zero, p->pp, caps->name, caps->max_zero_with_pp));
    if (caps->ddp_1d_only && p->zero == 0 &&
        (p->cp > 1 || (p->dp > 1 && (p->tp > 1 || p->pp > 1 || p->ep > 1))))
        return lacks(err, "ddp_1d_only", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "zero = 0 with dp = %d, tp = %d, pp = %d, cp = %d, ep = %d: %s runs "
                       "ZeRO-0 (DDP) only as the one parallel dimension, and shards the "
                       "weights over any CP ranks; allowed: zero >= 2 there",
                       p->dp, p->tp, p->pp, p->cp, p->ep, caps->name));
    if (p->tp_comm_overlap && !caps->tp_comm_overlap)
        return lacks(err, "tp_comm_overlap", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "tp_comm_overlap = true: %s runs the forward's TP collectives where "
                       "they are issued; allowed: false", caps->name));
    if (p->tp_comm_overlap && p->tp > 1 && !p->sp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "tp_comm_overlap = true with tp = %d and sp = false: the overlap "
                       "splits the sequence-parallel all-gather and reduce-scatter "
                       "(Transformer Engine's userbuffers, torchtitan's async TP); allowed: "
                       "sp = true", p->tp);
    if (!caps->tp_with_pp && p->tp > 1 && p->pp > 1)
        return lacks(err, "tp_with_pp", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "tp = %d with pp = %d: %s runs tensor or pipeline parallelism, not "
                       "both", p->tp, p->pp, caps->name));
    if (caps->max_pp > 0 && p->pp > caps->max_pp)
        return lacks(err, "max_pp", PX_FAIL(err, PX_ERR_UNSUPPORTED, "pp = %d: %s runs at most %d pipeline stages",
                       p->pp, caps->name, caps->max_pp));
    if (p->shard_group > 0 && p->zero >= 3 && !caps->hybrid_shard)
        return lacks(err, "hybrid_shard", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "shard_group = %d: %s runs no hybrid sharding; allowed: 0", p->shard_group,
                       caps->name));
    if ((int)p->precision < 0 || p->precision >= PX_PREC_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "parallel.precision = %d: out of range",
                       (int)p->precision);
    if (!(caps->precisions & PX_PREC_BIT(p->precision))) {
        char allowed[128] = "";
        for (int q = 0; q < PX_PREC_COUNT; q++)
            if (caps->precisions & PX_PREC_BIT(q))
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s",
                         allowed[0] ? ", " : "", px_precision_name((px_precision)q));
        return lacks(err, "precisions", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "parallel.precision = %s: %s does not run %s GEMMs; allowed: %s",
                       px_precision_name(p->precision), caps->name,
                       px_precision_name(p->precision), allowed));
    }
    return PX_OK;
}

/* What is trained: a mode the consumer runs; LoRA's settings in range, on a
 * dense model (the experts' adapters are not priced). */
static px_status check_finetune(const px_model *m, const px_finetune *f, const px_caps *caps,
                                px_error *err)
{
    if ((int)f->mode < 0 || f->mode >= PX_FT_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "parallel.finetune.mode = %d: out of range",
                       (int)f->mode);
    if (f->mode != PX_FT_NONE && !(caps->finetune & (1u << f->mode))) { /* pre-training: any */
        char allowed[64] = "none";
        for (int k = 1; k < PX_FT_COUNT; k++)
            if (caps->finetune & (1u << k))
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), ", %s",
                         px_finetune_mode_name((px_ft_mode)k));
        return lacks(err, "finetune", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "finetune = %s: %s does not run it; allowed: %s",
                       px_finetune_mode_name(f->mode), caps->name, allowed));
    }
    if (!px_finetune_is_lora(f))
        return PX_OK;
    if (f->rank < 1 || f->rank > PX_LORA_MAX_RANK || !(f->alpha > 0.0) || f->targets == 0 ||
        (f->targets & ~(unsigned)PX_LORA_ALL))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "finetune lora: rank %d (allowed 1..%d), alpha %g (positive), targets "
                       "0x%x (some of qkv, proj, fc1, fc2)",
                       f->rank, PX_LORA_MAX_RANK, f->alpha, f->targets);
    if (m->n_experts > 0 || m->attn == PX_ATTN_MLA || m->layer_pattern[0])
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "finetune = lora on model \"%s\": LoRA is priced on dense transformer "
                       "blocks with standard attention only (no adapters on experts, MLA "
                       "latents or the layers of a hybrid layer_pattern)",
                       m->name);
    return PX_OK;
}

/* Optimizer offload: a consumer that runs it, of a fraction where the
 * consumer offloads part of the state, over a sharded optimizer (ZeRO-1 or
 * more: DeepSpeed's offload_optimizer is a ZeRO option; Megatron-Core's
 * --optimizer-cpu-offload runs in its distributed optimizer).  Parameter
 * offload: a consumer that runs it, over ZeRO-3's shards (DeepSpeed's
 * offload_param is a stage-3 option; FSDP2's CPUOffloadPolicy offloads the
 * sharded parameters, gradients and optimizer together). */
static px_status check_offload(const px_parallel *p, const px_caps *caps, px_error *err)
{
    const px_offload *o = &p->offload;
    int zero = p->zero;
    if ((int)o->kind < 0 || o->kind >= PX_OFFLOAD_COUNT)
        return PX_FAIL(err, PX_ERR_INVALID, "parallel.offload.kind = %d: out of range",
                       (int)o->kind);
    if (!(o->fraction > 0.0 && o->fraction <= 1.0))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "parallel.offload.fraction = %g: expected a share in (0, 1]", o->fraction);
    if (o->kind == PX_OFFLOAD_NONE)
        return PX_OK;
    if (o->kind == PX_OFFLOAD_PARAMS) {
        if (!caps->offload_params)
            return lacks(err, "offload_params", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "offload = params: %s does not offload parameters; allowed: none, "
                           "optimizer",
                           caps->name));
        if (zero < 3 || o->fraction < 1.0)
            return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "offload = params with ZeRO %d, fraction %g: parameter offload "
                           "moves the ZeRO-3 shards and the whole optimizer state; allowed: "
                           "ZeRO 3, fraction 1",
                           zero, o->fraction);
        if (caps->offload_params_sharded && p->dp * p->cp < 2)
            return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "offload = params over dp x cp = 1: %s offloads parameters through "
                           "FSDP, which it applies over more than one rank; allowed: dp x cp "
                           ">= 2",
                           caps->name);
        if (px_finetune_is_lora(&p->finetune))
            return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                           "offload = params with finetune lora: parameter offload of a frozen "
                           "base is not modelled; allowed: offload optimizer");
        return PX_OK;
    }
    if (!caps->offload_optimizer)
        return lacks(err, "offload_optimizer", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "offload = optimizer: %s does not offload the optimizer; allowed: none",
                       caps->name));
    if (o->fraction < 1.0 && !caps->offload_fraction)
        return lacks(err, "offload_fraction", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "offload fraction %g: %s offloads the whole optimizer state; allowed: 1",
                       o->fraction, caps->name));
    if (zero < 1)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "offload = optimizer with ZeRO 0: optimizer offload runs in a sharded "
                       "optimizer; allowed: ZeRO 1, 2 or 3");
    return PX_OK;
}

/* Some layer recomputes as r: the per-layer table's choice where there is
 * one, else the uniform one. */
static bool recompute_any(const px_parallel *p, px_recompute r)
{
    if (p->n_layer_recompute == 0)
        return p->recompute == r;
    for (int l = 0; l < p->n_layer_recompute; l++)
        if (p->layer_recompute[l] == r)
            return true;
    return false;
}

/* Every layer of p recomputes by r (the uniform choice and each per-layer
 * one). */
static bool recompute_all(const px_parallel *p, px_recompute r)
{
    if (p->recompute != r)
        return false;
    for (int l = 0; l < p->n_layer_recompute; l++)
        if (p->layer_recompute[l] != r)
            return false;
    return true;
}

/* Activation offload as the consumer runs it (px_act_offload_mode): a count
 * of leading layers only in Megatron-Core's form, which refuses a pipeline
 * and recompute (TransformerConfig: "no support for Pipeline parallelism
 * with CPU offloading", "does not work when activation recomputation is
 * enabled") and takes fewer layers than the model has; DeepSpeed's
 * cpu_checkpointing offloads the checkpoints of full recompute. */
static px_status check_act_offload(const px_model *m, const px_parallel *p, const px_caps *caps,
                                   px_error *err)
{
    const px_offload *o = &p->offload;
    int mode = caps->offload_activations;
    if (!o->activations && o->act_layers != 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "parallel.offload.activation_layers = %d without activation offload",
                       o->act_layers);
    if (!o->activations)
        return PX_OK;
    if (mode == PX_ACT_OFFLOAD_NONE)
        return lacks(err, "offload_activations", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "offload = activations: %s does not offload activations; allowed: "
                       "activations on the device",
                       caps->name));
    bool leading = mode == PX_ACT_OFFLOAD_LEADING ||
                   (mode == PX_ACT_OFFLOAD_ANY && o->act_layers > 0);
    if (!leading && o->act_layers != 0)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "parallel.offload.activation_layers = %d: %s offloads every layer; "
                       "allowed: 0",
                       o->act_layers, caps->name);
    if (mode == PX_ACT_OFFLOAD_CHECKPOINTS && !recompute_all(p, PX_RECOMPUTE_FULL))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "offload = activations: %s offloads the checkpoints of full recompute "
                       "(cpu_checkpointing); allowed: recompute full",
                       caps->name);
    if (!leading)
        return PX_OK;
    if (o->act_layers < 1 || o->act_layers >= m->n_layers)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "parallel.offload.activation_layers = %d: expected 1 .. %lld (fewer "
                       "than the model's %lld layers)",
                       o->act_layers, (long long)m->n_layers - 1, (long long)m->n_layers);
    if (p->pp > 1 || !recompute_all(p, PX_RECOMPUTE_NONE))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "offload = activations: %s offloads leading layers without a pipeline "
                       "or recompute; allowed: pp 1, recompute none",
                       caps->name);
    return PX_OK;
}

/* The CP flavour: one the consumer runs; the all-to-all (Ulysses) shards the
 * heads of a TP rank over cp. */
static px_status check_cp_comm(const px_model *m, const px_parallel *p, const px_caps *caps,
                               px_error *err)
{
    if (p->cp <= 1)
        return PX_OK;
    if (!(caps->cp_flavours & (1u << p->cp_comm))) {
        char allowed[64] = "";
        for (int f = 0; f < 3; f++)
            if (caps->cp_flavours & (1u << f))
                snprintf(allowed + strlen(allowed), sizeof allowed - strlen(allowed), "%s%s",
                         allowed[0] ? ", " : "", px_cp_comm_name((px_cp_comm)f));
        return lacks(err, "cp_flavours", PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "parallel.cp_comm = %s: %s does not run that CP flavour; allowed: %s",
                       px_cp_comm_name(p->cp_comm), caps->name, allowed));
    }
    if (p->cp_comm == PX_CPC_A2A && (m->n_heads / p->tp) % p->cp != 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "cp-comm a2a: cp = %d does not divide the %lld heads per TP rank "
                       "(the all-to-all shards heads)",
                       p->cp, (long long)(m->n_heads / p->tp));
    return PX_OK;
}

px_status px_plan_check(const px_model *m, const px_parallel *p, const px_caps *caps,
                        px_error *err)
{
    px_status st = check_model_shape(m, err);
    if (st != PX_OK)
        return st;
    if (p->tp < 1 || p->cp < 1 || p->pp < 1 || p->vpp < 1 || p->dp < 1 || p->ep < 1 ||
        p->etp < 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "parallel sizes tp %d cp %d pp %d vpp %d dp %d ep %d etp %d: each must "
                       "be >= 1",
                       p->tp, p->cp, p->pp, p->vpp, p->dp, p->ep, p->etp);
    int64_t s = px_plan_seq_len(m, p);
    if (m->block == PX_BLOCK_GPT && m->max_positions > 0 && s > m->max_positions)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "seq_len = %lld exceeds the learned position table of %s "
                       "(max_positions = %lld)",
                       (long long)s, m->name, (long long)m->max_positions);
    st = px_rule_tp(m, p->tp, caps, err);
    if (st == PX_OK)
        st = px_rule_cp(s, p->cp, caps, err);
    if (st == PX_OK)
        st = px_rule_sp(m, s, p->tp, p->cp, p->sp, p->micro_batch, caps, err);
    if (st == PX_OK)
        st = px_rule_mamba_cp(m, p->tp, p->cp, err);
    if (st == PX_OK)
        st = px_rule_experts(m, p->tp, p->cp, p->dp, p->ep, p->etp, caps, err);
    /* a recorded split may hold two chunks more than layers where its end
     * chunks hold only the embedding and the loss (check_split judges it) */
    bool end_slots = p->n_chunks > 0 && caps->empty_end_chunks &&
                     (int64_t)p->pp * p->vpp <= m->n_layers + 2;
    if (st == PX_OK)
        st = end_slots ? px_rule_schedule(p->pp, p->vpp, p->schedule, caps, err)
                       : px_rule_pipeline(m, p->pp, p->vpp, p->schedule, caps, err);
    if (st == PX_OK)
        st = px_rule_batch(p->pp, p->vpp, p->schedule, p->micro_batch, p->n_micro, err);
    if (st == PX_OK)
        st = check_split(m, p, caps, err);
    if (st == PX_OK)
        st = check_options(p, caps, err);
    if (st == PX_OK)
        st = check_cp_comm(m, p, caps, err);
    if (st == PX_OK)
        st = px_rule_moe_dispatcher(m, p->moe_dispatcher, p->ep, p->etp, caps, err);
    if (st == PX_OK)
        st = px_rule_recompute_modules(m, p->recompute_modules,
                                       recompute_any(p, PX_RECOMPUTE_SELECTIVE), p->precision,
                                       caps, err);
    if (st == PX_OK && p->moe_a2a_overlap)
        st = px_rule_moe_a2a_overlap(m, p->ep, p->pp, p->vpp, recompute_any(p, PX_RECOMPUTE_FULL),
                                     caps, err);
    if (st == PX_OK)
        st = check_finetune(m, &p->finetune, caps, err);
    if (st == PX_OK)
        st = check_offload(p, caps, err);
    if (st == PX_OK)
        st = check_act_offload(m, p, caps, err);
    /* last, so that a refusal by feature says every other rule holds */
    if (st == PX_OK)
        st = px_rule_features(m, caps, err);
    return st;
}

px_status px_plan_check_cap(const px_model *m, const px_parallel *par, const px_caps *caps,
                            const char **cap, px_error *err)
{
    px_error local; /* the refusal's record when the caller keeps none */
    px_error *e = err ? err : &local;
    px_status st = px_plan_check(m, par, caps, e);
    if (cap)
        *cap = st == PX_OK ? NULL : e->cap;
    return st;
}
