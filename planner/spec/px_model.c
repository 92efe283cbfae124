/* px_model.c — the model's fields and their JSON (the preset schema,
 * docs/model-schema.md), validation and exact parameter counts.  Loading by
 * name is px_model_load.c; Hugging Face configs px_model_hf.c. */
#include "px_model.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_checked.h"
#include "px_datadir.h"
#include "px_jfield.h"
#include "px_plan.h"
#include "px_hybrid.h"
#include "px_plan_json.h"
#include "px_sliding.h"

static const char *const block_names[] = {"gpt", "llama"};
static const char *const attn_names[] = {"standard", "mla"};
static const char *const scoring_names[] = {"softmax", "sigmoid"};
static const char *const rope_scaling_names[] = {"none", "llama3", "yarn"};
static const char *const mlp_act_names[] = {"silu", "gelu", "relu2"};

#define F_(key, type, field, req, mn, mx) \
    {key, type, offsetof(px_model, field), 0, req, mn, NULL, 0, mx}
#define FI(key, field, req, mn, mx) F_(key, PX_JF_I64, field, req, mn, mx)
#define FB(key, field) F_(key, PX_JF_BOOL, field, false, 0, 0)
#define FD(key, field, mn, mx) F_(key, PX_JF_DBL, field, false, mn, mx)

/* Upper bounds: about 50x the largest published model's value (hidden 25 600,
 * ffn 73 728, vocab 256 000, 256 experts, 128 heads, contexts of 10^6
 * tokens), far beyond any real model, small enough that the products the
 * cost model forms of them stay inside 64 bits (px_model_validate checks
 * the parameter count itself with checked arithmetic). */
#define MAX_WIDTH (1 << 20)  /* hidden, ffn, moe_ffn, low-rank sizes */
#define MAX_HEADS (1 << 14)  /* heads, head dims */
#define MAX_TOKENS (1 << 24) /* vocab, seq_len, max_positions */
#define MAX_EXPERTS (1 << 16)

/* The preset schema, one line a field (documented in docs/model-schema.md).
 * Optional fields keep the defaults of px_model_defaults(). */
static const px_jfield model_fields[] = {
    {"name", PX_JF_STR, offsetof(px_model, name), sizeof(((px_model *)0)->name), true, 0,
     NULL, 0, 0},
    {"block", PX_JF_ENUM, offsetof(px_model, block), 0, true, 0, block_names, 2, 0},
    {"attention", PX_JF_ENUM, offsetof(px_model, attn), 0, false, 0, attn_names, 2, 0},
    FI("hidden", hidden, true, 1, MAX_WIDTH),
    FI("n_layers", n_layers, true, 1, PX_MAX_LAYERS),
    FI("n_heads", n_heads, true, 1, MAX_HEADS),
    FI("n_kv_heads", n_kv_heads, false, 1, MAX_HEADS),
    FI("head_dim", head_dim, false, 1, MAX_HEADS),
    FI("ffn", ffn, true, 0, MAX_WIDTH),
    FI("vocab", vocab, true, 1, MAX_TOKENS),
    FI("seq_len", seq_len, true, 1, MAX_TOKENS),
    FI("max_positions", max_positions, false, 0, MAX_TOKENS),
    FB("tied_embeddings", tied_embeddings),
    FB("qkv_bias", qkv_bias),
    FB("o_bias", o_bias),
    FB("qk_norm", qk_norm),
    FB("sandwich_norms", sandwich_norms),
    FB("attention_sinks", attention_sinks),
    {"mlp_act", PX_JF_ENUM, offsetof(px_model, mlp_act), 0, false, 0, mlp_act_names, 3, 0},
    FD("rope_fraction", rope_fraction, 0.0, 1.0),
    FD("rope_theta", rope_theta, 1.0, 1e12),
    {"rope_scaling", PX_JF_ENUM, offsetof(px_model, rope_scaling), 0, false, 0,
     rope_scaling_names, 3, 0},
    FD("rope_factor", rope_factor, 1e-6, 1e6),
    FD("rope_low_freq_factor", rope_low_freq_factor, 1e-6, 1e6),
    FD("rope_high_freq_factor", rope_high_freq_factor, 1e-6, 1e6),
    FI("rope_original_max_positions", rope_original_max_positions, false, 0, MAX_TOKENS),
    FB("rope_interleave", rope_interleave),
    FD("norm_eps", norm_eps, 1e-30, 1.0),
    FD("latent_norm_eps", latent_norm_eps, 1e-30, 1.0),
    FI("n_experts", n_experts, false, 0, MAX_EXPERTS),
    FI("top_k", top_k, false, 0, MAX_EXPERTS),
    FI("moe_ffn", moe_ffn, false, 0, MAX_WIDTH),
    FI("n_shared_experts", n_shared_experts, false, 0, MAX_EXPERTS),
    FI("first_dense_layers", first_dense_layers, false, 0, PX_MAX_LAYERS),
    FI("moe_layer_freq", moe_layer_freq, false, 1, PX_MAX_LAYERS),
    FB("norm_topk_prob", norm_topk_prob),
    {"scoring_func", PX_JF_ENUM, offsetof(px_model, scoring_func), 0, false, 0, scoring_names, 2,
     0},
    FI("n_group", n_group, false, 1, PX_MODEL_MAX_GROUPS),
    FI("topk_group", topk_group, false, 1, PX_MODEL_MAX_GROUPS),
    FD("routed_scaling_factor", routed_scaling_factor, 1e-6, 1e6),
    FI("q_lora_rank", q_lora_rank, false, 0, MAX_WIDTH),
    FI("kv_lora_rank", kv_lora_rank, false, 0, MAX_WIDTH),
    FI("qk_nope_head_dim", qk_nope_head_dim, false, 0, MAX_HEADS),
    FI("qk_rope_head_dim", qk_rope_head_dim, false, 0, MAX_HEADS),
    FI("v_head_dim", v_head_dim, false, 0, MAX_HEADS),
    FI("n_mtp_modules", n_mtp_modules, false, 0, 64),
    FI("sliding_window", sliding_window, false, 0, 1LL << 40),
};
#define N_MODEL_FIELDS ((int)(sizeof model_fields / sizeof model_fields[0]))

