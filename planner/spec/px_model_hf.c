/* px_model_hf.c — a Hugging Face config.json as a px_model: each supported
 * model_type's own key names and transformers' defaults for the keys a
 * config leaves out (docs/model-schema.md, "Hugging Face config.json"). */
#include <stdio.h>
#include <string.h>

#include "px_hybrid.h"
#include "px_jfield.h"
#include "px_model.h"
#include "px_plan_json.h"
#include "px_sliding.h"

typedef struct {
    json_t *root;
    const char *file;
    px_error *err;
    px_status st;
} hf_ctx;

/* Integer field of the config, at least min; null or absent gives dflt (or
 * an error when dflt < 0, i.e. the field is required). */
static int64_t hf_int_min(hf_ctx *c, const char *key, int64_t dflt, int64_t min)
{
    if (c->st != PX_OK)
        return 0;
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v)) {
        if (dflt < 0)
            c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                                 "%s: missing required field (an integer)", key);
        return dflt < 0 ? 0 : dflt;
    }
    if (!json_is_integer(v)) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s: expected an integer >= %lld, got %s", key, (long long)min,
                             px_jf_type_name(v));
        return 0;
    }
    if (json_integer_value(v) < min) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s: expected an integer >= %lld, got %lld", key, (long long)min,
                             (long long)json_integer_value(v));
        return 0;
    }
    return (int64_t)json_integer_value(v);
}

/* Counts that may be 0 (absent features: shared experts, dense layers). */
static int64_t hf_int(hf_ctx *c, const char *key, int64_t dflt)
{
    return hf_int_min(c, key, dflt, 0);
}

/* Sizes: 0 makes no model. */
static int64_t hf_size(hf_ctx *c, const char *key, int64_t dflt)
{
    return hf_int_min(c, key, dflt, 1);
}

static bool hf_bool(hf_ctx *c, const char *key, bool dflt)
{
    if (c->st != PX_OK)
        return dflt;
    json_t *v = json_object_get(c->root, key);
    if (!v || json_is_null(v))
        return dflt;
    if (!json_is_boolean(v)) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s: expected true or false, got %s", key, px_jf_type_name(v));
        return dflt;
    }
    return json_is_true(v);
}

/* A number of obj (a config or its rope_parameters) at key, > 0; null or
 * absent gives dflt.  where names obj in messages ("" for the config). */
static double hf_num_in(hf_ctx *c, json_t *obj, const char *where, const char *key,
                        double dflt)
{
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (c->st != PX_OK || !v || json_is_null(v))
        return dflt;
    if (!json_is_number(v) || !(json_number_value(v) > 0)) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s%s%s: expected a number > 0, got %s", where, where[0] ? "." : "",
                             key, json_is_number(v) ? "a number <= 0" : px_jf_type_name(v));
        return dflt;
    }
    return json_number_value(v);
}

static double hf_num(hf_ctx *c, const char *key, double dflt)
{
    return hf_num_in(c, c->root, "", key, dflt);
}

/* Pretraining context is not in config.json; cap the position table at the
 * 8192 tokens that Llama 3, Qwen3 and DeepSeek-V3 pretrain at (--seq
 * overrides). */
#define PX_HF_SEQ_CAP 8192

static const char *const hf_types[] = {"llama",   "mistral",     "mixtral", "qwen2",
                                        "qwen3",   "qwen3_moe",   "deepseek_v3", "gpt_oss",
                                        "gemma",   "gemma2",      "gemma3_text", "phi3",
                                        "gpt2",    "nemotron_h",  NULL};

/* The gated MLP's activation (hidden_act; Gemma: hidden_activation): the
 * GEMMs are the same three matrices whichever it is, and the element-wise
 * pass reads and writes the same bytes (SiLU or a GeLU). */
static const char *const hf_gated_acts[] = {"silu", "swish", "gelu", "gelu_pytorch_tanh",
                                            "gelu_new", "gelu_fast", NULL};

static bool is_gemma(const char *t)
{
    return strncmp(t, "gemma", 5) == 0;
}

static void hf_name(const char *file, const char *model_type, char *buf, size_t n)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    char stem[256];
    snprintf(stem, sizeof stem, "%.255s", base);
    char *dot = strrchr(stem, '.');
    if (dot)
        *dot = '\0';
    if (strcmp(stem, "config") == 0) {
        /* .../<model dir>/config.json: the directory names the model */
        char dir[512];
        snprintf(dir, sizeof dir, "%s", file);
        char *slash = strrchr(dir, '/');
        if (slash) {
            *slash = '\0';
            slash = strrchr(dir, '/');
            snprintf(stem, sizeof stem, "%.255s", slash ? slash + 1 : dir);
        } else {
            snprintf(stem, sizeof stem, "%s", model_type);
        }
    }
    snprintf(buf, n, "%.*s", (int)n - 1, stem);
}

