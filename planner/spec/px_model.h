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

/* Defaults of the numeric fields: RoPE's original base (Su et al. 2021,
 * Llama 1/2), the 1e-5 of Llama 2's and GPT-2's norms, and the 1e-6 that
 * DeepSeek-V2/V3 give their MLA latent RMSNorms in code (not in config.json). */
#define PX_ROPE_THETA_DEFAULT 10000.0
#define PX_NORM_EPS_DEFAULT 1e-5
#define PX_LATENT_NORM_EPS_DEFAULT 1e-6

typedef enum { PX_SCORING_SOFTMAX = 0, PX_SCORING_SIGMOID = 1 } px_router_scoring;
typedef enum { PX_ROPE_NONE = 0, PX_ROPE_LLAMA3 = 1, PX_ROPE_YARN = 2 } px_rope_scaling;
/* The llama block's MLP activation: SiLU (SwiGLU) or a tanh GeLU (GeGLU,
 * Gemma), both gated, with the same GEMMs and element-wise bytes; or the
 * squared ReLU of Nemotron-4 and Nemotron-H, which is not gated (an up and
 * a down projection, px_model_mlp_gated). */
typedef enum { PX_ACT_SILU = 0, PX_ACT_GELU = 1, PX_ACT_RELU2 = 2 } px_mlp_act;

/* What one layer computes.  A transformer block is attention and an MLP
 * (dense or routed experts).  A hybrid stack (px_hybrid.h, Megatron-Core's
 * hybrid models) builds each layer from one sublayer only -- a Mamba-2
 * mixer, attention, a dense MLP or routed experts -- each with its own
 * pre-norm and residual add.  The cost model prices one layer of each kind
 * the model has. */
typedef enum {
    PX_LAYER_DENSE = 0,     /* attention + a dense MLP */
    PX_LAYER_MOE = 1,       /* attention + routed (and shared) experts */
    PX_LAYER_MAMBA = 2,     /* hybrid 'M': a Mamba-2 mixer */
    PX_LAYER_ATTENTION = 3, /* hybrid '*': attention */
    PX_LAYER_MLP = 4,       /* hybrid '-': a dense MLP */
    PX_LAYER_EXPERTS = 5,   /* hybrid 'E': routed (and shared) experts */
} px_layer_kind;
#define PX_LAYER_KINDS 6

static inline bool px_layer_has_attention(px_layer_kind k)
{
    return k == PX_LAYER_DENSE || k == PX_LAYER_MOE || k == PX_LAYER_ATTENTION;
}
static inline bool px_layer_has_dense_mlp(px_layer_kind k)
{
    return k == PX_LAYER_DENSE || k == PX_LAYER_MLP;
}
static inline bool px_layer_has_experts(px_layer_kind k)
{
    return k == PX_LAYER_MOE || k == PX_LAYER_EXPERTS;
}
/* Sublayers, each with a pre-norm and a residual add: 2 in a transformer
 * block, 1 in a hybrid layer. */
static inline int px_layer_sublayers(px_layer_kind k)
{
    return k == PX_LAYER_DENSE || k == PX_LAYER_MOE ? 2 : 1;
}

/* The most router groups (DeepSeek-V3: 8); the executor's bound too. */
#define PX_MODEL_MAX_GROUPS 64

/* The two block kinds.  GPT: LayerNorm, learned positions, MHA, GeLU MLP
 * (f = 4h usually), biases.  Llama: RMSNorm, RoPE, GQA, SwiGLU MLP, no biases. */
typedef enum { PX_BLOCK_GPT = 0, PX_BLOCK_LLAMA = 1 } px_block_kind;

/* Attention flavour: standard (MHA/GQA/MQA through n_kv_heads) or DeepSeek's
 * multi-head latent attention (low-rank q and kv projections). */
typedef enum { PX_ATTN_STANDARD = 0, PX_ATTN_MLA = 1 } px_attn_kind;

