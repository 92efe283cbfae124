/* px_layer.c — one transformer layer, forward and backward, under tensor
 * parallelism (Megatron column/row linears: one all-reduce each way per
 * sub-block) and sequence parallelism (all-gather / reduce-scatter at the
 * sub-block borders, norms and residuals on sequence shards). */
#include <stdbool.h>
#include <string.h>

#include "px_exec_internal.h"
#include "px_lora.h"
#include "px_mla.h"

/* Through px_ex_w / px_ex_g: the full buffers, or a ZeRO-2/3 unit window. */
#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)
#define WOPT(off) ((off) >= 0 ? px_ex_w(ex, off) : NULL)
#define GOPT(off) ((off) >= 0 ? px_ex_g(ex, off) : NULL)

px_status px_ex_norm_fwd(px_exec *ex, void *out, float **mean, float **rstd, const void *x,
                         int64_t w_off, int64_t b_off, px_mem_kind kind, px_error *err)
{
    PX_TRY(px_ex_alloc_f32(ex, kind, ex->Ts, rstd, err));
    if (ex->llama) {
        ex->k->rmsnorm_fwd(out, *rstd, x, W(w_off), ex->Ts, ex->h, ex->norm_eps);
        return PX_OK;
    }
    PX_TRY(px_ex_alloc_f32(ex, kind, ex->Ts, mean, err));
    ex->k->layernorm_fwd(out, *mean, *rstd, x, W(w_off), W(b_off), ex->Ts, ex->h,
                         ex->norm_eps);
    return PX_OK;
}

void px_ex_norm_bwd(px_exec *ex, void *dx, const void *dout, const void *x, int64_t w_off,
                    int64_t b_off, const float *mean, const float *rstd)
{
    float *gw = px_ex_gsink(ex, w_off, 0); /* frozen (LoRA): into the sink */
    if (ex->llama)
        ex->k->rmsnorm_bwd(dx, gw, dout, x, W(w_off), rstd, ex->Ts, ex->h);
    else
        ex->k->layernorm_bwd(dx, gw, px_ex_gsink(ex, b_off, 1), dout, x, W(w_off), mean, rstd,
                             ex->Ts, ex->h);
}



void px_layer_act_free(px_exec *ex, px_layer_act *a)
{
    void **act[] = {&a->x_in, &a->n1_out, &a->qkv,    &a->att,  &a->x_mid, &a->n2_out,
                    &a->h1,   &a->h2,     &a->w_dqkv, &a->w_do, &a->w_dh1, &a->w_dy,
                    &a->m_xr, &a->m_h1,   &a->m_yr, &a->qk_in, &a->sh_h1, &a->sh_h2};
    float **f32[] = {&a->n1_mean, &a->n1_rstd, &a->lse,     &a->probs,
                     &a->n2_mean, &a->n2_rstd, &a->m_probs, &a->m_gate, &a->qk_rstd};
    int32_t **i32[] = {&a->m_idx, &a->m_rows, &a->m_slots};
    for (size_t i = 0; i < sizeof act / sizeof act[0]; i++)
        px_ex_free(ex, act[i]);
    for (size_t i = 0; i < sizeof f32 / sizeof f32[0]; i++)
        px_ex_free(ex, f32[i]);
    for (size_t i = 0; i < sizeof i32 / sizeof i32[0]; i++)
        px_ex_free(ex, i32[i]);
    for (int t = 0; t < 4; t++)
        px_ex_free(ex, &a->lora_u[t]);
    px_moe_route_free(a);
    px_mla_act_free(ex, a);
}

/* Input of a column-parallel linear: the norm output itself, or its
 * all-gather under SP (a temporary: only the shard is stored). */
static px_status col_input(px_exec *ex, void *n_out, void **g, px_error *err)
{
    if (!ex->sp) {
        *g = n_out;
        return PX_OK;
    }
    return px_ex_tp_gather(ex, n_out, g, err);
}

static void col_input_done(px_exec *ex, void *n_out, void **g)
{
    if (*g != n_out)
        px_ex_free(ex, g);
    *g = NULL;
}

/* ---- RoPE and the attention core, with or without context parallelism ---- */

typedef struct {
    void *buf;
    int dir; /* +1 forward, -1 backward */
} rope_arg;

