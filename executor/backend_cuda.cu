/* backend_cuda.cu — the CUDA backend of the executor (px_backend.h).
 *
 * The engine's buffers are fp32 on every backend, so this backend runs the
 * fp32-storage instantiation of the CUDA kernels (px_cuda_*_f32): GEMMs on
 * bf16 tensor cores with fp32 accumulation (cuBLAS
 * CUBLAS_COMPUTE_32F_FAST_16BF), attention tiles rounded to bf16 for the
 * tensor cores, element-wise work and AdamW in fp32 (the master weights).
 *
 * Streams: every kernel and GEMM runs on `compute`; NCCL collectives run on
 * `comm`, which first waits on an event recorded on compute (the data is
 * ready) and then compute waits on an event recorded after the collective
 * (the result is ready) — "blocking in device order" as the engine needs,
 * without a host synchronisation.
 *
 * Point-to-point: the engine posts tagged sends that it completes much later
 * and blocking receives, and relies on tags to match messages (px_exec.c).
 * NCCL has no tags and a send occupies its stream until the peer posts the
 * receive, so ncclSend/ncclRecv would need every matching pair posted
 * together (px_cuda_p2p in px_comm_cuda.c does that, grouped).  Until the
 * engine posts its messages in such pairs, this backend stages pipeline
 * messages through pinned host memory and MPI, with the engine's tags:
 * correct and deadlock-free for every schedule, slower than NVLink.
 *
 * Errors: the kernel table has the CPU's void signatures, so a kernel failure
 * is recorded (the first one) and returned by the next sync, collective or
 * message call; the engine ends every step with sync. */
#include <stdlib.h>
#include <string.h>

#include "px_backend_cuda.h"

#include "px_comm_cuda.h" /* these headers carry their own extern "C" */
#include "px_cuda_alloc.h"
#include "px_cuda_gemm.h"
#include "px_cuda_status.h"
#include "px_kernels_cuda.h"

typedef struct {
    int device, local_rank, local_size;
    cudaStream_t compute, comm;
    cudaEvent_t data_ready, comm_done;
    px_cuda_blas *blas;
    px_cuda_alloc *alloc;
    px_error kerr;    /* scratch record of the kernel calls */
    px_error sticky;  /* the first failure of a void call */
    px_status sticky_status;
} cuda_ctx;

/* The process-wide backend state (the kernel table has no context). */
static cuda_ctx *G = NULL;

static void note(px_status st)
{
    if (st != PX_OK && G->sticky_status == PX_OK) {
        G->sticky = G->kerr;
        G->sticky_status = st;
    }
}

static px_status take_sticky(px_error *err)
{
    if (G->sticky_status == PX_OK)
        return PX_OK;
    if (err)
        *err = G->sticky;
    return G->sticky_status;
}

/* ---- the kernel table: CPU signatures over the fp32 CUDA kernels --------------------- */

#define S G->compute, &G->kerr

