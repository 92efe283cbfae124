/* main_calibrate_cuda.c — `calibrate-cuda [-o FILE] [--base PROFILE] [--quick]`:
 * measures this machine's GPU(s) (px_calib_cuda) starting from a datasheet
 * profile and writes a hardware profile.  Run one rank per GPU under mpirun
 * to include NCCL p2p and collectives; one rank measures one GPU.  The same
 * calibrator as `calibrate --gpu` (which also times checkpoint writes and
 * checks its arguments before measuring), without the CPU tool around it. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "px_calib_cuda.h"
#include "px_cuda_status.h"

int main(int argc, char **argv)
{
    const char *out = "calibrated-gpu.json", *base = "h200";
    px_calib_cuda_result res;
    memset(&res, 0, sizeof res);
    px_calib_cuda_opts o = {false, stderr, &res};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--base") && i + 1 < argc)
            base = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            o.quick = true;
        else {
            fprintf(stderr,
                    "usage: calibrate-cuda [-o FILE] [--base PROFILE] [--quick]\n"
                    "  -o FILE          profile to write (default calibrated-gpu.json)\n"
                    "  --base PROFILE   datasheet profile to start from (default h200): its\n"
                    "                   peak_flops and network fields are kept\n"
                    "  --quick          fewer shapes (seconds)\n");
            return strcmp(argv[i], "-h") && strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (px_cuda_device_count() <= 0) {
        fprintf(stderr, "calibrate-cuda: no CUDA device\n");
        return 77;
    }
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    px_error err;
    px_error_clear(&err);
    px_hw hw;
    px_status st = px_hw_load(base, NULL, &hw, &err);
    if (st == PX_OK)
        st = px_calib_cuda(&hw, &o, MPI_COMM_WORLD, &err);
    if (st == PX_OK && rank == 0) {
        struct cudaDeviceProp prop;
        int dev = 0;
        cudaGetDevice(&dev);
        cudaGetDeviceProperties(&prop, dev);
        char name[64] = "gpu-";
        size_t j = strlen(name);
        for (const char *p = prop.name; *p && j + 1 < sizeof name; p++)
            name[j++] = isalnum((unsigned char)*p) ? (char)tolower((unsigned char)*p) : '-';
        name[j] = '\0';
        snprintf(hw.name, sizeof hw.name, "%s", name);
        snprintf(hw.description, sizeof hw.description, "calibrated on %.40s from %.16s: %.180s",
                 prop.name, base, res.note);
        st = px_hw_save(&hw, out, &err);
        if (st == PX_OK) {
            printf("# peak_flops %.4g (datasheet), best GEMM %.1f%% of it\n", hw.peak_flops,
                   100.0 * hw.gemm_eff_max);
            printf("# hbm_bw %.4g bytes/s measured (%s)\n", hw.hbm_bw, res.hbm_source);
            printf("# comm %s\n", res.comm_measured ? "measured (NCCL)"
                                                    : "not measured (one rank): datasheet");
            printf("# wrote %s (%d GEMM shapes)\n", out, hw.n_gemm_points);
        }
    }
    if (st != PX_OK) {
        char buf[1600];
        px_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "calibrate-cuda: rank %d: %s: %s\n", rank, px_status_name(st), buf);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return 0;
}