/* Keys a preset file may carry that are not part of px_model. */
static const char *const preset_extra_keys[] = {"aliases", "description", "source",
                                                 "layer_types", "layer_pattern", "mamba", NULL};
/* a model inside a plan file: the per-layer kinds only */
static const char *const embedded_extra_keys[] = {"layer_types", "layer_pattern", "mamba", NULL};

/* Optional fields' defaults; n_kv_heads and head_dim are derived afterwards
 * (0 here means "not given"). */
void px_model_defaults(px_model *m)
{
    memset(m, 0, sizeof *m);
    m->block = PX_BLOCK_LLAMA;
    m->attn = PX_ATTN_STANDARD;
    m->moe_layer_freq = 1;
    m->rope_theta = PX_ROPE_THETA_DEFAULT;
    m->rope_fraction = 1.0;
    m->rope_scaling = PX_ROPE_NONE;
    m->rope_factor = 1.0;
    m->rope_low_freq_factor = 1.0;
    m->rope_high_freq_factor = 4.0;
    m->norm_eps = PX_NORM_EPS_DEFAULT;
    m->latent_norm_eps = PX_LATENT_NORM_EPS_DEFAULT;
    m->scoring_func = PX_SCORING_SOFTMAX;
    m->n_group = 1;
    m->topk_group = 1;
    m->routed_scaling_factor = 1.0;
}

static void model_derive(px_model *m)
{
    if (m->n_kv_heads == 0)
        m->n_kv_heads = m->n_heads;
    if (m->head_dim == 0 && m->n_heads > 0)
        m->head_dim = m->hidden / m->n_heads;
    if (m->block == PX_BLOCK_GPT) /* the GPT block has biases on every linear layer */
        m->qkv_bias = m->o_bias = true;
}

const char *px_models_dir_default(void)
{
    const char *env = getenv("PARALLAX_MODELS_DIR");
    if (env && env[0])
        return env;
    return px_datadir_pick(PX_SOURCE_ROOT "/models", PX_DATA_DIR "/models");
}

/* ---------- validation ---------- */

/* The whole model's parameter count, summed with overflow checks: one
 * layer's count fits in 64 bits under the schema bounds, the sum over
 * layers, the embeddings and the MTP modules need not.  At most
 * PX_MODEL_MAX_PARAMS, so the byte counts formed from it (about 20 bytes a
 * parameter with Adam) stay exact in int64 and in double. */