typedef struct {
    char name[64];
    char config_note[128]; /* what the config left out and the loader assumed
                            * for it, to be said with the plan ("" for nothing) */
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
    bool o_bias;           /* a bias on the attention output projection (GPT; HF
                            * attention_bias of llama / qwen3 / gpt_oss) */
    bool qk_norm;          /* RMSNorm on q and k per head (Qwen3) */
    bool sandwich_norms;   /* Gemma 2 / 3: an RMSNorm on the attention's and on the
                            * MLP's output before each residual add, four norms a
                            * layer; the planner costs them, execute refuses them */
    bool attention_sinks;  /* gpt-oss: a learned logit per head in the softmax,
                            * with its clamped SwiGLU and biased router and
                            * experts; the planner costs it, execute refuses it */
    px_mlp_act mlp_act;    /* the llama block's MLP activation; execute runs SiLU only */
    double rope_fraction;  /* share of each head's width RoPE rotates (HF
                            * partial_rotary_factor; 1: all; 0: no positional
                            * encoding, Nemotron-H); execute runs 1 only */

    /* Numerics that change the function, not the cost (the executor runs
     * them; the cost model ignores them).  rope_theta: base of the RoPE
     * frequencies (llama block); norm_eps: epsilon of every RMSNorm /
     * LayerNorm but MLA's latent norms, which use latent_norm_eps. */
    double rope_theta;
    /* RoPE frequency scaling (Hugging Face rope_scaling / rope_parameters):
     * none; Llama 3.1's "llama3" (rope_factor, the low/high frequency
     * factors, rope_original_max_positions); "yarn" (rope_factor and
     * rope_original_max_positions carried; execute refuses it). */
    px_rope_scaling rope_scaling;
    bool rope_interleave;  /* RoPE pairs (2i, 2i+1) (DeepSeek-V2/V3's MLA), not
                            * (i, i + d/2) */
    double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
    int64_t rope_original_max_positions;
    double norm_eps;
    double latent_norm_eps;

    /* Mixture of experts: n_experts == 0 means dense. */
    int64_t n_experts;         /* E routed experts */
    int64_t top_k;             /* r experts per token */
    int64_t moe_ffn;           /* inner size of one expert */
    int64_t n_shared_experts;  /* always-active experts of size moe_ffn */
    int64_t first_dense_layers;/* leading layers with a dense MLP (DeepSeek-V3: 3) */
    int64_t moe_layer_freq;    /* every k-th layer after those is MoE (1 = all) */
    bool norm_topk_prob;       /* gates renormalised over the top_k chosen */
    /* The router (executor only; kernels/cpu/px_router.h): scores by softmax
     * over the experts or sigmoid each (DeepSeek-V3); group-limited picks
     * (n_group groups, the topk_group best kept; 1, 1: none); gates times
     * routed_scaling_factor. */
    px_router_scoring scoring_func;
    int64_t n_group, topk_group;
    double routed_scaling_factor;

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

    /* A hybrid stack (px_hybrid.h): layer l is the sublayer named by
     * layer_pattern[l], Megatron-Core's symbols -- 'M' a Mamba-2 mixer, '*'
     * attention, '-' a dense MLP, 'E' routed experts.  "": every layer is a
     * transformer block. */
    char layer_pattern[PX_MODEL_MAX_LAYERS + 1];
    /* The Mamba-2 mixer of 'M' layers (Dao & Gu 2024, Megatron-Core's
     * MambaMixer): mamba_heads heads of mamba_head_dim channels (d_inner =
     * their product), mamba_groups groups of B and C, each of mamba_state
     * state channels, a causal depthwise convolution of mamba_conv taps. */
    int64_t mamba_heads, mamba_head_dim, mamba_state, mamba_groups, mamba_conv;
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
    int64_t mamba;          /* all Mamba-2 mixers (px_hybrid.h), without their pre-norms */
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

/* Every optional field at its schema default (docs/model-schema.md), the
 * required ones zero. */
void px_model_defaults(px_model *m);

/* Checks internal consistency (positive sizes, heads divide hidden...). */
px_status px_model_validate(const px_model *m, px_error *err);

/* What layer i (0-based) computes; layer n_layers is the one the MTP
 * modules copy (a transformer block). */
px_layer_kind px_model_layer_kind(const px_model *m, int64_t layer);

/* True when layer i (0-based) has routed experts (PX_LAYER_MOE, _EXPERTS). */
bool px_model_layer_is_moe(const px_model *m, int64_t layer);

/* Whether the dense MLP and the experts are gated (SwiGLU, GeGLU: three
 * matrices) rather than an up and a down projection (GPT's GeLU, squared
 * ReLU). */
bool px_model_mlp_gated(const px_model *m);

/* Parameters of one layer (its sublayers and their norms), elements. */
int64_t px_model_layer_params(const px_model *m, int64_t layer);

void px_model_count_params(const px_model *m, px_param_count *out);

/* Weights of layer i that take part in matrix multiplies for one token:
 * attention projections, the dense MLP or, with active_only, the shared
 * experts + top_k routed experts + router (all experts otherwise).  Norms and
 * biases excluded.  Used for FLOPs. */
int64_t px_model_layer_matmul_params(const px_model *m, int64_t layer, bool active_only);

/* Norms in a transformer block: 2 (before attention and before the MLP), 4
 * with sandwich_norms (one more on each branch's output); a hybrid layer
 * has one (px_model_kind_norms). */
int px_model_layer_norms(const px_model *m);
int px_model_kind_norms(const px_model *m, px_layer_kind k);

/* Those norms' parameters, elements: LayerNorm has a weight and a bias,
 * RMSNorm a weight. */
int64_t px_model_kind_norm_params(const px_model *m, px_layer_kind k);

/* Per-head widths of the attention core: query/key dot-product width and
 * value width (both head_dim for standard attention; MLA: nope+rope and v). */
int64_t px_model_qk_head_dim(const px_model *m);
int64_t px_model_v_head_dim(const px_model *m);

/* Default directory of presets (compiled in; PARALLAX_MODELS_DIR overrides). */
const char *px_models_dir_default(void);

#endif
