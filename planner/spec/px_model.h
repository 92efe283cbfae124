/* px_model.h — a decoder-only transformer, as the cost model and the executor
 * see it.  Loaded from a preset in models/ (schema: docs/model-schema.md) or a
 * Hugging Face config.json.  Sizes are element counts, not bytes. */
#ifndef PX_MODEL_H
#define PX_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"

/* The most layers a model has: the bound of n_layers, and of the per-layer
 * arrays (px_plan.h's PX_MAX_LAYERS is this). */
#define PX_MODEL_MAX_LAYERS 1024

/* The largest parameter count a model may have: 2^50 (1.1e15), about 500x
 * the largest published model; the byte counts formed from it stay exact in
 * int64 and double (px_model_validate enforces it with checked sums). */
#define PX_MODEL_MAX_PARAMS (INT64_C(1) << 50)

/* The two block kinds.  GPT: LayerNorm, learned positions, MHA, GeLU MLP
 * (f = 4h usually), biases.  Llama: RMSNorm, RoPE, GQA, SwiGLU MLP, no biases. */
typedef enum { PX_BLOCK_GPT = 0, PX_BLOCK_LLAMA = 1 } px_block_kind;

/* Attention flavour: standard (MHA/GQA/MQA through n_kv_heads) or DeepSeek's
 * multi-head latent attention (low-rank q and kv projections). */
typedef enum { PX_ATTN_STANDARD = 0, PX_ATTN_MLA = 1 } px_attn_kind;

typedef struct {
    char name[64];
    px_block_kind block;
    px_attn_kind attn;

    int64_t hidden;      /* h */
    int64_t n_layers;    /* L */
    int64_t n_heads;     /* a */
    int64_t n_kv_heads;  /* k (== a for MHA) */
    int64_t head_dim;    /* usually h/a; Qwen3 and Gemma-style models differ */
    int64_t ffn;         /* f: dense MLP inner size */
    int64_t vocab;       /* V */
    int64_t seq_len;     /* default training sequence length s */
    int64_t max_positions; /* learned position table size (GPT), 0 for RoPE */
    bool tied_embeddings;  /* LM head shares the embedding matrix */
    bool qkv_bias;         /* biases on q, k, v projections (Qwen2, GPT) */
    bool qk_norm;          /* RMSNorm on q and k per head (Qwen3) */

    /* Mixture of experts: n_experts == 0 means dense. */
    int64_t n_experts;         /* E routed experts */
    int64_t top_k;             /* r experts per token */
    int64_t moe_ffn;           /* inner size of one expert */
    int64_t n_shared_experts;  /* always-active experts of size moe_ffn */
    int64_t first_dense_layers;/* leading layers with a dense MLP (DeepSeek-V3: 3) */
    int64_t moe_layer_freq;    /* every k-th layer after those is MoE (1 = all) */

    /* MLA (attn == PX_ATTN_MLA) */
    int64_t q_lora_rank;       /* 0: q is a full projection */
    int64_t kv_lora_rank;
    int64_t qk_nope_head_dim;
    int64_t qk_rope_head_dim;
    int64_t v_head_dim;

    /* Multi-token prediction modules (DeepSeek-V3: 1); counted separately. */
    int64_t n_mtp_modules;

    /* Sliding-window attention (Mistral, Gemma, gpt-oss): a query attends to
     * at most sliding_window keys (itself and the ones before it) on the
     * layers whose bit is set in layer_sliding (bit l % 8 of byte l / 8);
     * 0: full causal attention on every layer (px_sliding.h). */
    int64_t sliding_window;
    uint8_t layer_sliding[PX_MODEL_MAX_LAYERS / 8];
} px_model;

/* Parameter counts, in elements. */
typedef struct {
    int64_t embedding;      /* V*h (+ learned positions) */
    int64_t lm_head;        /* V*h, 0 if tied */
    int64_t final_norm;
    int64_t attention;      /* all layers: q,k,v,o (+ biases, norms inside attn) */
    int64_t dense_mlp;      /* all dense-MLP layers */
    int64_t expert_mlp;     /* all routed experts of all MoE layers */
    int64_t shared_expert_mlp;
    int64_t router;
    int64_t norms;          /* per-layer norms */
    int64_t mtp;            /* multi-token-prediction modules */
    int64_t total;          /* everything above except mtp */
    int64_t active;         /* per token: total minus the routed experts not chosen */
} px_param_count;

/* Loads a model by preset name (models/<name>.json, aliases such as "70b"),
 * or by path: a preset-schema JSON or a Hugging Face config.json (detected by
 * its "model_type").  models_dir may be NULL for the built-in default. */
px_status px_model_load(const char *name_or_path, const char *models_dir,
                        px_model *out, px_error *err);

/* Lists the preset names (and aliases) found in models_dir, comma-separated. */
void px_model_list_presets(const char *models_dir, char *buf, int buf_len);

/* The fields a model has before a reader sets them: everything 0, a Llama
 * block of standard attention, MoE on every layer (moe_layer_freq 1). */
void px_model_defaults(px_model *m);
/* Checks internal consistency (positive sizes, heads divide hidden...). */
px_status px_model_validate(const px_model *m, px_error *err);

/* True when layer i (0-based) has a routed-expert MLP. */
bool px_model_layer_is_moe(const px_model *m, int64_t layer);

/* Parameters of one transformer layer (attention + MLP + norms), elements. */
int64_t px_model_layer_params(const px_model *m, int64_t layer);

void px_model_count_params(const px_model *m, px_param_count *out);

/* Weights of layer i that take part in matrix multiplies for one token:
 * attention projections, the dense MLP or, with active_only, the shared
 * experts + top_k routed experts + router (all experts otherwise).  Norms and
 * biases excluded.  Used for FLOPs. */
int64_t px_model_layer_matmul_params(const px_model *m, int64_t layer, bool active_only);

/* Per-head widths of the attention core: query/key dot-product width and
 * value width (both head_dim for standard attention; MLA: nope+rope and v). */
int64_t px_model_qk_head_dim(const px_model *m);
int64_t px_model_v_head_dim(const px_model *m);

/* Default directory of presets (compiled in; PARALLAX_MODELS_DIR overrides). */
const char *px_models_dir_default(void);

#endif
