/* px_params.h — which slice of which model tensor each rank holds, where it
 * sits in the rank's one contiguous parameter buffer, and its initial values.
 *
 * Every tensor of the full model has an id; a rank holds rectangular slices
 * ("segments") of some of them: rows [row0, row0 + n_rows) x cols [col0,
 * col0 + n_cols) of the full [full_rows, full_cols] tensor (vectors are
 * [n, 1]).  Weights are initialised by a counter-based hash of (seed, tensor
 * id, global row, global col), so every split starts from the same full model.
 * Gradients use the same offsets in their own buffer. */
#ifndef PX_PARAMS_H
#define PX_PARAMS_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_plan.h"

typedef enum { PX_INIT_NORMAL = 0, PX_INIT_ONES, PX_INIT_ZEROS } px_init_kind;

/* Tensor kinds; a layer's tensor id is PX_TID_LAYER0 + layer * 32 + kind. */
enum { PX_T_WORD_EMB = 1, PX_T_POS_EMB, PX_T_FINAL_NORM_W, PX_T_FINAL_NORM_B, PX_T_LM_HEAD };
enum {
    PX_T_LN1_W = 0, PX_T_LN1_B, PX_T_WQ, PX_T_WK, PX_T_WV, PX_T_BQ, PX_T_BK, PX_T_BV, PX_T_WO,
    PX_T_BO, PX_T_LN2_W, PX_T_LN2_B, PX_T_W_GATE, PX_T_W_UP, PX_T_W_FC, PX_T_B_FC, PX_T_W_DOWN,
    PX_T_B_DOWN,
    /* MoE layers: the router [E, h]; the experts' gate|up stacked expert by
     * expert, [E 2 f_e, h] (expert e: rows [2 e f_e, 2 (e + 1) f_e), gate
     * first), and their down projections [E h, f_e] (expert e: rows [e h,
     * (e + 1) h)). */
    PX_T_ROUTER, PX_T_EXP_W1, PX_T_EXP_W2
};
/* An MLA layer has no Wq, Wk, Wv nor q/k/v biases: its own tensors take
 * those kinds (a layer has 32). */
enum {
    PX_T_MLA_WQ_A = PX_T_WQ, PX_T_MLA_WQ_B = PX_T_WK, PX_T_MLA_WKV_A = PX_T_WV,
    PX_T_MLA_WKV_B = PX_T_BQ, PX_T_MLA_Q_NORM = PX_T_BK, PX_T_MLA_KV_NORM = PX_T_BV
};
/* Kinds counted down from the top of a layer's 32 ids: qk_norm's per-head
 * RMSNorm weights [head_dim] (px_qknorm.c) and the shared experts' gate, up
 * [n_shared moe_ffn, h] and down [h, n_shared moe_ffn] (px_shared_expert.c). */
enum { PX_T_Q_NORM_W = 31, PX_T_K_NORM_W = 30, PX_T_SH_W_GATE = 29, PX_T_SH_W_UP = 28,
       PX_T_SH_W_DOWN = 27 };
/* A multi-token-prediction module k (1-based, px_mtp.c) takes the ids of
 * layer n_layers + k - 1 for its transformer layer and these kinds for its
 * own tensors: the embedding's and the hidden state's RMSNorm weights [h],
 * the projection [h, 2 h] as its two column halves [h, h] (the embedding's
 * half first, as Megatron-Core concatenates) and its output RMSNorm weight
 * [h]. */
enum { PX_T_MTP_ENORM = 21, PX_T_MTP_HNORM, PX_T_MTP_EH_E, PX_T_MTP_EH_H, PX_T_MTP_NORM };
#define PX_TID_LAYER0 100
#define PX_TID_LAYER(layer, kind) (PX_TID_LAYER0 + (int64_t)(layer) * 32 + (kind))

/* LoRA adapters (px_lora.c) have ids of their own, far above every layer's:
 * PX_TID_LORA(layer, kind), 16 kinds a layer.  A of a target is [r, in];
 * its B is [out, r], in the row blocks of the base weight (q, k, v; gate,
 * up), so B splits over TP as the base weight's rows do. */
