/* px_moe.c — the routed-expert MLP of an MoE layer under expert parallelism.
 *
 * This rank routes its own Tm tokens (its SP shard, or its T / tp slice of the
 * replicated rows without SP: every token of the stage is routed by exactly
 * one rank of tp x cp x dp).  Router: p = softmax(x Wr^T) over all E experts,
 * the top k by p, gates = those p (not renormalised; px_kernels_cpu.h).  Rows
 * go to the rank holding the expert (experts [j E_l, (j + 1) E_l) on EP rank
 * j) with one all-to-all, in the order (expert, token), are computed there as
 * one SwiGLU GEMM block per (source rank, expert), and come back with a second
 * all-to-all.  No capacity limit, no token dropping: every split computes
 * exactly the single-rank sum, so the results match it.
 *
 * Expert tensor parallelism (etp > 1, Megatron's design): the etp ranks of an
 * expert group each hold ffn rows [r fe_l, (r + 1) fe_l) of every local
 * expert's gate and up (column-parallel) and those columns of its down
 * projection (row-parallel).  The EP all-to-all runs among the ranks of one
 * etp rank (PX_DIM_EP groups are exactly those), so each etp rank receives
 * the rows its own EP peers route to the group's experts; the rows are then
 * all-gathered over etp (every slice of an expert needs every row of it),
 * each rank computes its slice of the SwiGLU and a partial down projection,
 * and the partial outputs are reduce-scattered over etp back to the rank
 * that received each row, which returns them with the combine all-to-all.
 * Why this and not one all-to-all over ep x etp: the EP groups and their
 * all-to-all stay as they are, and the extra traffic is one all-gather plus
 * one reduce-scatter of the routed rows per pass, the all-reduce over etp
 * of T k etp / tp rows that px_cost_2_ops.c charges (forward and backward).
 * The row counts differ per rank, so both run as all-to-alls with per-peer
 * counts (the all-gather sends its rows to every peer; the reduce-scatter
 * receives every peer's partial of its rows and sums them in etp rank
 * order: deterministic).
 *
 * The row counts are computed on the host from the router's choices (one
 * download of Tm k ints) and exchanged with MPI_Alltoall before the data
 * (and all-gathered over etp). */
#include <stdlib.h>
#include <string.h>

#include "px_exec_internal.h"

#define W(off) px_ex_w(ex, off)
#define G(off) px_ex_g(ex, off)

struct px_moe_route {
    int64_t n_send, n_recv;
    int64_t *send_rows; /* [ep] rows to EP rank j */
    int64_t *recv_rows; /* [ep] rows from EP rank i */
    int64_t *recv_blk;  /* [ep E_l] rows from rank i for local expert le, at i E_l + le */
    /* After the all-gather over etp: n_g rows, etp rank q's n_recv (g_rows[q])
     * first, in its (source, expert) blocks g_blk[q ep E_l + i E_l + le].
     * With etp = 1 these are the fields above (g_rows = &n_recv). */
    int64_t n_g;
    int64_t *g_rows; /* [etp] */
    int64_t *g_blk;  /* [etp ep E_l] */
};

void px_moe_route_free(px_layer_act *a)
{
    struct px_moe_route *r = a->m_route;
    if (!r)
        return;
    free(r->send_rows);
    free(r->recv_rows);
    free(r->recv_blk);
    if (r->g_blk != r->recv_blk)
        free(r->g_blk);
    if (r->g_rows != &r->n_recv)
        free(r->g_rows);
    free(r);
    a->m_route = NULL;
}

/* Element counts per peer for the all-to-all of rows of width w. */
static void scale_counts(int64_t *out, const int64_t *rows, int n, int64_t w)
{
    for (int j = 0; j < n; j++)
        out[j] = rows[j] * w;
}

