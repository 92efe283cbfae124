/* backend_cuda.cu — the CUDA backend of the executor (px_backend.h).
 *
 * Storage follows the engine's dtype (set_dtype): in bf16 (CUDA plans'
 * default) the px_cuda_* kernels on bf16 activations and the bf16 compute
 * copy of the weights, AdamW on the fp32 master writing that copy, bf16 NCCL
 * traffic except the fp32 gradient reductions; in fp32 the px_cuda_*_f32
 * instantiations (GEMMs on bf16 tensor cores with fp32 in and out through
 * CUBLAS_COMPUTE_32F_FAST_16BF, attention tiles rounded to bf16, element-wise
 * work and AdamW in fp32).
 *
 * Streams: every kernel and GEMM runs on `compute`; NCCL collectives run on
 * `comm`, which first waits on an event recorded on compute (the data is
 * ready) and then compute waits on an event recorded after the collective
 * (the result is ready) — "blocking in device order" as the engine needs,
 * without a host synchronisation.
 *
 * Point-to-point: the engine posts each step's pipeline sends and receives
 * as one batch (px_backend.h p2p_batch), which is one NCCL group of
 * ncclSend/ncclRecv on the comm stream.
 *
 * Errors: the kernel table has the CPU's void signatures, so a kernel failure
 * is recorded (the first one) and returned by the next sync, collective or
 * message call; the engine ends every step with sync. */
#include <sched.h>
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
    cudaEvent_t step_begin, step_end; /* timing events (device clock) */
    px_cuda_blas *blas;
    px_cuda_alloc *alloc;
    px_error kerr;    /* scratch record of the kernel calls */
    px_error sticky;  /* the first failure of a void call */
    px_status sticky_status;
    /* Every NCCL communicator of the engine: polled for asynchronous errors
     * while the host waits on a stream, aborted by px_backend_cuda_abort. */
    ncclComm_t comms[64];
    int n_comms;
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

/* ---- the kernel tables: CPU signatures over the CUDA kernels -------------------------
 * Two tables, one per storage dtype (px_backend.h): bf16 storage runs the
 * px_cuda_<op> kernels (bf16 tensors, fp32 gradients and statistics, fp32
 * accumulation), fp32 storage their px_cuda_<op>_f32 instantiations.  The
 * void * arguments are the activation-dtype tensors of px_kernels. */

#define S G->compute, &G->kerr

/* A table argument as a device tensor of the storage type E. */
template <typename E> static inline E *as(void *p)
{
    return (E *)p;
}
template <typename E> static inline const E *as(const void *p)
{
    return (const E *)p;
}

/* out = a + b on fp32 buffers, in either table (gradient pieces). */
static void k_add_f32(float *o, const float *a, const float *b, int64_t n)
{
    note(px_cuda_residual_fwd_f32(o, a, b, n, S));
}

/* The loss statistics are fp32 in both storages. */
static void k_xent_loss_fwd(float *loss, const float *mx, const float *se, const float *tl,
                            int64_t T)
{
    note(px_cuda_xent_loss_fwd_f32(loss, mx, se, tl, T, S));
}

/* The wrappers of one storage dtype, every kernel of the list but
 * adamw_step: prefix<op> calls px_cuda_<op>suffix with the activation tensors
 * as elem (fp32: f_, _f32, float; bf16: b_, no suffix, px_bf16). */