enum {
    PX_T_LORA_A_QKV = 0, PX_T_LORA_B_Q, PX_T_LORA_B_K, PX_T_LORA_B_V, PX_T_LORA_A_PROJ,
    PX_T_LORA_B_PROJ, PX_T_LORA_A_FC1, PX_T_LORA_B_FC1, PX_T_LORA_B_UP, PX_T_LORA_A_FC2,
    PX_T_LORA_B_FC2
};
#define PX_TID_LORA0 ((int64_t)1 << 40)
#define PX_TID_LORA(layer, kind) (PX_TID_LORA0 + (int64_t)(layer) * 16 + (kind))

/* LoRA keeps the base model in a second, frozen table (px_exec.c: no
 * gradients, no optimizer state); the engine's offsets of those tensors
 * carry this bit, so px_ex_w reads them from the frozen buffer and px_ex_g
 * gives none. */
#define PX_OFF_FROZEN ((int64_t)1 << 62)
static inline bool px_off_frozen(int64_t off)
{
    return off >= 0 && (off & PX_OFF_FROZEN) != 0;
}

typedef struct {
    int64_t tensor_id;
    int64_t full_rows, full_cols;
    int64_t row0, n_rows, col0, n_cols;
    int64_t offset;     /* elements from the start of the buffer */
    px_init_kind init;
    bool tp_replicated; /* same values on every TP rank (norms, row biases, positions) */
    bool tp_sum;        /* gradient partial on every TP rank whatever SP says (the
                         * router: each TP rank routes its own slice of tokens) */
    bool expert;        /* routed-expert weights: reduced over the expert-data-
                         * parallel group, not dp x cp */
} px_param_seg;

/* Offsets (elements) of one layer's tensors; -1 when absent.  Fused layouts:
 * wqkv = [Wq | Wk | Wv] rows of this rank's heads, w1 = [Wgate | Wup] (Llama)
 * or Wfc (GPT), w2 = Wdown. */
typedef struct {
    int64_t layer; /* global index */
    int64_t ln1_w, ln1_b, wqkv, bqkv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2;
    /* MoE layer (w1 .. b2 are -1 then): router, and this rank's experts'
     * gate|up [E_l 2 f_e, h] and down [E_l h, f_e] (in the expert region;
     * f_e is the table's fe_l: moe_ffn / etp). */
    int64_t router, ew1, ew2;
    /* MLA layer (wqkv, bqkv are -1 then; wo is [h, heads v_head_dim]):
     * q down [q_lora, h] (or, q_lora_rank 0, the full column-parallel
     * [heads (nope + rope), h]), q latent norm, q up [heads (nope + rope),
     * q_lora], kv down [kv_lora + rope, h], kv latent norm, kv up
     * [heads (nope + v), kv_lora]; this rank's heads' rows of the ups. */
    int64_t mla_wqa, mla_qnorm, mla_wqb, mla_wkva, mla_kvnorm, mla_wkvb;
    /* qk_norm weights [hd] each (TP-replicated, gradients summed over TP);
     * shared experts' gate|up rows of this TP rank [2 fs_l, h] and down
     * columns [h, fs_l] (fs_l = n_shared moe_ffn / tp), in the dense region. */
    int64_t q_norm, k_norm, sw1, sw2;
    /* LoRA adapters per target (index: bit of PX_LORA_QKV .. PX_LORA_FC2):
     * A and B of this rank (px_lora.h), -1 when the target has none. */
    int64_t lora_a[4], lora_b[4];
} px_layer_params;

/* Offsets of one MTP module's tensors.  eh_e and eh_h are the projection's
 * two column halves, [h, h] each, replicated over TP like the norms. */
typedef struct {
    int64_t enorm, hnorm, eh_e, eh_h, norm;
    px_layer_params layer; /* layer index n_layers + k - 1 (ids), shaped like n_layers */
} px_mtp_params;

typedef struct {
    int model_chunk;     /* index in model order (0 .. pp*vpp-1) */
    int64_t first_layer; /* global */
    int64_t n_layers;
    bool is_first, is_last;
    px_layer_params *layers; /* [n_layers] */
} px_chunk_params;