static void k_embedding_fwd(float *o, const int32_t *t, const float *w, int64_t T, int64_t C,
                            int64_t v0, int64_t v1)
{
    note(px_cuda_embedding_fwd_f32(o, t, w, T, C, v0, v1, S));
}
static void k_embedding_bwd(float *dw, const float *g, const int32_t *t, int64_t T, int64_t C,
                            int64_t v0, int64_t v1)
{
    note(px_cuda_embedding_bwd_f32(dw, g, t, T, C, v0, v1, S));
}
static void k_positions_fwd(float *x, const float *p, int64_t Sq, int64_t B, int64_t C,
                            int64_t pos0)
{
    note(px_cuda_positions_fwd_f32(x, p, Sq, B, C, pos0, S));
}
static void k_positions_bwd(float *dp, const float *g, int64_t Sq, int64_t B, int64_t C,
                            int64_t pos0)
{
    note(px_cuda_positions_bwd_f32(dp, g, Sq, B, C, pos0, S));
}
static void k_rmsnorm_fwd(float *o, float *r, const float *x, const float *w, int64_t T,
                          int64_t C, float eps)
{
    note(px_cuda_rmsnorm_fwd_f32(o, r, x, w, T, C, eps, S));
}
static void k_rmsnorm_bwd(float *dx, float *dw, const float *g, const float *x, const float *w,
                          const float *r, int64_t T, int64_t C)
{
    note(px_cuda_rmsnorm_bwd_f32(dx, dw, g, x, w, r, T, C, S));
}
static void k_layernorm_fwd(float *o, float *mu, float *r, const float *x, const float *w,
                            const float *b, int64_t T, int64_t C, float eps)
{
    note(px_cuda_layernorm_fwd_f32(o, mu, r, x, w, b, T, C, eps, S));
}
static void k_layernorm_bwd(float *dx, float *dw, float *db, const float *g, const float *x,
                            const float *w, const float *mu, const float *r, int64_t T,
                            int64_t C)
{
    note(px_cuda_layernorm_bwd_f32(dx, dw, db, g, x, w, mu, r, T, C, S));
}
static void k_matmul_fwd(float *o, const float *x, const float *w, const float *b, int64_t T,
                         int64_t K, int64_t N)
{
    note(px_cuda_matmul_fwd_f32(o, x, w, b, T, K, N, G->blas, S));
}
static void k_matmul_bwd(float *dx, float *dw, float *db, const float *g, const float *x,
                         const float *w, int64_t T, int64_t K, int64_t N)
{
    note(px_cuda_matmul_bwd_f32(dx, dw, db, g, x, w, T, K, N, G->blas, S));
}
static void k_bias_add_fwd(float *x, const float *b, int64_t T, int64_t N)
{
    note(px_cuda_bias_add_fwd_f32(x, b, T, N, S));
}
static void k_bias_add_bwd(float *db, const float *g, int64_t T, int64_t N)
{
    note(px_cuda_bias_add_bwd_f32(db, g, T, N, S));
}
static void k_residual_fwd(float *o, const float *a, const float *b, int64_t n)
{
    note(px_cuda_residual_fwd_f32(o, a, b, n, S));
}
static void k_residual_bwd(float *da, float *db, const float *g, int64_t n)
{
    note(px_cuda_residual_bwd_f32(da, db, g, n, S));
}
static void k_rope_fwd(float *qkv, int64_t Sq, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t pos0, float theta)
{
    note(px_cuda_rope_fwd_f32(qkv, Sq, B, NH, NKV, HD, pos0, theta, S));
}
static void k_rope_bwd(float *dqkv, int64_t Sq, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t pos0, float theta)
{
    note(px_cuda_rope_bwd_f32(dqkv, Sq, B, NH, NKV, HD, pos0, theta, S));
}
static void k_attention_fwd(float *o, float *lse, float *probs, const float *qkv, int64_t Sq,
                            int64_t B, int64_t NH, int64_t NKV, int64_t HD)
{
    note(px_cuda_attention_fwd_f32(o, lse, probs, qkv, Sq, B, NH, NKV, HD, S));
}
static void k_attention_bwd(float *dqkv, const float *g, const float *o, const float *lse,
                            const float *probs, const float *qkv, int64_t Sq, int64_t B,
                            int64_t NH, int64_t NKV, int64_t HD)
{
    note(px_cuda_attention_bwd_f32(dqkv, g, o, lse, probs, qkv, Sq, B, NH, NKV, HD, S));
}
static void k_swiglu_fwd(float *o, const float *gu, int64_t T, int64_t F)
{
    note(px_cuda_swiglu_fwd_f32(o, gu, T, F, S));
}
static void k_swiglu_bwd(float *dgu, const float *g, const float *gu, int64_t T, int64_t F)
{
    note(px_cuda_swiglu_bwd_f32(dgu, g, gu, T, F, S));
}
static void k_gelu_fwd(float *o, const float *x, int64_t n)
{
    note(px_cuda_gelu_fwd_f32(o, x, n, S));
}
static void k_gelu_bwd(float *dx, const float *g, const float *x, int64_t n)
{
    note(px_cuda_gelu_bwd_f32(dx, g, x, n, S));
}
static void k_xent_max_fwd(float *mx, const float *l, int64_t T, int64_t Vl)
{
    note(px_cuda_xent_max_fwd_f32(mx, l, T, Vl, S));
}
static void k_xent_sumexp_fwd(float *se, float *tl, const float *l, const float *mx,
                              const int32_t *tg, int64_t T, int64_t Vl, int64_t v0)
{
    note(px_cuda_xent_sumexp_fwd_f32(se, tl, l, mx, tg, T, Vl, v0, S));
}
static void k_xent_loss_fwd(float *loss, const float *mx, const float *se, const float *tl,
                            int64_t T)
{
    note(px_cuda_xent_loss_fwd_f32(loss, mx, se, tl, T, S));
}
static void k_xent_bwd(float *dl, const float *l, const float *mx, const float *se,
                       const int32_t *tg, float dloss, int64_t T, int64_t Vl, int64_t v0)
{
    note(px_cuda_xent_bwd_f32(dl, l, mx, se, tg, dloss, T, Vl, v0, S));
}
static void k_adamw_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                         float b1, float b2, float eps, float wd, int64_t step)
{
    note(px_cuda_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, step, NULL, S));
}

