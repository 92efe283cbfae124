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
 * in comm_init.  Collectives and messages are counted in elements of their
 * px_dtype: tensor-, context- and expert-parallel traffic, pipeline messages
 * and the ZeRO weight all-gathers move the activation dtype (the bf16 compute
 * copy of the weights), gradient reductions and the loss statistics stay
 * fp32.  Reductions of bf16: the CPU backend widens, reduces with MPI in
 * fp32 and rounds once; NCCL's ring and tree add in fp32 but round each
 * partial sum to bf16 between hops (p - 1 roundings over p ranks; the same
 * result at p = 2). */
#ifndef PX_BACKEND_H
#define PX_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "px_error.h"
#include "px_error_mpi.h"
#include "px_rope.h"
#include "px_router.h"

/* One communication group (TP, PP, DP, ...). */
typedef struct {
    MPI_Comm mpi;  /* MPI_COMM_NULL when this rank is not in any group */
    int size;
    int rank;      /* rank inside the group */
    void *native;  /* backend handle (ncclComm_t), NULL on the CPU */
} px_comm;

typedef enum { PX_REDUCE_SUM = 0, PX_REDUCE_MAX } px_reduce_op;

/* Storage type of a buffer: fp32, or bf16 (the cost model's mixed precision:
 * activations and weights in bf16, master weights, gradients and optimizer
 * state in fp32). */
typedef enum { PX_F32 = 0, PX_BF16 } px_dtype;

static inline int64_t px_dtype_bytes(px_dtype t)
{
    return t == PX_BF16 ? 2 : 4;
}

static inline const char *px_dtype_name(px_dtype t)
{
    return t == PX_BF16 ? "bf16" : "fp32";
}

/* Address of element i of a buffer of dtype t (byte arithmetic: `float *`
 * arithmetic is wrong for bf16). */
static inline void *px_dtype_at(const void *base, int64_t i, px_dtype t)
{
    return (void *)((const char *)base + i * px_dtype_bytes(t));
}

/* Bit of t in px_backend.dtypes. */
#define PX_DTYPE_BIT(t) (1u << (unsigned)(t))

/* One message of a point-to-point batch: buf[0, n) of dtype sent to, or
 * received from, peer (a rank of the batch's group). */
typedef struct {
    void *buf;
    int64_t n; /* elements */
    px_dtype dtype;
    int peer;
    bool send;
} px_p2p_op;

/* The kernels: the px_cpu_* of px_kernels_cpu.h, argument for argument, with
 * the tensors split by storage type.
 *   void *  : the activation dtype the backend is set to (set_dtype): the
 *             activations, their gradients and the compute copy of the
 *             weights (matmul weights, norm weights, biases, the embedding
 *             and position tables).
 *   float * : always fp32: parameter gradients (+=), norm statistics (mean,
 *             rstd), the attention lse and stored probabilities, the
 *             cross-entropy row statistics and losses, the MoE router
 *             probabilities and gates, and the AdamW master weights and
 *             moments.
 * Every reduction and GEMM accumulates in fp32 whatever the storage. */
