/* px_params.c — parameter slices, offsets and counter-based initialisation. */
#include "px_params.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_plan_check.h"

void px_chunk_layers(const px_parallel *par, int64_t n_layers, int k, int64_t *first,
                     int64_t *count)
{
    int n = par->pp * par->vpp;
    int64_t start = 0;
    if (par->n_chunks > 0) {
        for (int i = 0; i < k; i++)
            start += par->layers_per_chunk[i];
        *first = start;
        *count = par->layers_per_chunk[k];
        return;
    }
    int64_t base = n_layers / n, extra = n_layers % n;
    for (int i = 0; i < k; i++)
        start += base + (i < extra ? 1 : 0);
    *first = start;
    *count = base + (k < extra ? 1 : 0);
}

static px_status add_seg(px_param_table *t, int64_t id, int64_t full_rows, int64_t full_cols,
                         int64_t row0, int64_t n_rows, int64_t col0, int64_t n_cols,
                         px_init_kind init, bool repl, int64_t *offset_out, px_error *err)
{
    if (t->n_segs == t->cap_segs) {
        int cap = t->cap_segs ? 2 * t->cap_segs : 64;
        px_param_seg *ns = realloc(t->segs, (size_t)cap * sizeof *ns);
        if (!ns)
            return PX_FAIL(err, PX_ERR_NOMEM, "parameter table: out of memory");
        t->segs = ns;
        t->cap_segs = cap;
    }
    t->segs[t->n_segs++] = (px_param_seg){id,     full_rows, full_cols, row0, n_rows, col0,
                                          n_cols, t->n_elems, init,     repl, false, false};
    if (offset_out)
        *offset_out = t->n_elems;
    t->n_elems += n_rows * n_cols;
    return PX_OK;
}

px_status px_params_add_seg(px_param_table *t, int64_t id, int64_t full_rows, int64_t full_cols,
                            int64_t row0, int64_t n_rows, int64_t col0, int64_t n_cols,
                            px_init_kind init, bool repl, int64_t *offset_out, px_error *err)
{
    return add_seg(t, id, full_rows, full_cols, row0, n_rows, col0, n_cols, init, repl,
                   offset_out, err);
}

/* A full vector [n, 1] replicated on every TP rank. */
static px_status add_vec(px_param_table *t, int64_t id, int64_t n, px_init_kind init,
                         int64_t *off, px_error *err)
{
    return add_seg(t, id, n, 1, 0, n, 0, 1, init, true, off, err);
}

/* A replicated tensor whose gradient is partial on every TP rank (MLA's down
 * projections and latent norms, qk_norm's weights: what follows them sees
 * only this rank's heads), so summed over TP whatever SP says. */
static px_status add_tp_sum(px_param_table *t, int64_t id, int64_t rows, int64_t cols,
                            px_init_kind init, int64_t *off, px_error *err)
{
    PX_TRY(add_seg(t, id, rows, cols, 0, rows, 0, cols, init, true, off, err));
    t->segs[t->n_segs - 1].tp_sum = true;
    return PX_OK;
}

/* MLA's q and kv projections (px_mla.c): replicated downs and latent norms,
 * column-parallel ups (this rank's heads' rows). */
