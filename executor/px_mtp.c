/* px_mtp.c — the multi-token-prediction modules on the last chunk (px_mtp.h).
 *
 * Under TP the embedding lookup and the LM head are vocabulary-parallel as
 * the main model's; the norms and the projection are replicated and run on
 * this rank's Ts tokens (their gradients summed over TP under SP, as the
 * layer norms').  Under PP the last stage looks the tokens up in its copy of
 * the word embedding, whose gradient px_exec.c sums with the first stage's.
 * The shift by k stays inside a sequence: a position without a target
 * (i >= s - k) gets token 0 and no loss, as Megatron-Core rolls its labels
 * and masks them.  Causal attention keeps those positions out of the
 * others. */
#include <math.h>
#include <stdlib.h>

#include "px_mtp.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)

/* Positions of module k (1-based) with a target, times b: the first rows of
 * a micro-batch (rows are position-major; cp = 1). */
static int64_t valid_rows(const px_exec *ex, int k)
{
    return (ex->s - k) * ex->b;
}

px_status px_mtp_setup(px_exec *ex, px_error *err)
{
    ex->n_mtp = ex->tab.n_mtp;
    ex->mtp_scale = ex->opt.mtp_loss_scale;
    if (ex->n_mtp == 0)
        return PX_OK;
    return px_ex_alloc_f32(ex, PX_MEM_BUFFERS, ex->n_mtp * ex->m * ex->T, &ex->mtp_loss_tok,
                           err);
}

/* Every module's input tokens and targets of this micro-batch. */
static px_status load_tokens(px_exec *ex, struct px_mtp_act *acts, int64_t step, int64_t micro,
                             px_error *err)
{
    int64_t s = ex->s, b = ex->b, T = ex->T, D = ex->n_mtp;
    int32_t *host = malloc((size_t)(2 * D * T + s + 1) * sizeof *host);
    if (!host)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (MTP tokens)");
    int32_t *seq = host + 2 * D * T;
    for (int64_t bi = 0; bi < b; bi++) {
        px_data_sequence(&ex->data, px_ex_sequence_index(ex, step, micro, bi), seq);
        for (int64_t k = 1; k <= D; k++) {
            int32_t *tok = host + 2 * (k - 1) * T, *tgt = tok + T;
            for (int64_t i = 0; i < s; i++) {
                bool has = i + k < s;
                tok[i * b + bi] = has ? seq[i + k] : 0;
                tgt[i * b + bi] = has ? seq[i + k + 1] : 0;
            }
        }
    }
    px_status st = PX_OK;
    for (int64_t k = 0; k < D && !st; k++) {
        struct px_mtp_act *a = &acts[k];
        st = px_ex_alloc_i32(ex, PX_MEM_BUFFERS, T, &a->tok, err);
        if (!st)
            st = px_ex_alloc_i32(ex, PX_MEM_BUFFERS, T, &a->tgt, err);
        if (!st) {
            ex->be->upload(ex->be, a->tok, host + 2 * k * T, T * (int64_t)sizeof(int32_t));
            ex->be->upload(ex->be, a->tgt, host + (2 * k + 1) * T, T * (int64_t)sizeof(int32_t));
        }
    }
    free(host);
    return st;
}

/* The module's own unit and its experts' (ZeRO-3 gathers; ZeRO-2/3 gradient
 * windows with grads). */
static px_status module_use(px_exec *ex, const px_mtp_params *mp, bool grads, px_error *err)
{
    if (grads) {
        PX_TRY(px_ex_use_g(ex, mp->enorm, err));
        return px_ex_use_g(ex, mp->layer.ew1, err);
    }
    PX_TRY(px_ex_use_w(ex, mp->enorm, err));
    return px_ex_use_w(ex, mp->layer.ew1, err);
}

static px_status module_done(px_exec *ex, const px_mtp_params *mp, bool grads, px_error *err)
{
    if (grads) {
        PX_TRY(px_ex_done_g(ex, mp->enorm, err));
        return px_ex_done_g(ex, mp->layer.ew1, err);
    }
    px_ex_done_w(ex, mp->enorm);
    px_ex_done_w(ex, mp->layer.ew1);
    return PX_OK;
}

/* The recompute mode of the modules' layers: the plan's uniform one. */
static px_recompute mtp_rc(const px_exec *ex)
{
    return ex->plan.par.recompute;
}

/* Shared LM head and cross-entropy of h_k (a->out) on the rows with a
 * target; token losses into loss [Tv]. */