typedef struct {
    void (*embedding_fwd)(void *, const int32_t *, const void *, int64_t, int64_t, int64_t,
                          int64_t);
    void (*embedding_bwd)(float *, const void *, const int32_t *, int64_t, int64_t, int64_t,
                          int64_t);
    void (*positions_fwd)(void *, const void *, int64_t, int64_t, int64_t, int64_t);
    void (*positions_bwd)(float *, const void *, int64_t, int64_t, int64_t, int64_t);
    void (*rmsnorm_fwd)(void *, float *, const void *, const void *, int64_t, int64_t, float);
    void (*rmsnorm_bwd)(void *, float *, const void *, const void *, const void *,
                        const float *, int64_t, int64_t);
    void (*layernorm_fwd)(void *, float *, float *, const void *, const void *, const void *,
                          int64_t, int64_t, float);
    void (*layernorm_bwd)(void *, float *, float *, const void *, const void *, const void *,
                          const float *, const float *, int64_t, int64_t);
    void (*matmul_fwd)(void *, const void *, const void *, const void *, int64_t, int64_t,
                       int64_t);
    void (*matmul_bwd)(void *, float *, float *, const void *, const void *, const void *,
                       int64_t, int64_t, int64_t);
    void (*bias_add_fwd)(void *, const void *, int64_t, int64_t);
    void (*bias_add_bwd)(float *, const void *, int64_t, int64_t);
    void (*residual_fwd)(void *, const void *, const void *, int64_t);
    void (*residual_bwd)(void *, void *, const void *, int64_t);
    void (*rope_fwd)(void *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                     const px_rope *);
    void (*rope_bwd)(void *, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                     const px_rope *);
    void (*attention_fwd)(void *, float *, float *, const void *, int64_t, int64_t, int64_t,
                          int64_t, int64_t);
    void (*attention_bwd)(void *, const void *, const void *, const float *, const float *,
                          const void *, int64_t, int64_t, int64_t, int64_t, int64_t);
    /* Context parallelism; NULL when the backend has none (cp > 1 then
     * fails with PX_ERR_UNSUPPORTED). */
    void (*attention_kv_fwd)(void *, float *, const void *, const int32_t *, const void *,
                             int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);
    void (*attention_kv_bwd)(void *, void *, const void *, const void *, const float *,
                             const void *, const int32_t *, const void *, int64_t, int64_t,
                             int64_t, int64_t, int64_t, int64_t);
    void (*swiglu_fwd)(void *, const void *, int64_t, int64_t);
    void (*swiglu_bwd)(void *, const void *, const void *, int64_t, int64_t);
    void (*gelu_fwd)(void *, const void *, int64_t);
    void (*gelu_bwd)(void *, const void *, const void *, int64_t);
    void (*xent_max_fwd)(float *, const void *, int64_t, int64_t);
    void (*xent_sumexp_fwd)(float *, float *, const void *, const float *, const int32_t *,
                            int64_t, int64_t, int64_t);
    void (*xent_loss_fwd)(float *, const float *, const float *, const float *, int64_t);
    void (*xent_bwd)(void *, const void *, const float *, const float *, const int32_t *,
                     float, int64_t, int64_t, int64_t);
    /* AdamW on the fp32 master weights (px_cpu_adamw_step's arguments), then
     * the updated weights rounded into `copy` (activation dtype: the compute
     * copy) unless it is NULL.  In fp32 storage the master IS the weights and
     * the engine passes NULL. */
    void (*adamw_step)(float *master, const float *grad, float *m, float *v, int64_t n,
                       float lr, float beta1, float beta2, float eps, float weight_decay,
                       int64_t step, void *copy);
    /* out = a + b on fp32 buffers (gradient pieces), whatever the dtype. */
    void (*add_f32)(float *out, const float *a, const float *b, int64_t n);
    /* Mixture of experts; NULL when the backend has none (MoE models then
     * fail with PX_ERR_UNSUPPORTED).  Router logits and token rows in the
     * activation dtype; probabilities and gates fp32. */
    void (*moe_router_fwd)(float *, int32_t *, float *, const void *, int64_t, int64_t,
                           int64_t, const px_router *);
    void (*moe_router_bwd)(void *, const float *, const int32_t *, const float *, int64_t,
                           int64_t, int64_t, const px_router *);
    void (*moe_permute)(void *, const void *, const int32_t *, const float *,
                        const int32_t *, int64_t, int64_t);
    void (*moe_unpermute)(void *, const void *, const int32_t *, const float *,
                          const int32_t *, int64_t, int64_t);
    void (*moe_gate_bwd)(float *, const void *, const void *, const int32_t *,
                         const int32_t *, int64_t, int64_t);
} px_kernels;

/* Every slot of px_kernels that has an fp32 and a bf16 form, in one list:
 * a backend names its wrappers PREFIX<slot> (f_ fp32, b_ bf16) and builds
 * both tables from this list (X-macro: X(prefix, slot) for each), so adding
 * a kernel is its slot above, its name here and its wrappers in each
 * backend.  xent_loss_fwd and add_f32 are fp32 whatever the storage: each
 * backend sets them once. */
