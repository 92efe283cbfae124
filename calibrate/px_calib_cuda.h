/* px_calib_cuda.h — calibration of a GPU (built only with the CUDA backend):
 * cuBLAS GEMM throughput by shape in bf16 (the CUDA backend's dtype: bf16
 * inputs, fp32 accumulation), HBM bandwidth (device-to-device copy) and,
 * under MPI with several GPUs, NCCL point-to-point and collectives per
 * group size.  The same lattice, forms and fits as the CPU path
 * (px_calib_gemm.h, px_calib_fit.h); what a single GPU cannot measure
 * (links between GPUs, reliability) comes from the datasheet profile the
 * caller starts from. */
#ifndef PX_CALIB_CUDA_H
#define PX_CALIB_CUDA_H

#include <stdbool.h>

#include <mpi.h>

#include "px_calib.h"
#include "px_error.h"
#include "px_hw.h"

/* Usable GPUs; 0 means calibrate measures the CPU. */
int px_calib_cuda_devices(void);

/* The datasheet profile matching this process's GPU ("h200" for an H200,
 * ...), or PX_HW_DEFAULT when the name is not recognised; *device_name gets
 * the device's name. */
const char *px_calib_cuda_base_profile(char *device_name, int len);

/* Every rank calls it (world is used only when use_mpi): picks this rank's
 * GPU, measures, and overwrites hw's compute fields (peak_flops,
 * gemm_points, gemm_eff_*, hbm_bytes, hbm_bw, mem_bound_eff, dtype_bytes 2)
 * and, with >= 2 ranks, the communication fields. */
px_status px_calib_cuda_run(const px_calib_opts *o, MPI_Comm world, bool use_mpi, px_hw *hw,
                            px_error *err);

#endif
