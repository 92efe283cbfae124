/* px_mla.c — multi-head latent attention: the low-rank q and kv projections
 * of DeepSeek-V2/V3 around the engine's attention core (px_mla.h).
 *
 * Under TP the down projections (Wq_a, Wkv_a) and the latent RMSNorms are
 * replicated and run on the gathered [T, h] input on every TP rank; the up
 * projections (Wq_b, Wkv_b) are column-parallel over heads and Wo is
 * row-parallel.  Each rank's up projections see only its heads, so the
 * gradients reaching the latents, and those of the replicated tensors, are
 * partial: the replicated tensors are summed over TP (px_param_seg.tp_sum)
 * and the input gradient goes through the block's usual TP reduction. */
#include "px_mla.h"

#include "px_params.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)

typedef struct {
    int64_t ql, kl, dn, dr, dv; /* q / kv latent ranks, nope / rope / v head widths */
    int64_t D;                  /* query/key head width dn + dr */
    int64_t nh;                 /* this rank's heads */
    int64_t nq, nkv, pe_w;      /* row widths: q [nh D], kv up [nh (dn + dv)], pe [(nh+1) dr] */
} mla_dims;

static mla_dims dims(const px_exec *ex)
{
    const px_model *m = &ex->plan.model;
    mla_dims d = {m->q_lora_rank, m->kv_lora_rank, m->qk_nope_head_dim, m->qk_rope_head_dim,
                  m->v_head_dim, 0, ex->nh_l, 0, 0, 0};
    d.D = d.dn + d.dr;
    d.nq = d.nh * d.D;
    d.nkv = d.nh * (d.dn + d.dv);
    d.pe_w = (d.nh + 1) * d.dr;
    return d;
}

px_status px_mla_setup(px_exec *ex, px_error *err)
{
    const px_model *m = &ex->plan.model;
    int64_t D = px_model_qk_head_dim(m);
    if (m->v_head_dim > D)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model %s: v_head_dim %lld > qk_nope_head_dim + qk_rope_head_dim = %lld: "
                       "the executor pads v to the query/key head width; allowed: v_head_dim "
                       "<= %lld",
                       m->name, (long long)m->v_head_dim, (long long)D, (long long)D);
    if (m->qk_rope_head_dim % 2 != 0)
        return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                       "model %s: qk_rope_head_dim %lld: RoPE rotates pairs of dimensions; "
                       "allowed: an even width",
                       m->name, (long long)m->qk_rope_head_dim);
    ex->hd = D;
    ex->nkv = ex->nh;
    ex->nkv_l = ex->nh_l;
    ex->qkv_l = 3 * ex->nh_l * D;
    return PX_OK;
}

/* Columns [sc, sc + n) of `rows` rows of src (row width sw) into columns
 * [dc, dc + n) of dst (row width dw): one strided copy. */
static void copy_cols(px_exec *ex, void *dst, int64_t dw, int64_t dc, const void *src,
                      int64_t sw, int64_t sc, int64_t n, int64_t rows)
{
    px_backend *be = ex->be;
    int64_t e = px_dtype_bytes(ex->act_dtype);
    void *d0 = px_ex_at(ex, dst, dc);
    const void *s0 = px_ex_at(ex, src, sc);
    if (be->copy_2d) {
        be->copy_2d(be, d0, dw * e, s0, sw * e, n * e, rows);
        return;
    }
    for (int64_t r = 0; r < rows; r++)
        be->copy(be, px_ex_at(ex, d0, r * dw), px_ex_at(ex, s0, r * sw), n * e);
}

/* RoPE on pe [T, nh + 1, dr] (the heads' q_rope slices and the shared
 * k_rope) at this rank's global positions. */
typedef struct {
    void *pe;
    mla_dims d;
    int dir;
} pe_arg;

static void pe_run(px_exec *ex, int64_t row, int64_t n, int64_t pos, void *arg)
{
    pe_arg *r = arg;
    void *x = px_ex_at(ex, r->pe, row * ex->b * r->d.pe_w);
    if (r->dir > 0)
        ex->k->rope_fwd(x, n, ex->b, r->d.nh + 1, 0, r->d.dr, pos, &ex->rope);
    else
        ex->k->rope_bwd(x, n, ex->b, r->d.nh + 1, 0, r->d.dr, pos, &ex->rope);
}