static void rope_run(px_exec *ex, int64_t row, int64_t n, int64_t pos, void *arg)
{
    rope_arg *r = arg;
    void *x = px_ex_at(ex, r->buf, row * ex->b * ex->qkv_l);
    if (r->dir > 0)
        ex->k->rope_fwd(x, n, ex->b, ex->nh_l, ex->nkv_l, ex->hd, pos, &ex->rope);
    else
        ex->k->rope_bwd(x, n, ex->b, ex->nh_l, ex->nkv_l, ex->hd, pos, &ex->rope);
}

/* RoPE over this rank's s_l rows at their global positions. */
static void rope(px_exec *ex, void *qkv, int dir)
{
    rope_arg r = {qkv, dir};
    px_ex_pos_runs(ex, 0, ex->s_l, rope_run, &r);
}

/* Under CP: the whole sequence's q|k|v rows in position order, from every
 * CP rank's s_l rows (all-gather, then each rank's two chunks put in place). */
static px_status gather_kv(px_exec *ex, const void *qkv, void **kv, px_error *err)
{
    int64_t rowlen = ex->b * ex->qkv_l, n = ex->T * ex->qkv_l, c = ex->cp_chunk;
    void *all = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, n * ex->cp.size, &all, err));
    PX_TRY(ex->be->all_gather(ex->be, all, qkv, n, ex->act_dtype, &ex->cp, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->s * rowlen, kv, err));
    for (int r = 0; r < ex->cp.size; r++)
        for (int half = 0; half < 2; half++) {
            int64_t p = half * c, g = px_ex_pos(ex, r, p);
            ex->be->copy(ex->be, px_ex_at(ex, *kv, g * rowlen),
                         px_ex_at(ex, all, r * n + p * rowlen), px_ex_bytes(ex, c * rowlen));
        }
    px_ex_free(ex, &all);
    return PX_OK;
}

/* Under CP: dkv [s rows in position order] summed over the CP group and
 * added to this rank's rows of dqkv (the inverse of gather_kv). */
static px_status scatter_dkv(px_exec *ex, void *dkv, void *dqkv, px_error *err)
{
    int64_t rowlen = ex->b * ex->qkv_l, n = ex->T * ex->qkv_l, c = ex->cp_chunk;
    void *blocks = NULL, *mine = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, n * ex->cp.size, &blocks, err));
    for (int r = 0; r < ex->cp.size; r++)
        for (int half = 0; half < 2; half++) {
            int64_t p = half * c, g = px_ex_pos(ex, r, p);
            ex->be->copy(ex->be, px_ex_at(ex, blocks, r * n + p * rowlen),
                         px_ex_at(ex, dkv, g * rowlen), px_ex_bytes(ex, c * rowlen));
        }
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, n, &mine, err));
    PX_TRY(ex->be->reduce_scatter(ex->be, mine, blocks, n, ex->act_dtype, &ex->cp, err));
    px_ex_free(ex, &blocks);
    ex->k->residual_fwd(dqkv, dqkv, mine, n);
    px_ex_free(ex, &mine);
    return PX_OK;
}

/* out, lse (and probs) of the attention core over a->qkv. */
static px_status attn_fwd(px_exec *ex, const px_layer_act *a, void *out, float *lse,
                          float *probs, px_error *err)
{
    if (ex->cp.size <= 1) {
        ex->k->attention_fwd(out, lse, probs, a->qkv, ex->s, ex->b, ex->nh_l, ex->nkv_l, ex->hd);
        return PX_OK;
    }
    void *kv = NULL;
    PX_TRY(gather_kv(ex, a->qkv, &kv, err));
    ex->k->attention_kv_fwd(out, lse, a->qkv, ex->qpos, kv, ex->s_l, ex->s, ex->b, ex->nh_l,
                            ex->nkv_l, ex->hd);
    px_ex_free(ex, &kv);
    return PX_OK;
}