static px_status build_mla(px_param_table *t, const px_model *m, int tp, int tp_rank,
                           px_layer_params *lp, px_error *err)
{
    int64_t h = m->hidden, ql = m->q_lora_rank, kl = m->kv_lora_rank;
    int64_t nq = m->n_heads * px_model_qk_head_dim(m), nq_l = nq / tp;
    int64_t nkv = m->n_heads * (m->qk_nope_head_dim + m->v_head_dim), nkv_l = nkv / tp;
#define LID(kind) PX_TID_LAYER(lp->layer, kind)
    if (ql == 0) {
        PX_TRY(add_seg(t, LID(PX_T_MLA_WQ_A), nq, h, tp_rank * nq_l, nq_l, 0, h, PX_INIT_NORMAL,
                       false, &lp->mla_wqa, err));
    } else {
        PX_TRY(add_tp_sum(t, LID(PX_T_MLA_WQ_A), ql, h, PX_INIT_NORMAL, &lp->mla_wqa, err));
        PX_TRY(add_tp_sum(t, LID(PX_T_MLA_Q_NORM), ql, 1, PX_INIT_ONES, &lp->mla_qnorm, err));
        PX_TRY(add_seg(t, LID(PX_T_MLA_WQ_B), nq, ql, tp_rank * nq_l, nq_l, 0, ql,
                       PX_INIT_NORMAL, false, &lp->mla_wqb, err));
    }
    PX_TRY(add_tp_sum(t, LID(PX_T_MLA_WKV_A), kl + m->qk_rope_head_dim, h, PX_INIT_NORMAL,
                      &lp->mla_wkva, err));
    PX_TRY(add_tp_sum(t, LID(PX_T_MLA_KV_NORM), kl, 1, PX_INIT_ONES, &lp->mla_kvnorm, err));
    PX_TRY(add_seg(t, LID(PX_T_MLA_WKV_B), nkv, kl, tp_rank * nkv_l, nkv_l, 0, kl,
                   PX_INIT_NORMAL, false, &lp->mla_wkvb, err));
#undef LID
    return PX_OK;
}

/* The shared experts of an MoE layer as one dense SwiGLU MLP of inner size
 * fs = n_shared moe_ffn (their gate and up rows, down columns concatenated),
 * split over TP like the dense MLP: gate and up column-parallel, down
 * row-parallel. */
static px_status build_shared_experts(px_param_table *t, const px_model *m, int tp, int tp_rank,
                                      px_layer_params *lp, px_error *err)
{
    int64_t h = m->hidden, fs = m->n_shared_experts * m->moe_ffn, fs_l = fs / tp;
    if (fs == 0)
        return PX_OK;
    PX_TRY(add_seg(t, PX_TID_LAYER(lp->layer, PX_T_SH_W_GATE), fs, h, tp_rank * fs_l, fs_l, 0, h,
                PX_INIT_NORMAL, false, &lp->sw1, err));
    PX_TRY(add_seg(t, PX_TID_LAYER(lp->layer, PX_T_SH_W_UP), fs, h, tp_rank * fs_l, fs_l, 0, h,
                PX_INIT_NORMAL, false, NULL, err));
    return add_seg(t, PX_TID_LAYER(lp->layer, PX_T_SH_W_DOWN), h, fs, 0, h, tp_rank * fs_l, fs_l,
                   PX_INIT_NORMAL, false, &lp->sw2, err);
}

/* One transformer layer with the ids of layer `layer`, shaped like model layer
 * `shape` (dense or MoE as the model's pattern gives: an MTP module's layer
 * is shaped like layer n_layers); its experts come later. */