typedef struct {
    px_param_seg *segs;
    int n_segs, cap_segs;
    int64_t n_elems;     /* sum of segment sizes */
    /* The dense region [0, n_dense) comes first; the routed experts' segments
     * follow from n_dense on (n_dense = n_elems for a dense model; with
     * experts, it is padded to a multiple of dp x cp so ZeRO-1 shards the
     * dense region alone). */
    int64_t n_dense;
    int64_t expert0, n_experts_local; /* this rank's experts [expert0, +n_experts_local) */
    /* Expert tensor parallelism: this rank holds rows [fe0, fe0 + fe_l) of
     * each of its experts' gate and up projections and the same columns of
     * their down projections (fe_l = moe_ffn / etp, fe0 = etp_rank fe_l). */
    int64_t fe0, fe_l;
    int n_chunks;        /* local chunks (vpp) */
    px_chunk_params *chunks;
    int64_t word_emb, pos_emb, final_norm_w, final_norm_b, lm_head; /* -1 when absent */
    /* Multi-token prediction (px_mtp.c), on the rank of the last chunk:
     * n_mtp modules, and the word embedding they look up (word_emb itself
     * when this rank holds it, else a copy).  emb_copy: the last stage's
     * copy of the word embedding (the tied LM head or MTP's) whose gradient
     * is summed with the first stage's; -1 when none. */
    int n_mtp;
    px_mtp_params *mtp;
    int64_t mtp_emb, emb_copy;
} px_param_table;

/* Layers of model chunk k (0-based, model order) under par: per-chunk counts
 * when par->n_chunks > 0, else a uniform split (the first L % n chunks get one
 * more layer). */
void px_chunk_layers(const px_parallel *par, int64_t n_layers, int k, int64_t *first,
                     int64_t *count);

/* The rows of the embedding and LM-head tables at tensor-parallel size tp:
 * the vocabulary padded to a multiple of tp (the executors' px_caps). */
int64_t px_params_vocab_rows(const px_model *m, int tp);

/* Appends a segment of tensor id: rows [row0, +n_rows) x cols [col0, +n_cols)
 * of the full [full_rows, full_cols] tensor (repl: the same on every TP
 * rank); *offset_out (when not NULL) gets its offset. */
px_status px_params_add_seg(px_param_table *t, int64_t id, int64_t full_rows, int64_t full_cols,
                            int64_t row0, int64_t n_rows, int64_t col0, int64_t n_cols,
                            px_init_kind init, bool repl, int64_t *offset_out, px_error *err);

/* Builds the table of the rank at (tp_rank, stage) of plan's grid (expert
 * parallel rank 0). */
px_status px_params_build(px_param_table *tab, const px_model *m, const px_parallel *par,
                          int tp_rank, int stage, px_error *err);
/* The same for a rank at ep_rank of its expert-parallel group: it holds
 * experts [ep_rank E / ep, (ep_rank + 1) E / ep) of every MoE layer. */
px_status px_params_build_ep(px_param_table *tab, const px_model *m, const px_parallel *par,
                             int tp_rank, int stage, int ep_rank, px_error *err);
/* The same for a rank at etp_rank of its expert-tensor-parallel group too:
 * its slice of every expert it holds is ffn rows (gate and up: column-
 * parallel) and columns (down: row-parallel) [etp_rank fe_l, +fe_l), with
 * fe_l = moe_ffn / etp.  Its expert region is then, per expert,
 * [gate_l; up_l] ([2 fe_l, h]) back to back, then per expert down_l
 * ([h, fe_l]).  Requires etp to divide moe_ffn (px_exec_check_plan). */
px_status px_params_build_etp(px_param_table *tab, const px_model *m, const px_parallel *par,
                              int tp_rank, int stage, int ep_rank, int etp_rank,
                              px_error *err);
void px_params_free(px_param_table *tab);

/* The initial value of element (row, col) of tensor `tensor_id`. */
float px_params_init_value(uint64_t seed, int64_t tensor_id, int64_t row, int64_t col,
                           px_init_kind kind, float std);

/* Fills host buffer params[n_elems] with the initial values. */
void px_params_init(const px_param_table *tab, float *params, uint64_t seed, float std);

#endif