static px_status check_param_count(const px_model *m, px_error *err)
{
    int64_t total = 0, emb = 0;
    bool ok = px_mul_ok(m->vocab + m->max_positions, m->hidden, &emb) &&
              px_mul_ok(emb, 2, &emb) && px_add_ok(total, emb, &total);
    for (int64_t l = 0; ok && l < m->n_layers; l++)
        ok = px_add_ok(total, px_model_layer_params(m, l), &total);
    int64_t mtp = 0;
    ok = ok && px_mul_ok(m->n_mtp_modules, px_model_layer_params(m, m->n_layers), &mtp) &&
         px_add_ok(total, mtp, &total);
    if (!ok || total > PX_MODEL_MAX_PARAMS)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: %s%.3g parameters; at most %.3g (2^50) are supported: "
                       "reduce hidden, ffn, moe_ffn, n_experts or n_layers",
                       m->name, ok ? "" : "more than ", ok ? (double)total : (double)INT64_MAX,
                       (double)PX_MODEL_MAX_PARAMS);
    return PX_OK;
}

/* The router's options need experts; groups must split them evenly, at
 * least two to a group (a group scores by its top two), and leave top_k
 * experts in the groups kept. */
static px_status check_router(const px_model *m, px_error *err)
{
    const char *n = m->name;
    bool plain = m->scoring_func == PX_SCORING_SOFTMAX && m->n_group == 1 &&
                 m->topk_group == 1 && m->routed_scaling_factor == 1.0 && !m->norm_topk_prob;
    if (m->n_experts == 0)
        return plain ? PX_OK
                     : PX_FAIL(err, PX_ERR_INVALID,
                               "model %s: norm_topk_prob, scoring_func, n_group, topk_group and "
                               "routed_scaling_factor need n_experts > 0 (allowed without "
                               "experts: their defaults)", n);
    if (m->n_group < 1 || m->n_experts % m->n_group != 0 ||
        (m->n_group > 1 && m->n_experts / m->n_group < 2))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: n_group %lld must divide n_experts %lld into groups of at "
                       "least 2 experts (or be 1)", n, (long long)m->n_group,
                       (long long)m->n_experts);
    if (m->topk_group < 1 || m->topk_group > m->n_group ||
        m->topk_group * (m->n_experts / m->n_group) < m->top_k)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: topk_group %lld must be in 1..n_group (%lld) and keep at "
                       "least top_k %lld experts (%lld a group)", n, (long long)m->topk_group,
                       (long long)m->n_group, (long long)m->top_k,
                       (long long)(m->n_experts / m->n_group));
    return PX_OK;
}