#define PX_CUDA_WRAPPERS(prefix, suffix, elem)                                           \
static void prefix##embedding_fwd(void *o, const int32_t *t, const void *w, int64_t T,   \
                                  int64_t C, int64_t v0, int64_t v1)                     \
{                                                                                        \
    note(px_cuda_embedding_fwd##suffix(as<elem>(o), t, as<elem>(w), T, C, v0, v1, S));   \
}                                                                                        \
static void prefix##embedding_bwd(float *dw, const void *g, const int32_t *t, int64_t T, \
                                  int64_t C, int64_t v0, int64_t v1)                     \
{                                                                                        \
    note(px_cuda_embedding_bwd##suffix(dw, as<elem>(g), t, T, C, v0, v1, S));            \
}                                                                                        \
static void prefix##positions_fwd(void *x, const void *p, int64_t Sq, int64_t Bt,        \
                                  int64_t C, int64_t pos0)                               \
{                                                                                        \
    note(px_cuda_positions_fwd##suffix(as<elem>(x), as<elem>(p), Sq, Bt, C, pos0, S));   \
}                                                                                        \
static void prefix##positions_bwd(float *dp, const void *g, int64_t Sq, int64_t Bt,      \
                                  int64_t C, int64_t pos0)                               \
{                                                                                        \
    note(px_cuda_positions_bwd##suffix(dp, as<elem>(g), Sq, Bt, C, pos0, S));            \
}                                                                                        \
static void prefix##rmsnorm_fwd(void *o, float *r, const void *x, const void *w,         \
                                int64_t T, int64_t C, float eps)                         \
{                                                                                        \
    note(px_cuda_rmsnorm_fwd##suffix(as<elem>(o), r, as<elem>(x), as<elem>(w), T, C,     \
                                     eps, S));                                           \
}                                                                                        \
static void prefix##rmsnorm_bwd(void *dx, float *dw, const void *g, const void *x,       \
                                const void *w, const float *r, int64_t T, int64_t C)     \
{                                                                                        \
    note(px_cuda_rmsnorm_bwd##suffix(as<elem>(dx), dw, as<elem>(g), as<elem>(x),         \
                                     as<elem>(w), r, T, C, S));                          \
}                                                                                        \
static void prefix##layernorm_fwd(void *o, float *mu, float *r, const void *x,           \
                                  const void *w, const void *b, int64_t T, int64_t C,    \
                                  float eps)                                             \
{                                                                                        \
    note(px_cuda_layernorm_fwd##suffix(as<elem>(o), mu, r, as<elem>(x), as<elem>(w),     \
                                       as<elem>(b), T, C, eps, S));                      \
}                                                                                        \
static void prefix##layernorm_bwd(void *dx, float *dw, float *db, const void *g,         \
                                  const void *x, const void *w, const float *mu,         \
                                  const float *r, int64_t T, int64_t C)                  \
{                                                                                        \
    note(px_cuda_layernorm_bwd##suffix(as<elem>(dx), dw, db, as<elem>(g), as<elem>(x),   \
                                       as<elem>(w), mu, r, T, C, S));                    \
}                                                                                        \
static void prefix##matmul_fwd(void *o, const void *x, const void *w, const void *b,     \
                               int64_t T, int64_t K, int64_t N)                          \
{                                                                                        \
    note(px_cuda_matmul_fwd##suffix(as<elem>(o), as<elem>(x), as<elem>(w), as<elem>(b),  \
                                    T, K, N, G->blas, S));                               \
}                                                                                        \
static void prefix##matmul_bwd(void *dx, float *dw, float *db, const void *g,            \
                               const void *x, const void *w, int64_t T, int64_t K,       \
                               int64_t N)                                                \
{                                                                                        \
    note(px_cuda_matmul_bwd##suffix(as<elem>(dx), dw, db, as<elem>(g), as<elem>(x),      \
                                    as<elem>(w), T, K, N, G->blas, S));                  \
}                                                                                        \
static void prefix##bias_add_fwd(void *x, const void *b, int64_t T, int64_t N)           \
{                                                                                        \
    note(px_cuda_bias_add_fwd##suffix(as<elem>(x), as<elem>(b), T, N, S));               \
}                                                                                        \
static void prefix##bias_add_bwd(float *db, const void *g, int64_t T, int64_t N)         \
{                                                                                        \
    note(px_cuda_bias_add_bwd##suffix(db, as<elem>(g), T, N, S));                        \
}                                                                                        \
static void prefix##residual_fwd(void *o, const void *a, const void *b, int64_t n)       \
{                                                                                        \
    note(px_cuda_residual_fwd##suffix(as<elem>(o), as<elem>(a), as<elem>(b), n, S));     \
}                                                                                        \
static void prefix##residual_bwd(void *da, void *db, const void *g, int64_t n)           \
{                                                                                        \
    note(px_cuda_residual_bwd##suffix(as<elem>(da), as<elem>(db), as<elem>(g), n, S));   \
}                                                                                        \
static void prefix##rope_fwd(void *qkv, int64_t Sq, int64_t Bt, int64_t NH, int64_t NKV, \
                             int64_t HD, int64_t pos0, const px_rope *rope)             \
{                                                                                        \
    note(px_cuda_rope_fwd##suffix(as<elem>(qkv), Sq, Bt, NH, NKV, HD, pos0, rope, S));  \
}                                                                                        \
static void prefix##rope_bwd(void *dqkv, int64_t Sq, int64_t Bt, int64_t NH,             \
                             int64_t NKV, int64_t HD, int64_t pos0, const px_rope *rope)\
{                                                                                        \
    note(px_cuda_rope_bwd##suffix(as<elem>(dqkv), Sq, Bt, NH, NKV, HD, pos0, rope, S)); \
}                                                                                        \
static void prefix##attention_fwd(void *o, float *lse, float *probs, const void *qkv,    \
                                  int64_t Sq, int64_t Bt, int64_t NH, int64_t NKV,       \
                                  int64_t HD)                                            \
{                                                                                        \
    note(px_cuda_attention_fwd##suffix(as<elem>(o), lse, probs, as<elem>(qkv), Sq, Bt,   \
                                       NH, NKV, HD, S));                                 \
}                                                                                        \
static void prefix##attention_bwd(void *dqkv, const void *g, const void *o,              \
                                  const float *lse, const float *probs, const void *qkv, \
                                  int64_t Sq, int64_t Bt, int64_t NH, int64_t NKV,       \
                                  int64_t HD)                                            \
{                                                                                        \
    note(px_cuda_attention_bwd##suffix(as<elem>(dqkv), as<elem>(g), as<elem>(o), lse,    \
                                       probs, as<elem>(qkv), Sq, Bt, NH, NKV, HD, S));   \
}                                                                                        \
static void prefix##swiglu_fwd(void *o, const void *gu, int64_t T, int64_t Fd)           \
{                                                                                        \
    note(px_cuda_swiglu_fwd##suffix(as<elem>(o), as<elem>(gu), T, Fd, S));               \
}                                                                                        \
static void prefix##swiglu_bwd(void *dgu, const void *g, const void *gu, int64_t T,      \
                               int64_t Fd)                                               \
{                                                                                        \
    note(px_cuda_swiglu_bwd##suffix(as<elem>(dgu), as<elem>(g), as<elem>(gu), T, Fd,     \
                                    S));                                                 \
}                                                                                        \
static void prefix##gelu_fwd(void *o, const void *x, int64_t n)                          \
{                                                                                        \
    note(px_cuda_gelu_fwd##suffix(as<elem>(o), as<elem>(x), n, S));                      \
}                                                                                        \
static void prefix##gelu_bwd(void *dx, const void *g, const void *x, int64_t n)          \
{                                                                                        \
    note(px_cuda_gelu_bwd##suffix(as<elem>(dx), as<elem>(g), as<elem>(x), n, S));        \
}                                                                                        \
static void prefix##xent_max_fwd(float *mx, const void *l, int64_t T, int64_t Vl)        \
{                                                                                        \
    note(px_cuda_xent_max_fwd##suffix(mx, as<elem>(l), T, Vl, S));                       \
}                                                                                        \
static void prefix##xent_sumexp_fwd(float *se, float *tl, const void *l,                 \
                                    const float *mx, const int32_t *tg, int64_t T,       \
                                    int64_t Vl, int64_t v0)                              \
{                                                                                        \
    note(px_cuda_xent_sumexp_fwd##suffix(se, tl, as<elem>(l), mx, tg, T, Vl, v0, S));    \
}                                                                                        \
static void prefix##xent_bwd(void *dl, const void *l, const float *mx, const float *se,  \
                             const int32_t *tg, float dloss, int64_t T, int64_t Vl,      \
                             int64_t v0)                                                 \
{                                                                                        \
    note(px_cuda_xent_bwd##suffix(as<elem>(dl), as<elem>(l), mx, se, tg, dloss, T, Vl,   \
                                  v0, S));                                               \
}                                                                                        \
/* Context parallelism: this rank's query rows against the gathered kv. */               \
static void prefix##attention_kv_fwd(void *o, float *lse, const void *q,                 \
                                     const int32_t *qpos, const void *kv, int64_t Sq,    \
                                     int64_t Skv, int64_t Bt, int64_t NH, int64_t NKV,   \
                                     int64_t HD)                                         \
{                                                                                        \
    note(px_cuda_attention_kv_fwd##suffix(as<elem>(o), lse, as<elem>(q), qpos,           \
                                          as<elem>(kv), Sq, Skv, Bt, NH, NKV, HD, S));   \
}                                                                                        \
static void prefix##attention_kv_bwd(void *dq, void *dkv, const void *g, const void *o,  \
                                     const float *lse, const void *q,                    \
                                     const int32_t *qpos, const void *kv, int64_t Sq,    \
                                     int64_t Skv, int64_t Bt, int64_t NH, int64_t NKV,   \
                                     int64_t HD)                                         \
{                                                                                        \
    note(px_cuda_attention_kv_bwd##suffix(as<elem>(dq), as<elem>(dkv), as<elem>(g),      \
                                          as<elem>(o), lse, as<elem>(q), qpos,           \
                                          as<elem>(kv), Sq, Skv, Bt, NH, NKV, HD, S));   \
}                                                                                        \
/* Mixture of experts: router statistics (probs, gates) are fp32 in both. */             \
static void prefix##moe_router_fwd(float *probs, int32_t *idx, float *gate,              \
                                   const void *logits, int64_t T, int64_t E, int64_t k,  \
                                   const px_router *r)                                   \
{                                                                                        \
    note(px_cuda_moe_router_fwd##suffix(probs, idx, gate, as<elem>(logits), T, E, k, r,  \
                                        S));                                             \
}                                                                                        \
static void prefix##moe_router_bwd(void *dl, const float *probs, const int32_t *idx,     \
                                   const float *dgate, int64_t T, int64_t E, int64_t k,  \
                                   const px_router *r)                                   \
{                                                                                        \
    note(px_cuda_moe_router_bwd##suffix(as<elem>(dl), probs, idx, dgate, T, E, k, r,     \
                                        S));                                             \
}                                                                                        \
static void prefix##moe_permute(void *o, const void *x, const int32_t *rows,             \
                                const float *gate, const int32_t *slots, int64_t n,      \
                                int64_t C)                                               \
{                                                                                        \
    note(px_cuda_moe_permute##suffix(as<elem>(o), as<elem>(x), rows, gate, slots, n, C,  \
                                     S));                                                \
}                                                                                        \
static void prefix##moe_unpermute(void *o, const void *y, const int32_t *rows,           \
                                  const float *gate, const int32_t *slots, int64_t n,    \
                                  int64_t C)                                             \
{                                                                                        \
    note(px_cuda_moe_unpermute##suffix(as<elem>(o), as<elem>(y), rows, gate, slots, n,   \
                                       C, S));                                           \
}                                                                                        \
static void prefix##moe_gate_bwd(float *dgate, const void *g, const void *y,             \
                                 const int32_t *rows, const int32_t *slots, int64_t n,   \
                                 int64_t C)                                              \
{                                                                                        \
    note(px_cuda_moe_gate_bwd##suffix(dgate, as<elem>(g), as<elem>(y), rows, slots, n,   \
                                      C, S));                                            \
}

