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
 * The row counts are computed on the host from the router's choices (one
 * download of Tm k ints) and exchanged with MPI_Alltoall before the data. */
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
};

void px_moe_route_free(px_layer_act *a)
{
    struct px_moe_route *r = a->m_route;
    if (!r)
        return;
    free(r->send_rows);
    free(r->recv_rows);
    free(r->recv_blk);
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
    ex->be->download(ex->be, idx, a->m_idx, n * (int64_t)sizeof(int32_t));
    /* Expert e lives on EP rank e / E_l as local expert e % E_l, so ordering
     * rows by e orders them by (peer, local expert). */
    for (int64_t i = 0; i < n; i++)
        blk[idx[i]]++;
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

px_status px_moe_fwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *x,
                     void **y, px_error *err)
{
    const px_kernels *k = ex->k;
    int64_t Tm = ex->Tm, h = ex->h, E = ex->E, fe = ex->fe, El = ex->E_l;
    px_mem_kind A = PX_MEM_ACTIVATIONS, X = PX_MEM_TEMP;
    void *logits = NULL, *xs = NULL, *yl = NULL, *h2 = NULL;

    TRY(px_ex_alloc_act(ex, X, Tm * E, &logits, err));
    k->matmul_fwd(logits, x, W(lp->router), NULL, Tm, h, E);
    TRY(px_ex_alloc_f32(ex, A, Tm * E, &a->m_probs, err));
    TRY(px_ex_alloc_i32(ex, A, Tm * ex->top_k, &a->m_idx, err));
    TRY(px_ex_alloc_f32(ex, A, Tm * ex->top_k, &a->m_gate, err));
    k->moe_router_fwd(a->m_probs, a->m_idx, a->m_gate, logits, Tm, E, ex->top_k);
    px_ex_free(ex, &logits);
    TRY(route(ex, a, err));
    struct px_moe_route *r = a->m_route;

    /* Dispatch. */
    TRY(px_ex_alloc_act(ex, X, r->n_send * h, &xs, err));
    k->moe_permute(xs, x, a->m_rows, NULL, NULL, r->n_send, h);
    TRY(px_ex_alloc_act(ex, A, r->n_recv * h, &a->m_xr, err));
    TRY(a2a_rows(ex, a->m_xr, r->recv_rows, xs, r->send_rows, h, err));
    px_ex_free(ex, &xs);

    /* This rank's experts, one block per (source, expert). */
    TRY(px_ex_alloc_act(ex, A, r->n_recv * 2 * fe, &a->m_h1, err));
    TRY(px_ex_alloc_act(ex, X, r->n_recv * fe, &h2, err));
    TRY(px_ex_alloc_act(ex, X, r->n_recv * h, &yl, err));
    int64_t off = 0;
    for (int i = 0; i < ex->ep.size; i++)
        for (int64_t le = 0; le < El; le++) {
            int64_t n = r->recv_blk[i * El + le];
            if (n == 0)
                continue;
            void *h1 = px_ex_at(ex, a->m_h1, off * 2 * fe), *h2o = px_ex_at(ex, h2, off * fe);
            k->matmul_fwd(h1, px_ex_at(ex, a->m_xr, off * h), W(lp->ew1 + le * 2 * fe * h), NULL,
                          n, h, 2 * fe);
            k->swiglu_fwd(h2o, h1, n, fe);
            k->matmul_fwd(px_ex_at(ex, yl, off * h), h2o, W(lp->ew2 + le * h * fe), NULL, n, fe,
                          h);
            off += n;
        }
    px_ex_free(ex, &h2);

    /* Combine: back to the token's rank, scaled by its gate and summed. */
    TRY(px_ex_alloc_act(ex, A, r->n_send * h, &a->m_yr, err));
    TRY(a2a_rows(ex, a->m_yr, r->send_rows, yl, r->recv_rows, h, err));
    px_ex_free(ex, &yl);
    TRY(px_ex_alloc_act(ex, X, Tm * h, y, err));
    k->moe_unpermute(*y, a->m_yr, a->m_rows, a->m_gate, a->m_slots, r->n_send, h);
    return PX_OK;
}