static px_status build_layer(px_param_table *t, const px_model *m, int tp, int tp_rank,
                             int64_t layer, int64_t shape, px_layer_params *lp, px_error *err)
{
    bool gpt = m->block == PX_BLOCK_GPT;
    bool qkv_bias = gpt || m->qkv_bias;
    int64_t h = m->hidden, hd = m->head_dim, f = m->ffn;
    int64_t nq = m->n_heads * hd, nk = m->n_kv_heads * hd;
    int64_t nq_l = nq / tp, nk_l = nk / tp, f_l = f / tp;
    int64_t nv = m->n_heads * px_model_v_head_dim(m), nv_l = nv / tp; /* Wo's columns */
    memset(lp, 0xff, sizeof *lp); /* every offset -1 */
    lp->layer = layer;
#define LID(kind) PX_TID_LAYER(layer, kind)
    PX_TRY(add_vec(t, LID(PX_T_LN1_W), h, PX_INIT_ONES, &lp->ln1_w, err));
    if (gpt)
        PX_TRY(add_vec(t, LID(PX_T_LN1_B), h, PX_INIT_ZEROS, &lp->ln1_b, err));
    if (m->attn == PX_ATTN_MLA) {
        PX_TRY(build_mla(t, m, tp, tp_rank, lp, err));
    } else {
        /* Column-parallel: this rank's heads are rows [tp_rank * n_l, +n_l). */
        PX_TRY(add_seg(t, LID(PX_T_WQ), nq, h, tp_rank * nq_l, nq_l, 0, h, PX_INIT_NORMAL, false,
                    &lp->wqkv, err));
        PX_TRY(add_seg(t, LID(PX_T_WK), nk, h, tp_rank * nk_l, nk_l, 0, h, PX_INIT_NORMAL, false,
                    NULL, err));
        PX_TRY(add_seg(t, LID(PX_T_WV), nk, h, tp_rank * nk_l, nk_l, 0, h, PX_INIT_NORMAL, false,
                    NULL, err));
        if (qkv_bias) {
            PX_TRY(add_seg(t, LID(PX_T_BQ), nq, 1, tp_rank * nq_l, nq_l, 0, 1, PX_INIT_ZEROS, false,
                        &lp->bqkv, err));
            PX_TRY(add_seg(t, LID(PX_T_BK), nk, 1, tp_rank * nk_l, nk_l, 0, 1, PX_INIT_ZEROS, false,
                        NULL, err));
            PX_TRY(add_seg(t, LID(PX_T_BV), nk, 1, tp_rank * nk_l, nk_l, 0, 1, PX_INIT_ZEROS, false,
                        NULL, err));
        }
    }
    if (m->qk_norm) { /* one weight per head dim, shared by the heads of every TP rank */
        PX_TRY(add_tp_sum(t, LID(PX_T_Q_NORM_W), hd, 1, PX_INIT_ONES, &lp->q_norm, err));
        PX_TRY(add_tp_sum(t, LID(PX_T_K_NORM_W), hd, 1, PX_INIT_ONES, &lp->k_norm, err));
    }
    /* Row-parallel: this rank's columns of Wo. */
    PX_TRY(add_seg(t, LID(PX_T_WO), h, nv, 0, h, tp_rank * nv_l, nv_l, PX_INIT_NORMAL, false,
                &lp->wo, err));
    if (gpt || m->o_bias)
        PX_TRY(add_vec(t, LID(PX_T_BO), h, PX_INIT_ZEROS, &lp->bo, err));
    PX_TRY(add_vec(t, LID(PX_T_LN2_W), h, PX_INIT_ONES, &lp->ln2_w, err));
    if (gpt)
        PX_TRY(add_vec(t, LID(PX_T_LN2_B), h, PX_INIT_ZEROS, &lp->ln2_b, err));
    if (px_model_layer_is_moe(m, shape)) { /* experts come later, in the expert region */
        PX_TRY(add_seg(t, LID(PX_T_ROUTER), m->n_experts, h, 0, m->n_experts, 0, h,
                    PX_INIT_NORMAL, true, &lp->router, err));
        t->segs[t->n_segs - 1].tp_sum = true;
        return build_shared_experts(t, m, tp, tp_rank, lp, err);
    }
    if (gpt) {
        PX_TRY(add_seg(t, LID(PX_T_W_FC), f, h, tp_rank * f_l, f_l, 0, h, PX_INIT_NORMAL, false,
                    &lp->w1, err));
        PX_TRY(add_seg(t, LID(PX_T_B_FC), f, 1, tp_rank * f_l, f_l, 0, 1, PX_INIT_ZEROS, false,
                    &lp->b1, err));
    } else {
        PX_TRY(add_seg(t, LID(PX_T_W_GATE), f, h, tp_rank * f_l, f_l, 0, h, PX_INIT_NORMAL, false,
                    &lp->w1, err));
        PX_TRY(add_seg(t, LID(PX_T_W_UP), f, h, tp_rank * f_l, f_l, 0, h, PX_INIT_NORMAL, false,
                    NULL, err));
    }
    PX_TRY(add_seg(t, LID(PX_T_W_DOWN), h, f, 0, h, tp_rank * f_l, f_l, PX_INIT_NORMAL, false,
                &lp->w2, err));
    if (gpt)
        PX_TRY(add_vec(t, LID(PX_T_B_DOWN), h, PX_INIT_ZEROS, &lp->b2, err));
#undef LID
    return PX_OK;
}