static px_status a2a_rows(px_exec *ex, void *out, const int64_t *recv_rows, const void *in,
                          const int64_t *send_rows, int64_t w, px_error *err)
{
    int n = ex->ep.size;
    int64_t *cnt = malloc((size_t)(2 * n) * sizeof *cnt);
    if (!cnt)
        return PX_FAIL(err, PX_ERR_NOMEM, "MoE: out of memory (counts)");
    scale_counts(cnt, send_rows, n, w);
    scale_counts(cnt + n, recv_rows, n, w);
    px_status st =
        ex->be->all_to_all_v(ex->be, out, cnt + n, in, cnt, ex->act_dtype, &ex->ep, err);
    free(cnt);
    return st;
}

/* The row counts of the etp group (see struct px_moe_route). */
static px_status gather_counts(px_exec *ex, struct px_moe_route *r, px_error *err)
{
    int etp = ex->etp.size;
    int64_t nb = (int64_t)ex->ep.size * ex->E_l;
    if (etp == 1) {
        r->n_g = r->n_recv;
        r->g_rows = &r->n_recv;
        r->g_blk = r->recv_blk;
        return PX_OK;
    }
    r->g_rows = calloc((size_t)etp, sizeof *r->g_rows);
    r->g_blk = calloc((size_t)(etp * nb), sizeof *r->g_blk);
    if (!r->g_rows || !r->g_blk)
        return PX_FAIL(err, PX_ERR_NOMEM, "MoE: out of memory (etp row counts)");
    PX_TRY(px_mpi_check(MPI_Allgather(r->recv_blk, (int)nb, MPI_INT64_T, r->g_blk, (int)nb,
                                   MPI_INT64_T, ex->etp.mpi),
                     "MPI_Allgather (MoE expert-TP row counts)", err));
    r->n_g = 0;
    for (int q = 0; q < etp; q++) {
        for (int64_t b = 0; b < nb; b++)
            r->g_rows[q] += r->g_blk[q * nb + b];
        r->n_g += r->g_rows[q];
    }
    return PX_OK;
}

/* All-gather over etp of this rank's n_recv rows own [n_recv, w] into
 * out [n_g, w] (etp rank order): an all-to-all that sends the same rows to
 * every peer (the counts differ per rank, which all_gather does not allow).
 * With etp = 1 a copy. */
static px_status etp_gather(px_exec *ex, const struct px_moe_route *r, void *out,
                            const void *own, int64_t w, px_error *err)
{
    int etp = ex->etp.size;
    if (etp == 1) {
        ex->be->copy(ex->be, out, own, px_ex_bytes(ex, r->n_recv * w));
        return PX_OK;
    }
    void *rep = NULL;
    int64_t *cnt = malloc((size_t)(2 * etp) * sizeof *cnt);
    if (!cnt)
        return PX_FAIL(err, PX_ERR_NOMEM, "MoE: out of memory (counts)");
    px_status st = px_ex_alloc_act(ex, PX_MEM_TEMP, etp * r->n_recv * w, &rep, err);
    for (int q = 0; q < etp && !st; q++) {
        ex->be->copy(ex->be, px_ex_at(ex, rep, q * r->n_recv * w), own,
                     px_ex_bytes(ex, r->n_recv * w));
        cnt[q] = r->n_recv * w;
        cnt[etp + q] = r->g_rows[q] * w;
    }
    if (!st)
        st = ex->be->all_to_all_v(ex->be, out, cnt + etp, rep, cnt, ex->act_dtype, &ex->etp,
                                  err);
    px_ex_free(ex, &rep);
    free(cnt);
    return st;
}

/* Reduce-scatter over etp of partial [n_g, w] (etp rank order) into
 * out [n_recv, w]: every peer's partial of this rank's rows arrives by an
 * all-to-all and they are summed in etp rank order.  With etp = 1 a copy. */