static px_status head_fwd(px_exec *ex, struct px_mtp_act *a, int64_t Tv, float *loss,
                          px_error *err)
{
    const px_kernels *k = ex->k;
    px_backend *be = ex->be;
    int64_t h = ex->h, Vo = ex->V_own, lm = ex->tab.lm_head;
    void *g = a->out;
    if (ex->sp)
        PX_TRY(px_ex_tp_gather(ex, a->out, &g, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_BUFFERS, Tv * (Vo > 0 ? Vo : 1), &a->logits, err));
    PX_TRY(px_ex_use_w(ex, lm, err));
    if (Vo > 0)
        k->matmul_fwd(a->logits, g, W(lm), NULL, Tv, h, Vo);
    px_ex_done_w(ex, lm);
    if (g != a->out)
        px_ex_free(ex, &g);
    PX_TRY(px_ex_alloc_f32(ex, PX_MEM_BUFFERS, 3 * Tv, &a->xent, err));
    float *xmax = a->xent, *xsum = a->xent + Tv, *xtgt = a->xent + 2 * Tv;
    if (Vo > 0)
        k->xent_max_fwd(xmax, a->logits, Tv, Vo);
    else
        be->zero(be, a->xent, 3 * Tv * (int64_t)sizeof(float));
    PX_TRY(be->all_reduce(be, xmax, Tv, PX_F32, PX_REDUCE_MAX, &ex->tp, err));
    if (Vo > 0)
        k->xent_sumexp_fwd(xsum, xtgt, a->logits, xmax, a->tgt, Tv, Vo, ex->tp_rank * ex->V_l);
    PX_TRY(be->all_reduce(be, xsum, 2 * Tv, PX_F32, PX_REDUCE_SUM, &ex->tp, err));
    k->xent_loss_fwd(loss, xmax, xsum, xtgt, Tv);
    return PX_OK;
}

/* Module k (1-based) from h_in [Ts, h]. */
static px_status module_fwd(px_exec *ex, int k, const void *h_in, struct px_mtp_act *a,
                            int64_t micro, px_error *err)
{
    const px_param_table *tab = &ex->tab;
    const px_mtp_params *mp = &tab->mtp[k - 1];
    const px_kernels *kn = ex->k;
    int64_t h = ex->h, T = ex->T, Ts = ex->Ts;
    float *unused = NULL; /* RMSNorm has no mean */
    /* Emb(t_{i+k}): vocabulary-parallel, each shard looks up its own rows */
    void *e = NULL;
    PX_TRY(px_ex_alloc_act(ex, ex->sp ? PX_MEM_TEMP : PX_MEM_ACTIVATIONS, T * h, &e, err));
    PX_TRY(px_ex_use_w(ex, tab->mtp_emb, err));
    kn->embedding_fwd(e, a->tok, W(tab->mtp_emb), T, h, ex->tp_rank * ex->V_l,
                      (ex->tp_rank + 1) * ex->V_l);
    px_ex_done_w(ex, tab->mtp_emb);
    PX_TRY(px_ex_tp_reduce(ex, e, &a->e, PX_MEM_ACTIVATIONS, err));

    PX_TRY(module_use(ex, mp, false, err));
    a->h_in = h_in;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, &a->en, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, &a->hn, err));
    PX_TRY(px_ex_norm_fwd(ex, a->en, &unused, &a->e_rstd, a->e, mp->enorm, -1,
                          PX_MEM_ACTIVATIONS, err));
    PX_TRY(px_ex_norm_fwd(ex, a->hn, &unused, &a->h_rstd, h_in, mp->hnorm, -1,
                          PX_MEM_ACTIVATIONS, err));
    /* Proj [ENorm(e) ; HNorm(h)] as the sum of its two column halves' GEMMs */
    void *x = NULL, *t = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, &x, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Ts * h, &t, err));
    kn->matmul_fwd(x, a->en, W(mp->eh_e), NULL, Ts, h, h);
    kn->matmul_fwd(t, a->hn, W(mp->eh_h), NULL, Ts, h, h);
    kn->residual_fwd(x, x, t, Ts * h);
    px_ex_free(ex, &t);

    px_recompute rc = mtp_rc(ex);
    a->layer.x_in = x;
    PX_TRY(px_layer_fwd(ex, &mp->layer, &a->layer, rc != PX_RECOMPUTE_FULL,
                        rc == PX_RECOMPUTE_SELECTIVE, &a->y, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, &a->out, err));
    PX_TRY(px_ex_norm_fwd(ex, a->out, &unused, &a->o_rstd, a->y, mp->norm, -1,
                          PX_MEM_ACTIVATIONS, err));
    PX_TRY(module_done(ex, mp, false, err));
    int64_t Tv = valid_rows(ex, k);
    return head_fwd(ex, a, Tv, ex->mtp_loss_tok + ((k - 1) * ex->m + micro) * T, err);
}