/* The config's model_type (*type), one of hf_types, or an error naming the
 * supported ones. */
static px_status hf_model_type(json_t *root, const char *file, const char **type,
                               px_error *err)
{
    json_t *mt = json_object_get(root, "model_type");
    char types[256] = "";
    for (int i = 0; hf_types[i]; i++)
        snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s", i ? ", " : "",
                 hf_types[i]);
    if (!json_is_string(mt))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "model_type: expected a string, one of %s", types);
    const char *t = json_string_value(mt);
    if (json_is_object(json_object_get(root, "text_config")))
        return px_error_set(err, PX_ERR_UNSUPPORTED, file, 0, 0,
                            "text_config: model_type \"%s\" is a multimodal config; give its "
                            "text model's config (the text_config object as a config.json, "
                            "e.g. model_type gemma3_text)", t);
    int which = -1;
    for (int i = 0; hf_types[i]; i++)
        if (strcmp(t, hf_types[i]) == 0)
            which = i;
    if (which < 0)
        return px_error_set(err, PX_ERR_UNSUPPORTED, file, 0, 0,
                            "model_type \"%s\" is not supported; supported: %s", t, types);

    *type = t;
    return PX_OK;
}

/* transformers' default vocabulary of each type (the vocab_size default of
 * its configuration_<type>.py): what transformers builds from a config that
 * leaves vocab_size out. */
static const struct {
    const char *type;
    int64_t vocab;
} hf_default_vocab[] = {
    {"llama", 32000},     {"mistral", 32000},     {"mixtral", 32000},       {"qwen2", 151936},
    {"qwen3", 151936},    {"qwen3_moe", 151936},  {"deepseek_v3", 129280},  {"gpt_oss", 201088},
    {"gemma", 256000},    {"gemma2", 256000},     {"gemma3_text", 262208},  {"phi3", 32064},
    {"gpt2", 50257},      {"nemotron_h", 131072},
};

/* vocab_size, else (null or absent) transformers' default for the type,
 * said in m->config_note. */
static int64_t hf_vocab(hf_ctx *c, const char *type, px_model *m)
{
    int64_t dflt = -1;
    for (size_t i = 0; i < sizeof hf_default_vocab / sizeof hf_default_vocab[0]; i++)
        if (strcmp(type, hf_default_vocab[i].type) == 0)
            dflt = hf_default_vocab[i].vocab;
    json_t *v = json_object_get(c->root, "vocab_size");
    if (c->st == PX_OK && dflt > 0 && (!v || json_is_null(v)))
        snprintf(m->config_note, sizeof m->config_note,
                 "vocab_size not in the config: transformers' %s default %lld assumed", type,
                 (long long)dflt);
    return hf_size(c, "vocab_size", dflt);
}

/* GPT-2's names (n_embd, n_layer, ...). */
static void hf_gpt2(hf_ctx *c, px_model *m)
{
    m->block = PX_BLOCK_GPT;
    m->hidden = hf_size(c, "n_embd", -1);
    m->n_layers = hf_size(c, "n_layer", -1);
    m->n_heads = hf_size(c, "n_head", -1);
    m->n_kv_heads = m->n_heads;
    m->head_dim = m->n_heads ? m->hidden / m->n_heads : 0;
    m->ffn = hf_size(c, "n_inner", 4 * m->hidden); /* null means 4h */
    m->vocab = hf_vocab(c, "gpt2", m);
    m->max_positions = hf_size(c, "n_positions", hf_size(c, "n_ctx", 1024));
    m->seq_len = m->max_positions;
    m->tied_embeddings = hf_bool(c, "tie_word_embeddings", true);
    m->norm_eps = hf_num(c, "layer_norm_epsilon", PX_NORM_EPS_DEFAULT);
}

/* RoPE's base and the norms' epsilon.  transformers' defaults where the
 * config leaves them out (each configuration_<type>.py): rms_norm_eps 1e-6,
 * but 1e-5 for mixtral and gpt_oss; default_theta 10000, but 1e6 for
 * mixtral and 150000 for gpt_oss.  rope_theta sits at the top (older
 * configs) or inside rope_parameters (transformers 5), which wins. */