/* The MTP modules of the last chunk (executor/px_mtp.c): each one's norms and
 * projection (replicated over TP: the projection is 2 h^2, small beside the
 * layer), its transformer layer shaped like layer n_layers (DeepSeek-V3's
 * and Megatron's: the next layer of the pattern) and its output norm, one
 * ZeRO unit (the same layer id); the word embedding to look up: this rank's
 * own, the tied LM head's copy, or a copy of its own (summed with the first
 * stage's, px_exec.c). */
static px_status build_mtp(px_param_table *t, const px_model *m, int tp, int tp_rank,
                           px_error *err)
{
    int64_t h = m->hidden, L = m->n_layers;
    int64_t V_rows = px_params_vocab_rows(m, tp), V_l = V_rows / tp;
    if (t->word_emb >= 0) {
        t->mtp_emb = t->word_emb;
    } else if (m->tied_embeddings) {
        t->mtp_emb = t->lm_head;
    } else {
        PX_TRY(add_seg(t, PX_T_WORD_EMB, V_rows, h, tp_rank * V_l, V_l, 0, h, PX_INIT_NORMAL,
                       false, &t->mtp_emb, err));
        t->emb_copy = t->mtp_emb;
    }
    t->n_mtp = (int)m->n_mtp_modules;
    t->mtp = calloc((size_t)t->n_mtp, sizeof *t->mtp);
    if (!t->mtp)
        return PX_FAIL(err, PX_ERR_NOMEM, "parameter table: out of memory");
    for (int k = 0; k < t->n_mtp; k++) {
        px_mtp_params *mp = &t->mtp[k];
        int64_t layer = L + k;
#define MID(kind) PX_TID_LAYER(layer, kind)
        PX_TRY(add_vec(t, MID(PX_T_MTP_ENORM), h, PX_INIT_ONES, &mp->enorm, err));
        PX_TRY(add_vec(t, MID(PX_T_MTP_HNORM), h, PX_INIT_ONES, &mp->hnorm, err));
        PX_TRY(add_seg(t, MID(PX_T_MTP_EH_E), h, h, 0, h, 0, h, PX_INIT_NORMAL, true, &mp->eh_e,
                       err));
        PX_TRY(add_seg(t, MID(PX_T_MTP_EH_H), h, h, 0, h, 0, h, PX_INIT_NORMAL, true, &mp->eh_h,
                       err));
        PX_TRY(build_layer(t, m, tp, tp_rank, layer, L, &mp->layer, err));
        PX_TRY(add_vec(t, MID(PX_T_MTP_NORM), h, PX_INIT_ONES, &mp->norm, err));
#undef MID
    }
    return PX_OK;
}

/* This rank's experts of one MoE layer: gate|up and down, expert by expert.
 * Under expert TP (fe_l < moe_ffn) a rank holds the ffn rows [fe0, fe0 +
 * fe_l) of each expert's gate and of its up projection, which are not
 * contiguous in the stacked [E 2 f_e, h] tensor: two segments per expert,
 * placed gate_l then up_l so that each local expert is one [2 fe_l, h]
 * gate|up block, the layout the SwiGLU kernels read.  The down projections'
 * columns [fe0, fe0 + fe_l) of consecutive experts form one rectangle. */
