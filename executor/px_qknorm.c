/* px_qknorm.c — Qwen3's qk_norm: an RMSNorm over head_dim on every q head
 * and every k head, after the q/k projections and before RoPE, with one
 * learned weight [head_dim] for q and one for k shared by all heads (Hugging
 * Face Qwen3Attention's q_norm / k_norm, Megatron-Core's q_layernorm /
 * k_layernorm).
 *
 * The heads of a->qkv sit strided in each token row ([q heads | k heads |
 * v heads], docs/executor.md), so the existing kernels run it on gathered
 * rows: viewed as [T (nh_l + 2 nkv_l), hd], the q and k head rows are
 * gathered into [T nh_l + T nkv_l, hd] (moe_permute with no gate: a row
 * copy), each part goes through rmsnorm_fwd with its weight, and one more
 * gather puts the normalised rows and the untouched v rows back in place.
 * Backward mirrors it with rmsnorm_bwd.  Every backend that runs MoE has
 * these kernels, so every backend runs qk_norm.
 *
 * Under TP each rank holds whole heads, so the norm is local; the weights
 * are replicated and each rank's gradient covers only its heads, so the
 * gradient is summed over TP whatever SP says (px_param_seg.tp_sum), then
 * over dp x cp as every dense weight's. */
#include <stdlib.h>

#include "px_exec_internal.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)

/* Head rows: q rows (T nh_l), k rows (T nkv_l), and all rows of qkv. */
static int64_t qk_rows(const px_exec *ex)
{
    return ex->T * (ex->nh_l + ex->nkv_l);
}

static int64_t all_rows(const px_exec *ex)
{
    return ex->T * (ex->nh_l + 2 * ex->nkv_l);
}

/* ex->qk_rows: the gather map [qk_rows] (source row in qkv of each q, then
 * k, head row) followed by the scatter map [all_rows] (for each row of qkv,
 * its row in [normalised q|k rows ; the qkv rows]). */
px_status px_qknorm_setup(px_exec *ex, px_error *err)
{
    if (!ex->plan.model.qk_norm)
        return PX_OK;
    int64_t T = ex->T, nq = ex->nh_l, nk = ex->nkv_l, R = nq + 2 * nk;
    int64_t n_qk = qk_rows(ex), n_all = all_rows(ex);
    if (n_qk + n_all > INT32_MAX)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "qk_norm: %lld head rows per micro-batch exceed the int32 row maps",
                       (long long)(n_qk + n_all));
    int32_t *host = malloc((size_t)(n_qk + n_all) * sizeof *host);
    if (!host)
        return PX_FAIL(err, PX_ERR_NOMEM, "qk_norm: out of memory (row maps)");
    int32_t *scatter = host + n_qk;
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < R; j++) {
            int64_t row = t * R + j, at;
            if (j < nq)
                at = t * nq + j;
            else if (j < nq + nk)
                at = T * nq + t * nk + (j - nq);
            else
                at = n_qk + row;
            scatter[row] = (int32_t)at;
            if (at < n_qk)
                host[at] = (int32_t)row;
        }
    px_status st = px_ex_alloc_i32(ex, PX_MEM_BUFFERS, n_qk + n_all, &ex->qk_rows, err);
    if (!st)
        ex->be->upload(ex->be, ex->qk_rows, host, (n_qk + n_all) * (int64_t)sizeof(int32_t));
    free(host);
    return st;
}

/* qkv's rows <- [head rows src[0 .. n_qk) ; qkv], through the scatter map
 * (src's tail is filled with qkv first). */
static void put_back(px_exec *ex, void *qkv, void *src)
{
    int64_t n_qk = qk_rows(ex), n_all = all_rows(ex), hd = ex->hd;
    ex->be->copy(ex->be, px_ex_at(ex, src, n_qk * hd), qkv, px_ex_bytes(ex, n_all * hd));
    ex->k->moe_permute(qkv, src, ex->qk_rows + n_qk, NULL, NULL, n_all, hd);
}

px_status px_qknorm_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                        px_mem_kind kind, px_error *err)
{
    if (lp->q_norm < 0)
        return PX_OK;
    const px_kernels *k = ex->k;
    int64_t hd = ex->hd, nq_rows = ex->T * ex->nh_l, n_qk = qk_rows(ex);
    void *src = NULL;
    PX_TRY(px_ex_alloc_act(ex, kind, n_qk * hd, &a->qk_in, err));
    k->moe_permute(a->qk_in, a->qkv, ex->qk_rows, NULL, NULL, n_qk, hd);
    PX_TRY(px_ex_alloc_f32(ex, kind, n_qk, &a->qk_rstd, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, (n_qk + all_rows(ex)) * hd, &src, err));
    k->rmsnorm_fwd(src, a->qk_rstd, a->qk_in, W(lp->q_norm), nq_rows, hd, ex->norm_eps);
    k->rmsnorm_fwd(px_ex_at(ex, src, nq_rows * hd), a->qk_rstd + nq_rows,
                   px_ex_at(ex, a->qk_in, nq_rows * hd), W(lp->k_norm), n_qk - nq_rows, hd,
                   ex->norm_eps);
    put_back(ex, a->qkv, src);
    px_ex_free(ex, &src);
    return PX_OK;
}

px_status px_qknorm_bwd(px_exec *ex, const px_layer_params *lp, const px_layer_act *a,
                        void *dqkv, px_error *err)
{
    if (lp->q_norm < 0)
        return PX_OK;
    const px_kernels *k = ex->k;
    int64_t hd = ex->hd, nq_rows = ex->T * ex->nh_l, n_qk = qk_rows(ex);
    void *dout = NULL, *src = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, n_qk * hd, &dout, err));
    k->moe_permute(dout, dqkv, ex->qk_rows, NULL, NULL, n_qk, hd);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, (n_qk + all_rows(ex)) * hd, &src, err));
    ex->be->zero(ex->be, src, px_ex_bytes(ex, n_qk * hd)); /* rmsnorm_bwd adds into it */
    k->rmsnorm_bwd(src, px_ex_gsink(ex, lp->q_norm, 0), dout, a->qk_in, W(lp->q_norm),
                   a->qk_rstd, nq_rows, hd);
    k->rmsnorm_bwd(px_ex_at(ex, src, nq_rows * hd), px_ex_gsink(ex, lp->k_norm, 1),
                   px_ex_at(ex, dout, nq_rows * hd), px_ex_at(ex, a->qk_in, nq_rows * hd),
                   W(lp->k_norm), a->qk_rstd + nq_rows, n_qk - nq_rows, hd);
    px_ex_free(ex, &dout);
    put_back(ex, dqkv, src);
    px_ex_free(ex, &src);
    return PX_OK;
}