static void hf_numerics(hf_ctx *c, const char *t, px_model *m)
{
    bool five = strcmp(t, "mixtral") == 0 || strcmp(t, "gpt_oss") == 0;
    m->norm_eps = hf_num(c, "rms_norm_eps", five ? 1e-5 : 1e-6);
    double theta = strcmp(t, "mixtral") == 0   ? 1e6
                   : strcmp(t, "gpt_oss") == 0 ? 150000.0
                                               : PX_ROPE_THETA_DEFAULT;
    theta = hf_num(c, "rope_theta", theta);
    json_t *rp = json_object_get(c->root, "rope_parameters");
    if (json_is_object(rp))
        theta = hf_num_in(c, rp, "rope_parameters", "rope_theta", theta);
    m->rope_theta = theta;
}

/* A number of the rope dict that the rope_type needs (absent: an error). */
static double hf_rope_num(hf_ctx *c, json_t *rp, const char *where, const char *type,
                          const char *key)
{
    if (c->st == PX_OK && !json_is_number(json_object_get(rp, key))) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s.%s: missing or not a number; rope_type \"%s\" needs it", where,
                             key, type);
        return 0.0;
    }
    return hf_num_in(c, rp, where, key, 0.0);
}

/* RoPE scaling: rope_parameters (transformers 5) or rope_scaling (older
 * configs), by its rope_type (or type); null or "default": none.  llama3
 * and yarn are carried (the keys transformers' _compute_llama3_parameters
 * and _compute_yarn_parameters read; original_max_position_embeddings
 * defaults to max_position_embeddings, as its standardize_rope_params
 * does); any other type is refused by name. */
static void hf_rope_scaling(hf_ctx *c, px_model *m, int64_t maxpos)
{
    const char *where = "rope_parameters";
    json_t *rp = json_object_get(c->root, where);
    if (!rp || json_is_null(rp))
        rp = json_object_get(c->root, where = "rope_scaling");
    if (c->st != PX_OK || !rp || json_is_null(rp))
        return;
    json_t *ty = json_object_get(rp, "rope_type");
    if (!ty)
        ty = json_object_get(rp, "type");
    if (!json_is_object(rp) || (ty && !json_is_string(ty))) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s: expected null or an object with a string rope_type", where);
        return;
    }
    const char *t = ty ? json_string_value(ty) : "default";
    if (strcmp(t, "default") == 0)
        return;
    if (strcmp(t, "llama3") == 0 || strcmp(t, "yarn") == 0) {
        bool llama3 = t[0] == 'l';
        m->rope_scaling = llama3 ? PX_ROPE_LLAMA3 : PX_ROPE_YARN;
        m->rope_factor = hf_rope_num(c, rp, where, t, "factor");
        if (llama3) {
            m->rope_low_freq_factor = hf_rope_num(c, rp, where, t, "low_freq_factor");
            m->rope_high_freq_factor = hf_rope_num(c, rp, where, t, "high_freq_factor");
        }
        m->rope_original_max_positions =
            (int64_t)hf_num_in(c, rp, where, "original_max_position_embeddings", (double)maxpos);
        return;
    }
    c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                         "%s.rope_type \"%s\" is not supported; supported: default, llama3, "
                         "yarn", where, t);
}

/* The attention biases as each type's modeling code sets them: qwen2 on q,
 * k, v always (o_proj never); llama, qwen3, qwen3_moe, gpt_oss and the
 * gemma types on q, k, v and o when attention_bias (gpt_oss: default true);
 * mistral, mixtral, phi3 and deepseek_v3 none.  Biases the executor has no tensor for are refused by
 * name: llama's mlp_bias, deepseek_v3's attention_bias (on its MLA
 * down-projections). */
static void hf_biases(hf_ctx *c, const char *t, px_model *m)
{
    if (strcmp(t, "qwen2") == 0) {
        m->qkv_bias = true;
        return;
    }
    bool own = strcmp(t, "llama") == 0 || strcmp(t, "qwen3") == 0 ||
               strcmp(t, "qwen3_moe") == 0 || strcmp(t, "gpt_oss") == 0 || is_gemma(t);
    if (own)
        m->qkv_bias = m->o_bias = hf_bool(c, "attention_bias", strcmp(t, "gpt_oss") == 0);
    const char *refused = strcmp(t, "llama") == 0         ? "mlp_bias"
                          : strcmp(t, "deepseek_v3") == 0 ? "attention_bias"
                                                          : NULL;
    if (refused && hf_bool(c, refused, false) && c->st == PX_OK)
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "%s true: %s biases are not supported (allowed: false or absent)",
                             refused, strcmp(t, "llama") == 0 ? "MLP" : "MLA projection");
}

