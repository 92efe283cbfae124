/* px_backend.h — what the executor's engine needs from a device: memory, the
 * kernels of px_kernels_cpu.h, and collectives / point-to-point messages.
 *
 * The engine (schedules, TP/PP/DP logic, px_exec.c and px_layer.c) calls only
 * this table, so a backend is one file: backend_cpu.c (host memory, BLAS, MPI)
 * today, backend_cuda.cu (device memory, cuBLAS + the px_cuda_* kernels, NCCL)
 * later.  Every pointer the engine hands to a kernel or a collective came
 * from `alloc` of the same backend.
 *
 * Communicators are created by the engine with MPI_Comm_split (the colours of
 * px_layout.h); the backend may attach its own handle (an NCCL communicator)
 * in comm_init.  Collectives and messages are fp32, counted in elements. */
#ifndef PX_BACKEND_H
#define PX_BACKEND_H

#include <stdint.h>

#include <mpi.h>

#include "px_error.h"

/* One communication group (TP, PP, DP, ...). */
typedef struct {
    MPI_Comm mpi;  /* MPI_COMM_NULL when this rank is not in any group */
    int size;
    int rank;      /* rank inside the group */
    void *native;  /* backend handle (ncclComm_t), NULL on the CPU */
} px_comm;

/* An outstanding non-blocking message. */
typedef struct {
    MPI_Request mpi;
    void *native;
} px_request;

typedef enum { PX_REDUCE_SUM = 0, PX_REDUCE_MAX } px_reduce_op;

/* Storage type of a buffer: fp32, or bf16 (the cost model's mixed precision:
 * activations and weights in bf16, master weights, gradients and optimizer
 * state in fp32). */
typedef enum { PX_F32 = 0, PX_BF16 } px_dtype;

static inline int64_t px_dtype_bytes(px_dtype t)
{
    return t == PX_BF16 ? 2 : 4;
}