PX_CUDA_WRAPPERS(f_, _f32, float)
PX_CUDA_WRAPPERS(b_, , px_bf16)

#undef PX_CUDA_WRAPPERS

/* fp32 storage: the master is the weights (copy is NULL from the engine; a
 * separate fp32 copy, if ever asked for, is a device copy). */
static void f_adamw_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                         float b1, float b2, float eps, float wd, int64_t step, void *copy)
{
    note(px_cuda_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, step, NULL, S));
    if (copy && copy != p && n > 0)
        note(px_cuda_status(cudaMemcpyAsync(copy, p, (size_t)n * sizeof(float),
                                            cudaMemcpyDeviceToDevice, G->compute),
                            "cudaMemcpyAsync (weight copy)", __FILE__, __LINE__, &G->kerr));
}

/* bf16 storage: AdamW on the fp32 master, writing the bf16 compute copy in
 * the same kernel. */
static void b_adamw_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                         float b1, float b2, float eps, float wd, int64_t step, void *copy)
{
    note(px_cuda_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, step, as<px_bf16>(copy), S));
}

#undef S

/* Every entry of px_kernels for one storage dtype (prefix f_ or b_), from
 * the one kernel list (px_backend.h); assignments, as C++ initializers must
 * follow the declaration order. */
#define PX_CUDA_SLOT(p, name) px_table_->name = p##name;
#define PX_CUDA_TABLE(k, p)                                                              \
    do {                                                                                 \
        px_kernels *px_table_ = &(k);                                                    \
        memset(px_table_, 0, sizeof *px_table_);                                         \
        PX_KERNEL_LIST(PX_CUDA_SLOT, p)                                                  \
        px_table_->xent_loss_fwd = k_xent_loss_fwd;                                      \
        px_table_->add_f32 = k_add_f32;                                                  \
    } while (0)