px_status px_model_validate(const px_model *m, px_error *err)
{
    const char *n = m->name;
    char where[160];
    snprintf(where, sizeof where, "model %s", n);
    px_status bst = px_jf_check_bounds(model_fields, N_MODEL_FIELDS, m, NULL, where, err);
    if (bst != PX_OK)
        return bst;
    if (m->hidden <= 0 || m->n_layers <= 0 || m->n_heads <= 0 || m->vocab <= 0 ||
        m->seq_len <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: hidden, n_layers, n_heads, vocab and seq_len must be > 0", n);
    if (m->block != PX_BLOCK_GPT && m->block != PX_BLOCK_LLAMA)
        return PX_FAIL(err, PX_ERR_INVALID, "model %s: block: allowed values are gpt, llama", n);
    if (m->n_kv_heads <= 0 || m->n_heads % m->n_kv_heads != 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: n_kv_heads %lld must be > 0 and divide n_heads %lld", n,
                       (long long)m->n_kv_heads, (long long)m->n_heads);
    if (m->head_dim <= 0)
        return PX_FAIL(err, PX_ERR_INVALID, "model %s: head_dim must be > 0 (default hidden/n_heads)",
                       n);
    if (m->block == PX_BLOCK_GPT && m->max_positions < m->seq_len)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: max_positions %lld must be >= seq_len %lld for the GPT block "
                       "(learned positions)", n, (long long)m->max_positions,
                       (long long)m->seq_len);
    if (m->moe_layer_freq < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "model %s: moe_layer_freq must be >= 1", n);
    bool any_dense = false, any_moe = false;
    for (int64_t i = 0; i < m->n_layers; i++) {
        px_layer_kind k = px_model_layer_kind(m, i);
        any_dense = any_dense || px_layer_has_dense_mlp(k);
        any_moe = any_moe || px_layer_has_experts(k);
    }
    px_status hst = px_hybrid_check(m, err);
    if (hst != PX_OK)
        return hst;
    if (m->n_experts > 0 && !any_moe && !px_model_is_hybrid(m))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: n_experts %lld but no layer has experts: moe_layer_freq %lld "
                       "with first_dense_layers %lld leaves none of the %lld layers MoE (allowed: "
                       "a moe_layer_freq with a multiple in first_dense_layers..n_layers-1)", n,
                       (long long)m->n_experts, (long long)m->moe_layer_freq,
                       (long long)m->first_dense_layers, (long long)m->n_layers);
    if (m->n_experts > 0 && !any_moe)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: n_experts %lld but layer_pattern has no 'E' layer", n,
                       (long long)m->n_experts);
    if (any_dense && m->ffn <= 0)
        return PX_FAIL(err, PX_ERR_INVALID, "model %s: ffn must be > 0 (model has dense layers)",
                       n);
    if (m->n_experts > 0) {
        if (m->top_k < 1 || m->top_k > m->n_experts)
            return PX_FAIL(err, PX_ERR_INVALID, "model %s: top_k %lld must be in 1..n_experts (%lld)",
                           n, (long long)m->top_k, (long long)m->n_experts);
        if (m->moe_ffn <= 0)
            return PX_FAIL(err, PX_ERR_INVALID, "model %s: moe_ffn must be > 0 with n_experts > 0",
                           n);
    } else if (m->top_k != 0 || m->n_shared_experts != 0) {
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: top_k and n_shared_experts need n_experts > 0", n);
    }
    px_status rst = check_router(m, err);
    if (rst != PX_OK)
        return rst;
    if (m->rope_scaling != PX_ROPE_NONE && m->rope_original_max_positions < 1)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: rope_scaling %s needs rope_original_max_positions >= 1", n,
                       rope_scaling_names[m->rope_scaling]);
    if (m->rope_scaling == PX_ROPE_LLAMA3 &&
        !(m->rope_low_freq_factor < m->rope_high_freq_factor))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: rope_scaling llama3 needs rope_low_freq_factor %g < "
                       "rope_high_freq_factor %g (the band between them is blended)", n,
                       m->rope_low_freq_factor, m->rope_high_freq_factor);
    if (m->attn == PX_ATTN_MLA) {
        if (m->kv_lora_rank <= 0 || m->qk_nope_head_dim + m->qk_rope_head_dim <= 0 ||
            m->v_head_dim <= 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "model %s: attention mla needs kv_lora_rank, qk_nope_head_dim + "
                           "qk_rope_head_dim and v_head_dim > 0", n);
    } else if (m->attn != PX_ATTN_STANDARD) {
        return PX_FAIL(err, PX_ERR_INVALID,
                       "model %s: attention: allowed values are standard, mla", n);
    }
    return check_param_count(m, err);
}

/* ---------- parameter counts ---------- */

px_layer_kind px_model_layer_kind(const px_model *m, int64_t layer)
{
    if (px_model_is_hybrid(m) && layer >= 0 && layer < m->n_layers)
        return px_hybrid_kind(m->layer_pattern[layer]);
    /* DeepSeek's convention: MoE from first_dense_layers on, every
     * moe_layer_freq-th layer (by absolute index). */
    if (m->n_experts <= 0 || layer < m->first_dense_layers)
        return PX_LAYER_DENSE;
    int64_t freq = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    return layer % freq == 0 ? PX_LAYER_MOE : PX_LAYER_DENSE;
}

bool px_model_layer_is_moe(const px_model *m, int64_t layer)
{
    return px_layer_has_experts(px_model_layer_kind(m, layer));
}

bool px_model_mlp_gated(const px_model *m)
{
    return m->block == PX_BLOCK_LLAMA && m->mlp_act != PX_ACT_RELU2;
}

int64_t px_model_qk_head_dim(const px_model *m)
{
    return m->attn == PX_ATTN_MLA ? m->qk_nope_head_dim + m->qk_rope_head_dim : m->head_dim;
}