#undef S

static px_kernels make_kernels(void)
{
    px_kernels k;
    memset(&k, 0, sizeof k);
    k.embedding_fwd = k_embedding_fwd;
    k.embedding_bwd = k_embedding_bwd;
    k.positions_fwd = k_positions_fwd;
    k.positions_bwd = k_positions_bwd;
    k.rmsnorm_fwd = k_rmsnorm_fwd;
    k.rmsnorm_bwd = k_rmsnorm_bwd;
    k.layernorm_fwd = k_layernorm_fwd;
    k.layernorm_bwd = k_layernorm_bwd;
    k.matmul_fwd = k_matmul_fwd;
    k.matmul_bwd = k_matmul_bwd;
    k.bias_add_fwd = k_bias_add_fwd;
    k.bias_add_bwd = k_bias_add_bwd;
    k.residual_fwd = k_residual_fwd;
    k.residual_bwd = k_residual_bwd;
    k.rope_fwd = k_rope_fwd;
    k.rope_bwd = k_rope_bwd;
    k.attention_fwd = k_attention_fwd;
    k.attention_bwd = k_attention_bwd;
    k.swiglu_fwd = k_swiglu_fwd;
    k.swiglu_bwd = k_swiglu_bwd;
    k.gelu_fwd = k_gelu_fwd;
    k.gelu_bwd = k_gelu_bwd;
    k.xent_max_fwd = k_xent_max_fwd;
    k.xent_sumexp_fwd = k_xent_sumexp_fwd;
    k.xent_loss_fwd = k_xent_loss_fwd;
    k.xent_bwd = k_xent_bwd;
    k.adamw_step = k_adamw_step;
    return k;
}

static px_kernels cuda_kernels;

/* ---- memory -------------------------------------------------------------------------- */

static px_status cu_alloc(px_backend *be, int64_t bytes, void **out, px_error *err)
{
    (void)be;
    /* Never NULL, as on the CPU (calloc of 1 byte): the engine may test it. */
    PX_TRY(px_cuda_malloc(G->alloc, bytes > 0 ? bytes : 1, out, err));
    if (*out)
        PX_CUDA_TRY(err, cudaMemsetAsync(*out, 0, (size_t)bytes, G->compute));
    return PX_OK;
}

static void cu_free(px_backend *be, void *p)
{
    (void)be;
    G->kerr.code = PX_OK;
    note(px_cuda_free(G->alloc, p, &G->kerr));
}

static void cu_zero(px_backend *be, void *p, int64_t bytes)
{
    (void)be;
    if (bytes > 0)
        note(px_cuda_status(cudaMemsetAsync(p, 0, (size_t)bytes, G->compute), "cudaMemsetAsync",
                            __FILE__, __LINE__, &G->kerr));
}