/* The kernel tables the backend hands out, process-wide like G: built once
 * when the backend starts, read-only after (the kernel slots take no
 * context). */
static px_kernels cuda_kernels_f32, cuda_kernels_bf16;

static px_status cu_set_dtype(px_backend *be, px_dtype t, px_error *err)
{
    if (!(be->dtypes & PX_DTYPE_BIT(t)))
        return PX_FAIL(err, PX_ERR_UNSUPPORTED, "dtype %d: the cuda backend runs fp32 and bf16",
                       (int)t);
    be->dtype = t;
    be->k = t == PX_BF16 ? &cuda_kernels_bf16 : &cuda_kernels_f32;
    return PX_OK;
}

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

static void cu_copy_2d(px_backend *be, void *dst, int64_t dpitch, const void *src,
                       int64_t spitch, int64_t width, int64_t rows)
{
    (void)be;
    if (width > 0 && rows > 0)
        note(px_cuda_status(cudaMemcpy2DAsync(dst, (size_t)dpitch, src, (size_t)spitch,
                                              (size_t)width, (size_t)rows,
                                              cudaMemcpyDeviceToDevice, G->compute),
                            "cudaMemcpy2DAsync (device)", __FILE__, __LINE__, &G->kerr));
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

static px_status wait_stream(cudaStream_t s, const char *what, px_error *err);

static void cu_download(px_backend *be, void *host_dst, const void *src, int64_t bytes)
{
    (void)be;
    if (bytes <= 0)
        return;
    note(px_cuda_status(cudaMemcpyAsync(host_dst, src, (size_t)bytes, cudaMemcpyDeviceToHost,
                                        G->compute),
                        "cudaMemcpyAsync (download)", __FILE__, __LINE__, &G->kerr));
    note(wait_stream(G->compute, "cudaStreamSynchronize (download)", &G->kerr));
}

/* Waits for a stream without blocking inside CUDA: polls it and, while it
 * runs, every communicator's asynchronous NCCL error (a peer that died or
 * a network failure), so such an error ends the wait with a message instead
 * of a hang; a peer that merely stops is bounded by the watchdog
 * (px_watchdog.h), whose abort hook aborts the communicators. */
static px_status wait_stream(cudaStream_t s, const char *what, px_error *err)
{
    for (;;) {
        cudaError_t q = cudaStreamQuery(s);
        if (q == cudaSuccess)
            return PX_OK;
        if (q != cudaErrorNotReady)
            return px_cuda_status(q, what, __FILE__, __LINE__, err);
        for (int i = 0; i < G->n_comms; i++) {
            ncclResult_t async = ncclSuccess;
            ncclResult_t r = ncclCommGetAsyncError(G->comms[i], &async);
            if (r != ncclSuccess || async != ncclSuccess)
                return PX_FAIL(err, PX_ERR_CUDA, "%s: NCCL asynchronous error on communicator "
                               "%d: %s (a peer rank failed or the network did)", what, i,
                               ncclGetErrorString(r != ncclSuccess ? r : async));
        }
        sched_yield();
    }
}

static px_status cu_sync(px_backend *be, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    PX_TRY(wait_stream(G->comm, "cudaStreamSynchronize (comm)", err));
    PX_TRY(wait_stream(G->compute, "cudaStreamSynchronize (compute)", err));
    return take_sticky(err);
}

extern "C" void px_backend_cuda_abort(void *arg)
{
    (void)arg;
    if (!G)
        return;
    for (int i = 0; i < G->n_comms; i++)
        (void)ncclCommAbort(G->comms[i]);
    G->n_comms = 0;
}

/* ---- communicators and collectives --------------------------------------------------- */

static px_status cu_comm_init(px_backend *be, px_comm *c, px_error *err)
{
    (void)be;
    ncclComm_t nc = NULL;
    PX_TRY(px_nccl_comm_from_mpi(c->mpi, &nc, err));
    c->native = nc;
    if (nc && G->n_comms < (int)(sizeof G->comms / sizeof G->comms[0]))
        G->comms[G->n_comms++] = nc;
    return PX_OK;
}

static void cu_comm_free(px_backend *be, px_comm *c)
{
    (void)be;
    if (c->native) {
        for (int i = 0; i < G->n_comms; i++)
            if (G->comms[i] == (ncclComm_t)c->native)
                G->comms[i--] = G->comms[--G->n_comms];
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

static ncclDataType_t nccl_type(px_dtype t);

static px_status cu_all_reduce(px_backend *be, void *buf, int64_t n, px_dtype t,
                               px_reduce_op op, px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1 || n == 0)
        return take_sticky(err);
    ncclComm_t nc = (ncclComm_t)c->native;
    PX_TRY(before_comm(err));
    /* bf16: NCCL adds in fp32, rounding each hop's partial sum to bf16. */
    PX_NCCL_TRY(err, nc,
                ncclAllReduce(buf, buf, (size_t)n, nccl_type(t),
                              op == PX_REDUCE_MAX ? ncclMax : ncclSum, nc, G->comm));
    return after_comm(err);
}

static px_status cu_all_gather(px_backend *be, void *out, const void *in, int64_t n,
                               px_dtype t, px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1) {
        cu_copy(be, out, in, n * px_dtype_bytes(t));
        return take_sticky(err);
    }
    ncclComm_t nc = (ncclComm_t)c->native;
    PX_TRY(before_comm(err));
    /* in == out + rank * n is NCCL's in-place form. */
    PX_NCCL_TRY(err, nc, ncclAllGather(in, out, (size_t)n, nccl_type(t), nc, G->comm));
    return after_comm(err);
}

static px_status cu_reduce_scatter(px_backend *be, void *out, const void *in, int64_t n,
                                   px_dtype t, px_comm *c, px_error *err)
{
    (void)be;
    if (c->size <= 1) {
        cu_copy(be, out, in, n * px_dtype_bytes(t));
        return take_sticky(err);
    }
    ncclComm_t nc = (ncclComm_t)c->native;
    PX_TRY(before_comm(err));
    if (in == out) {
        /* The engine's in place puts the result at the start; NCCL's in place
         * puts it at rank * n: reduce there, then move it down (the two
         * ranges do not overlap for rank >= 1). */
        void *mine = px_dtype_at(out, (int64_t)c->rank * n, t);
        PX_NCCL_TRY(err, nc,
                    ncclReduceScatter(in, mine, (size_t)n, nccl_type(t), ncclSum, nc, G->comm));
        if (c->rank != 0)
            PX_CUDA_TRY(err, cudaMemcpyAsync(out, mine, (size_t)(n * px_dtype_bytes(t)),
                                             cudaMemcpyDeviceToDevice, G->comm));
    } else {
        PX_NCCL_TRY(err, nc,
                    ncclReduceScatter(in, out, (size_t)n, nccl_type(t), ncclSum, nc, G->comm));
    }
    return after_comm(err);
}

/* Expert dispatch: grouped ncclSend/ncclRecv to every group rank (a group of
 * one copies its own part). */
static px_status cu_all_to_all_v(px_backend *be, void *out, const int64_t *recv_n,
                                 const void *in, const int64_t *send_n, px_dtype t, px_comm *c,
                                 px_error *err)
{
    (void)be;
    ncclComm_t nc = c->size > 1 ? (ncclComm_t)c->native : NULL;
    if (c->size > 1 && !nc)
        return PX_FAIL(err, PX_ERR_INVALID, "all-to-all on a group without an NCCL communicator");
    PX_TRY(before_comm(err));
    PX_TRY(px_nccl_all_to_all_v(nc, G->comm, out, recv_n, in, send_n, nccl_type(t), err));
    return after_comm(err);
}

/* ---- point-to-point: grouped ncclSend/ncclRecv ---------------------------------------- */

static ncclDataType_t nccl_type(px_dtype t)
{
    return t == PX_BF16 ? ncclBfloat16 : ncclFloat32;
}

/* One NCCL group on the comm stream, ordered after compute's data and before
 * compute's next use (before_comm / after_comm).  The stream-ordered
 * allocator then frees a sent buffer only after the send. */
static px_status cu_p2p_batch(px_backend *be, const px_p2p_op *ops, int n_ops, px_comm *c,
                              px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    if (n_ops == 0)
        return PX_OK;
    for (int i = 0; i < n_ops; i++)
        if (ops[i].n < 0 || ops[i].peer < 0 || ops[i].peer >= c->size)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "p2p message %d: %lld elements to/from rank %d of a group of %d", i,
                           (long long)ops[i].n, ops[i].peer, c->size);
    ncclComm_t nc = (ncclComm_t)c->native;
    if (!nc)
        return PX_FAIL(err, PX_ERR_INVALID, "p2p batch on a group without an NCCL communicator");
    PX_TRY(before_comm(err));
    PX_NCCL_TRY(err, nc, ncclGroupStart());
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < n_ops && r == ncclSuccess; i++) {
        const px_p2p_op *o = &ops[i];
        r = o->send ? ncclSend(o->buf, (size_t)o->n, nccl_type(o->dtype), o->peer, nc, G->comm)
                    : ncclRecv(o->buf, (size_t)o->n, nccl_type(o->dtype), o->peer, nc, G->comm);
    }
    /* The group is always closed, even after a failed call inside it. */
    ncclResult_t r_end = ncclGroupEnd();
    if (r != ncclSuccess)
        return px_nccl_status(r, nc, "ncclSend/ncclRecv (p2p batch)", __FILE__, __LINE__, err);
    if (r_end != ncclSuccess && r_end != ncclInProgress)
        return px_nccl_status(r_end, nc, "ncclGroupEnd (p2p batch)", __FILE__, __LINE__, err);
    return after_comm(err);
}