int64_t px_model_v_head_dim(const px_model *m)
{
    return m->attn == PX_ATTN_MLA ? m->v_head_dim : m->head_dim;
}

/* Attention projection matrices only (what multiplies a token). */
static int64_t attn_matmul_params(const px_model *m)
{
    const int64_t h = m->hidden, a = m->n_heads;
    if (m->attn == PX_ATTN_MLA) {
        const int64_t qk = px_model_qk_head_dim(m);
        int64_t q = m->q_lora_rank > 0 ? h * m->q_lora_rank + m->q_lora_rank * a * qk
                                       : h * a * qk;
        int64_t kv_a = h * (m->kv_lora_rank + m->qk_rope_head_dim);
        int64_t kv_b = m->kv_lora_rank * a * (m->qk_nope_head_dim + m->v_head_dim);
        int64_t o = a * m->v_head_dim * h;
        return q + kv_a + kv_b + o;
    }
    const int64_t d = m->head_dim, k = m->n_kv_heads;
    return h * a * d + 2 * h * k * d + a * d * h;
}

/* Attention total: projections + biases + the norms that live inside it
 * (Qwen3's per-head q/k RMSNorm, MLA's latent RMSNorms). */
static int64_t attn_params(const px_model *m)
{
    int64_t p = attn_matmul_params(m);
    if (m->attn == PX_ATTN_MLA) {
        p += m->kv_lora_rank + (m->q_lora_rank > 0 ? m->q_lora_rank : 0);
    } else {
        const int64_t d = m->head_dim;
        if (m->qkv_bias || m->block == PX_BLOCK_GPT)
            p += m->n_heads * d + 2 * m->n_kv_heads * d;
        if (m->o_bias || m->block == PX_BLOCK_GPT)
            p += m->hidden; /* output projection bias */
        if (m->qk_norm)
            p += 2 * d;
    }
    return p;
}

/* One MLP of inner size f: gated (3 matrices) or not (2; GPT adds biases). */
static int64_t mlp_matmul_params(const px_model *m, int64_t f)
{
    return (px_model_mlp_gated(m) ? 3 : 2) * m->hidden * f;
}

static int64_t mlp_params(const px_model *m, int64_t f)
{
    int64_t p = mlp_matmul_params(m, f);
    if (m->block == PX_BLOCK_GPT)
        p += f + m->hidden;
    return p;
}

int px_model_layer_norms(const px_model *m)
{
    return m->sandwich_norms ? 4 : 2;
}

int px_model_kind_norms(const px_model *m, px_layer_kind k)
{
    return px_layer_sublayers(k) == 2 ? px_model_layer_norms(m) : 1;
}

int64_t px_model_kind_norm_params(const px_model *m, px_layer_kind k)
{
    return px_model_kind_norms(m, k) * (m->block == PX_BLOCK_GPT ? 2 : 1) * m->hidden;
}

/* The routed and shared experts and the router of one MoE layer; routed:
 * the routed experts counted. */
static int64_t experts_params(const px_model *m, int64_t routed, bool matmul_only)
{
    int64_t e = matmul_only ? mlp_matmul_params(m, m->moe_ffn) : mlp_params(m, m->moe_ffn);
    return m->hidden * m->n_experts + (routed + m->n_shared_experts) * e;
}

int64_t px_model_layer_params(const px_model *m, int64_t layer)
{
    px_layer_kind k = px_model_layer_kind(m, layer);
    int64_t p = px_model_kind_norm_params(m, k);
    if (px_layer_has_attention(k))
        p += attn_params(m);
    if (px_layer_has_dense_mlp(k))
        p += mlp_params(m, m->ffn);
    if (px_layer_has_experts(k))
        p += experts_params(m, m->n_experts, false);
    if (k == PX_LAYER_MAMBA)
        p += px_mamba_params(m);
    return p;
}

int64_t px_model_layer_matmul_params(const px_model *m, int64_t layer, bool active_only)
{
    px_layer_kind k = px_model_layer_kind(m, layer);
    int64_t p = 0;
    if (px_layer_has_attention(k))
        p += attn_matmul_params(m);
    if (px_layer_has_dense_mlp(k))
        p += mlp_matmul_params(m, m->ffn);
    if (px_layer_has_experts(k))
        p += experts_params(m, active_only ? m->top_k : m->n_experts, true);
    if (k == PX_LAYER_MAMBA)
        p += px_mamba_matmul_params(m);
    return p;
}