px_status px_mtp_fwd(px_exec *ex, px_chunk_act *ca, int64_t step, int64_t micro,
                     px_error *err)
{
    if (ex->n_mtp == 0)
        return PX_OK;
    ca->mtp = calloc((size_t)ex->n_mtp, sizeof *ca->mtp);
    if (!ca->mtp)
        return PX_FAIL(err, PX_ERR_NOMEM, "engine: out of memory (MTP)");
    PX_TRY(load_tokens(ex, ca->mtp, step, micro, err));
    const void *h = ca->fn_out;
    for (int k = 1; k <= ex->n_mtp; k++) {
        PX_TRY(module_fwd(ex, k, h, &ca->mtp[k - 1], micro, err));
        h = ca->mtp[k - 1].out;
    }
    return PX_OK;
}

/* d loss / d h_k [Ts, h] (fresh) from module k's loss, plus the LM head's
 * weight gradient. */
static px_status head_bwd(px_exec *ex, int k, struct px_mtp_act *a, void **dout, px_error *err)
{
    const px_kernels *kn = ex->k;
    px_backend *be = ex->be;
    int64_t h = ex->h, T = ex->T, Vo = ex->V_own, lm = ex->tab.lm_head;
    int64_t Tv = valid_rows(ex, k);
    /* d(lambda / D loss_k)/d(token loss): loss_k is the mean over the global
     * batch's positions with a target */
    double tokens = (double)Tv * (double)ex->m * (double)ex->plan.par.dp;
    float scale = (float)(ex->mtp_scale / ex->n_mtp / tokens);
    if (Vo > 0)
        kn->xent_bwd(a->logits, a->logits, a->xent, a->xent + Tv, a->tgt, scale, Tv, Vo,
                     ex->tp_rank * ex->V_l);
    void *g = a->out, *dg = NULL;
    if (ex->sp)
        PX_TRY(px_ex_tp_gather(ex, a->out, &g, err));
    /* rows past Tv have no loss: their gradient stays 0 */
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, T * h, &dg, err));
    be->zero(be, dg, px_ex_bytes(ex, T * h));
    PX_TRY(px_ex_use_w(ex, lm, err));
    PX_TRY(px_ex_use_g(ex, lm, err));
    if (Vo > 0)
        kn->matmul_bwd(dg, px_ex_trained(lm) ? G(lm) : NULL, NULL, a->logits, g, W(lm), Tv, h,
                       Vo);
    PX_TRY(px_ex_done_g(ex, lm, err));
    px_ex_done_w(ex, lm);
    if (g != a->out)
        px_ex_free(ex, &g);
    px_ex_free(ex, &a->logits);
    px_ex_free(ex, &a->xent);
    return px_ex_tp_reduce(ex, dg, dout, PX_MEM_TEMP, err);
}

/* Module k's backward from dout = d loss / d h_k [Ts, h] (consumed); returns
 * d loss / d h_{k-1} [Ts, h] (fresh). */