#define PX_KERNEL_LIST(X, p)                                                             \
    X(p, embedding_fwd) X(p, embedding_bwd) X(p, positions_fwd) X(p, positions_bwd)      \
    X(p, rmsnorm_fwd) X(p, rmsnorm_bwd) X(p, layernorm_fwd) X(p, layernorm_bwd)          \
    X(p, matmul_fwd) X(p, matmul_bwd) X(p, bias_add_fwd) X(p, bias_add_bwd)              \
    X(p, residual_fwd) X(p, residual_bwd) X(p, rope_fwd) X(p, rope_bwd)                  \
    X(p, attention_fwd) X(p, attention_bwd) X(p, attention_kv_fwd) X(p, attention_kv_bwd) \
    X(p, swiglu_fwd) X(p, swiglu_bwd) X(p, gelu_fwd) X(p, gelu_bwd)                      \
    X(p, xent_max_fwd) X(p, xent_sumexp_fwd) X(p, xent_bwd) X(p, adamw_step)             \
    X(p, moe_router_fwd) X(p, moe_router_bwd) X(p, moe_permute) X(p, moe_unpermute)      \
    X(p, moe_gate_bwd)

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
    px_status (*all_reduce)(px_backend *be, void *buf, int64_t n, px_dtype t, px_reduce_op op,
                            px_comm *c, px_error *err);
    px_status (*all_gather)(px_backend *be, void *out, const void *in, int64_t n, px_dtype t,
                            px_comm *c, px_error *err);
    px_status (*reduce_scatter)(px_backend *be, void *out, const void *in, int64_t n,
                                px_dtype t, px_comm *c, px_error *err);
    /* Point-to-point: posts every message of ops together and returns when
     * all are complete (in device order on an asynchronous backend): NCCL's
     * grouped ncclSend/ncclRecv, Megatron's batch_isend_irecv.  The rules are
     * NCCL's, and the CPU backend enforces them too so that a schedule that
     * runs here cannot deadlock or mismatch on GPUs: messages carry no tag
     * (those between one pair of ranks in one direction match in posting
     * order), and a send completes only once the peer has posted the receive.
     * A send buffer may be reused or freed when the call returns. */
    px_status (*p2p_batch)(px_backend *be, const px_p2p_op *ops, int n_ops, px_comm *c,
                           px_error *err);

    void (*destroy)(px_backend *be);

    /* Optional (NULL: MoE with ep > 1 is unsupported on this backend).
     * all_to_all_v: to every group rank j sends send_n[j] elements, taken
     * back to back from in, and receives recv_n[j] elements from it into out,
     * back to back in rank order. */
    px_status (*all_to_all_v)(px_backend *be, void *out, const int64_t *recv_n,
                              const void *in, const int64_t *send_n, px_dtype t, px_comm *c,
                              px_error *err);

    /* Storage dtypes of activations this backend runs (PX_DTYPE_BIT of each)
     * and the one its kernel table `k` follows now (PX_F32 after create).
     * set_dtype installs the table of another dtype (PX_ERR_UNSUPPORTED when
     * it is not in dtypes); the engine calls it once, before any kernel. */
    /* Attention never keeps the s x s probabilities (a FlashAttention-style
     * core only): plans with flash_attention false are refused up front. */
    bool flash_only;
    /* Its MoE router has no group-limited selection (px_router.n_group > 1):
     * the engine refuses such a model by name. */
    bool no_router_groups;

    unsigned dtypes;
    px_dtype dtype;
    px_status (*set_dtype)(px_backend *be, px_dtype t, px_error *err);

    /* Optional (NULL on the CPU): the device's own clock around a step.
     * start marks the compute queue; stop marks it again, waits for the mark
     * and gives the device time between the two (CUDA events). */
    px_status (*timer_start)(px_backend *be, px_error *err);
    px_status (*timer_stop)(px_backend *be, double *elapsed_s, px_error *err);

    /* Optional (NULL on the CPU): the bytes the device allocator really
     * reserved at its peak since the last reset, at least the tracked peak
     * (pool granularity, fragmentation): what the device had to hold. */
    int64_t (*reserved_peak_bytes)(px_backend *be);
    void (*reset_reserved_peak)(px_backend *be);

    /* Optional (NULL: the engine copies row by row with `copy`): a strided
     * device copy of `rows` rows of `width` bytes, rows `spitch` bytes apart
     * in src and `dpitch` bytes apart in dst (cudaMemcpy2D's arguments). */
    void (*copy_2d)(px_backend *be, void *dst, int64_t dpitch, const void *src, int64_t spitch,
                    int64_t width, int64_t rows);
};

/* The CPU backend (host memory, OpenBLAS, MPI). */
px_status px_backend_cpu_create(px_backend *out, px_error *err);

/* MPI return codes: px_mpi_check (px_error_mpi.h). */

#endif
