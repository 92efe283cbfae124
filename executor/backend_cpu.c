/* backend_cpu.c — the CPU backend: host memory and MPI for every collective
 * and message, over the kernel tables of backend_cpu_kernels.c (the px_cpu_*
 * kernels, BLAS GEMMs). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "backend_cpu_kernels.h"
#include "px_backend.h"
#include "px_bf16.h"

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

static void cpu_copy_2d(px_backend *be, void *dst, int64_t dpitch, const void *src,
                        int64_t spitch, int64_t width, int64_t rows)
{
    (void)be;
    for (int64_t r = 0; r < rows; r++)
        memcpy((char *)dst + r * dpitch, (const char *)src + r * spitch, (size_t)width);
}

static px_status cpu_sync(px_backend *be, px_error *err)
{
    (void)be;
    return take_sticky(err);
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

/* bf16 reductions: widened into fp32 scratch, reduced by MPI in fp32, rounded
 * back once.  NCCL rounds each hop's partial sum to bf16 instead (p - 1
 * roundings over p ranks), so the two agree exactly at 2 ranks and within
 * bf16 rounding above.  Moves without arithmetic (all-gather, all-to-all)
 * send the raw 16-bit values. */
static MPI_Datatype mpi_type(px_dtype t)
{
    return t == PX_BF16 ? MPI_UINT16_T : MPI_FLOAT;
}

static px_status cpu_all_reduce(px_backend *be, void *buf, int64_t n, px_dtype t,
                                px_reduce_op op, px_comm *c, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    if (c->size <= 1)
        return PX_OK;
    PX_TRY(check_count(n, "all-reduce", err));
    MPI_Op mop = op == PX_REDUCE_MAX ? MPI_MAX : MPI_SUM;
    if (t == PX_F32)
        return px_mpi_check(MPI_Allreduce(MPI_IN_PLACE, buf, (int)n, MPI_FLOAT, mop, c->mpi),
                            "MPI_Allreduce", err);
    float *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    if (!w)
        return PX_FAIL(err, PX_ERR_NOMEM, "all-reduce (bf16): no fp32 scratch of %lld elements",
                       (long long)n);
    px_bf16_widen(w, buf, n);
    px_status st = px_mpi_check(MPI_Allreduce(MPI_IN_PLACE, w, (int)n, MPI_FLOAT, mop, c->mpi),
                                "MPI_Allreduce", err);
    if (!st)
        px_bf16_round(buf, w, n);
    free(w);
    return st;
}

static px_status cpu_all_gather(px_backend *be, void *out, const void *in, int64_t n,
                                px_dtype t, px_comm *c, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    int64_t es = px_dtype_bytes(t);
    if (c->size <= 1) {
        if (out != in)
            memmove(out, in, (size_t)(n * es));
        return PX_OK;
    }
    PX_TRY(check_count(n, "all-gather", err));
    const void *send =
        in == px_dtype_at(out, (int64_t)c->rank * n, t) ? MPI_IN_PLACE : (const void *)in;
    return px_mpi_check(
        MPI_Allgather(send, (int)n, mpi_type(t), out, (int)n, mpi_type(t), c->mpi),
        "MPI_Allgather", err);
}

static px_status cpu_reduce_scatter(px_backend *be, void *out, const void *in, int64_t n,
                                    px_dtype t, px_comm *c, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    if (c->size <= 1) {
        if (out != in)
            memmove(out, in, (size_t)(n * px_dtype_bytes(t)));
        return PX_OK;
    }
    PX_TRY(check_count(n * c->size, "reduce-scatter", err));
    if (t == PX_F32) {
        /* in == out: in place, the result lands at the start of the buffer. */
        const void *send = in == out ? MPI_IN_PLACE : (const void *)in;
        return px_mpi_check(
            MPI_Reduce_scatter_block(send, out, (int)n, MPI_FLOAT, MPI_SUM, c->mpi),
            "MPI_Reduce_scatter_block", err);
    }
    int64_t all = n * c->size;
    float *w = malloc((size_t)(all + n > 0 ? all + n : 1) * sizeof *w);
    if (!w)
        return PX_FAIL(err, PX_ERR_NOMEM,
                       "reduce-scatter (bf16): no fp32 scratch of %lld elements",
                       (long long)(all + n));
    px_bf16_widen(w, in, all);
    px_status st = px_mpi_check(
        MPI_Reduce_scatter_block(w, w + all, (int)n, MPI_FLOAT, MPI_SUM, c->mpi),
        "MPI_Reduce_scatter_block", err);
    if (!st)
        px_bf16_round(out, w + all, n);
    free(w);
    return st;
}

/* Both of NCCL's rules hold here as well (px_backend.h): one tag for every
 * message, so MPI's non-overtaking order is the only matching, and
 * synchronous-mode sends (MPI_Issend), which complete only once the receive
 * is posted.  A pipeline order that would deadlock or cross messages under
 * NCCL therefore does so in the CPU tests too. */