static px_status build_experts(px_param_table *t, const px_model *m, px_layer_params *lp,
                               px_error *err)
{
    int64_t h = m->hidden, fe = m->moe_ffn, E = m->n_experts;
    int64_t e0 = t->expert0, el = t->n_experts_local, fe0 = t->fe0, fl = t->fe_l;
    int64_t layer = lp->layer, id1 = PX_TID_LAYER(layer, PX_T_EXP_W1);
    if (fl == fe) {
        PX_TRY(add_seg(t, id1, E * 2 * fe, h, e0 * 2 * fe, el * 2 * fe, 0, h, PX_INIT_NORMAL, false,
                    &lp->ew1, err));
        t->segs[t->n_segs - 1].expert = true;
    } else {
        for (int64_t le = 0; le < el; le++)
            for (int half = 0; half < 2; half++) { /* gate, then up */
                int64_t row0 = (e0 + le) * 2 * fe + half * fe + fe0;
                PX_TRY(add_seg(t, id1, E * 2 * fe, h, row0, fl, 0, h, PX_INIT_NORMAL, false,
                            le == 0 && half == 0 ? &lp->ew1 : NULL, err));
                t->segs[t->n_segs - 1].expert = true;
            }
    }
    PX_TRY(add_seg(t, PX_TID_LAYER(layer, PX_T_EXP_W2), E * h, fe, e0 * h, el * h, fe0, fl,
                PX_INIT_NORMAL, false, &lp->ew2, err));
    t->segs[t->n_segs - 1].expert = true;
    return PX_OK;
}

/* Both executors' capability sets pad the vocabulary alike (px_plan_check.c). */
int64_t px_params_vocab_rows(const px_model *m, int tp)
{
    px_caps caps;
    px_caps_cpu_executor(&caps);
    return px_caps_vocab_rows(&caps, m->vocab, tp);
}

px_status px_params_build(px_param_table *t, const px_model *m, const px_parallel *par,
                          int tp_rank, int stage, px_error *err)
{
    return px_params_build_ep(t, m, par, tp_rank, stage, 0, err);
}

px_status px_params_build_ep(px_param_table *t, const px_model *m, const px_parallel *par,
                             int tp_rank, int stage, int ep_rank, px_error *err)
{
    return px_params_build_etp(t, m, par, tp_rank, stage, ep_rank, 0, err);
}

px_status px_params_build_etp(px_param_table *t, const px_model *m, const px_parallel *par,
                              int tp_rank, int stage, int ep_rank, int etp_rank, px_error *err)
{
    memset(t, 0, sizeof *t);
    int ep = par->ep > 0 ? par->ep : 1, etp = par->etp > 0 ? par->etp : 1;
    t->n_experts_local = m->n_experts / ep;
    t->expert0 = ep_rank * t->n_experts_local;
    t->fe_l = m->moe_ffn / etp;
    t->fe0 = etp_rank * t->fe_l;
    t->word_emb = t->pos_emb = t->final_norm_w = t->final_norm_b = t->lm_head = -1;
    t->mtp_emb = t->emb_copy = -1;
    int tp = par->tp, pp = par->pp, vpp = par->vpp;
    int n_total = pp * vpp;
    int64_t V_rows = px_params_vocab_rows(m, tp), V_l = V_rows / tp, h = m->hidden;
    t->n_chunks = vpp;
    t->chunks = calloc((size_t)vpp, sizeof *t->chunks);
    if (!t->chunks)
        return PX_FAIL(err, PX_ERR_NOMEM, "parameter table: out of memory");
    for (int j = 0; j < vpp; j++) {
        px_chunk_params *c = &t->chunks[j];
        c->model_chunk = j * pp + stage;
        c->is_first = c->model_chunk == 0;
        c->is_last = c->model_chunk == n_total - 1;
        px_chunk_layers(par, m->n_layers, c->model_chunk, &c->first_layer, &c->n_layers);
        if (c->is_first) {
            PX_TRY(add_seg(t, PX_T_WORD_EMB, V_rows, h, tp_rank * V_l, V_l, 0, h, PX_INIT_NORMAL,
                        false, &t->word_emb, err));
            if (m->block == PX_BLOCK_GPT)
                PX_TRY(add_seg(t, PX_T_POS_EMB, m->max_positions, h, 0, m->max_positions, 0, h,
                            PX_INIT_NORMAL, true, &t->pos_emb, err));
        }
        c->layers = calloc((size_t)(c->n_layers > 0 ? c->n_layers : 1), sizeof *c->layers);
        if (!c->layers)
            return PX_FAIL(err, PX_ERR_NOMEM, "parameter table: out of memory");
        for (int64_t l = 0; l < c->n_layers; l++)
            PX_TRY(build_layer(t, m, tp, tp_rank, c->first_layer + l, c->first_layer + l,
                               &c->layers[l], err));
        if (c->is_last) {
            PX_TRY(add_vec(t, PX_T_FINAL_NORM_W, h, PX_INIT_ONES, &t->final_norm_w, err));
            if (m->block == PX_BLOCK_GPT)
                PX_TRY(add_vec(t, PX_T_FINAL_NORM_B, h, PX_INIT_ZEROS, &t->final_norm_b, err));
            if (m->tied_embeddings && t->word_emb >= 0) {
                t->lm_head = t->word_emb; /* one tensor, both uses */
            } else {
                /* Tied across stages: a copy of the embedding slice with the same
                 * tensor id (same initial values); the engine sums its gradient
                 * with the first stage's. */
                int64_t id = m->tied_embeddings ? PX_T_WORD_EMB : PX_T_LM_HEAD;
                PX_TRY(add_seg(t, id, V_rows, h, tp_rank * V_l, V_l, 0, h, PX_INIT_NORMAL, false,
                            &t->lm_head, err));
                if (m->tied_embeddings)
                    t->emb_copy = t->lm_head;
            }
            if (m->n_mtp_modules > 0)
                PX_TRY(build_mtp(t, m, tp, tp_rank, err));
        }
    }
    t->n_dense = t->n_elems;
    if (m->n_experts > 0) {
        int64_t d = (int64_t)par->dp * (par->cp > 0 ? par->cp : 1);
        t->n_dense = (t->n_elems + d - 1) / d * d;
        t->n_elems = t->n_dense;
        for (int j = 0; j < vpp; j++)
            for (int64_t l = 0; l < t->chunks[j].n_layers; l++)
                if (t->chunks[j].layers[l].router >= 0)
                    PX_TRY(build_experts(t, m, &t->chunks[j].layers[l], err));
        for (int k = 0; k < t->n_mtp; k++)
            if (t->mtp[k].layer.router >= 0)
                PX_TRY(build_experts(t, m, &t->mtp[k].layer, err));
    }
    return PX_OK;
}