void px_model_count_params(const px_model *m, px_param_count *out)
{
    memset(out, 0, sizeof *out);
    const int64_t h = m->hidden;
    const int64_t norm_w = (m->block == PX_BLOCK_GPT ? 2 : 1) * h;
    out->embedding = m->vocab * h + (m->block == PX_BLOCK_GPT ? m->max_positions * h : 0);
    out->lm_head = m->tied_embeddings ? 0 : m->vocab * h;
    out->final_norm = norm_w;
    int64_t unused_experts = 0;
    for (int64_t i = 0; i < m->n_layers; i++) {
        px_layer_kind k = px_model_layer_kind(m, i);
        out->norms += px_model_kind_norm_params(m, k);
        if (px_layer_has_attention(k))
            out->attention += attn_params(m);
        if (px_layer_has_dense_mlp(k))
            out->dense_mlp += mlp_params(m, m->ffn);
        if (px_layer_has_experts(k)) {
            int64_t e = mlp_params(m, m->moe_ffn);
            out->expert_mlp += m->n_experts * e;
            out->shared_expert_mlp += m->n_shared_experts * e;
            out->router += h * m->n_experts;
            unused_experts += (m->n_experts - m->top_k) * e;
        }
        if (k == PX_LAYER_MAMBA)
            out->mamba += px_mamba_params(m);
    }
    out->total = out->embedding + out->lm_head + out->final_norm + out->attention +
                 out->dense_mlp + out->expert_mlp + out->shared_expert_mlp + out->router +
                 out->norms + out->mamba;
    out->active = out->total - unused_experts;
    /* A DeepSeek-V3 MTP module: a norm on the hidden state and one on the
     * embedding, a 2h -> h projection, one more layer (shaped like the next
     * layer index) and its own output norm; it shares the embedding and the
     * LM head with the main model, so they are not counted again. */
    if (m->n_mtp_modules > 0)
        out->mtp = m->n_mtp_modules *
                   (2 * norm_w + 2 * h * h + px_model_layer_params(m, m->n_layers) + norm_w);
}

/* ---------- loading ---------- */


px_status px_model_from_json(json_t *obj, const char *file, const char *path, px_model *out,
                             px_error *err)
{
    px_model_defaults(out);
    px_status st = px_jf_read(model_fields, N_MODEL_FIELDS, obj, out, file, path,
                              path && path[0] ? embedded_extra_keys : preset_extra_keys, err);
    if (st != PX_OK)
        return st;
    model_derive(out);
    char key[256];
    snprintf(key, sizeof key, "%s%slayer_types", path && path[0] ? path : "",
             path && path[0] ? "." : "");
    st = px_sliding_read(out, json_object_get(obj, "layer_types"), file, key, err);
    if (st == PX_OK)
        st = px_hybrid_read(out, obj, file, path, err);
    if (st != PX_OK)
        return st;
    if (!path || !path[0]) {
        json_t *al = json_object_get(obj, "aliases");
        if (al) {
            bool ok = json_is_array(al);
            size_t i;
            json_t *v;
            json_array_foreach(al, i, v) ok = ok && json_is_string(v);
            if (!ok)
                return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                    "aliases: expected an array of strings");
        }
        static const char *const text_keys[] = {"description", "source"};
        for (int i = 0; i < 2; i++) {
            const char *k = text_keys[i];
            json_t *d = json_object_get(obj, k);
            if (d && !json_is_string(d))
                return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                    "%s: expected a string, got %s", k, px_jf_type_name(d));
        }
    }
    st = px_model_validate(out, err);
    if (st != PX_OK && err && !err->file[0] && file)
        snprintf(err->file, sizeof err->file, "%s", file);
    return st;
}

px_status px_model_to_json(const px_model *m, json_t **out, px_error *err)
{
    json_t *obj = json_object();
    if (!obj)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    px_status st = px_jf_write(model_fields, N_MODEL_FIELDS, m, obj, "model", err);
    if (st != PX_OK) {
        json_decref(obj);
        return st;
    }
    json_t *types = px_sliding_write(m);
    if (types)
        json_object_set_new(obj, "layer_types", types);
    if (px_hybrid_write(m, obj) != 0) {
        json_decref(obj);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    *out = obj;
    return PX_OK;
}