static void rope_pe(px_exec *ex, void *pe, const mla_dims *d, int dir)
{
    pe_arg r = {pe, *d, dir};
    px_ex_pos_runs(ex, 0, ex->s_l, pe_run, &r);
}

/* x [T, in] -> RMSNorm (kept: x, out, rstd) */
static px_status latent_norm_fwd(px_exec *ex, const void *x, int64_t w_off, int64_t n,
                                 void **out, float **rstd, px_error *err)
{
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, ex->T * n, out, err));
    PX_TRY(px_ex_alloc_f32(ex, PX_MEM_ACTIVATIONS, ex->T, rstd, err));
    ex->k->rmsnorm_fwd(*out, *rstd, x, W(w_off), ex->T, n, ex->latent_norm_eps);
    return PX_OK;
}

/* q [T, nq] from g: one projection, or down, RMSNorm, up. */
static px_status q_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *g,
                       const mla_dims *d, void *q, px_error *err)
{
    int64_t T = ex->T, h = ex->h;
    if (d->ql == 0) {
        ex->k->matmul_fwd(q, g, W(lp->mla_wqa), NULL, T, h, d->nq);
        return PX_OK;
    }
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, T * d->ql, &a->mla_cq, err));
    ex->k->matmul_fwd(a->mla_cq, g, W(lp->mla_wqa), NULL, T, h, d->ql);
    PX_TRY(latent_norm_fwd(ex, a->mla_cq, lp->mla_qnorm, d->ql, &a->mla_cqn, &a->mla_cq_rstd,
                           err));
    ex->k->matmul_fwd(q, a->mla_cqn, W(lp->mla_wqb), NULL, T, d->ql, d->nq);
    return PX_OK;
}

px_status px_mla_qkv_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *g,
                         px_error *err)
{
    mla_dims d = dims(ex);
    const px_kernels *k = ex->k;
    int64_t T = ex->T, W3 = ex->qkv_l, ckv_w = d.kl + d.dr;
    px_mem_kind X = PX_MEM_TEMP;
    void *q = NULL, *ckv = NULL, *kv = NULL, *pe = NULL;
    PX_TRY(px_ex_alloc_act(ex, X, T * d.nq, &q, err));
    PX_TRY(q_fwd(ex, lp, a, g, &d, q, err));
    /* kv: the latent c (normed, then up-projected) and the shared k_rope */
    PX_TRY(px_ex_alloc_act(ex, X, T * ckv_w, &ckv, err));
    k->matmul_fwd(ckv, g, W(lp->mla_wkva), NULL, T, ex->h, ckv_w);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, T * d.kl, &a->mla_c, err));
    copy_cols(ex, a->mla_c, d.kl, 0, ckv, ckv_w, 0, d.kl, T);
    PX_TRY(latent_norm_fwd(ex, a->mla_c, lp->mla_kvnorm, d.kl, &a->mla_cn, &a->mla_c_rstd, err));
    PX_TRY(px_ex_alloc_act(ex, X, T * d.nkv, &kv, err));
    k->matmul_fwd(kv, a->mla_cn, W(lp->mla_wkvb), NULL, T, d.kl, d.nkv);
    /* RoPE on the rope slices only */
    PX_TRY(px_ex_alloc_act(ex, X, T * d.pe_w, &pe, err));
    for (int64_t j = 0; j < d.nh; j++)
        copy_cols(ex, pe, d.pe_w, j * d.dr, q, d.nq, j * d.D + d.dn, d.dr, T);
    copy_cols(ex, pe, d.pe_w, d.nh * d.dr, ckv, ckv_w, d.kl, d.dr, T);
    px_ex_free(ex, &ckv);
    rope_pe(ex, pe, &d, 1);
    /* q|k|v rows: [q_nope | q_rope] [k_nope | k_rope] [v | 0] per head */
    copy_cols(ex, a->qkv, W3, 0, q, d.nq, 0, d.nq, T);
    for (int64_t j = 0; j < d.nh; j++) {
        int64_t qh = j * d.D, kh = d.nq + j * d.D, vh = 2 * d.nq + j * d.D;
        copy_cols(ex, a->qkv, W3, qh + d.dn, pe, d.pe_w, j * d.dr, d.dr, T);
        copy_cols(ex, a->qkv, W3, kh, kv, d.nkv, j * (d.dn + d.dv), d.dn, T);
        copy_cols(ex, a->qkv, W3, kh + d.dn, pe, d.pe_w, d.nh * d.dr, d.dr, T);
        copy_cols(ex, a->qkv, W3, vh, kv, d.nkv, j * (d.dn + d.dv) + d.dn, d.dv, T);
    }
    px_ex_free(ex, &q);
    px_ex_free(ex, &kv);
    px_ex_free(ex, &pe);
    return PX_OK;
}