/* The Llama family's names (hidden_size, num_hidden_layers, ...). */
static void hf_llama(hf_ctx *c, const char *t, px_model *m)
{
    m->block = PX_BLOCK_LLAMA;
    m->hidden = hf_size(c, "hidden_size", -1);
    m->n_layers = hf_size(c, "num_hidden_layers", -1);
    m->n_heads = hf_size(c, "num_attention_heads", -1);
    m->n_kv_heads = hf_size(c, "num_key_value_heads", m->n_heads);
    m->head_dim = hf_size(c, "head_dim", m->n_heads ? m->hidden / m->n_heads : 0);
    m->ffn = hf_size(c, "intermediate_size", -1);
    m->vocab = hf_vocab(c, t, m);
    int64_t maxpos = hf_size(c, "max_position_embeddings", PX_HF_SEQ_CAP);
    m->seq_len = maxpos < PX_HF_SEQ_CAP ? maxpos : PX_HF_SEQ_CAP;
    /* Gemma ties the LM head to the embedding unless told otherwise */
    m->tied_embeddings = hf_bool(c, "tie_word_embeddings", is_gemma(t));
    hf_biases(c, t, m);
    m->qk_norm = strcmp(t, "qwen3") == 0 || strcmp(t, "qwen3_moe") == 0 ||
                 strcmp(t, "gemma3_text") == 0;
    /* Gemma 2 and 3 layers norm each branch's output too (transformers'
     * post_attention_layernorm and post_feedforward_layernorm; their
     * pre_feedforward_layernorm is the usual pre-MLP norm) */
    m->sandwich_norms = strcmp(t, "gemma2") == 0 || strcmp(t, "gemma3_text") == 0;
    hf_numerics(c, t, m);
    hf_rope_scaling(c, m, maxpos);
}

/* Fields that leave the cost unchanged but must hold a value the model
 * follows: the gated MLP's activation and Phi-3's partial rotary factor
 * (RoPE on part of each head: an element-wise pass the cost model charges
 * over the whole head). */
static px_status hf_check_llama_fields(hf_ctx *c, const char *t, px_model *m)
{
    const char *key = is_gemma(t) && json_object_get(c->root, "hidden_activation")
                          ? "hidden_activation"
                          : "hidden_act";
    json_t *act = json_object_get(c->root, key);
    if (act && !json_is_null(act)) {
        bool known = false;
        for (int i = 0; json_is_string(act) && hf_gated_acts[i]; i++)
            known = known || strcmp(json_string_value(act), hf_gated_acts[i]) == 0;
        if (!known)
            return px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                                "%s: %s%s%s is not a gated MLP activation the model reads "
                                "(allowed: silu, swish, gelu, gelu_pytorch_tanh, gelu_new, "
                                "gelu_fast)", key, json_is_string(act) ? "\"" : "",
                                json_is_string(act) ? json_string_value(act)
                                                    : px_jf_type_name(act),
                                json_is_string(act) ? "\"" : "");
        m->mlp_act = strncmp(json_string_value(act), "gelu", 4) == 0 ? PX_ACT_GELU
                                                                       : PX_ACT_SILU;
    } else if (is_gemma(t)) {
        m->mlp_act = PX_ACT_GELU; /* transformers' Gemma default: gelu_pytorch_tanh */
    }
    json_t *prf = json_object_get(c->root, "partial_rotary_factor");
    if (prf && !json_is_null(prf) &&
        (!json_is_number(prf) || json_number_value(prf) <= 0 || json_number_value(prf) > 1))
        return px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                            "partial_rotary_factor: expected a number in (0, 1]");
    if (prf && json_is_number(prf))
        m->rope_fraction = json_number_value(prf);
    return PX_OK;
}

/* Gemma 2 and 3 configs that predate layer_types: which layers slide, as
 * transformers derives it (Gemma 2: every other layer, the first sliding;
 * Gemma 3: sliding_window_pattern - 1 sliding layers, then one full).  NULL
 * when the config lists layer_types itself or has no window. */
