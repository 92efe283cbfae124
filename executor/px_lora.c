/* px_lora.c — LoRA adapters: their tables, their forward and backward around
 * the frozen base linears (px_lora.h). */
#include "px_lora.h"

#include <stdlib.h>
#include <string.h>

#include "px_bf16.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)

static int64_t mark(int64_t off)
{
    return off >= 0 ? off | PX_OFF_FROZEN : off;
}

/* The adapters of one layer at tp_rank; lp's base offsets are already marked. */
static px_status add_layer(px_param_table *t, const px_model *m, const px_finetune *ft, int tp,
                           int tp_rank, px_layer_params *lp, px_error *err)
{
    int64_t r = ft->rank, h = m->hidden, f = m->ffn, L = lp->layer;
    int64_t nq = m->n_heads * m->head_dim, nk = m->n_kv_heads * m->head_dim;
    int64_t nq_l = nq / tp, nk_l = nk / tp, f_l = f / tp;
    int64_t nv = m->n_heads * px_model_v_head_dim(m), nv_l = nv / tp;
    bool gpt = m->block == PX_BLOCK_GPT;
    const px_init_kind N = PX_INIT_NORMAL, Z = PX_INIT_ZEROS;
    for (int i = 0; i < 4; i++)
        lp->lora_a[i] = lp->lora_b[i] = -1;
#define ID(kind) PX_TID_LORA(L, kind)
#define SEG(...) PX_TRY(px_params_add_seg(t, __VA_ARGS__, err))
    if (ft->targets & PX_LORA_QKV) {
        /* A replicated, its gradient partial on every TP rank (tp_sum). */
        SEG(ID(PX_T_LORA_A_QKV), r, h, 0, r, 0, h, N, true, &lp->lora_a[PX_LORA_T_QKV]);
        t->segs[t->n_segs - 1].tp_sum = true;
        SEG(ID(PX_T_LORA_B_Q), nq, r, tp_rank * nq_l, nq_l, 0, r, Z, false,
            &lp->lora_b[PX_LORA_T_QKV]);
        SEG(ID(PX_T_LORA_B_K), nk, r, tp_rank * nk_l, nk_l, 0, r, Z, false, NULL);
        SEG(ID(PX_T_LORA_B_V), nk, r, tp_rank * nk_l, nk_l, 0, r, Z, false, NULL);
    }
    if (ft->targets & PX_LORA_PROJ) {
        /* A split by Wo's input columns; B replicated (SP: summed over TP). */
        SEG(ID(PX_T_LORA_A_PROJ), r, nv, 0, r, tp_rank * nv_l, nv_l, N, false,
            &lp->lora_a[PX_LORA_T_PROJ]);
        SEG(ID(PX_T_LORA_B_PROJ), h, r, 0, h, 0, r, Z, true, &lp->lora_b[PX_LORA_T_PROJ]);
    }
    if (ft->targets & PX_LORA_FC1) {
        SEG(ID(PX_T_LORA_A_FC1), r, h, 0, r, 0, h, N, true, &lp->lora_a[PX_LORA_T_FC1]);
        t->segs[t->n_segs - 1].tp_sum = true;
        /* One adapter over the fused gate|up output: B's gate rows, then its
         * up rows, each split as the base weight's. */
        SEG(ID(PX_T_LORA_B_FC1), f, r, tp_rank * f_l, f_l, 0, r, Z, false,
            &lp->lora_b[PX_LORA_T_FC1]);
        if (!gpt)
            SEG(ID(PX_T_LORA_B_UP), f, r, tp_rank * f_l, f_l, 0, r, Z, false, NULL);
    }
    if (ft->targets & PX_LORA_FC2) {
        SEG(ID(PX_T_LORA_A_FC2), r, f, 0, r, tp_rank * f_l, f_l, N, false,
            &lp->lora_a[PX_LORA_T_FC2]);
        SEG(ID(PX_T_LORA_B_FC2), h, r, 0, h, 0, r, Z, true, &lp->lora_b[PX_LORA_T_FC2]);
    }
#undef SEG
#undef ID
    return PX_OK;
}