static void cu_copy(px_backend *be, void *dst, const void *src, int64_t bytes)
{
    (void)be;
    if (dst != src && bytes > 0)
        note(px_cuda_status(cudaMemcpyAsync(dst, src, (size_t)bytes, cudaMemcpyDeviceToDevice,
                                            G->compute),
                            "cudaMemcpyAsync (device)", __FILE__, __LINE__, &G->kerr));
}

/* From pageable host memory the copy is staged before the call returns, so
 * the engine may reuse its host buffer at once. */
static void cu_upload(px_backend *be, void *dst, const void *host_src, int64_t bytes)
{
    (void)be;
    if (bytes > 0)
        note(px_cuda_status(cudaMemcpyAsync(dst, host_src, (size_t)bytes,
                                            cudaMemcpyHostToDevice, G->compute),
                            "cudaMemcpyAsync (upload)", __FILE__, __LINE__, &G->kerr));
}

static void cu_download(px_backend *be, void *host_dst, const void *src, int64_t bytes)
{
    (void)be;
    if (bytes <= 0)
        return;
    note(px_cuda_status(cudaMemcpyAsync(host_dst, src, (size_t)bytes, cudaMemcpyDeviceToHost,
                                        G->compute),
                        "cudaMemcpyAsync (download)", __FILE__, __LINE__, &G->kerr));
    note(px_cuda_status(cudaStreamSynchronize(G->compute), "cudaStreamSynchronize (download)",
                        __FILE__, __LINE__, &G->kerr));
}

static px_status cu_sync(px_backend *be, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    PX_CUDA_TRY(err, cudaStreamSynchronize(G->comm));
    PX_CUDA_TRY(err, cudaStreamSynchronize(G->compute));
    return take_sticky(err);
}

/* ---- communicators and collectives --------------------------------------------------- */

static px_status cu_comm_init(px_backend *be, px_comm *c, px_error *err)
{
    (void)be;
    ncclComm_t nc = NULL;
    PX_TRY(px_nccl_comm_from_mpi(c->mpi, &nc, err));
    c->native = nc;
    return PX_OK;
}

static void cu_comm_free(px_backend *be, px_comm *c)
{
    (void)be;
    if (c->native) {
        (void)cudaStreamSynchronize(G->comm);
        (void)ncclCommDestroy((ncclComm_t)c->native);
        c->native = NULL;
    }
}

/* comm waits for compute's data; after the collective, compute waits for comm. */
static px_status before_comm(px_error *err)
{
    PX_TRY(take_sticky(err));
    PX_CUDA_TRY(err, cudaEventRecord(G->data_ready, G->compute));
    PX_CUDA_TRY(err, cudaStreamWaitEvent(G->comm, G->data_ready, 0));
    return PX_OK;
}

static px_status after_comm(px_error *err)
{
    PX_CUDA_TRY(err, cudaEventRecord(G->comm_done, G->comm));
    PX_CUDA_TRY(err, cudaStreamWaitEvent(G->compute, G->comm_done, 0));
    return PX_OK;
}

static px_status cu_all_reduce(px_backend *be, float *buf, int64_t n, px_reduce_op op,
                               px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1 || n == 0)
        return take_sticky(err);
    ncclComm_t nc = (ncclComm_t)c->native;
    PX_TRY(before_comm(err));
    PX_NCCL_TRY(err, nc,
                ncclAllReduce(buf, buf, (size_t)n, ncclFloat32,
                              op == PX_REDUCE_MAX ? ncclMax : ncclSum, nc, G->comm));
    return after_comm(err);
}

static px_status cu_all_gather(px_backend *be, float *out, const float *in, int64_t n,
                               px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1) {
        cu_copy(be, out, in, n * (int64_t)sizeof(float));
        return take_sticky(err);
    }
    ncclComm_t nc = (ncclComm_t)c->native;
    PX_TRY(before_comm(err));
    /* in == out + rank * n is NCCL's in-place form. */
    PX_NCCL_TRY(err, nc, ncclAllGather(in, out, (size_t)n, ncclFloat32, nc, G->comm));
    return after_comm(err);
}