px_status px_mla_out_fwd(px_exec *ex, const px_layer_params *lp, const void *att, void *o,
                         px_error *err)
{
    mla_dims d = dims(ex);
    void *av = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->T * d.nh * d.dv, &av, err));
    copy_cols(ex, av, d.dv, 0, att, d.D, 0, d.dv, ex->T * d.nh);
    ex->k->matmul_fwd(o, av, W(lp->wo), NULL, ex->T, d.nh * d.dv, ex->h);
    px_ex_free(ex, &av);
    return PX_OK;
}

px_status px_mla_out_bwd(px_exec *ex, const px_layer_params *lp, const void *att,
                         const void *dy, void *datt, px_error *err)
{
    mla_dims d = dims(ex);
    int64_t T = ex->T, nv = d.nh * d.dv;
    void *av = NULL, *dav = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * nv, &av, err));
    copy_cols(ex, av, d.dv, 0, att, d.D, 0, d.dv, T * d.nh);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * nv, &dav, err));
    ex->k->matmul_bwd(dav, G(lp->wo), NULL, dy, av, W(lp->wo), T, nv, ex->h);
    px_ex_free(ex, &av);
    ex->be->zero(ex->be, datt, px_ex_bytes(ex, T * d.nq));
    copy_cols(ex, datt, d.D, 0, dav, d.dv, 0, d.dv, T * d.nh);
    px_ex_free(ex, &dav);
    return PX_OK;
}

/* dpe [T, nh + 1, dr] before RoPE: the heads' q_rope gradients and the sum
 * over heads of the k_rope gradients. */
static px_status rope_grads(px_exec *ex, const void *dqkv, const mla_dims *d, void **dpe,
                            px_error *err)
{
    int64_t T = ex->T, W3 = ex->qkv_l;
    void *dkr = NULL, *tmp = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * d->pe_w, dpe, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * d->dr, &dkr, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * d->dr, &tmp, err));
    ex->be->zero(ex->be, dkr, px_ex_bytes(ex, T * d->dr));
    for (int64_t j = 0; j < d->nh; j++) {
        copy_cols(ex, *dpe, d->pe_w, j * d->dr, dqkv, W3, j * d->D + d->dn, d->dr, T);
        copy_cols(ex, tmp, d->dr, 0, dqkv, W3, d->nq + j * d->D + d->dn, d->dr, T);
        ex->k->residual_fwd(dkr, dkr, tmp, T * d->dr);
    }
    copy_cols(ex, *dpe, d->pe_w, d->nh * d->dr, dkr, d->dr, 0, d->dr, T);
    px_ex_free(ex, &tmp);
    px_ex_free(ex, &dkr);
    rope_pe(ex, *dpe, d, -1);
    return PX_OK;
}

/* dx [T, n] (fresh) of an RMSNorm over a kept latent. */
static px_status latent_norm_bwd(px_exec *ex, const void *dout, const void *x, int64_t w_off,
                                 const float *rstd, int64_t n, void **dx, px_error *err)
{
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, ex->T * n, dx, err));
    ex->be->zero(ex->be, *dx, px_ex_bytes(ex, ex->T * n));
    ex->k->rmsnorm_bwd(*dx, G(w_off), dout, x, W(w_off), rstd, ex->T, n);
    return PX_OK;
}