static px_status etp_reduce(px_exec *ex, const struct px_moe_route *r, void *out,
                            const void *partial, int64_t w, px_error *err)
{
    int etp = ex->etp.size;
    int64_t n = r->n_recv * w;
    if (etp == 1) {
        ex->be->copy(ex->be, out, partial, px_ex_bytes(ex, n));
        return PX_OK;
    }
    void *parts = NULL;
    int64_t *cnt = malloc((size_t)(2 * etp) * sizeof *cnt);
    if (!cnt)
        return PX_FAIL(err, PX_ERR_NOMEM, "MoE: out of memory (counts)");
    for (int q = 0; q < etp; q++) {
        cnt[q] = r->g_rows[q] * w;
        cnt[etp + q] = n;
    }
    px_status st = px_ex_alloc_act(ex, PX_MEM_TEMP, etp * n, &parts, err);
    if (!st)
        st = ex->be->all_to_all_v(ex->be, parts, cnt + etp, partial, cnt, ex->act_dtype,
                                  &ex->etp, err);
    if (!st) {
        ex->be->copy(ex->be, out, parts, px_ex_bytes(ex, n));
        for (int q = 1; q < etp; q++)
            ex->k->residual_fwd(out, out, px_ex_at(ex, parts, q * n), n);
    }
    px_ex_free(ex, &parts);
    free(cnt);
    return st;
}

/* The dispatch plan of this micro-batch: which token rows go where (device
 * rows / slots) and the per-peer counts (host). */
static px_status route(px_exec *ex, px_layer_act *a, px_error *err)
{
    int64_t Tm = ex->Tm, k = ex->top_k, E = ex->E, El = ex->E_l;
    int ep = ex->ep.size;
    int64_t n = Tm * k;
    struct px_moe_route *r = calloc(1, sizeof *r);
    int32_t *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *idx);
    int32_t *rows = malloc((size_t)(2 * n + 1) * sizeof *rows);
    int64_t *pos = calloc((size_t)E + 1, sizeof *pos);
    int64_t *blk = calloc((size_t)E, sizeof *blk);
    px_status st = PX_OK;
    a->m_route = r;
    if (r) {
        r->send_rows = calloc((size_t)ep, sizeof *r->send_rows);
        r->recv_rows = calloc((size_t)ep, sizeof *r->recv_rows);
        r->recv_blk = calloc((size_t)E, sizeof *r->recv_blk);
    }
    if (!r || !idx || !rows || !pos || !blk || !r->send_rows || !r->recv_rows || !r->recv_blk) {
        st = PX_FAIL(err, PX_ERR_NOMEM, "MoE: out of memory (routing)");
        goto out;
    }
    /* A failed kernel before this point leaves idx undefined: surface its
     * error first (the backend keeps it until sync). */
    st = ex->be->sync(ex->be, err);
    if (st)
        goto out;
    ex->be->download(ex->be, idx, a->m_idx, n * (int64_t)sizeof(int32_t));
    /* Expert e lives on EP rank e / E_l as local expert e % E_l, so ordering
     * rows by e orders them by (peer, local expert). */
    for (int64_t i = 0; i < n; i++) {
        if (idx[i] < 0 || idx[i] >= E) {
            st = PX_FAIL(err, PX_ERR_INTERNAL,
                         "MoE router: token %lld chose expert %d, allowed 0..%lld "
                         "(non-finite router logits?)",
                         (long long)(i / k), (int)idx[i], (long long)E - 1);
            goto out;
        }
        blk[idx[i]]++;
    }
    for (int64_t e = 0; e < E; e++) {
        pos[e + 1] = pos[e] + blk[e];
        r->send_rows[e / El] += blk[e];
    }
    int32_t *slots = rows + n;
    for (int64_t t = 0; t < Tm; t++)
        for (int64_t j = 0; j < k; j++) {
            int64_t a_i = pos[idx[t * k + j]]++;
            rows[a_i] = (int32_t)t;
            slots[a_i] = (int32_t)(t * k + j);
        }
    r->n_send = n;
    if (ep > 1)
        st = px_mpi_check(MPI_Alltoall(blk, (int)El, MPI_INT64_T, r->recv_blk, (int)El,
                                       MPI_INT64_T, ex->ep.mpi),
                          "MPI_Alltoall (MoE row counts)", err);
    else
        memcpy(r->recv_blk, blk, (size_t)E * sizeof *blk);
    if (st)
        goto out;
    for (int i = 0; i < ep; i++)
        for (int64_t le = 0; le < El; le++) {
            r->recv_rows[i] += r->recv_blk[i * El + le];
            r->n_recv += r->recv_blk[i * El + le];
        }
    st = gather_counts(ex, r, err);
    if (st)
        goto out;
    st = px_ex_alloc_i32(ex, PX_MEM_ACTIVATIONS, n, &a->m_rows, err);
    if (!st)
        st = px_ex_alloc_i32(ex, PX_MEM_ACTIVATIONS, n, &a->m_slots, err);
    if (!st) {
        ex->be->upload(ex->be, a->m_rows, rows, n * (int64_t)sizeof(int32_t));
        ex->be->upload(ex->be, a->m_slots, slots, n * (int64_t)sizeof(int32_t));
    }
