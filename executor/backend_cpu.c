/* backend_cpu.c — the CPU backend: host memory, the px_cpu_* kernels (BLAS
 * GEMMs) and MPI for every collective and message. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "px_backend.h"
#include "px_kernels_cpu.h"

static const px_kernels cpu_kernels = {
    .embedding_fwd = px_cpu_embedding_fwd,
    .embedding_bwd = px_cpu_embedding_bwd,
    .positions_fwd = px_cpu_positions_fwd,
    .positions_bwd = px_cpu_positions_bwd,
    .rmsnorm_fwd = px_cpu_rmsnorm_fwd,
    .rmsnorm_bwd = px_cpu_rmsnorm_bwd,
    .layernorm_fwd = px_cpu_layernorm_fwd,
    .layernorm_bwd = px_cpu_layernorm_bwd,
    .matmul_fwd = px_cpu_matmul_fwd,
    .matmul_bwd = px_cpu_matmul_bwd,
    .bias_add_fwd = px_cpu_bias_add_fwd,
    .bias_add_bwd = px_cpu_bias_add_bwd,
    .residual_fwd = px_cpu_residual_fwd,
    .residual_bwd = px_cpu_residual_bwd,
    .rope_fwd = px_cpu_rope_fwd,
    .rope_bwd = px_cpu_rope_bwd,
    .attention_fwd = px_cpu_attention_fwd,
    .attention_bwd = px_cpu_attention_bwd,
    .attention_kv_fwd = px_cpu_attention_kv_fwd,
    .attention_kv_bwd = px_cpu_attention_kv_bwd,
    .swiglu_fwd = px_cpu_swiglu_fwd,
    .swiglu_bwd = px_cpu_swiglu_bwd,
    .gelu_fwd = px_cpu_gelu_fwd,
    .gelu_bwd = px_cpu_gelu_bwd,
    .xent_max_fwd = px_cpu_xent_max_fwd,
    .xent_sumexp_fwd = px_cpu_xent_sumexp_fwd,
    .xent_loss_fwd = px_cpu_xent_loss_fwd,
    .xent_bwd = px_cpu_xent_bwd,
    .adamw_step = px_cpu_adamw_step,
    .moe_router_fwd = px_cpu_moe_router_fwd,
    .moe_router_bwd = px_cpu_moe_router_bwd,
    .moe_permute = px_cpu_moe_permute,
    .moe_unpermute = px_cpu_moe_unpermute,
    .moe_gate_bwd = px_cpu_moe_gate_bwd,
};

px_status px_mpi_check(int rc, const char *what, px_error *err)
{
    if (rc == MPI_SUCCESS)
        return PX_OK;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    int rank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return PX_FAIL(err, PX_ERR_MPI, "rank %d: %s failed: %s", rank, what, msg);
}

/* MPI counts are int: the engine's messages are far below, but check. */
static px_status check_count(int64_t n, const char *what, px_error *err)
{
    if (n < 0 || n > INT_MAX)
        return PX_FAIL(err, PX_ERR_INVALID, "%s: %lld elements exceed MPI's int count", what,
                       (long long)n);
    return PX_OK;
}

static px_status cpu_alloc(px_backend *be, int64_t bytes, void **out, px_error *err)
{
    (void)be;
    *out = calloc(1, bytes > 0 ? (size_t)bytes : 1);
    if (!*out)
        return PX_FAIL(err, PX_ERR_NOMEM, "cannot allocate %lld bytes of host memory",
                       (long long)bytes);
    return PX_OK;
}

static void cpu_free(px_backend *be, void *p)
{
    (void)be;
    free(p);
}

static void cpu_zero(px_backend *be, void *p, int64_t bytes)
{
    (void)be;
    memset(p, 0, (size_t)bytes);
}

static void cpu_copy(px_backend *be, void *dst, const void *src, int64_t bytes)
{
    (void)be;
    if (dst != src)
        memmove(dst, src, (size_t)bytes);
}

static px_status cpu_sync(px_backend *be, px_error *err)
{
    (void)be;
    (void)err;
    return PX_OK;
}

static px_status cpu_comm_init(px_backend *be, px_comm *c, px_error *err)
{
    (void)be;
    (void)err;
    c->native = NULL;
    return PX_OK;
}

static void cpu_comm_free(px_backend *be, px_comm *c)
{
    (void)be;
    (void)c;
}

static px_status cpu_all_reduce(px_backend *be, float *buf, int64_t n, px_reduce_op op,
                                px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1)
        return PX_OK;
    px_status st = check_count(n, "all-reduce", err);
    if (st)
        return st;
    return px_mpi_check(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT,
                                      op == PX_REDUCE_MAX ? MPI_MAX : MPI_SUM, c->mpi),
                        "MPI_Allreduce", err);
}