px_status px_lora_tables(px_param_table *train, px_param_table *frozen, const px_model *m,
                         const px_parallel *par, int tp_rank, int stage, px_error *err)
{
    memset(train, 0, sizeof *train);
    PX_TRY(px_params_build(frozen, m, par, tp_rank, stage, err));
    train->word_emb = mark(frozen->word_emb);
    train->pos_emb = mark(frozen->pos_emb);
    train->final_norm_w = mark(frozen->final_norm_w);
    train->final_norm_b = mark(frozen->final_norm_b);
    train->lm_head = mark(frozen->lm_head);
    train->emb_copy = mark(frozen->emb_copy);
    train->mtp_emb = -1; /* (MTP with LoRA is refused: px_exec_check_plan) */
    train->fe_l = frozen->fe_l;
    train->n_chunks = frozen->n_chunks;
    train->chunks = calloc((size_t)frozen->n_chunks, sizeof *train->chunks);
    if (!train->chunks)
        return PX_FAIL(err, PX_ERR_NOMEM, "parameter table: out of memory");
    for (int j = 0; j < frozen->n_chunks; j++) {
        const px_chunk_params *fc = &frozen->chunks[j];
        px_chunk_params *c = &train->chunks[j];
        *c = *fc;
        c->layers = calloc((size_t)(fc->n_layers > 0 ? fc->n_layers : 1), sizeof *c->layers);
        if (!c->layers)
            return PX_FAIL(err, PX_ERR_NOMEM, "parameter table: out of memory");
        for (int64_t l = 0; l < fc->n_layers; l++) {
            px_layer_params *lp = &c->layers[l];
            *lp = fc->layers[l];
            int64_t *base[] = {&lp->ln1_w, &lp->ln1_b, &lp->wqkv, &lp->bqkv, &lp->wo,
                               &lp->bo, &lp->ln2_w, &lp->ln2_b, &lp->w1, &lp->b1, &lp->w2,
                               &lp->b2, &lp->router, &lp->ew1, &lp->ew2, &lp->mla_wqa,
                               &lp->mla_qnorm, &lp->mla_wqb, &lp->mla_wkva, &lp->mla_kvnorm,
                               &lp->mla_wkvb, &lp->q_norm, &lp->k_norm, &lp->sw1, &lp->sw2};
            for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
                *base[i] = mark(*base[i]);
            PX_TRY(add_layer(train, m, &par->finetune, par->tp, tp_rank, lp, err));
        }
    }
    train->n_dense = train->n_elems;
    return PX_OK;
}

int64_t px_lora_unit_off(const px_layer_params *lp)
{
    for (int i = 0; i < 4; i++)
        if (lp->lora_a[i] >= 0)
            return lp->lora_a[i];
    return -1;
}

/* A host fp32 buffer into the compute dtype on the device. */
static px_status upload_act(px_exec *ex, void *dst, const float *src, int64_t n, px_error *err)
{
    if (ex->act_dtype == PX_F32) {
        ex->be->upload(ex->be, dst, src, n * (int64_t)sizeof(float));
        return PX_OK;
    }
    px_bf16 *h16 = malloc((size_t)(n > 0 ? n : 1) * sizeof *h16);
    if (!h16)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (LoRA set-up)");
    px_bf16_round(h16, src, n);
    ex->be->upload(ex->be, dst, h16, n * (int64_t)sizeof *h16);
    free(h16);
    return PX_OK;
}

