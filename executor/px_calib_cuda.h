/* px_calib_cuda.h — measures a GPU for the cost model (issue #6's
 * "calibrate on a GPU"): cuBLAS GEMM throughput by shape (the executor's
 * path: fp32 storage, bf16 tensor cores, fp32 accumulation), HBM bandwidth,
 * and — with more than one rank — NCCL all-reduce latency and bandwidth.
 * Fills a px_hw that started from a datasheet profile (peak_flops stays the
 * datasheet dense bf16 peak, so MFU is against it; the measured shapes carry
 * the achieved efficiency). */
#ifndef PX_CALIB_CUDA_H
#define PX_CALIB_CUDA_H

#include <stdbool.h>
#include <stdio.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_error.h"
#include "px_hw.h"

typedef struct {
    bool quick;     /* fewer shapes and repetitions (seconds) */
    FILE *progress; /* progress lines (stderr by default), NULL for none */
} px_calib_cuda_opts;

/* Collective over world (MPI_COMM_WORLD or a communicator of the ranks to
 * measure together; one rank per GPU, device chosen by node-local rank).
 * Overwrites: gemm_points, gemm_eff_max, hbm_bw, hbm_bytes, mem_bound_eff,
 * dtype_bytes (4: the executor's fp32 buffers), and with > 1 rank
 * allreduce_points, gpus_per_node and intra_bw / intra_lat_s. */
px_status px_calib_cuda(px_hw *hw, const px_calib_cuda_opts *opts, MPI_Comm world,
                        px_error *err);

#ifdef __cplusplus
}
#endif

#endif