/* dqkv (fresh) of the attention core; recomputes lse when not kept. */
static px_status attn_bwd(px_exec *ex, const px_layer_act *a, const void *datt, void **dqkv,
                          px_error *err)
{
    px_mem_kind X = PX_MEM_TEMP;
    const px_kernels *k = ex->k;
    float *lse = a->lse;
    void *tmp_out = NULL, *kv = NULL, *dkv = NULL;
    bool cp = ex->cp.size > 1;
    if (cp)
        PX_TRY(gather_kv(ex, a->qkv, &kv, err));
    if (!lse) { /* selective recompute: rerun the attention core for its statistics */
        PX_TRY(px_ex_alloc_f32(ex, X, ex->b * ex->nh_l * ex->s_l, &lse, err));
        PX_TRY(px_ex_alloc_act(ex, X, ex->T * ex->nh_l * ex->hd, &tmp_out, err));
        if (cp)
            k->attention_kv_fwd(tmp_out, lse, a->qkv, ex->qpos, kv, ex->s_l, ex->s, ex->b,
                                ex->nh_l, ex->nkv_l, ex->hd);
        else
            k->attention_fwd(tmp_out, lse, NULL, a->qkv, ex->s, ex->b, ex->nh_l, ex->nkv_l,
                             ex->hd);
        px_ex_free(ex, &tmp_out);
    }
    PX_TRY(px_ex_alloc_act(ex, X, ex->T * ex->qkv_l, dqkv, err));
    if (cp) {
        PX_TRY(px_ex_alloc_act(ex, X, ex->s * ex->b * ex->qkv_l, &dkv, err));
        k->attention_kv_bwd(*dqkv, dkv, datt, a->att, lse, a->qkv, ex->qpos, kv, ex->s_l, ex->s,
                            ex->b, ex->nh_l, ex->nkv_l, ex->hd);
        px_ex_free(ex, &kv);
        PX_TRY(scatter_dkv(ex, dkv, *dqkv, err));
        px_ex_free(ex, &dkv);
    } else {
        k->attention_bwd(*dqkv, datt, a->att, lse, a->probs, a->qkv, ex->s, ex->b, ex->nh_l,
                         ex->nkv_l, ex->hd);
    }
    if (lse != a->lse)
        px_ex_free(ex, &lse);
    return PX_OK;
}

/* ---- the MoE MLP: this rank's Tm token rows of the norm output ---- */

/* Without SP (tp > 1) the rows are replicated over TP: each rank routes its
 * T / tp slice and the slices are all-gathered after. */
static bool moe_sliced(const px_exec *ex)
{
    return !ex->sp && ex->tp.size > 1;
}

static px_status moe_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, void **x_out,
                         px_error *err)
{
    int64_t h = ex->h, Ts = ex->Ts;
    void *y = NULL, *yfull = NULL;
    PX_TRY(px_moe_fwd(ex, lp, a, px_ex_at(ex, a->n2_out, ex->row0_m * h), &y, err));
    yfull = y;
    if (moe_sliced(ex)) {
        PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->T * h, &yfull, err));
        PX_TRY(ex->be->all_gather(ex->be, yfull, y, ex->Tm * h, ex->act_dtype, &ex->tp, err));
        px_ex_free(ex, &y);
    }
    PX_TRY(px_shared_fwd(ex, lp, a, yfull, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, x_out, err));
    ex->k->residual_fwd(*x_out, a->x_mid, yfull, Ts * h);
    px_ex_free(ex, &yfull);
    return PX_OK;
}

/* dx_mid (fresh) = dx_out + the MoE MLP's gradient through norm 2. */
static px_status moe_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                         const void *dx_out, void **dx_mid, px_error *err)
{
    int64_t h = ex->h, Ts = ex->Ts, r0 = ex->row0_m * h;
    void *dxm = NULL, *dn = NULL;
    PX_TRY(px_moe_bwd(ex, lp, a, px_ex_at(ex, dx_out, r0), px_ex_at(ex, a->n2_out, r0), &dxm, err));
    dn = dxm;
    if (moe_sliced(ex)) {
        PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->T * h, &dn, err));
        PX_TRY(ex->be->all_gather(ex->be, dn, dxm, ex->Tm * h, ex->act_dtype, &ex->tp, err));
        px_ex_free(ex, &dxm);
    }
    PX_TRY(px_shared_bwd(ex, lp, a, dx_out, dn, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Ts * h, dx_mid, err));
    ex->be->copy(ex->be, *dx_mid, dx_out, px_ex_bytes(ex, Ts * h));
    px_ex_norm_bwd(ex, *dx_mid, dn, a->x_mid, lp->ln2_w, lp->ln2_b, a->n2_mean, a->n2_rstd);
    px_ex_free(ex, &dn);
    return PX_OK;
}