px_status px_lora_setup(px_exec *ex, px_error *err)
{
    const px_finetune *ft = &ex->plan.par.finetune;
    int64_t nf = ex->ftab.n_elems, r = ft->rank;
    ex->lora_r = r;
    /* The base: its initial values, never updated (weights kind: it is what
     * the kernels read, as the cost model's frozen weights). */
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_WEIGHTS, nf, &ex->fparams, err));
    float *host = malloc((size_t)((nf > r * r ? nf : r * r) + 1) * sizeof *host);
    if (!host)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (LoRA set-up)");
    px_params_init(&ex->ftab, host, ex->opt.seed, ex->opt.init_std);
    px_status st = upload_act(ex, ex->fparams, host, nf, err);
    /* (alpha / r) I [r, r]: the scale as a GEMM, so every backend runs it
     * with the kernels it has. */
    if (!st)
        st = px_ex_alloc_act(ex, PX_MEM_BUFFERS, r * r, &ex->lora_s, err);
    if (!st) {
        memset(host, 0, (size_t)(r * r) * sizeof *host);
        for (int64_t i = 0; i < r; i++)
            host[i * r + i] = (float)(ft->alpha / (double)r);
        st = upload_act(ex, ex->lora_s, host, r * r, err);
    }
    free(host);
    PX_TRY(st);
    /* The frozen norms' weight gradients land here, unread (two slots). */
    int64_t w = ex->h > ex->hd ? ex->h : ex->hd;
    return px_ex_alloc_f32(ex, PX_MEM_BUFFERS, 2 * w, &ex->gsink, err);
}

px_status px_lora_frozen_to_host(px_exec *ex, float *host, px_error *err)
{
    int64_t n = ex->ftab.n_elems;
    if (ex->act_dtype == PX_F32) {
        ex->be->download(ex->be, host, ex->fparams, n * (int64_t)sizeof(float));
        return PX_OK;
    }
    px_bf16 *h16 = malloc((size_t)(n > 0 ? n : 1) * sizeof *h16);
    if (!h16)
        return PX_FAIL(err, PX_ERR_NOMEM, "dump: out of memory");
    ex->be->download(ex->be, h16, ex->fparams, n * (int64_t)sizeof *h16);
    px_bf16_widen(host, h16, n);
    free(h16);
    return PX_OK;
}

/* Output rows of column target t on this rank: q|k|v heads, gate|up (fc). */
static int64_t col_out(const px_exec *ex, int t)
{
    return t == PX_LORA_T_QKV ? ex->qkv_l : ex->w1_rows;
}

/* Input columns of row target t on this rank: the heads' values, f / tp. */
static int64_t row_in(const px_exec *ex, int t)
{
    return t == PX_LORA_T_PROJ ? ex->nh_l * ex->hd : ex->f_l;
}

/* us [T, r] = (alpha / r) u, u [T, r]. */
static void scale(px_exec *ex, void *us, const void *u)
{
    ex->k->matmul_fwd(us, u, ex->lora_s, NULL, ex->T, ex->lora_r, ex->lora_r);
}

px_status px_lora_col_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, int t,
                          const void *g, void *y, px_error *err)
{
    if (lp->lora_a[t] < 0)
        return PX_OK;
    int64_t T = ex->T, r = ex->lora_r, n = col_out(ex, t);
    void *u = NULL, *v = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * r, &u, err));
    ex->k->matmul_fwd(u, g, W(lp->lora_a[t]), NULL, T, ex->h, r);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, T * r, &a->lora_u[t], err));
    scale(ex, a->lora_u[t], u);
    px_ex_free(ex, &u);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * n, &v, err));
    ex->k->matmul_fwd(v, a->lora_u[t], W(lp->lora_b[t]), NULL, T, r, n);
    ex->k->residual_fwd(y, y, v, T * n);
    px_ex_free(ex, &v);
    return PX_OK;
}

/* First token row of this rank's sequence shard in the [T, .] rows. */
static int64_t shard_row0(const px_exec *ex)
{
    return ex->sp ? ex->row0_sp * ex->b : 0;
}