/* The kv path: Wkv_b, the latent norm, Wkv_a; dg = its input gradient. */
static px_status kv_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                        const void *dqkv, const void *dpe, const void *g, const mla_dims *d,
                        void *dg, px_error *err)
{
    int64_t T = ex->T, W3 = ex->qkv_l, ckv_w = d->kl + d->dr;
    void *dkv = NULL, *dcn = NULL, *dc = NULL, *dckv = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * d->nkv, &dkv, err));
    for (int64_t j = 0; j < d->nh; j++) {
        int64_t u = j * (d->dn + d->dv);
        copy_cols(ex, dkv, d->nkv, u, dqkv, W3, d->nq + j * d->D, d->dn, T);
        copy_cols(ex, dkv, d->nkv, u + d->dn, dqkv, W3, 2 * d->nq + j * d->D, d->dv, T);
    }
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * d->kl, &dcn, err));
    ex->k->matmul_bwd(dcn, G(lp->mla_wkvb), NULL, dkv, a->mla_cn, W(lp->mla_wkvb), T, d->kl,
                      d->nkv);
    px_ex_free(ex, &dkv);
    PX_TRY(latent_norm_bwd(ex, dcn, a->mla_c, lp->mla_kvnorm, a->mla_c_rstd, d->kl, &dc, err));
    px_ex_free(ex, &dcn);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * ckv_w, &dckv, err));
    copy_cols(ex, dckv, ckv_w, 0, dc, d->kl, 0, d->kl, T);
    copy_cols(ex, dckv, ckv_w, d->kl, dpe, d->pe_w, d->nh * d->dr, d->dr, T);
    px_ex_free(ex, &dc);
    ex->k->matmul_bwd(dg, G(lp->mla_wkva), NULL, dckv, g, W(lp->mla_wkva), T, ex->h, ckv_w);
    px_ex_free(ex, &dckv);
    return PX_OK;
}

/* The q path; dgq = its input gradient (overwritten). */
static px_status q_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                       const void *dqkv, const void *dpe, const void *g, const mla_dims *d,
                       void *dgq, px_error *err)
{
    int64_t T = ex->T, h = ex->h;
    void *dq = NULL, *dcqn = NULL, *dcq = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * d->nq, &dq, err));
    copy_cols(ex, dq, d->nq, 0, dqkv, ex->qkv_l, 0, d->nq, T);
    for (int64_t j = 0; j < d->nh; j++)
        copy_cols(ex, dq, d->nq, j * d->D + d->dn, dpe, d->pe_w, j * d->dr, d->dr, T);
    if (d->ql == 0) {
        ex->k->matmul_bwd(dgq, G(lp->mla_wqa), NULL, dq, g, W(lp->mla_wqa), T, h, d->nq);
        px_ex_free(ex, &dq);
        return PX_OK;
    }
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * d->ql, &dcqn, err));
    ex->k->matmul_bwd(dcqn, G(lp->mla_wqb), NULL, dq, a->mla_cqn, W(lp->mla_wqb), T, d->ql,
                      d->nq);
    px_ex_free(ex, &dq);
    PX_TRY(latent_norm_bwd(ex, dcqn, a->mla_cq, lp->mla_qnorm, a->mla_cq_rstd, d->ql, &dcq,
                           err));
    px_ex_free(ex, &dcqn);
    ex->k->matmul_bwd(dgq, G(lp->mla_wqa), NULL, dcq, g, W(lp->mla_wqa), T, h, d->ql);
    px_ex_free(ex, &dcq);
    return PX_OK;
}

px_status px_mla_qkv_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                         const void *dqkv, const void *g, void *dg, px_error *err)
{
    mla_dims d = dims(ex);
    int64_t Th = ex->T * ex->h;
    void *dpe = NULL, *dgq = NULL;
    PX_TRY(rope_grads(ex, dqkv, &d, &dpe, err));
    PX_TRY(kv_bwd(ex, lp, a, dqkv, dpe, g, &d, dg, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Th, &dgq, err));
    PX_TRY(q_bwd(ex, lp, a, dqkv, dpe, g, &d, dgq, err));
    px_ex_free(ex, &dpe);
    ex->k->residual_fwd(dg, dg, dgq, Th);
    px_ex_free(ex, &dgq);
    return PX_OK;
}

void px_mla_act_free(px_exec *ex, px_layer_act *a)
{
    px_ex_free(ex, &a->mla_cq);
    px_ex_free(ex, &a->mla_cqn);
    px_ex_free(ex, &a->mla_c);
    px_ex_free(ex, &a->mla_cn);
    px_ex_free(ex, &a->mla_cq_rstd);
    px_ex_free(ex, &a->mla_c_rstd);
}