px_status px_layer_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, bool keep,
                       bool selective, void **x_out, px_error *err)
{
    const px_kernels *k = ex->k;
    int64_t T = ex->T, Ts = ex->Ts, h = ex->h;
    px_mem_kind A = PX_MEM_ACTIVATIONS;
    void *g = NULL, *o = NULL, *o_s = NULL, *y = NULL, *y_s = NULL;

    /* ---- attention ---- */
    PX_TRY(px_ex_alloc_act(ex, A, Ts * h, &a->n1_out, err));
    PX_TRY(px_ex_norm_fwd(ex, a->n1_out, &a->n1_mean, &a->n1_rstd, a->x_in, lp->ln1_w, lp->ln1_b,
                       A, err));
    PX_TRY(col_input(ex, a->n1_out, &g, err));
    PX_TRY(px_ex_alloc_act(ex, A, T * ex->qkv_l, &a->qkv, err));
    if (ex->mla) /* q|k|v rows from the latents, RoPE on their rope slices */
        PX_TRY(px_mla_qkv_fwd(ex, lp, a, g, err));
    else
        k->matmul_fwd(a->qkv, g, W(lp->wqkv), WOPT(lp->bqkv), T, h, ex->qkv_l);
    PX_TRY(px_lora_col_fwd(ex, lp, a, PX_LORA_T_QKV, g, a->qkv, err));
    col_input_done(ex, a->n1_out, &g);
    PX_TRY(px_qknorm_fwd(ex, lp, a, A, err));
    if (ex->llama && !ex->mla)
        rope(ex, a->qkv, 1);
    PX_TRY(px_ex_alloc_act(ex, A, T * ex->nh_l * ex->hd, &a->att, err));
    PX_TRY(px_ex_alloc_f32(ex, selective ? PX_MEM_TEMP : A, ex->b * ex->nh_l * ex->s_l, &a->lse,
                        err));
    bool probs = keep && ex->store_probs_allowed && !selective && ex->cp.size <= 1;
    if (probs)
        PX_TRY(px_ex_alloc_f32(ex, A, ex->b * ex->nh_l * ex->s * ex->s, &a->probs, err));
    PX_TRY(attn_fwd(ex, a, a->att, a->lse, a->probs, err));
    if (selective) /* recomputed in backward with the attention core */
        px_ex_free(ex, &a->lse);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * h, &o, err));
    if (ex->mla)
        PX_TRY(px_mla_out_fwd(ex, lp, a->att, o, err));
    else
        k->matmul_fwd(o, a->att, W(lp->wo), NULL, T, ex->nh_l * ex->hd, h);
    PX_TRY(px_ex_tp_reduce(ex, o, &o_s, PX_MEM_TEMP, err));
    if (lp->bo >= 0)
        k->bias_add_fwd(o_s, W(lp->bo), Ts, h);
    PX_TRY(px_lora_row_fwd(ex, lp, a, PX_LORA_T_PROJ, a->att, o_s, err));
    PX_TRY(px_ex_alloc_act(ex, A, Ts * h, &a->x_mid, err));
    k->residual_fwd(a->x_mid, a->x_in, o_s, Ts * h);
    px_ex_free(ex, &o_s);

    /* ---- MLP ---- */
    PX_TRY(px_ex_alloc_act(ex, A, Ts * h, &a->n2_out, err));
    PX_TRY(px_ex_norm_fwd(ex, a->n2_out, &a->n2_mean, &a->n2_rstd, a->x_mid, lp->ln2_w, lp->ln2_b,
                       A, err));
    if (lp->router >= 0) {
        PX_TRY(moe_fwd(ex, lp, a, x_out, err));
    } else {
        PX_TRY(col_input(ex, a->n2_out, &g, err));
        PX_TRY(px_ex_alloc_act(ex, A, T * ex->w1_rows, &a->h1, err));
        k->matmul_fwd(a->h1, g, W(lp->w1), WOPT(lp->b1), T, h, ex->w1_rows);
        PX_TRY(px_lora_col_fwd(ex, lp, a, PX_LORA_T_FC1, g, a->h1, err));
        col_input_done(ex, a->n2_out, &g);
        PX_TRY(px_ex_alloc_act(ex, A, T * ex->f_l, &a->h2, err));
        if (ex->llama)
            k->swiglu_fwd(a->h2, a->h1, T, ex->f_l);
        else
            k->gelu_fwd(a->h2, a->h1, T * ex->f_l);
        PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * h, &y, err));
        k->matmul_fwd(y, a->h2, W(lp->w2), NULL, T, ex->f_l, h);
        PX_TRY(px_ex_tp_reduce(ex, y, &y_s, PX_MEM_TEMP, err));
        if (lp->b2 >= 0)
            k->bias_add_fwd(y_s, W(lp->b2), Ts, h);
        PX_TRY(px_lora_row_fwd(ex, lp, a, PX_LORA_T_FC2, a->h2, y_s, err));
        PX_TRY(px_ex_alloc_act(ex, A, Ts * h, x_out, err));
        k->residual_fwd(*x_out, a->x_mid, y_s, Ts * h);
        px_ex_free(ex, &y_s);
    }

    if (!keep) { /* full recompute: only the input stays */
        void *x_in = a->x_in;
        a->x_in = NULL;
        px_layer_act_free(ex, a);
        a->x_in = x_in;
    }
    return PX_OK;
}