px_status px_lora_row_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, int t,
                          const void *x, void *y_s, px_error *err)
{
    if (lp->lora_a[t] < 0)
        return PX_OK;
    int64_t T = ex->T, Ts = ex->Ts, r = ex->lora_r, h = ex->h;
    void *u = NULL, *v = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * r, &u, err));
    ex->k->matmul_fwd(u, x, W(lp->lora_a[t]), NULL, T, row_in(ex, t), r);
    if (ex->tp.size > 1) /* each rank holds A's columns of its inputs */
        PX_TRY(ex->be->all_reduce(ex->be, u, T * r, ex->act_dtype, PX_REDUCE_SUM, &ex->tp, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, T * r, &a->lora_u[t], err));
    scale(ex, a->lora_u[t], u);
    px_ex_free(ex, &u);
    /* B on this rank's rows of the reduced output only: added once. */
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Ts * h, &v, err));
    ex->k->matmul_fwd(v, px_ex_at(ex, a->lora_u[t], shard_row0(ex) * r), W(lp->lora_b[t]),
                      NULL, Ts, r, h);
    ex->k->residual_fwd(y_s, y_s, v, Ts * h);
    px_ex_free(ex, &v);
    return PX_OK;
}

/* du [T, r] (fresh) from dus [T, r]: through the scale. */
static px_status unscale(px_exec *ex, const void *dus, void **du, px_error *err)
{
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->T * ex->lora_r, du, err));
    ex->k->matmul_bwd(*du, NULL, NULL, dus, NULL, ex->lora_s, ex->T, ex->lora_r, ex->lora_r);
    return PX_OK;
}

/* Through A: dx [T, in] += du A, and (wgrad) dA += du^T x. */
static px_status through_a(px_exec *ex, int64_t a_off, const void *du, const void *x, int64_t in,
                           void *dx, bool wgrad, px_error *err)
{
    float *dA = wgrad ? G(a_off) : NULL;
    if (!dx) {
        ex->k->matmul_bwd(NULL, dA, NULL, du, x, W(a_off), ex->T, in, ex->lora_r);
        return PX_OK;
    }
    void *d = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->T * in, &d, err));
    ex->k->matmul_bwd(d, dA, NULL, du, x, W(a_off), ex->T, in, ex->lora_r);
    ex->k->residual_fwd(dx, dx, d, ex->T * in);
    px_ex_free(ex, &d);
    return PX_OK;
}

px_status px_lora_col_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a, int t,
                          const void *dy, const void *g, void *dx, bool wgrad, px_error *err)
{
    if (lp->lora_a[t] < 0)
        return PX_OK;
    int64_t T = ex->T, r = ex->lora_r;
    void *dus = NULL, *du = NULL;
    /* dus = dy B_l: this rank's rows of B only, so du and dA are partial
     * over TP (A's gradient is summed there: tp_sum). */
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * r, &dus, err));
    ex->k->matmul_bwd(dus, wgrad ? G(lp->lora_b[t]) : NULL, NULL, dy, a->lora_u[t],
                      W(lp->lora_b[t]), T, r, col_out(ex, t));
    px_status st = unscale(ex, dus, &du, err);
    px_ex_free(ex, &dus);
    if (!st)
        st = through_a(ex, lp->lora_a[t], du, g, ex->h, dx, wgrad, err);
    px_ex_free(ex, &du);
    return st;
}

px_status px_lora_row_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a, int t,
                          const void *dy_s, const void *dy, const void *x, void *dx, bool wgrad,
                          px_error *err)
{
    if (lp->lora_a[t] < 0)
        return PX_OK;
    int64_t T = ex->T, r = ex->lora_r, h = ex->h;
    void *dus = NULL, *du = NULL;
    /* dB from this rank's shard rows (the forward's), summed over TP under SP */
    if (wgrad)
        ex->k->matmul_bwd(NULL, G(lp->lora_b[t]), NULL, dy_s,
                          px_ex_at(ex, a->lora_u[t], shard_row0(ex) * r), W(lp->lora_b[t]),
                          ex->Ts, r, h);
    /* du over every token: the whole A x was all-reduced forward */
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * r, &dus, err));
    ex->k->matmul_bwd(dus, NULL, NULL, dy, NULL, W(lp->lora_b[t]), T, r, h);
    px_status st = unscale(ex, dus, &du, err);
    px_ex_free(ex, &dus);
    if (!st)
        st = through_a(ex, lp->lora_a[t], du, x, row_in(ex, t), dx, wgrad, err);
    px_ex_free(ex, &du);
    return st;
}