static px_status cpu_all_gather(px_backend *be, float *out, const float *in, int64_t n,
                                px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1) {
        if (out != in)
            memmove(out, in, (size_t)n * sizeof *out);
        return PX_OK;
    }
    px_status st = check_count(n, "all-gather", err);
    if (st)
        return st;
    const void *send = in == out + (int64_t)c->rank * n ? MPI_IN_PLACE : (const void *)in;
    return px_mpi_check(MPI_Allgather(send, (int)n, MPI_FLOAT, out, (int)n, MPI_FLOAT, c->mpi),
                        "MPI_Allgather", err);
}

static px_status cpu_reduce_scatter(px_backend *be, float *out, const float *in, int64_t n,
                                    px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1) {
        if (out != in)
            memmove(out, in, (size_t)n * sizeof *out);
        return PX_OK;
    }
    px_status st = check_count(n, "reduce-scatter", err);
    if (st)
        return st;
    /* in == out: in place, the result lands at the start of the buffer. */
    const void *send = in == out ? MPI_IN_PLACE : (const void *)in;
    return px_mpi_check(
        MPI_Reduce_scatter_block(send, out, (int)n, MPI_FLOAT, MPI_SUM, c->mpi),
        "MPI_Reduce_scatter_block", err);
}

static px_status cpu_isend(px_backend *be, const float *buf, int64_t n, int peer, int tag,
                           px_comm *c, px_request *req, px_error *err)
{
    (void)be;
    px_status st = check_count(n, "send", err);
    if (st)
        return st;
    req->native = NULL;
    return px_mpi_check(MPI_Isend(buf, (int)n, MPI_FLOAT, peer, tag, c->mpi, &req->mpi),
                        "MPI_Isend", err);
}

static px_status cpu_irecv(px_backend *be, float *buf, int64_t n, int peer, int tag,
                           px_comm *c, px_request *req, px_error *err)
{
    (void)be;
    px_status st = check_count(n, "receive", err);
    if (st)
        return st;
    req->native = NULL;
    return px_mpi_check(MPI_Irecv(buf, (int)n, MPI_FLOAT, peer, tag, c->mpi, &req->mpi),
                        "MPI_Irecv", err);
}

static px_status cpu_wait(px_backend *be, px_request *req, px_error *err)
{
    (void)be;
    return px_mpi_check(MPI_Wait(&req->mpi, MPI_STATUS_IGNORE), "MPI_Wait", err);
}

static px_status cpu_test(px_backend *be, px_request *req, int *done, px_error *err)
{
    (void)be;
    return px_mpi_check(MPI_Test(&req->mpi, done, MPI_STATUS_IGNORE), "MPI_Test", err);
}

static px_status cpu_all_to_all_v(px_backend *be, float *out, const int64_t *recv_n,
                                  const float *in, const int64_t *send_n, px_comm *c,
                                  px_error *err)
{
    (void)be;
    if (c->size <= 1) {
        if (out != in)
            memmove(out, in, (size_t)send_n[0] * sizeof *out);
        return PX_OK;
    }
    int *cnt = malloc((size_t)c->size * 4 * sizeof *cnt);
    if (!cnt)
        return PX_FAIL(err, PX_ERR_NOMEM, "all-to-all: out of memory");
    int *sc = cnt, *sd = cnt + c->size, *rc = cnt + 2 * c->size, *rd = cnt + 3 * c->size;
    int64_t so = 0, ro = 0;
    px_status st = PX_OK;
    for (int j = 0; j < c->size && !st; j++) {
        st = check_count(so + send_n[j], "all-to-all send", err);
        if (!st)
            st = check_count(ro + recv_n[j], "all-to-all receive", err);
        sc[j] = (int)send_n[j];
        sd[j] = (int)so;
        rc[j] = (int)recv_n[j];
        rd[j] = (int)ro;
        so += send_n[j];
        ro += recv_n[j];
    }
    if (!st)
        st = px_mpi_check(MPI_Alltoallv(in, sc, sd, MPI_FLOAT, out, rc, rd, MPI_FLOAT, c->mpi),
                          "MPI_Alltoallv", err);
    free(cnt);
    return st;
}

static void cpu_destroy(px_backend *be)
{
    (void)be;
}

px_status px_backend_cpu_create(px_backend *out, px_error *err)
{
    (void)err;
    memset(out, 0, sizeof *out);
    out->name = "cpu";
    out->k = &cpu_kernels;
    out->alloc = cpu_alloc;
    out->free = cpu_free;
    out->zero = cpu_zero;
    out->copy = cpu_copy;
    out->upload = cpu_copy;
    out->download = cpu_copy;
    out->sync = cpu_sync;
    out->comm_init = cpu_comm_init;
    out->comm_free = cpu_comm_free;
    out->all_reduce = cpu_all_reduce;
    out->all_gather = cpu_all_gather;
    out->reduce_scatter = cpu_reduce_scatter;
    out->isend = cpu_isend;
    out->irecv = cpu_irecv;
    out->wait = cpu_wait;
    out->test = cpu_test;
    out->destroy = cpu_destroy;
    out->all_to_all_v = cpu_all_to_all_v;
    return PX_OK;
}