static px_status cu_reduce_scatter(px_backend *be, float *out, const float *in, int64_t n,
                                   px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1) {
        cu_copy(be, out, in, n * (int64_t)sizeof(float));
        return take_sticky(err);
    }
    ncclComm_t nc = (ncclComm_t)c->native;
    PX_TRY(before_comm(err));
    if (in == out) {
        /* The engine's in place puts the result at the start; NCCL's in place
         * puts it at rank * n: reduce there, then move it down (the two
         * ranges do not overlap for rank >= 1). */
        float *mine = out + (int64_t)c->rank * n;
        PX_NCCL_TRY(err, nc,
                    ncclReduceScatter(in, mine, (size_t)n, ncclFloat32, ncclSum, nc, G->comm));
        if (c->rank != 0)
            PX_CUDA_TRY(err, cudaMemcpyAsync(out, mine, (size_t)n * sizeof(float),
                                             cudaMemcpyDeviceToDevice, G->comm));
    } else {
        PX_NCCL_TRY(err, nc,
                    ncclReduceScatter(in, out, (size_t)n, ncclFloat32, ncclSum, nc, G->comm));
    }
    return after_comm(err);
}

/* ---- point-to-point: staged through pinned host memory and MPI (see top) ------------- */

typedef struct {
    float *host; /* pinned */
    float *dev;  /* receive: where the message lands */
    int64_t n;
    int is_recv;
} staged;

static px_status stage_new(int64_t n, float *dev, int is_recv, staged **out, px_error *err)
{
    staged *s = (staged *)calloc(1, sizeof *s);
    if (!s)
        return PX_FAIL(err, PX_ERR_NOMEM, "p2p staging record");
    PX_CUDA_TRY(err, cudaMallocHost((void **)&s->host, (size_t)(n > 0 ? n : 1) * sizeof(float)));
    s->dev = dev;
    s->n = n;
    s->is_recv = is_recv;
    *out = s;
    return PX_OK;
}

static void stage_free(staged *s)
{
    if (s) {
        cudaFreeHost(s->host);
        free(s);
    }
}

static px_status cu_isend(px_backend *be, const float *buf, int64_t n, int peer, int tag,
                          px_comm *c, px_request *req, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    if (n < 0 || n > 0x7fffffff)
        return PX_FAIL(err, PX_ERR_INVALID, "send of %lld elements: MPI counts are int",
                       (long long)n);
    staged *s = NULL;
    PX_TRY(stage_new(n, NULL, 0, &s, err));
    req->native = s;
    PX_CUDA_TRY(err, cudaMemcpyAsync(s->host, buf, (size_t)n * sizeof(float),
                                     cudaMemcpyDeviceToHost, G->compute));
    PX_CUDA_TRY(err, cudaStreamSynchronize(G->compute));
    return px_mpi_check(MPI_Isend(s->host, (int)n, MPI_FLOAT, peer, tag, c->mpi, &req->mpi),
                        "MPI_Isend", err);
}

static px_status cu_irecv(px_backend *be, float *buf, int64_t n, int peer, int tag, px_comm *c,
                          px_request *req, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    if (n < 0 || n > 0x7fffffff)
        return PX_FAIL(err, PX_ERR_INVALID, "receive of %lld elements: MPI counts are int",
                       (long long)n);
    staged *s = NULL;
    PX_TRY(stage_new(n, buf, 1, &s, err));
    req->native = s;
    return px_mpi_check(MPI_Irecv(s->host, (int)n, MPI_FLOAT, peer, tag, c->mpi, &req->mpi),
                        "MPI_Irecv", err);
}

/* The message is complete: a receive moves its data to the device. */
static px_status finish(px_request *req, px_error *err)
{
    staged *s = (staged *)req->native;
    px_status st = PX_OK;
    if (s && s->is_recv) {
        st = px_cuda_status(cudaMemcpyAsync(s->dev, s->host, (size_t)s->n * sizeof(float),
                                            cudaMemcpyHostToDevice, G->compute),
                            "cudaMemcpyAsync (p2p receive)", __FILE__, __LINE__, err);
        /* the pinned buffer is freed below: wait for the copy out of it */
        if (st == PX_OK)
            st = px_cuda_status(cudaStreamSynchronize(G->compute), "cudaStreamSynchronize",
                                __FILE__, __LINE__, err);
    }
    stage_free(s);
    req->native = NULL;
    return st;
}