out:
    free(idx);
    free(rows);
    free(pos);
    free(blk);
    return st;
}

/* The expert blocks of the n_g rows, in order: (etp rank q, source EP rank
 * i, local expert le); calls fn on each non-empty one with its first row. */
typedef void px_moe_blk_fn(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                           void *const *buf, int64_t le, int64_t off, int64_t n);

static void for_blocks(px_exec *ex, const struct px_moe_route *r, const px_layer_params *lp,
                       px_layer_act *a, void *const *buf, px_moe_blk_fn *fn)
{
    int64_t El = ex->E_l, nb = (int64_t)ex->ep.size * El, off = 0;
    for (int64_t b = 0; b < (int64_t)ex->etp.size * nb; b++) {
        int64_t n = r->g_blk[b];
        if (n == 0)
            continue;
        fn(ex, lp, a, buf, b % El, off, n);
        off += n;
    }
}

/* Forward of one block: buf = {h2, yl}.  This rank's slice of the expert:
 * gate|up rows [2 fe_l, h], down columns [h, fe_l]; yl is partial over etp. */
static void expert_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                       void *const *buf, int64_t le, int64_t off, int64_t n)
{
    const px_kernels *k = ex->k;
    int64_t h = ex->h, fl = ex->fe_l;
    void *h1 = px_ex_at(ex, a->m_h1, off * 2 * fl), *h2 = px_ex_at(ex, buf[0], off * fl);
    k->matmul_fwd(h1, px_ex_at(ex, a->m_xr, off * h), W(lp->ew1 + le * 2 * fl * h), NULL, n, h,
                  2 * fl);
    k->swiglu_fwd(h2, h1, n, fl);
    k->matmul_fwd(px_ex_at(ex, buf[1], off * h), h2, W(lp->ew2 + le * h * fl), NULL, n, fl, h);
}

/* Backward of one block: buf = {dyg, dxg, h2, dh2, dh1} (h2, dh2, dh1 are
 * scratch of n_g rows, used at the block's rows); dxg is partial over etp.
 * The SwiGLU output is recomputed from the kept gate|up (cheap). */
static void expert_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a,
                       void *const *buf, int64_t le, int64_t off, int64_t n)
{
    const px_kernels *k = ex->k;
    int64_t h = ex->h, fl = ex->fe_l;
    const void *h1 = px_ex_at(ex, a->m_h1, off * 2 * fl);
    void *h2 = px_ex_at(ex, buf[2], off * fl), *dh2 = px_ex_at(ex, buf[3], off * fl);
    void *dh1 = px_ex_at(ex, buf[4], off * 2 * fl);
    int64_t w1 = lp->ew1 + le * 2 * fl * h, w2 = lp->ew2 + le * h * fl;
    k->swiglu_fwd(h2, h1, n, fl);
    k->matmul_bwd(dh2, G(w2), NULL, px_ex_at(ex, buf[0], off * h), h2, W(w2), n, fl, h);
    k->swiglu_bwd(dh1, dh2, h1, n, fl);
    k->matmul_bwd(px_ex_at(ex, buf[1], off * h), G(w1), NULL, dh1,
                  px_ex_at(ex, a->m_xr, off * h), W(w1), n, h, 2 * fl);
}