enum { P2P_TAG = 7, P2P_MAX_OPS = 16 };

static px_status cpu_p2p_batch(px_backend *be, const px_p2p_op *ops, int n_ops, px_comm *c,
                               px_error *err)
{
    (void)be;
    if (n_ops < 0 || n_ops > P2P_MAX_OPS)
        return PX_FAIL(err, PX_ERR_INVALID, "p2p batch of %d messages: 0 to %d allowed", n_ops,
                       (int)P2P_MAX_OPS);
    for (int i = 0; i < n_ops; i++)
        if (ops[i].n < 0 || ops[i].peer < 0 || ops[i].peer >= c->size)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "p2p message %d: %lld elements to/from rank %d of a group of %d", i,
                           (long long)ops[i].n, ops[i].peer, c->size);
    MPI_Request req[P2P_MAX_OPS];
    int posted = 0;
    px_status st = PX_OK;
    for (int i = 0; i < n_ops && !st; i++) {
        const px_p2p_op *o = &ops[i];
        int64_t bytes = o->n * px_dtype_bytes(o->dtype);
        st = check_count(bytes, o->send ? "send (bytes)" : "receive (bytes)", err);
        if (st)
            break;
        int rc = o->send ? MPI_Issend(o->buf, (int)bytes, MPI_BYTE, o->peer, P2P_TAG, c->mpi,
                                      &req[posted])
                         : MPI_Irecv(o->buf, (int)bytes, MPI_BYTE, o->peer, P2P_TAG, c->mpi,
                                     &req[posted]);
        st = px_mpi_check(rc, o->send ? "MPI_Issend" : "MPI_Irecv", err);
        if (!st)
            posted++;
    }
    /* Complete what was posted even after an error: no request may outlive
     * its buffer. */
    int rc = MPI_Waitall(posted, req, MPI_STATUSES_IGNORE);
    if (st)
        return st;
    return px_mpi_check(rc, "MPI_Waitall (p2p batch)", err);
}

static px_status cpu_all_to_all_v(px_backend *be, void *out, const int64_t *recv_n,
                                  const void *in, const int64_t *send_n, px_dtype t,
                                  px_comm *c, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    if (c->size <= 1) {
        if (out != in)
            memmove(out, in, (size_t)(send_n[0] * px_dtype_bytes(t)));
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
        st = px_mpi_check(MPI_Alltoallv(in, sc, sd, mpi_type(t), out, rc, rd, mpi_type(t),
                                        c->mpi),
                          "MPI_Alltoallv", err);
    free(cnt);
    return st;
}

/* Both dtypes: the table follows the engine's choice. */
static px_status cpu_set_dtype(px_backend *be, px_dtype t, px_error *err)
{
    if (!(be->dtypes & PX_DTYPE_BIT(t)))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED, "dtype %d: the cpu backend runs fp32 and bf16",
                       (int)t);
    be->dtype = t;
    be->k = t == PX_BF16 ? &cpu_kernels_bf16 : &cpu_kernels_f32;
    return PX_OK;
}

static void cpu_destroy(px_backend *be)
{
    (void)be;
}

/* Host memory the engine frees stays in the process for its next
 * allocation, as a framework's caching allocator keeps device memory.
 * glibc's defaults unmap every buffer above the mmap threshold and trim the
 * heap's top, so each micro-batch's activations would come back as fresh
 * pages, faulted in one 4 KiB page at a time by the kernel that first
 * writes them (5-10 % of a step on 2 cores; docs/executor.md "Host
 * memory"). */
static void cpu_keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
#endif
}

px_status px_backend_cpu_create(px_backend *out, px_error *err)
{
    (void)err;
    cpu_keep_freed_memory();
    memset(out, 0, sizeof *out);
    out->name = "cpu";
    out->k = &cpu_kernels_f32;
    out->dtypes = PX_DTYPE_BIT(PX_F32) | PX_DTYPE_BIT(PX_BF16);
    out->dtype = PX_F32;
    out->set_dtype = cpu_set_dtype;
    out->alloc = cpu_alloc;
    out->free = cpu_free;
    out->zero = cpu_zero;
    out->copy = cpu_copy;
    out->copy_2d = cpu_copy_2d;
    out->upload = cpu_copy;
    out->download = cpu_copy;
    out->sync = cpu_sync;
    out->comm_init = cpu_comm_init;
    out->comm_free = cpu_comm_free;
    out->all_reduce = cpu_all_reduce;
    out->all_gather = cpu_all_gather;
    out->reduce_scatter = cpu_reduce_scatter;
    out->p2p_batch = cpu_p2p_batch;
    out->destroy = cpu_destroy;
    out->all_to_all_v = cpu_all_to_all_v;
    return PX_OK;
}