void px_params_free(px_param_table *t)
{
    if (t->chunks)
        for (int j = 0; j < t->n_chunks; j++)
            free(t->chunks[j].layers);
    free(t->chunks);
    free(t->mtp);
    free(t->segs);
    memset(t, 0, sizeof *t);
}

/* splitmix64 finaliser: a good 64-bit mix, so hashing the index tuple gives
 * independent uniform values without any generator state. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

float px_params_init_value(uint64_t seed, int64_t tensor_id, int64_t row, int64_t col,
                           px_init_kind kind, float std)
{
    if (kind == PX_INIT_ONES)
        return 1.0f;
    if (kind == PX_INIT_ZEROS)
        return 0.0f;
    uint64_t hsh = mix64(seed);
    hsh = mix64(hsh ^ (uint64_t)tensor_id);
    hsh = mix64(hsh ^ (uint64_t)row);
    hsh = mix64(hsh ^ (uint64_t)col);
    /* Sum of two uniforms (triangular, mean 0): closer to a normal than one
     * uniform, still exactly reproducible; variance of u1 + u2 - 1 is 1/6. */
    double u1 = (double)(hsh >> 40) / 16777216.0;
    double u2 = (double)((hsh >> 16) & 0xFFFFFF) / 16777216.0;
    return (float)((u1 + u2 - 1.0) * sqrt(6.0) * std);
}

void px_params_init(const px_param_table *t, float *params, uint64_t seed, float std)
{
    for (int i = 0; i < t->n_segs; i++) {
        const px_param_seg *s = &t->segs[i];
        for (int64_t r = 0; r < s->n_rows; r++)
            for (int64_t c = 0; c < s->n_cols; c++)
                params[s->offset + r * s->n_cols + c] = px_params_init_value(
                    seed, s->tensor_id, s->row0 + r, s->col0 + c, s->init, std);
    }
}