static json_t *hf_gemma_layer_types(hf_ctx *c, const char *t, const px_model *m)
{
    if (json_object_get(c->root, "layer_types") || m->sliding_window <= 0 ||
        (strcmp(t, "gemma2") != 0 && strcmp(t, "gemma3_text") != 0))
        return NULL;
    int64_t period = strcmp(t, "gemma2") == 0 ? 2 : hf_size(c, "sliding_window_pattern", 6);
    if (c->st != PX_OK)
        return NULL;
    json_t *types = json_array();
    for (int64_t l = 0; l < m->n_layers; l++)
        json_array_append_new(types, json_string((l + 1) % period ? "sliding_attention"
                                                                  : "full_attention"));
    return types;
}

/* DeepSeek-V3's router, with transformers' DeepseekV3Config defaults:
 * sigmoid scores (DeepseekV3TopkRouter has no other), 8 groups keeping 4,
 * gates times 2.5. */
static void hf_deepseek_router(hf_ctx *c, px_model *m)
{
    m->scoring_func = PX_SCORING_SIGMOID;
    json_t *sf = json_object_get(c->root, "scoring_func");
    if (c->st == PX_OK && sf && !json_is_null(sf) &&
        !(json_is_string(sf) && strcmp(json_string_value(sf), "sigmoid") == 0))
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "scoring_func: deepseek_v3 routes by \"sigmoid\" only (allowed: "
                             "\"sigmoid\" or absent)");
    m->n_group = hf_size(c, "n_group", 8);
    m->topk_group = hf_size(c, "topk_group", 4);
    m->routed_scaling_factor = hf_num(c, "routed_scaling_factor", 2.5);
}

/* The routed experts (and MLA) of the MoE model types. */
static px_status hf_moe(hf_ctx *c, const char *t, px_model *m)
{
    if (strcmp(t, "mixtral") == 0 || strcmp(t, "gpt_oss") == 0) {
        /* gpt-oss: experts of intermediate_size; its attention sinks (one
         * learned logit per head in the softmax) cost nothing to count */
        m->attention_sinks = strcmp(t, "gpt_oss") == 0;
        m->n_experts = hf_size(c, "num_local_experts", -1);
        m->top_k = hf_size(c, "num_experts_per_tok", -1);
        m->moe_ffn = m->ffn;
        /* Mixtral divides the top-k softmax by its sum; gpt-oss takes the
         * softmax of the top-k logits: the same gates */
        m->norm_topk_prob = true;
    } else if (strcmp(t, "qwen3_moe") == 0) {
        m->n_experts = hf_size(c, "num_experts", -1);
        m->top_k = hf_size(c, "num_experts_per_tok", -1);
        m->moe_ffn = hf_size(c, "moe_intermediate_size", -1);
        m->norm_topk_prob = hf_bool(c, "norm_topk_prob", false);
        int64_t step = hf_size(c, "decoder_sparse_step", 1);
        json_t *mlp_only = json_object_get(c->root, "mlp_only_layers");
        if (c->st == PX_OK && mlp_only && !json_is_array(mlp_only))
            return px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                                "mlp_only_layers: expected a list of layer indices, got %s "
                                "(allowed: [] or absent)", px_jf_type_name(mlp_only));
        if (c->st == PX_OK && (step != 1 || (mlp_only && json_array_size(mlp_only) > 0)))
            return px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                                "decoder_sparse_step %lld / mlp_only_layers: only "
                                "decoder_sparse_step 1 and no mlp_only_layers are supported",
                                (long long)step);
    } else if (strcmp(t, "deepseek_v3") == 0) {
        m->attn = PX_ATTN_MLA;
        m->n_experts = hf_size(c, "n_routed_experts", -1);
        m->top_k = hf_size(c, "num_experts_per_tok", -1);
        m->moe_ffn = hf_size(c, "moe_intermediate_size", -1);
        m->n_shared_experts = hf_int(c, "n_shared_experts", 0);
        m->norm_topk_prob = hf_bool(c, "norm_topk_prob", true);
        hf_deepseek_router(c, m);
        /* DeepseekV3Config's rope_interleave, default true: the rope slice's
         * pairs are adjacent */
        m->rope_interleave = hf_bool(c, "rope_interleave", true);
        m->first_dense_layers = hf_int(c, "first_k_dense_replace", 0);
        m->moe_layer_freq = hf_size(c, "moe_layer_freq", 1);
        m->q_lora_rank = hf_int(c, "q_lora_rank", 0);
        m->kv_lora_rank = hf_size(c, "kv_lora_rank", -1);
        m->qk_nope_head_dim = hf_int(c, "qk_nope_head_dim", -1);
        m->qk_rope_head_dim = hf_size(c, "qk_rope_head_dim", -1);
        m->v_head_dim = hf_size(c, "v_head_dim", -1);
        m->n_mtp_modules = hf_int(c, "num_nextn_predict_layers", 0);
        m->head_dim = m->qk_nope_head_dim + m->qk_rope_head_dim;
    }
    return PX_OK;
}

