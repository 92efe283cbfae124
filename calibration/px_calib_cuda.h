/* px_calib_cuda.h — measures a GPU for the cost model ("calibrate on a
 * GPU"):
 *   - cuBLAS GEMM throughput by shape in two storage forms: bf16 in / bf16
 *     out with fp32 accumulation (what the cost model assumes and the
 *     engine's bf16 storage runs: kept in gemm_points) and fp32 storage on
 *     bf16 tensor cores (`execute --dtype fp32`: printed beside it);
 *   - HBM bandwidth, as a cudaMemcpyAsync device copy and as the engine's
 *     own element-wise kernel (a residual add), the larger kept as hbm_bw;
 *   - the engine's attention kernel (attn_eff) and its bf16 element-wise
 *     kernels class by class (norm_bw ... embed_bw: the bytes the cost model
 *     charges for bf16 storage, px_calib_kernels.h
 *     px_calib_class_bytes, over the measured time);
 *   - with more than one rank, NCCL point-to-point (ping-pong of ncclSend /
 *     ncclRecv), all-reduce, all-gather, reduce-scatter and all-to-all
 *     (grouped ncclSend/ncclRecv to every peer) at the message sizes of the
 *     CPU/MPI calibration (px_calib_coll.h), fitted to
 *     time = lat_s + bytes / bw with px_calib_fit.h.
 * Fills a px_hw that started from a datasheet profile: peak_flops stays the
 * datasheet dense bf16 peak, so MFU is against it and the measured shapes
 * carry the achieved efficiency.
 *
 * It is built into px_calib_cuda (calibration/meson.build) over px_calib,
 * whose sweep sizes, fit and class bytes it shares with the CPU calibration. */
#ifndef PX_CALIB_CUDA_H
#define PX_CALIB_CUDA_H

#include <stdbool.h>
#include <stdio.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_efficiency.h"
#include "px_error.h"
#include "px_hw.h"

/* What was measured, for the caller's description and summary lines. */
typedef struct {
    int n_ranks;
    bool comm_measured;          /* false with one rank: the datasheet's links and
                                  * collective costs are kept */
    bool inter_measured;         /* p2p to a rank on another node (else inter_* kept) */
    double gemm_bf16_best_flops; /* best shape, bf16 storage (the gemm_points) */
    double gemm_f32_best_flops;  /* best shape, fp32 storage on bf16 tensor cores */
    double copy_bw;              /* cudaMemcpyAsync device to device, reads + writes */
    double kernel_bw;            /* the residual-add kernel, reads + writes */
    const char *hbm_source;      /* which of the two hbm_bw holds */
    double attn_flops;           /* the attention core, fwd + bwd, cost-model FLOP/s */
    int n_classes;               /* element-wise classes measured (8 on success) */
    double class_bw[PX_MEM_COUNT]; /* by px_mem_class: hw's norm_bw ... embed_bw, bytes/s of
                                    * the cost model's bf16 byte count (0: generic) */
    char note[160];              /* one line for the profile's description */
} px_calib_cuda_result;

typedef struct {
    bool quick;     /* fewer shapes, sizes and repetitions (seconds) */
    FILE *progress; /* progress lines and the GEMM table (stderr by default), NULL for none */
    px_calib_cuda_result *result; /* optional: filled on success */
} px_calib_cuda_opts;

/* Collective over world (MPI_COMM_WORLD or a communicator of the ranks to
 * measure together; one rank per GPU, device chosen by node-local rank; its
 * error handler should be MPI_ERRORS_RETURN).  Overwrites: gemm_points
 * (bf16 storage), gemm_eff_max, hbm_bw, hbm_bytes, mem_bound_eff, attn_eff (the
 * executor's attention kernel), norm_bw, residual_bw, gelu_bw, swiglu_bw,
 * rope_bw, xent_bw, adamw_bw and embed_bw (its element-wise kernels),
 * dtype_bytes (2), gpus_per_node (at least the ranks on a node), and with
 * > 1 rank intra_lat_s / intra_bw (p2p on one node), inter_* (p2p across
 * nodes, when a rank is on another node) and the allreduce, allgather,
 * reduce_scatter and alltoall points for group sizes 2..ranks.  With one
 * rank the communication fields are left as the datasheet had them. */
px_status px_calib_cuda(px_hw *hw, const px_calib_cuda_opts *opts, MPI_Comm world,
                        px_error *err);

#ifdef __cplusplus
}
#endif

#endif