px_status px_moe_bwd(px_exec *ex, const px_layer_params *lp, px_layer_act *a, const void *dy,
                     const void *x, void **dx, px_error *err)
{
    const px_kernels *k = ex->k;
    int64_t Tm = ex->Tm, h = ex->h, E = ex->E, fe = ex->fe, El = ex->E_l;
    px_mem_kind X = PX_MEM_TEMP;
    struct px_moe_route *r = a->m_route;
    float *dgate = NULL;
    void *dys = NULL, *dyr = NULL, *dxr = NULL, *h2 = NULL, *dh2 = NULL;
    void *dh1 = NULL, *dxs = NULL, *dlogits = NULL, *dxrt = NULL;

    /* Gates: d(gate) = <dy_t, expert output>; the rows sent back scaled. */
    TRY(px_ex_alloc_f32(ex, X, Tm * ex->top_k, &dgate, err));
    k->moe_gate_bwd(dgate, dy, a->m_yr, a->m_rows, a->m_slots, r->n_send, h);
    TRY(px_ex_alloc_act(ex, X, r->n_send * h, &dys, err));
    k->moe_permute(dys, dy, a->m_rows, a->m_gate, a->m_slots, r->n_send, h);
    TRY(px_ex_alloc_act(ex, X, r->n_recv * h, &dyr, err));
    TRY(a2a_rows(ex, dyr, r->recv_rows, dys, r->send_rows, h, err));
    px_ex_free(ex, &dys);

    /* Experts: SwiGLU output recomputed from the kept gate|up (cheap). */
    TRY(px_ex_alloc_act(ex, X, r->n_recv * h, &dxr, err));
    TRY(px_ex_alloc_act(ex, X, r->n_recv * fe, &h2, err));
    TRY(px_ex_alloc_act(ex, X, r->n_recv * fe, &dh2, err));
    TRY(px_ex_alloc_act(ex, X, r->n_recv * 2 * fe, &dh1, err));
    int64_t off = 0;
    for (int i = 0; i < ex->ep.size; i++)
        for (int64_t le = 0; le < El; le++) {
            int64_t n = r->recv_blk[i * El + le];
            if (n == 0)
                continue;
            const void *h1 = px_ex_at(ex, a->m_h1, off * 2 * fe);
            int64_t w1 = lp->ew1 + le * 2 * fe * h, w2 = lp->ew2 + le * h * fe;
            k->swiglu_fwd(h2, h1, n, fe);
            k->matmul_bwd(dh2, G(w2), NULL, px_ex_at(ex, dyr, off * h), h2, W(w2), n, fe, h);
            k->swiglu_bwd(dh1, dh2, h1, n, fe);
            k->matmul_bwd(px_ex_at(ex, dxr, off * h), G(w1), NULL, dh1,
                          px_ex_at(ex, a->m_xr, off * h), W(w1), n, h, 2 * fe);
            off += n;
        }
    px_ex_free(ex, &h2);
    px_ex_free(ex, &dh2);
    px_ex_free(ex, &dh1);
    px_ex_free(ex, &dyr);
    TRY(px_ex_alloc_act(ex, X, r->n_send * h, &dxs, err));
    TRY(a2a_rows(ex, dxs, r->send_rows, dxr, r->recv_rows, h, err));
    px_ex_free(ex, &dxr);
    TRY(px_ex_alloc_act(ex, X, Tm * h, dx, err));
    /* slots without gates: the CUDA kernel then sums each token's k rows in
     * a fixed order (no atomics), the CPU one ignores them */
    k->moe_unpermute(*dx, dxs, a->m_rows, NULL, a->m_slots, r->n_send, h);
    px_ex_free(ex, &dxs);

    /* Router: through the softmax into its weight and the input. */
    TRY(px_ex_alloc_act(ex, X, Tm * E, &dlogits, err));
    k->moe_router_bwd(dlogits, a->m_probs, a->m_idx, dgate, Tm, E, ex->top_k);
    px_ex_free(ex, &dgate);
    TRY(px_ex_alloc_act(ex, X, Tm * h, &dxrt, err));
    k->matmul_bwd(dxrt, G(lp->router), NULL, dlogits, x, W(lp->router), Tm, h, E);
    k->residual_fwd(*dx, *dx, dxrt, Tm * h);
    px_ex_free(ex, &dxrt);
    px_ex_free(ex, &dlogits);
    return PX_OK;
}