/* Whether linear w (LoRA target t) has weight-gradient work: its own weight
 * trains, or (LoRA) an adapter sits on it.  Without, zero-bubble keeps
 * nothing of it for W. */
static bool w_work(const px_layer_params *lp, int t, int64_t w_off)
{
    return px_ex_trained(w_off) || lp->lora_a[t] >= 0;
}

/* Dense MLP backward: x_out = x_mid + W2 act(W1 norm2(x_mid)); *dx_mid
 * (fresh) = dx_out + the gradient through the MLP and norm 2.  With defer_w
 * the linears' weight gradients wait for px_layer_wgrad. */
static px_status mlp_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                         const void *dx_out, bool defer_w, void **dx_mid, px_error *err)
{
    const px_kernels *k = ex->k;
    px_backend *be = ex->be;
    int64_t T = ex->T, Ts = ex->Ts, h = ex->h;
    px_mem_kind X = PX_MEM_TEMP;
    void *dy = NULL, *dh2 = NULL, *dh1 = NULL, *g = NULL, *dg = NULL, *dn = NULL;
#define WG(off) (defer_w ? NULL : G(off))
    if (px_ex_trained(lp->b2))
        k->bias_add_bwd(G(lp->b2), dx_out, Ts, h);
    if (ex->sp)
        PX_TRY(px_ex_tp_gather(ex, dx_out, &dy, err));
    const void *dyv = ex->sp ? dy : dx_out;
    PX_TRY(px_ex_alloc_act(ex, X, T * ex->f_l, &dh2, err));
    k->matmul_bwd(dh2, WG(lp->w2), NULL, dyv, a->h2, W(lp->w2), T, ex->f_l, h);
    PX_TRY(px_lora_row_bwd(ex, lp, a, PX_LORA_T_FC2, dx_out, dyv, a->h2, dh2, !defer_w, err));
    px_ex_free(ex, &dy);
    if (defer_w && w_work(lp, PX_LORA_T_FC2, lp->w2)) {
        PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, &a->w_dy, err));
        be->copy(be, a->w_dy, dx_out, px_ex_bytes(ex, Ts * h));
    }
    PX_TRY(px_ex_alloc_act(ex, X, T * ex->w1_rows, &dh1, err));
    if (ex->llama)
        k->swiglu_bwd(dh1, dh2, a->h1, T, ex->f_l);
    else
        k->gelu_bwd(dh1, dh2, a->h1, T * ex->f_l);
    px_ex_free(ex, &dh2);
    /* the input is only needed for the weight gradients (the base's, the adapter's) */
    if (!defer_w && w_work(lp, PX_LORA_T_FC1, lp->w1))
        PX_TRY(col_input(ex, a->n2_out, &g, err));
    PX_TRY(px_ex_alloc_act(ex, X, T * h, &dg, err));
    k->matmul_bwd(dg, WG(lp->w1), GOPT(lp->b1), dh1, g, W(lp->w1), T, h, ex->w1_rows);
    PX_TRY(px_lora_col_bwd(ex, lp, a, PX_LORA_T_FC1, dh1, g, dg, !defer_w, err));
    if (g)
        col_input_done(ex, a->n2_out, &g);
    if (defer_w && w_work(lp, PX_LORA_T_FC1, lp->w1)) {
        a->w_dh1 = dh1;
        px_mem_set_kind(&ex->mem, dh1, PX_MEM_ACTIVATIONS);
        dh1 = NULL;
    }
    px_ex_free(ex, &dh1);
    PX_TRY(px_ex_tp_reduce(ex, dg, &dn, X, err));
    PX_TRY(px_ex_alloc_act(ex, X, Ts * h, dx_mid, err));
    be->copy(be, *dx_mid, dx_out, px_ex_bytes(ex, Ts * h));
    px_ex_norm_bwd(ex, *dx_mid, dn, a->x_mid, lp->ln2_w, lp->ln2_b, a->n2_mean, a->n2_rstd);
    px_ex_free(ex, &dn);
