/* px_calib_gpu.c — the GPU calibration of a `calibrate` run (px_calib_gpu.h). */
#include "px_calib_gpu.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "px_calib_cuda.h"
#include "px_cuda_status.h"

/* A GPU: the CUDA backend's calibrator (px_calib_cuda.h: cuBLAS
 * GEMMs by shape in bf16 and fp32 storage, HBM bandwidth, NCCL p2p and the
 * four collectives with several ranks), starting from the datasheet profile
 * of this GPU (`base`, else the one its name matches): its peak, and its
 * links when one rank has nothing to measure, are kept. */
/* A device name's datasheet profile, most specific first: "GB200" contains
 * "B200", an H800 is no H100. */
static const char *const datasheet_by_device[][2] = {
    {"GB200", "gb200-nvl72"}, {"B200", "b200"},         {"H200", "h200"},
    {"H800", "h800"},         {"H100", "h100-sxm"},     {"A100", "a100-80g"}};

static const char *datasheet_for(const char *device)
{
    size_t n = sizeof datasheet_by_device / sizeof datasheet_by_device[0];
    for (size_t i = 0; i < n; i++)
        if (strstr(device, datasheet_by_device[i][0]))
            return datasheet_by_device[i][1];
    return PX_HW_DEFAULT;
}

px_status px_calib_gpu(const px_calib_opts *o, MPI_Comm world, const char *base, const char *host,
                       const char *name, px_hw *hw, char *note, size_t note_len, px_error *err)
{
    if (px_cuda_device_count() <= 0)
        return PX_FAIL(err, PX_ERR_CUDA, "--gpu: no CUDA device is visible");
    struct cudaDeviceProp prop;
    PX_CUDA_TRY(err, cudaGetDeviceProperties(&prop, 0));
    if (!base)
        base = datasheet_for(prop.name);
    PX_TRY(px_hw_load(base, NULL, hw, err));
    snprintf(hw->name, sizeof hw->name, "%s", name ? name : "");
    if (!name)
        snprintf(hw->name, sizeof hw->name, "gpu-%.59s", host);
    px_calib_say(o, "gpu: %s, starting from the datasheet profile %s", prop.name, base);
    int rank = 0;
    MPI_Comm_rank(world, &rank);
    px_calib_cuda_result res;
    memset(&res, 0, sizeof res);
    px_calib_cuda_opts co = {o->quick, rank == 0 ? stderr : NULL, &res};
    PX_TRY(px_calib_cuda(hw, &co, world, err));
    snprintf(note, note_len, "%.32s, peak of %.16s: %.150s", prop.name, base, res.note);
    if (!res.comm_measured)
        px_calib_say(o, "gpu: one rank: NCCL not measured; intra/inter links and collective "
                     "costs are the datasheet's (%s)", base);
    /* the summary tests/gpu/run.sh greps from the log */
    if (rank == 0)
        fprintf(stderr,
                "# peak_flops %.4g (datasheet %s)\n"
                "# gemm best bf16 %.4g flop/s (gemm_points), fp32 storage %.4g flop/s\n"
                "# hbm_bw %.4g bytes/s measured (%s; copy %.4g, kernel %.4g)\n"
                "# comm %s\n",
                hw->peak_flops, base, res.gemm_bf16_best_flops, res.gemm_f32_best_flops,
                hw->hbm_bw, res.hbm_source, res.copy_bw, res.kernel_bw,
                res.comm_measured ? "measured (NCCL)" : "not measured (one rank): datasheet");
    return PX_OK;
}