/* A string of the config at key; NULL (and no error) when absent or null,
 * an error when it is another type.  allowed lists the values for it. */
static const char *hf_str(hf_ctx *c, const char *key, const char *allowed)
{
    json_t *v = json_object_get(c->root, key);
    if (c->st != PX_OK || !v || json_is_null(v))
        return NULL;
    if (!json_is_string(v)) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s: expected a string (allowed: %s), got %s", key, allowed,
                             px_jf_type_name(v));
        return NULL;
    }
    return json_string_value(v);
}

/* A flag the model holds at one value only: the config's other value is
 * refused by name. */
static void hf_bool_only(hf_ctx *c, const char *key, bool dflt, bool want, const char *what)
{
    if (hf_bool(c, key, dflt) != want && c->st == PX_OK)
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "%s %s: %s (allowed: %s or absent)", key, want ? "false" : "true",
                             what, want ? "true" : "false");
}

/* The hybrid pattern (hybrid_override_pattern): one symbol of M * - E a
 * layer.  Megatron-Core's other symbols (G gated delta net, D DeepSeek
 * sparse attention, + MLA, | a pipeline-stage boundary, / the MTP
 * separator) are refused by name. */
static void hf_hybrid_pattern(hf_ctx *c, px_model *m)
{
    const char *key = "hybrid_override_pattern";
    const char *allowed = "M (Mamba-2), * (attention), - (MLP), E (experts)";
    const char *pat = hf_str(c, key, allowed);
    if (c->st != PX_OK)
        return;
    if (!pat || !pat[0]) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s: missing required field (a string of %s, one a layer)", key,
                             allowed);
        return;
    }
    size_t len = strlen(pat), ok = strspn(pat, PX_HYBRID_SYMBOLS);
    if (ok < len) {
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "%s[%zu] '%c' is not a layer the model has; allowed symbols: %s",
                             key, ok, pat[ok], allowed);
        return;
    }
    if (len > PX_MODEL_MAX_LAYERS) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s has %zu symbols; at most %d layers are supported", key, len,
                             PX_MODEL_MAX_LAYERS);
        return;
    }
    if ((int64_t)len != m->n_layers) {
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "%s has %zu symbols, num_hidden_layers is %lld (one symbol a "
                             "layer)", key, len, (long long)m->n_layers);
        return;
    }
    memcpy(m->layer_pattern, pat, len + 1);
}

/* The Mamba-2 mixer of the 'M' layers: mamba_num_heads heads of
 * mamba_head_dim, ssm_state_size, n_groups (transformers' default 8),
 * conv_kernel taps (default 4); the mixer's activation is SiLU, its
 * projections unbiased, its convolution biased (what the count holds). */
static void hf_mamba(hf_ctx *c, px_model *m)
{
    m->mamba_heads = hf_size(c, "mamba_num_heads", -1);
    m->mamba_head_dim = hf_size(c, "mamba_head_dim", -1);
    m->mamba_state = hf_size(c, "ssm_state_size", -1);
    m->mamba_groups = hf_size(c, "n_groups", 8);
    m->mamba_conv = hf_size(c, "conv_kernel", PX_MAMBA_CONV_DEFAULT);
    if (c->st == PX_OK && m->mamba_heads % m->mamba_groups != 0)
        c->st = px_error_set(c->err, PX_ERR_INVALID, c->file, 0, 0,
                             "n_groups %lld does not divide mamba_num_heads %lld: each group's "
                             "B and C serve a whole set of heads", (long long)m->mamba_groups,
                             (long long)m->mamba_heads);
    const char *act = hf_str(c, "mamba_hidden_act", "silu");
    if (c->st == PX_OK && act && strcmp(act, "silu") != 0)
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "mamba_hidden_act: \"%s\" is not the Mamba-2 mixer's activation "
                             "(allowed: silu)", act);
    hf_bool_only(c, "mamba_proj_bias", false, false, "biases on the mixer's projections are "
                                                     "not modelled");
    hf_bool_only(c, "use_conv_bias", true, true, "the mixer's convolution has a bias");
}