#undef WG
    return PX_OK;
}

px_status px_layer_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                       const void *dx_out, bool defer_w, void **dx_in, px_error *err)
{
    const px_kernels *k = ex->k;
    px_backend *be = ex->be;
    int64_t T = ex->T, Ts = ex->Ts, h = ex->h;
    px_mem_kind X = PX_MEM_TEMP;
    void *dy = NULL, *g = NULL, *dg = NULL, *dn = NULL;
    void *dx_mid = NULL, *datt = NULL, *dqkv = NULL;
    if (ex->mla) /* its weight gradients are taken here; px_layer_wgrad has none */
        defer_w = false;
    /* Weight-gradient targets: NULL when W runs later (zero-bubble). */
#define WG(off) (defer_w ? NULL : G(off))

    /* ---- MLP (MoE: its weight gradients are never deferred) ---- */
    if (lp->router >= 0)
        PX_TRY(moe_bwd(ex, lp, a, dx_out, &dx_mid, err));
    else
        PX_TRY(mlp_bwd(ex, lp, a, dx_out, defer_w, &dx_mid, err));

    /* ---- attention: x_mid = x_in + Wo attn(rope(Wqkv norm1(x_in))) ---- */
    if (px_ex_trained(lp->bo))
        k->bias_add_bwd(G(lp->bo), dx_mid, Ts, h);
    if (ex->sp)
        PX_TRY(px_ex_tp_gather(ex, dx_mid, &dy, err));
    const void *dyv = ex->sp ? dy : dx_mid;
    PX_TRY(px_ex_alloc_act(ex, X, T * ex->nh_l * ex->hd, &datt, err));
    if (ex->mla)
        PX_TRY(px_mla_out_bwd(ex, lp, a->att, dyv, datt, err));
    else
        k->matmul_bwd(datt, WG(lp->wo), NULL, dyv, a->att, W(lp->wo), T, ex->nh_l * ex->hd, h);
    PX_TRY(px_lora_row_bwd(ex, lp, a, PX_LORA_T_PROJ, dx_mid, dyv, a->att, datt, !defer_w, err));
    px_ex_free(ex, &dy);
    PX_TRY(attn_bwd(ex, a, datt, &dqkv, err));
    px_ex_free(ex, &datt);
    if (ex->llama && !ex->mla)
        rope(ex, dqkv, -1);
    PX_TRY(px_qknorm_bwd(ex, lp, a, dqkv, err));
    if (!defer_w && (ex->mla || w_work(lp, PX_LORA_T_QKV, lp->wqkv)))
        PX_TRY(col_input(ex, a->n1_out, &g, err));
    PX_TRY(px_ex_alloc_act(ex, X, T * h, &dg, err));
    if (ex->mla)
        PX_TRY(px_mla_qkv_bwd(ex, lp, a, dqkv, g, dg, err));
    else
        k->matmul_bwd(dg, WG(lp->wqkv), GOPT(lp->bqkv), dqkv, g, W(lp->wqkv), T, h, ex->qkv_l);
    PX_TRY(px_lora_col_bwd(ex, lp, a, PX_LORA_T_QKV, dqkv, g, dg, !defer_w, err));
    if (g)
        col_input_done(ex, a->n1_out, &g);
    if (defer_w && w_work(lp, PX_LORA_T_QKV, lp->wqkv)) {
        a->w_dqkv = dqkv;
        px_mem_set_kind(&ex->mem, dqkv, PX_MEM_ACTIVATIONS);
        dqkv = NULL;
    }
    px_ex_free(ex, &dqkv);
    PX_TRY(px_ex_tp_reduce(ex, dg, &dn, X, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, dx_in, err));
    be->copy(be, *dx_in, dx_mid, px_ex_bytes(ex, Ts * h));
    px_ex_norm_bwd(ex, *dx_in, dn, a->x_in, lp->ln1_w, lp->ln1_b, a->n1_mean, a->n1_rstd);
    px_ex_free(ex, &dn);
    if (defer_w && w_work(lp, PX_LORA_T_PROJ, lp->wo)) {
        a->w_do = dx_mid;
        px_mem_set_kind(&ex->mem, dx_mid, PX_MEM_ACTIVATIONS);
        dx_mid = NULL;
    }
    px_ex_free(ex, &dx_mid);
#undef WG
    return PX_OK;
}