static px_status module_bwd(px_exec *ex, int k, struct px_mtp_act *a, void *dout, void **dh_in,
                            px_error *err)
{
    const px_param_table *tab = &ex->tab;
    const px_mtp_params *mp = &tab->mtp[k - 1];
    const px_kernels *kn = ex->k;
    int64_t h = ex->h, T = ex->T, Ts = ex->Ts;
    PX_TRY(module_use(ex, mp, false, err));
    PX_TRY(module_use(ex, mp, true, err));
    void *dy = NULL, *dx = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Ts * h, &dy, err));
    px_ex_norm_bwd(ex, dy, dout, a->y, mp->norm, -1, NULL, a->o_rstd);
    px_ex_free(ex, &dout);
    if (mtp_rc(ex) == PX_RECOMPUTE_FULL) { /* rebuild the layer's tensors from its input */
        void *y = NULL;
        PX_TRY(px_layer_fwd(ex, &mp->layer, &a->layer, true, false, &y, err));
        px_ex_free(ex, &y);
    }
    PX_TRY(px_layer_bwd(ex, &mp->layer, &a->layer, dy, false, &dx, err));
    px_ex_free(ex, &dy);
    px_layer_act_free(ex, &a->layer);
    /* the projection's halves: d ENorm(e), d HNorm(h) and their weights */
    void *den = NULL, *dhn = NULL, *de = NULL;
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Ts * h, &den, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Ts * h, &dhn, err));
    kn->matmul_bwd(den, G(mp->eh_e), NULL, dx, a->en, W(mp->eh_e), Ts, h, h);
    kn->matmul_bwd(dhn, G(mp->eh_h), NULL, dx, a->hn, W(mp->eh_h), Ts, h, h);
    px_ex_free(ex, &dx);
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_ACTIVATIONS, Ts * h, dh_in, err));
    PX_TRY(px_ex_alloc_act(ex, PX_MEM_TEMP, Ts * h, &de, err));
    px_ex_norm_bwd(ex, *dh_in, dhn, a->h_in, mp->hnorm, -1, NULL, a->h_rstd);
    px_ex_norm_bwd(ex, de, den, a->e, mp->enorm, -1, NULL, a->e_rstd);
    px_ex_free(ex, &den);
    px_ex_free(ex, &dhn);
    PX_TRY(module_done(ex, mp, true, err));
    PX_TRY(module_done(ex, mp, false, err));
    /* the shared embedding's rows of t_{i+k} (all T tokens: gathered under SP) */
    void *full = de;
    if (ex->sp)
        PX_TRY(px_ex_tp_gather(ex, de, &full, err));
    PX_TRY(px_ex_use_g(ex, tab->mtp_emb, err));
    kn->embedding_bwd(G(tab->mtp_emb), full, a->tok, T, h, ex->tp_rank * ex->V_l,
                      (ex->tp_rank + 1) * ex->V_l);
    PX_TRY(px_ex_done_g(ex, tab->mtp_emb, err));
    if (full != de)
        px_ex_free(ex, &full);
    px_ex_free(ex, &de);
    return PX_OK;
}

px_status px_mtp_bwd(px_exec *ex, px_chunk_act *ca, void *dh0, px_error *err)
{
    if (ex->n_mtp == 0)
        return PX_OK;
    void *dh = NULL; /* d loss / d h_k from module k + 1 */
    for (int k = ex->n_mtp; k >= 1; k--) {
        struct px_mtp_act *a = &ca->mtp[k - 1];
        void *dout = NULL, *dh_in = NULL;
        PX_TRY(head_bwd(ex, k, a, &dout, err));
        if (dh) {
            ex->k->residual_fwd(dout, dout, dh, ex->Ts * ex->h);
            px_ex_free(ex, &dh);
        }
        PX_TRY(module_bwd(ex, k, a, dout, &dh_in, err));
        dh = dh_in;
    }
    ex->k->residual_fwd(dh0, dh0, dh, ex->Ts * ex->h);
    px_ex_free(ex, &dh);
    px_mtp_act_free(ex, ca);
    return PX_OK;
}

void px_mtp_act_free(px_exec *ex, px_chunk_act *ca)
{
    if (!ca->mtp)
        return;
    for (int k = 0; k < ex->n_mtp; k++) {
        struct px_mtp_act *a = &ca->mtp[k];
        px_ex_free(ex, &a->tok);
        px_ex_free(ex, &a->tgt);
        px_ex_free(ex, &a->e);
        px_ex_free(ex, &a->en);
        px_ex_free(ex, &a->hn);
        px_ex_free(ex, &a->e_rstd);
        px_ex_free(ex, &a->h_rstd);
        px_layer_act_free(ex, &a->layer);
        px_ex_free(ex, &a->y);
        px_ex_free(ex, &a->out);
        px_ex_free(ex, &a->o_rstd);
        px_ex_free(ex, &a->logits);
        px_ex_free(ex, &a->xent);
    }
    free(ca->mtp);
    ca->mtp = NULL;
}

double px_mtp_loss_term(px_exec *ex)
{
    if (ex->n_mtp == 0)
        return 0.0;
    int64_t T = ex->T, n = ex->n_mtp * ex->m * T;
    float *host = malloc((size_t)n * sizeof *host);
    if (!host)
        return NAN; /* reported as a non-finite loss: the step does not update */
    ex->be->download(ex->be, host, ex->mtp_loss_tok, n * (int64_t)sizeof(float));
    double term = 0.0;
    for (int k = 1; k <= ex->n_mtp; k++) {
        int64_t Tv = valid_rows(ex, k);
        double sum = 0.0;
        for (int64_t mi = 0; mi < ex->m; mi++)
            for (int64_t i = 0; i < Tv; i++)
                sum += host[((k - 1) * ex->m + mi) * T + i];
        term += sum / ((double)Tv * (double)ex->m * (double)ex->plan.par.dp);
    }
    free(host);
    return ex->mtp_scale / ex->n_mtp * term;
}
