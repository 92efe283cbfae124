/* px_calib_cpu.c — the whole CPU calibration, step by step (px_calib_cpu.h). */
#include "px_calib_cpu.h"

#include <string.h>
#include <unistd.h>

#include "px_calib_coll.h"
#include "px_calib_fit.h"
#include "px_calib_gemm.h"
#include "px_calib_kernels.h"
#include "px_calib_mem.h"
#include "px_calib_sustain.h"

/* Defaults for what a CPU run cannot measure, written once here and
 * documented in docs/calibration.md. */
#define CAL_GPU_MTBF_HOURS 50676.0 /* Llama 3: 419 interruptions, 54 days, 16384 GPUs */
#define CAL_RESTART_S 60.0         /* relaunch of an MPI job on this machine */
#define CAL_RESERVE_FRACTION 0.05  /* of a rank's memory share, at least 256 MiB */
#define CAL_RESERVE_MIN_BYTES ((int64_t)256 << 20)

/* Under MPI every rank measured at once (each on its core, sharing caches
 * and memory as in a step): keep the mean of each of the n rates. */
static void mean_over_ranks(double *v, int n, MPI_Comm world, bool use_mpi, int size)
{
    if (!(use_mpi && size > 1))
        return;
    double sum[PX_HW_MAX_GEMM_POINTS];
    MPI_Allreduce(v, sum, n, MPI_DOUBLE, MPI_SUM, world);
    for (int i = 0; i < n; i++)
        v[i] = sum[i] / size;
}

/* 1. GEMM by shape, on every rank at once. */
static px_status gemm_step(const px_calib_opts *o, MPI_Comm world, bool use_mpi, int size,
                           px_hw *hw, px_error *err)
{
    px_gemm_point pts[PX_HW_MAX_GEMM_POINTS];
    int npts = 0;
    PX_TRY(px_calib_gemm_run(o, pts, PX_HW_MAX_GEMM_POINTS, &npts, err));
    double fl[PX_HW_MAX_GEMM_POINTS];
    for (int i = 0; i < npts; i++)
        fl[i] = pts[i].flops;
    mean_over_ranks(fl, npts, world, use_mpi, size);
    for (int i = 0; i < npts; i++)
        pts[i].flops = fl[i];
    hw->n_gemm_points = npts;
    memcpy(hw->gemm_points, pts, (size_t)npts * sizeof pts[0]);
    px_calib_fit_gemm_summary(pts, npts, &hw->peak_flops, &hw->gemm_eff_max,
                              &hw->gemm_eff_half_dim);
    px_calib_say(o, "gemm: peak (best shape) %.1f GFLOP/s, half-efficiency dim %.1f",
                 hw->peak_flops / 1e9, hw->gemm_eff_half_dim);
    return PX_OK;
}

/* 3. The executor's own element-wise and attention kernels, in the cost
 * model's terms (px_calib_kernels.h). */
static px_status kernels_step(const px_calib_opts *o, MPI_Comm world, bool use_mpi, int size,
                              px_hw *hw, px_error *err)
{
    px_calib_kernels_result kr;
    PX_TRY(px_calib_kernels_run(o, &kr, err));
    double k[10] = {kr.elementwise_bw, kr.attn_flops, kr.norm_bw, kr.residual_bw,
                    kr.gelu_bw, kr.swiglu_bw, kr.rope_bw, kr.xent_bw, kr.adamw_bw,
                    kr.embed_bw};
    mean_over_ranks(k, 10, world, use_mpi, size);
    hw->mem_bound_eff = k[0] / hw->hbm_bw;
    hw->attn_eff = k[1] / hw->peak_flops;
    hw->norm_bw = k[2];
    hw->residual_bw = k[3];
    hw->gelu_bw = k[4];
    hw->swiglu_bw = k[5];
    hw->rope_bw = k[6];
    hw->xent_bw = k[7];
    hw->adamw_bw = k[8];
    hw->embed_bw = k[9];
    px_calib_say(o, "kernels: element-wise %.2f GB/s = mem_bound_eff %.3f of the triad; "
                 "attention %.2f GFLOP/s = attn_eff %.4f of peak", k[0] / 1e9,
                 hw->mem_bound_eff, k[1] / 1e9, hw->attn_eff);
    return PX_OK;
}

/* 3b. The share of those rates a step sustains (px_calib_sustain.h): the
 * mean over the ranks, which ran the stream at once. */
static px_status sustain_step(const px_calib_opts *o, MPI_Comm world, bool use_mpi, int size,
                              px_hw *hw, px_error *err)
{
    px_calib_opts so = *o;
    if (!(use_mpi && size > 1))
        so.sync = NULL; /* nothing to wait for */
    double sus[3] = {1.0, 0.0, 0.0};
    PX_TRY(px_calib_sustain_run(&so, &sus[0], &sus[1], &sus[2], err));
    mean_over_ranks(sus, 3, world, use_mpi, size);
    hw->sustained_frac = sus[0];
    hw->sync_wait_s = sus[1];
    hw->sync_interval_s = hw->sync_wait_s > 0.0 ? sus[2] : 0.0;
    return PX_OK;
}

/* 5. Memory capacity per rank and what a CPU run cannot measure. */
static void capacity_step(px_hw *hw)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t phys = pages > 0 && page > 0 ? (int64_t)pages * page : (int64_t)1 << 32;
    int ranks_here = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    hw->hbm_bytes = phys / ranks_here;
    hw->mem_reserve_bytes = (int64_t)(CAL_RESERVE_FRACTION * (double)hw->hbm_bytes);
    if (hw->mem_reserve_bytes < CAL_RESERVE_MIN_BYTES)
        hw->mem_reserve_bytes = CAL_RESERVE_MIN_BYTES;
    hw->dtype_bytes = 4; /* the CPU backend computes in fp32 */
    hw->torus = false;
    hw->gpu_mtbf_hours = CAL_GPU_MTBF_HOURS;
    hw->restart_s = CAL_RESTART_S;
}

px_status px_calib_cpu(const px_calib_opts *o, MPI_Comm world, bool use_mpi, int size, px_hw *hw,
                       px_error *err)
{
    PX_TRY(gemm_step(o, world, use_mpi, size, hw, err));

    /* 2. Memory bandwidth, every rank streaming at once. */
    px_calib_mem_result mem;
    PX_TRY(px_calib_mem_run(o, &mem, err));
    double triad = mem.triad_bw;
    mean_over_ranks(&triad, 1, world, use_mpi, size);
    hw->hbm_bw = triad;

    PX_TRY(kernels_step(o, world, use_mpi, size, hw, err));
    PX_TRY(sustain_step(o, world, use_mpi, size, hw, err));

    /* 4. Communication. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    hw->gpus_per_node = ncpu > 0 ? (int)ncpu : 1; /* one rank per core */
    if (use_mpi)
        PX_TRY(px_calib_coll_run(o, world, hw, err));
    if (hw->intra_bw <= 0.0) {
        /* No MPI measurement: ranks on one node exchange through shared
         * memory, i.e. a copy; latency is a typical shared-memory MPI one. */
        hw->intra_bw = hw->inter_bw = mem.copy_bw / 2.0;
        hw->intra_lat_s = hw->inter_lat_s = 1e-6;
        px_calib_say(o, "mpi: not measured (no --mpi): p2p from the copy bandwidth, 1 us");
    }
    capacity_step(hw);
    return PX_OK;
}