px_status px_layer_wgrad(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                         px_error *err)
{
    const px_kernels *k = ex->k;
    int64_t T = ex->T, h = ex->h;
    void *dy = NULL, *g = NULL;
    if (ex->mla) /* px_layer_bwd took every weight gradient */
        return PX_OK;
    /* Per linear: its weight gradient unless frozen (LoRA), and its adapter's. */
    if (lp->router < 0) { /* (MoE: the MLP's gradients were taken in B) */
        /* W2: d(MLP output) x act output */
        if (w_work(lp, PX_LORA_T_FC2, lp->w2)) {
            if (ex->sp)
                PX_TRY(px_ex_tp_gather(ex, a->w_dy, &dy, err));
            const void *dyv = ex->sp ? dy : a->w_dy;
            if (px_ex_trained(lp->w2))
                k->matmul_bwd(NULL, G(lp->w2), NULL, dyv, a->h2, W(lp->w2), T, ex->f_l, h);
            PX_TRY(px_lora_row_bwd(ex, lp, a, PX_LORA_T_FC2, a->w_dy, dyv, a->h2, NULL, true,
                                   err));
            px_ex_free(ex, &dy);
        }
        /* W1: d(gate|up or fc) x norm 2 output */
        if (w_work(lp, PX_LORA_T_FC1, lp->w1)) {
            PX_TRY(col_input(ex, a->n2_out, &g, err));
            if (px_ex_trained(lp->w1))
                k->matmul_bwd(NULL, G(lp->w1), NULL, a->w_dh1, g, W(lp->w1), T, h, ex->w1_rows);
            PX_TRY(px_lora_col_bwd(ex, lp, a, PX_LORA_T_FC1, a->w_dh1, g, NULL, true, err));
            col_input_done(ex, a->n2_out, &g);
        }
    }
    /* Wo: d(attention block output) x attention output */
    if (w_work(lp, PX_LORA_T_PROJ, lp->wo)) {
        if (ex->sp)
            PX_TRY(px_ex_tp_gather(ex, a->w_do, &dy, err));
        const void *dyv = ex->sp ? dy : a->w_do;
        if (px_ex_trained(lp->wo))
            k->matmul_bwd(NULL, G(lp->wo), NULL, dyv, a->att, W(lp->wo), T, ex->nh_l * ex->hd,
                          h);
        PX_TRY(px_lora_row_bwd(ex, lp, a, PX_LORA_T_PROJ, a->w_do, dyv, a->att, NULL, true,
                               err));
        px_ex_free(ex, &dy);
    }
    /* Wqkv: d(qkv before RoPE) x norm 1 output */
    if (w_work(lp, PX_LORA_T_QKV, lp->wqkv)) {
        PX_TRY(col_input(ex, a->n1_out, &g, err));
        if (px_ex_trained(lp->wqkv))
            k->matmul_bwd(NULL, G(lp->wqkv), NULL, a->w_dqkv, g, W(lp->wqkv), T, h, ex->qkv_l);
        PX_TRY(px_lora_col_bwd(ex, lp, a, PX_LORA_T_QKV, a->w_dqkv, g, NULL, true, err));
        col_input_done(ex, a->n1_out, &g);
    }
    px_ex_free(ex, &a->w_dy);
    px_ex_free(ex, &a->w_dh1);
    px_ex_free(ex, &a->w_do);
    px_ex_free(ex, &a->w_dqkv);
    return PX_OK;
}
