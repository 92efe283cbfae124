/* px_efficiency.h — how fast the hardware runs one kernel or one collective:
 * GEMM time by shape, memory-bound time, attention-core time and collective
 * time over a group that may or may not leave a node.  The cost model
 * (px_cost_5_layer.c) turns every operator of a layer into calls of these; the
 * formulas and their defaults are in docs/cost-model.md, section "Efficiency".
 *
 * Every function is closed-form and allocation-free: the search calls them
 * millions of times a second. */
#ifndef PX_EFFICIENCY_H
#define PX_EFFICIENCY_H

#include <stdbool.h>
#include <stdint.h>

#include "px_hw.h"

/* Defaults used when a profile leaves the shape-model parameters at 0. */
#define PX_EFF_GEMM_MAX_DEFAULT 0.80      /* large bf16 GEMMs on H100-class parts */
#define PX_EFF_GEMM_HALF_DIM_DEFAULT 64.0 /* elements; efficiency factor 1/2 at this size */
#define PX_EFF_MEM_BOUND_DEFAULT 0.70     /* fraction of HBM bandwidth for element-wise ops */
/* FlashAttention-2/3 on H100 reach about 60–70 % of the GEMM rate of the same
 * FLOPs (Dao 2023; Shah et al. 2024); we charge the attention core at this
 * fraction of the profile's large-GEMM efficiency. */
#define PX_EFF_FLASH_REL 0.70

/* Fraction of peak_flops achieved by C[m,n] = A[m,k] B[k,n].  With
 * hw->gemm_points: interpolation in log(m), log(n), log(k) space over the
 * nearest measured shapes; else eff_max · Π_x x/(x + half_dim). */
double px_eff_gemm(const px_hw *hw, double m, double n, double k);

/* Seconds for that GEMM (2·m·n·k FLOPs).  0 when any dimension is 0. */
double px_time_gemm_s(const px_hw *hw, double m, double n, double k);

/* The profile's sustained_frac, 1 when it is 0 (not measured): every compute
 * time (GEMM, attention, element-wise, optimizer) is divided by it. */
double px_eff_sustained(const px_hw *hw);

/* Seconds to stream `bytes` through HBM at hw->mem_bound_eff of hbm_bw. */
double px_time_mem_s(const px_hw *hw, double bytes);

/* Seconds to stream `bytes` (reads + writes, STREAM's count) through
 * buffers larger than the caches at the triad's rate, hbm_bw: the executor's
 * copies, zeroed allocations and adds of whole layers or gathered sequences,
 * which the element-wise classes (measured on cache-sized tensors) would
 * price several times too fast.  0 without hbm_bw. */
double px_time_stream_s(const px_hw *hw, double bytes);

/* Element-wise operator classes.  A profile written by `calibrate` may carry a
 * measured bandwidth per class (hw->norm_bw ...: bytes/s in the cost model's
 * byte accounting); otherwise every class streams at hbm_bw × mem_bound_eff. */
typedef enum {
    PX_MEM_GENERIC = 0, /* dropout, MoE token permutation, anything else */
    PX_MEM_NORM,        /* RMSNorm / LayerNorm: read + write the tokens */
    PX_MEM_RESIDUAL,    /* residual adds: 2 reads + 1 write */
    PX_MEM_GELU,        /* GeLU: read + write */
    PX_MEM_SWIGLU,      /* SwiGLU: 2 reads + 1 write */
    PX_MEM_ROPE,        /* rotary embedding of q and k: read + write */
    PX_MEM_XENT,        /* vocabulary-parallel cross-entropy: 4 fp32 passes */
    PX_MEM_ADAMW,       /* the optimizer step */
    PX_MEM_EMBED,       /* embedding gather + scatter-add */
    PX_MEM_COUNT
} px_mem_class;

/* The profile's measured bandwidth field of class c (&hw->norm_bw ...), NULL
 * for PX_MEM_GENERIC and out-of-range values: the one class -> field map. */
double *px_hw_class_bw(px_hw *hw, px_mem_class c);
double px_hw_class_bw_of(const px_hw *hw, px_mem_class c); /* 0 where none */

/* Seconds to move `bytes` through an operator of class c. */
double px_time_mem_class_s(const px_hw *hw, px_mem_class c, double bytes);

/* Seconds for `flops` of the (flash) attention core: at hw->attn_eff of
 * peak when the profile has it, else PX_EFF_FLASH_REL of the large-GEMM
 * efficiency. */
double px_time_attn_s(const px_hw *hw, double flops);

typedef enum {
    PX_COLL_ALLREDUCE = 0,
    PX_COLL_ALLGATHER,      /* msg = the gathered (full) size */
    PX_COLL_REDUCE_SCATTER, /* msg = the full (input) size */
    PX_COLL_ALLTOALL,       /* msg = what one rank holds before the exchange */
    PX_COLL_P2P,            /* one send of msg bytes */
    PX_COLL_COUNT
} px_coll;

const char *px_coll_name(px_coll c);

/* Bytes one rank puts on its link for a ring collective of a message of
 * msg_bytes over n ranks (nccl-tests' bus-bandwidth factors): all-reduce
 * 2(n−1)/n·M, all-gather / reduce-scatter / all-to-all (n−1)/n·M, p2p M. */
double px_coll_wire_bytes(px_coll c, int n, double msg_bytes);

/* Latency steps of the ring algorithm: 2(n−1), n−1, n−1, n−1, 1. */
int px_coll_steps(px_coll c, int n);

/* A datasheet link's bus bandwidth, bytes/s: intra_bw (or inter_bw) times
 * the share NCCL carries (intra_bw_eff, inter_bw_eff; docs/cost-model.md,
 * "Collectives"). */
double px_link_bus_bw(const px_hw *hw, bool inter);

/* True when the profile has measured all-reduce points (`calibrate --mpi`),
 * which then price every collective in place of the links' rates. */
bool px_coll_measured(const px_hw *hw);

/* Seconds for the collective: α·steps + wire bytes / bw, with α and bw (the
 * bus bandwidth above) of the intra-node link when the group stays in a
 * node (or the profile is a torus) and of the inter-node link otherwise.
 * When the profile has measured all-reduce points they replace α and bw
 * (see docs/cost-model.md); a
 * collective calibrated on its own (allgather_points, reduce_scatter_points,
 * alltoall_points: `calibrate --mpi`) uses its own points, and a calibrated
 * profile's p2p is its measured ping-pong, lat + bytes / bw of intra_* or
 * inter_* (docs/calibration.md).  0 for n <= 1 (except p2p). */
double px_time_coll_s(const px_hw *hw, px_coll c, int n, double msg_bytes, bool crosses_node);

#endif