static px_status cu_wait(px_backend *be, px_request *req, px_error *err)
{
    (void)be;
    PX_TRY(px_mpi_check(MPI_Wait(&req->mpi, MPI_STATUS_IGNORE), "MPI_Wait", err));
    return finish(req, err);
}

static px_status cu_test(px_backend *be, px_request *req, int *done, px_error *err)
{
    (void)be;
    PX_TRY(px_mpi_check(MPI_Test(&req->mpi, done, MPI_STATUS_IGNORE), "MPI_Test", err));
    return *done ? finish(req, err) : PX_OK;
}

/* ---- lifetime ------------------------------------------------------------------------ */

static void cu_destroy(px_backend *be)
{
    if (!G)
        return;
    (void)cudaStreamSynchronize(G->comm);
    (void)cudaStreamSynchronize(G->compute);
    px_cuda_alloc_delete(G->alloc);
    px_cuda_blas_delete(G->blas);
    if (G->data_ready)
        (void)cudaEventDestroy(G->data_ready);
    if (G->comm_done)
        (void)cudaEventDestroy(G->comm_done);
    if (G->comm)
        (void)cudaStreamDestroy(G->comm);
    if (G->compute)
        (void)cudaStreamDestroy(G->compute);
    free(G);
    G = NULL;
    if (be)
        be->ctx = NULL;
}

extern "C" px_status px_backend_cuda_create(px_backend *out, MPI_Comm world, px_error *err)
{
    memset(out, 0, sizeof *out);
    if (G)
        return PX_FAIL(err, PX_ERR_INVALID, "one CUDA backend per process: destroy the first");
    G = (cuda_ctx *)calloc(1, sizeof *G);
    if (!G)
        return PX_FAIL(err, PX_ERR_NOMEM, "CUDA backend state");
    px_status st = px_cuda_select_device(world, &G->local_rank, &G->local_size, &G->device, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaStreamCreateWithFlags(&G->compute, cudaStreamNonBlocking),
                            "cudaStreamCreate (compute)", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaStreamCreateWithFlags(&G->comm, cudaStreamNonBlocking),
                            "cudaStreamCreate (comm)", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventCreateWithFlags(&G->data_ready, cudaEventDisableTiming),
                            "cudaEventCreate", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventCreateWithFlags(&G->comm_done, cudaEventDisableTiming),
                            "cudaEventCreate", __FILE__, __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_blas_new(G->compute, &G->blas, err);
    if (st == PX_OK)
        st = px_cuda_alloc_new(G->compute, &G->alloc, err);
    if (st != PX_OK) {
        cu_destroy(NULL);
        return st;
    }
    cuda_kernels = make_kernels();
    out->name = "cuda";
    out->ctx = G;
    out->k = &cuda_kernels;
    out->alloc = cu_alloc;
    out->free = cu_free;
    out->zero = cu_zero;
    out->copy = cu_copy;
    out->upload = cu_upload;
    out->download = cu_download;
    out->sync = cu_sync;
    out->comm_init = cu_comm_init;
    out->comm_free = cu_comm_free;
    out->all_reduce = cu_all_reduce;
    out->all_gather = cu_all_gather;
    out->reduce_scatter = cu_reduce_scatter;
    out->isend = cu_isend;
    out->irecv = cu_irecv;
    out->wait = cu_wait;
    out->test = cu_test;
    out->destroy = cu_destroy;
    return PX_OK;
}

extern "C" int64_t px_backend_cuda_peak_bytes(const px_backend *be)
{
    (void)be;
    return G ? px_cuda_alloc_peak_bytes(G->alloc) : 0;
}

extern "C" int64_t px_backend_cuda_pool_peak_bytes(const px_backend *be)
{
    (void)be;
    return G ? px_cuda_alloc_pool_peak_bytes(G->alloc) : 0;
}