/* The routed experts of the 'E' layers, as Megatron-Bridge maps them
 * (nemotron_h_bridge.py): sigmoid scores (NemotronHTopkRouter, Megatron's
 * moe_router_score_function "sigmoid"), one shared expert of
 * moe_shared_expert_intermediate_size, held here as n_shared_experts of
 * moe_ffn when it divides exactly (Nemotron 3 Nano: 3712 = 2 x 1856). */
static void hf_nemotron_h_moe(hf_ctx *c, px_model *m)
{
    m->n_experts = hf_size(c, "n_routed_experts", -1);
    m->top_k = hf_size(c, "num_experts_per_tok", -1);
    m->moe_ffn = hf_size(c, "moe_intermediate_size", -1);
    int64_t shared = hf_int(c, "moe_shared_expert_intermediate_size", 0);
    if (c->st == PX_OK && shared % m->moe_ffn != 0) {
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "moe_shared_expert_intermediate_size %lld is not a multiple of "
                             "moe_intermediate_size %lld: the model holds shared experts of "
                             "the routed experts' size (allowed: 0 or a multiple)",
                             (long long)shared, (long long)m->moe_ffn);
        return;
    }
    m->n_shared_experts = c->st == PX_OK ? shared / m->moe_ffn : 0;
    m->scoring_func = PX_SCORING_SIGMOID;
    m->norm_topk_prob = hf_bool(c, "norm_topk_prob", true);
    m->n_group = hf_size(c, "n_group", 1);
    m->topk_group = hf_size(c, "topk_group", 1);
    m->routed_scaling_factor = hf_num(c, "routed_scaling_factor", 1.0);
    if (c->st == PX_OK && hf_int(c, "moe_latent_size", 0) > 0)
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "moe_latent_size %lld: latent MoE (experts on a down-projected "
                             "hidden state) is not modelled (allowed: 0, null or absent)",
                             (long long)hf_int(c, "moe_latent_size", 0));
}

/* Nemotron-H, Nemotron Nano v2 and Nemotron 3 (model_type nemotron_h), the
 * keys as Megatron-Bridge's NemotronHBridge maps them: a hybrid stack
 * (hybrid_override_pattern) of RMSNorm-ed layers without biases, a
 * squared-ReLU MLP (mlp_hidden_act relu2), attention without positions
 * (Megatron's position_embedding_type "none": rope_fraction 0), untied
 * embeddings by default. */
static void hf_nemotron_h(hf_ctx *c, px_model *m)
{
    m->block = PX_BLOCK_LLAMA;
    m->hidden = hf_size(c, "hidden_size", -1);
    m->n_layers = hf_size(c, "num_hidden_layers", -1);
    m->n_heads = hf_size(c, "num_attention_heads", -1);
    m->n_kv_heads = hf_size(c, "num_key_value_heads", m->n_heads);
    int64_t hd = hf_size(c, "attention_head_dim", m->n_heads ? m->hidden / m->n_heads : 0);
    m->head_dim = hf_size(c, "head_dim", hd);
    m->ffn = hf_size(c, "intermediate_size", -1);
    m->vocab = hf_vocab(c, "nemotron_h", m);
    int64_t maxpos = hf_size(c, "max_position_embeddings", PX_HF_SEQ_CAP);
    m->seq_len = maxpos < PX_HF_SEQ_CAP ? maxpos : PX_HF_SEQ_CAP;
    m->tied_embeddings = hf_bool(c, "tie_word_embeddings", false);
    m->norm_eps = hf_num(c, "layer_norm_epsilon", hf_num(c, "rms_norm_eps", 1e-5));
    hf_bool_only(c, "use_bias", false, false, "biases on the linear layers are not modelled");
    hf_bool_only(c, "attention_bias", false, false, "attention biases are not modelled");
    hf_bool_only(c, "mlp_bias", false, false, "MLP biases are not modelled");
    const char *act = hf_str(c, "mlp_hidden_act", "relu2");
    if (c->st == PX_OK && act && strcmp(act, "relu2") != 0)
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "mlp_hidden_act: \"%s\" is not an MLP activation the model reads "
                             "for nemotron_h (allowed: relu2)", act);
    m->mlp_act = PX_ACT_RELU2;
    m->rope_fraction = 0.0;
    int64_t mtp = hf_int(c, "num_nextn_predict_layers", 0);
    if (c->st == PX_OK && mtp > 0)
        c->st = px_error_set(c->err, PX_ERR_UNSUPPORTED, c->file, 0, 0,
                             "num_nextn_predict_layers %lld: multi-token prediction on a hybrid "
                             "stack (mtp_hybrid_override_pattern) is not modelled (allowed: 0, "
                             "null or absent)", (long long)mtp);
    hf_hybrid_pattern(c, m);
    if (c->st == PX_OK && strchr(m->layer_pattern, 'M'))
        hf_mamba(c, m);
    /* MoE keys count only where 'E' layers use them (a dense model's config
     * may carry transformers' defaults) */
    if (c->st == PX_OK && strchr(m->layer_pattern, 'E'))
        hf_nemotron_h_moe(c, m);
}