/* The kernels, with exactly the signatures of px_cpu_* (px_kernels_cpu.h). */
typedef struct {
    void (*embedding_fwd)(float *, const int32_t *, const float *, int64_t, int64_t, int64_t,
                          int64_t);
    void (*embedding_bwd)(float *, const float *, const int32_t *, int64_t, int64_t, int64_t,
                          int64_t);
    void (*positions_fwd)(float *, const float *, int64_t, int64_t, int64_t, int64_t);
    void (*positions_bwd)(float *, const float *, int64_t, int64_t, int64_t, int64_t);
    void (*rmsnorm_fwd)(float *, float *, const float *, const float *, int64_t, int64_t, float);
    void (*rmsnorm_bwd)(float *, float *, const float *, const float *, const float *,
                        const float *, int64_t, int64_t);
    void (*layernorm_fwd)(float *, float *, float *, const float *, const float *,
                          const float *, int64_t, int64_t, float);
    void (*layernorm_bwd)(float *, float *, float *, const float *, const float *,
                          const float *, const float *, const float *, int64_t, int64_t);
    void (*matmul_fwd)(float *, const float *, const float *, const float *, int64_t, int64_t,
                       int64_t);
    void (*matmul_bwd)(float *, float *, float *, const float *, const float *, const float *,
                       int64_t, int64_t, int64_t);
    void (*bias_add_fwd)(float *, const float *, int64_t, int64_t);
    void (*bias_add_bwd)(float *, const float *, int64_t, int64_t);
    void (*residual_fwd)(float *, const float *, const float *, int64_t);
    void (*residual_bwd)(float *, float *, const float *, int64_t);
    void (*rope_fwd)(float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float);
    void (*rope_bwd)(float *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, float);
    void (*attention_fwd)(float *, float *, float *, const float *, int64_t, int64_t, int64_t,
                          int64_t, int64_t);
    void (*attention_bwd)(float *, const float *, const float *, const float *, const float *,
                          const float *, int64_t, int64_t, int64_t, int64_t, int64_t);
    /* Context parallelism; NULL when the backend has none (cp > 1 then
     * fails with PX_ERR_UNSUPPORTED). */
    void (*attention_kv_fwd)(float *, float *, const float *, const int32_t *, const float *,
                             int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
    void (*attention_kv_bwd)(float *, float *, const float *, const float *, const float *,
                             const float *, const int32_t *, const float *, int64_t, int64_t,
                             int64_t, int64_t, int64_t, int64_t);
    void (*swiglu_fwd)(float *, const float *, int64_t, int64_t);
    void (*swiglu_bwd)(float *, const float *, const float *, int64_t, int64_t);
    void (*gelu_fwd)(float *, const float *, int64_t);
    void (*gelu_bwd)(float *, const float *, const float *, int64_t);
    void (*xent_max_fwd)(float *, const float *, int64_t, int64_t);
    void (*xent_sumexp_fwd)(float *, float *, const float *, const float *, const int32_t *,
                            int64_t, int64_t, int64_t);
    void (*xent_loss_fwd)(float *, const float *, const float *, const float *, int64_t);
    void (*xent_bwd)(float *, const float *, const float *, const float *, const int32_t *,
                     float, int64_t, int64_t, int64_t);
    void (*adamw_step)(float *, const float *, float *, float *, int64_t, float, float, float,
                       float, float, int64_t);
    /* Mixture of experts; NULL when the backend has none (MoE models then
     * fail with PX_ERR_UNSUPPORTED). */
    void (*moe_router_fwd)(float *, int32_t *, float *, const float *, int64_t, int64_t,
                           int64_t);
    void (*moe_router_bwd)(float *, const float *, const int32_t *, const float *, int64_t,
                           int64_t, int64_t);
    void (*moe_permute)(float *, const float *, const int32_t *, const float *,
                        const int32_t *, int64_t, int64_t);
    void (*moe_unpermute)(float *, const float *, const int32_t *, const float *,
                          const int32_t *, int64_t, int64_t);
    void (*moe_gate_bwd)(float *, const float *, const float *, const int32_t *,
                         const int32_t *, int64_t, int64_t);
} px_kernels;

typedef struct px_backend px_backend;
struct px_backend {
    const char *name; /* "cpu", "cuda" */
    void *ctx;        /* backend state */
    const px_kernels *k;

    /* Memory.  alloc returns zeroed memory of `bytes` (device memory). */
    px_status (*alloc)(px_backend *be, int64_t bytes, void **out, px_error *err);
    void (*free)(px_backend *be, void *p);
    void (*zero)(px_backend *be, void *p, int64_t bytes);
    /* Copies: device<->device, host->device, device->host. */
    void (*copy)(px_backend *be, void *dst, const void *src, int64_t bytes);
    void (*upload)(px_backend *be, void *dst, const void *host_src, int64_t bytes);
    void (*download)(px_backend *be, void *host_dst, const void *src, int64_t bytes);
    /* Waits for queued device work (timing). */
    px_status (*sync)(px_backend *be, px_error *err);

    /* Communicators: attach/release the backend's handle to an MPI group. */
    px_status (*comm_init)(px_backend *be, px_comm *c, px_error *err);
    void (*comm_free)(px_backend *be, px_comm *c);

    /* Collectives (blocking for the engine: the result is usable on return,
     * in device order for an asynchronous backend).
     * all_gather: out[size][n] from every rank's in[n] (in may be out + rank*n).
     * reduce_scatter: out[n] = sum over ranks of in[rank * n .. +n], in[size][n]. */
    px_status (*all_reduce)(px_backend *be, float *buf, int64_t n, px_reduce_op op,
                            px_comm *c, px_error *err);
    px_status (*all_gather)(px_backend *be, float *out, const float *in, int64_t n,
                            px_comm *c, px_error *err);
    px_status (*reduce_scatter)(px_backend *be, float *out, const float *in, int64_t n,
                                px_comm *c, px_error *err);
    /* Point-to-point (peer = rank in c); complete with wait.  test sets *done. */
    px_status (*isend)(px_backend *be, const float *buf, int64_t n, int peer, int tag,
                       px_comm *c, px_request *req, px_error *err);
    px_status (*irecv)(px_backend *be, float *buf, int64_t n, int peer, int tag, px_comm *c,
                       px_request *req, px_error *err);
    px_status (*wait)(px_backend *be, px_request *req, px_error *err);
    px_status (*test)(px_backend *be, px_request *req, int *done, px_error *err);

    void (*destroy)(px_backend *be);

    /* Optional (NULL: MoE with ep > 1 is unsupported on this backend).
     * all_to_all_v: to every group rank j sends send_n[j] elements, taken
     * back to back from in, and receives recv_n[j] elements from it into out,
     * back to back in rank order. */
    px_status (*all_to_all_v)(px_backend *be, float *out, const int64_t *recv_n,
                              const float *in, const int64_t *send_n, px_comm *c,
                              px_error *err);
};

/* The CPU backend (host memory, OpenBLAS, MPI). */
px_status px_backend_cpu_create(px_backend *out, px_error *err);

/* Wraps an MPI return code: PX_OK, or PX_ERR_MPI with the MPI error string
 * and `what` (the call) in err. */
px_status px_mpi_check(int rc, const char *what, px_error *err);

#endif