px_status px_moe_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *x,
                     void **y, px_error *err)
{
    const px_kernels *k = ex->k;
    int64_t Tm = ex->Tm, h = ex->h, E = ex->E, fl = ex->fe_l;
    bool etp = ex->etp.size > 1;
    px_mem_kind A = PX_MEM_ACTIVATIONS, X = PX_MEM_TEMP;
    void *logits = NULL, *xs = NULL, *own = NULL, *buf[2] = {NULL, NULL};

    PX_TRY(px_ex_alloc_act(ex, X, Tm * E, &logits, err));
    k->matmul_fwd(logits, x, W(lp->router), NULL, Tm, h, E);
    PX_TRY(px_ex_alloc_f32(ex, A, Tm * E, &a->m_probs, err));
    PX_TRY(px_ex_alloc_i32(ex, A, Tm * ex->top_k, &a->m_idx, err));
    PX_TRY(px_ex_alloc_f32(ex, A, Tm * ex->top_k, &a->m_gate, err));
    k->moe_router_fwd(a->m_probs, a->m_idx, a->m_gate, logits, Tm, E, ex->top_k, &ex->router);
    px_ex_free(ex, &logits);
    PX_TRY(route(ex, a, err));
    struct px_moe_route *r = a->m_route;

    /* Dispatch over ep, then (etp > 1) the all-gather over etp. */
    PX_TRY(px_ex_alloc_act(ex, X, r->n_send * h, &xs, err));
    k->moe_permute(xs, x, a->m_rows, NULL, NULL, r->n_send, h);
    PX_TRY(px_ex_alloc_act(ex, A, r->n_g * h, &a->m_xr, err));
    if (etp)
        PX_TRY(px_ex_alloc_act(ex, X, r->n_recv * h, &own, err));
    PX_TRY(a2a_rows(ex, etp ? own : a->m_xr, r->recv_rows, xs, r->send_rows, h, err));
    px_ex_free(ex, &xs);
    if (etp) {
        PX_TRY(etp_gather(ex, r, a->m_xr, own, h, err));
        px_ex_free(ex, &own);
    }

    /* This rank's experts (its slice of them), one block per (etp rank,
     * source, expert). */
    PX_TRY(px_ex_alloc_act(ex, A, r->n_g * 2 * fl, &a->m_h1, err));
    PX_TRY(px_ex_alloc_act(ex, X, r->n_g * fl, &buf[0], err));
    PX_TRY(px_ex_alloc_act(ex, X, r->n_g * h, &buf[1], err));
    for_blocks(ex, r, lp, a, buf, expert_fwd);
    px_ex_free(ex, &buf[0]);
    if (etp) { /* the row-parallel sum: back to the rank that received each row */
        PX_TRY(px_ex_alloc_act(ex, X, r->n_recv * h, &own, err));
        PX_TRY(etp_reduce(ex, r, own, buf[1], h, err));
        px_ex_free(ex, &buf[1]);
    } else {
        own = buf[1];
    }

    /* Combine: back to the token's rank, scaled by its gate and summed. */
    PX_TRY(px_ex_alloc_act(ex, A, r->n_send * h, &a->m_yr, err));
    PX_TRY(a2a_rows(ex, a->m_yr, r->send_rows, own, r->recv_rows, h, err));
    px_ex_free(ex, &own);
    PX_TRY(px_ex_alloc_act(ex, X, Tm * h, y, err));
    k->moe_unpermute(*y, a->m_yr, a->m_rows, a->m_gate, a->m_slots, r->n_send, h);
    return PX_OK;
}