/* Heads that split the hidden size and KV heads that divide the query
 * heads, named in the config's own keys. */
static px_status hf_check_heads(json_t *root, const char *file, const px_model *m,
                                px_error *err)
{
    /* the head layout, in the config's own names */
    bool gpt = m->block == PX_BLOCK_GPT;
    const char *k_hidden = gpt ? "n_embd" : "hidden_size";
    const char *k_heads = gpt ? "n_head" : "num_attention_heads";
    bool has_head_dim = !gpt && m->attn != PX_ATTN_MLA &&
                        (json_is_integer(json_object_get(root, "head_dim")) ||
                         json_is_integer(json_object_get(root, "attention_head_dim")));
    if (m->attn != PX_ATTN_MLA && !has_head_dim && m->hidden % m->n_heads != 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s %lld is not divisible by %s %lld: heads must split the hidden "
                            "size evenly unless head_dim is given",
                            k_hidden, (long long)m->hidden, k_heads, (long long)m->n_heads);
    if (!gpt && m->n_heads % m->n_kv_heads != 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "num_key_value_heads %lld does not divide num_attention_heads %lld: "
                            "each kv head serves a whole group of query heads",
                            (long long)m->n_kv_heads, (long long)m->n_heads);
    return PX_OK;
}

static px_status load_hf(json_t *root, const char *file, px_model *m, px_error *err)
{
    const char *t = NULL;
    px_status tst = hf_model_type(root, file, &t, err);
    if (tst != PX_OK)
        return tst;

    hf_ctx c = {root, file, err, PX_OK};
    px_model_defaults(m);
    hf_name(file, t, m->name, sizeof m->name);
    bool nemotron_h = strcmp(t, "nemotron_h") == 0;
    if (strcmp(t, "gpt2") == 0) {
        hf_gpt2(&c, m);
    } else if (nemotron_h) {
        hf_nemotron_h(&c, m);
    } else {
        hf_llama(&c, t, m);
        px_status mst = hf_moe(&c, t, m);
        if (mst == PX_OK && c.st == PX_OK)
            mst = hf_check_llama_fields(&c, t, m);
        if (mst != PX_OK)
            return mst;
    }
    /* sliding-window attention: Mistral (every layer), Qwen2 when
     * use_sliding_window, gpt-oss / Gemma by layer_types */
    bool window = strcmp(t, "qwen2") != 0 || hf_bool(&c, "use_sliding_window", false);
    if (m->block == PX_BLOCK_LLAMA && window && !nemotron_h)
        m->sliding_window = hf_int(&c, "sliding_window", 0);
    if (c.st != PX_OK)
        return c.st;
    json_t *derived = hf_gemma_layer_types(&c, t, m);
    if (c.st != PX_OK)
        return c.st;
    if (m->sliding_window > 0 || json_object_get(root, "layer_types")) {
        json_t *types = derived ? derived : json_object_get(root, "layer_types");
        px_status sst = px_sliding_read(m, types, file,
                                        derived ? "sliding_window_pattern" : "layer_types", err);
        json_decref(derived);
        if (sst != PX_OK)
            return sst;
    }
    px_status hst = hf_check_heads(root, file, m, err);
    if (hst != PX_OK)
        return hst;
    px_status st = px_model_validate(m, err);
    if (st != PX_OK && err && !err->file[0])
        snprintf(err->file, sizeof err->file, "%s", file);
    return st;
}

px_status px_model_from_any_json(json_t *root, const char *label, px_model *out,
                                 px_error *err)
{
    if (json_is_object(root) && json_object_get(root, "model_type"))
        return load_hf(root, label, out, err);
    return px_model_from_json(root, label, "", out, err);
}