/* ---- device memory as the pool saw it ---------------------------------------------- */

static int64_t cu_reserved_peak_bytes(px_backend *be)
{
    (void)be;
    return px_cuda_alloc_pool_peak_bytes(G->alloc);
}

static void cu_reset_reserved_peak(px_backend *be)
{
    (void)be;
    px_cuda_alloc_reset_peak(G->alloc);
}

/* ---- device clock ---------------------------------------------------------------------- */

/* Events on the compute stream: the engine joins every collective and message
 * back into it (after_comm), so the two marks bound the whole step. */
static px_status cu_timer_start(px_backend *be, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    PX_CUDA_TRY(err, cudaEventRecord(G->step_begin, G->compute));
    return PX_OK;
}

static px_status cu_timer_stop(px_backend *be, double *elapsed_s, px_error *err)
{
    (void)be;
    PX_TRY(take_sticky(err));
    float ms = 0.0f;
    PX_CUDA_TRY(err, cudaEventRecord(G->step_end, G->compute));
    PX_CUDA_TRY(err, cudaEventSynchronize(G->step_end));
    PX_CUDA_TRY(err, cudaEventElapsedTime(&ms, G->step_begin, G->step_end));
    *elapsed_s = 1e-3 * (double)ms;
    return PX_OK;
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
    if (G->step_begin)
        (void)cudaEventDestroy(G->step_begin);
    if (G->step_end)
        (void)cudaEventDestroy(G->step_end);
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
        st = px_cuda_status(cudaEventCreate(&G->step_begin), "cudaEventCreate", __FILE__,
                            __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaEventCreate(&G->step_end), "cudaEventCreate", __FILE__,
                            __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_blas_new(G->compute, &G->blas, err);
    if (st == PX_OK)
        st = px_cuda_alloc_new(G->compute, &G->alloc, err);
    if (st != PX_OK) {
        cu_destroy(NULL);
        return st;
    }
    PX_CUDA_TABLE(cuda_kernels_f32, f_);
    PX_CUDA_TABLE(cuda_kernels_bf16, b_);
    out->name = "cuda";
    out->ctx = G;
    /* fp32 until the engine asks (set_dtype): callers of the bare table keep
     * the fp32 signatures; CUDA plans (dtype_bytes 2) run bf16. */
    out->k = &cuda_kernels_f32;
    out->dtypes = PX_DTYPE_BIT(PX_F32) | PX_DTYPE_BIT(PX_BF16);
    out->dtype = PX_F32;
    out->set_dtype = cu_set_dtype;
    out->flash_only = true;
    out->no_router_groups = true;
    out->timer_start = cu_timer_start;
    out->timer_stop = cu_timer_stop;
    out->reserved_peak_bytes = cu_reserved_peak_bytes;
    out->reset_reserved_peak = cu_reset_reserved_peak;
    out->alloc = cu_alloc;
    out->free = cu_free;
    out->zero = cu_zero;
    out->copy = cu_copy;
    out->copy_2d = cu_copy_2d;
    out->upload = cu_upload;
    out->download = cu_download;
    out->sync = cu_sync;
    out->comm_init = cu_comm_init;
    out->comm_free = cu_comm_free;
    out->all_reduce = cu_all_reduce;
    out->all_gather = cu_all_gather;
    out->reduce_scatter = cu_reduce_scatter;
    out->p2p_batch = cu_p2p_batch;
    out->all_to_all_v = cu_all_to_all_v;
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