px_status px_moe_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *dy,
                     const void *x, void **dx, px_error *err)
{
    const px_kernels *k = ex->k;
    int64_t Tm = ex->Tm, h = ex->h, E = ex->E, fl = ex->fe_l;
    bool etp = ex->etp.size > 1;
    px_mem_kind X = PX_MEM_TEMP;
    struct px_moe_route *r = a->m_route;
    float *dgate = NULL;
    void *dys = NULL, *dyr = NULL, *dxr = NULL, *dxs = NULL, *dlogits = NULL, *dxrt = NULL;
    void *buf[5] = {NULL, NULL, NULL, NULL, NULL};

    /* Gates: d(gate) = <dy_t, expert output>; the rows sent back scaled. */
    PX_TRY(px_ex_alloc_f32(ex, X, Tm * ex->top_k, &dgate, err));
    k->moe_gate_bwd(dgate, dy, a->m_yr, a->m_rows, a->m_slots, r->n_send, h);
    PX_TRY(px_ex_alloc_act(ex, X, r->n_send * h, &dys, err));
    k->moe_permute(dys, dy, a->m_rows, a->m_gate, a->m_slots, r->n_send, h);
    PX_TRY(px_ex_alloc_act(ex, X, r->n_recv * h, &dyr, err));
    PX_TRY(a2a_rows(ex, dyr, r->recv_rows, dys, r->send_rows, h, err));
    px_ex_free(ex, &dys);
    if (etp) { /* every slice of an expert needs the gradient of all its rows */
        PX_TRY(px_ex_alloc_act(ex, X, r->n_g * h, &buf[0], err));
        PX_TRY(etp_gather(ex, r, buf[0], dyr, h, err));
        px_ex_free(ex, &dyr);
    } else {
        buf[0] = dyr;
        dyr = NULL;
    }

    /* Experts: input gradients partial over etp, this slice's weight
     * gradients complete for the rows of this etp group. */
    PX_TRY(px_ex_alloc_act(ex, X, r->n_g * h, &buf[1], err));
    PX_TRY(px_ex_alloc_act(ex, X, r->n_g * fl, &buf[2], err));
    PX_TRY(px_ex_alloc_act(ex, X, r->n_g * fl, &buf[3], err));
    PX_TRY(px_ex_alloc_act(ex, X, r->n_g * 2 * fl, &buf[4], err));
    for_blocks(ex, r, lp, a, buf, expert_bwd);
    px_ex_free(ex, &buf[2]);
    px_ex_free(ex, &buf[3]);
    px_ex_free(ex, &buf[4]);
    px_ex_free(ex, &buf[0]);
    if (etp) {
        PX_TRY(px_ex_alloc_act(ex, X, r->n_recv * h, &dxr, err));
        PX_TRY(etp_reduce(ex, r, dxr, buf[1], h, err));
        px_ex_free(ex, &buf[1]);
    } else {
        dxr = buf[1];
    }
    PX_TRY(px_ex_alloc_act(ex, X, r->n_send * h, &dxs, err));
    PX_TRY(a2a_rows(ex, dxs, r->send_rows, dxr, r->recv_rows, h, err));
    px_ex_free(ex, &dxr);
    PX_TRY(px_ex_alloc_act(ex, X, Tm * h, dx, err));
    /* slots without gates: the CUDA kernel then sums each token's k rows in
     * a fixed order (no atomics), the CPU one ignores them */
    k->moe_unpermute(*dx, dxs, a->m_rows, NULL, a->m_slots, r->n_send, h);
    px_ex_free(ex, &dxs);

    /* Router: through the softmax into its weight and the input. */
    PX_TRY(px_ex_alloc_act(ex, X, Tm * E, &dlogits, err));
    k->moe_router_bwd(dlogits, a->m_probs, a->m_idx, dgate, Tm, E, ex->top_k,
                      &ex->router);
    px_ex_free(ex, &dgate);
    PX_TRY(px_ex_alloc_act(ex, X, Tm * h, &dxrt, err));
    k->matmul_bwd(dxrt, G(lp->router), NULL, dlogits, x, W(lp->router), Tm, h, E);
    k->residual_fwd(*dx, *dx, dxrt, Tm * h);
    px_ex_free(ex, &dxrt);
    px_ex_free(ex, &dlogits);
    return PX_OK;
}
