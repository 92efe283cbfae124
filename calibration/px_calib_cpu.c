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

/* The CPU: BLAS GEMMs by shape, memory bandwidth, the executor's kernels,
 * MPI (with use_mpi), memory capacity; every field of hw but the
 * description, name and checkpoint bandwidth. */
px_status px_calib_cpu(const px_calib_opts *o, MPI_Comm world, bool use_mpi, int size, px_hw *hw,
                       px_error *err)
{
    /* 1. GEMM by shape, on every rank at once. */
    px_gemm_point pts[PX_HW_MAX_GEMM_POINTS];
    int npts = 0;
    px_status st = px_calib_gemm_run(o, pts, PX_HW_MAX_GEMM_POINTS, &npts, err);
    if (st != PX_OK)
        return st;
    if (use_mpi && size > 1) {
        /* Ranks ran concurrently (each on its core, sharing caches and
         * memory as in a step): keep the mean throughput per shape. */
        double fl[PX_HW_MAX_GEMM_POINTS], sum[PX_HW_MAX_GEMM_POINTS];
        for (int i = 0; i < npts; i++)
            fl[i] = pts[i].flops;
        MPI_Allreduce(fl, sum, npts, MPI_DOUBLE, MPI_SUM, world);
        for (int i = 0; i < npts; i++)
            pts[i].flops = sum[i] / size;
    }
    hw->n_gemm_points = npts;
    memcpy(hw->gemm_points, pts, (size_t)npts * sizeof pts[0]);
    px_calib_fit_gemm_summary(pts, npts, &hw->peak_flops, &hw->gemm_eff_max,
                              &hw->gemm_eff_half_dim);
    px_calib_say(o, "gemm: peak (best shape) %.1f GFLOP/s, half-efficiency dim %.1f",
                 hw->peak_flops / 1e9, hw->gemm_eff_half_dim);

    /* 2. Memory bandwidth, every rank streaming at once. */
    px_calib_mem_result mem;
    st = px_calib_mem_run(o, &mem, err);
    if (st != PX_OK)
        return st;
    double triad = mem.triad_bw;
    if (use_mpi && size > 1) {
        MPI_Allreduce(&mem.triad_bw, &triad, 1, MPI_DOUBLE, MPI_SUM, world);
        triad /= size;
    }
    hw->hbm_bw = triad;

    /* 3. The executor's own element-wise and attention kernels, in the cost
     * model's terms (px_calib_kernels.h). */
    px_calib_kernels_result kr;
    st = px_calib_kernels_run(o, &kr, err);
    if (st != PX_OK)
        return st;
    /* Under MPI every rank ran them at once: keep the mean of each rate. */
    double kv[10] = {kr.elementwise_bw, kr.attn_flops, kr.norm_bw, kr.residual_bw,
                     kr.gelu_bw, kr.swiglu_bw, kr.rope_bw, kr.xent_bw, kr.adamw_bw,
                     kr.embed_bw};
    double ksum[10];
    memcpy(ksum, kv, sizeof kv);
    if (use_mpi && size > 1) {
        MPI_Allreduce(kv, ksum, 10, MPI_DOUBLE, MPI_SUM, world);
        for (int i = 0; i < 10; i++)
            ksum[i] /= size;
    }
    hw->mem_bound_eff = ksum[0] / hw->hbm_bw;
    hw->attn_eff = ksum[1] / hw->peak_flops;
    hw->norm_bw = ksum[2];
    hw->residual_bw = ksum[3];
    hw->gelu_bw = ksum[4];
    hw->swiglu_bw = ksum[5];
    hw->rope_bw = ksum[6];
    hw->xent_bw = ksum[7];
    hw->adamw_bw = ksum[8];
    hw->embed_bw = ksum[9];
    px_calib_say(o, "kernels: element-wise %.2f GB/s = mem_bound_eff %.3f of the triad; "
                 "attention %.2f GFLOP/s = attn_eff %.4f of peak", ksum[0] / 1e9,
                 hw->mem_bound_eff, ksum[1] / 1e9, hw->attn_eff);

    /* 3b. The share of those rates a step sustains (px_calib_sustain.h):
     * the mean over the ranks, which ran the stream at once. */
    px_calib_opts so = *o;
    if (!(use_mpi && size > 1))
        so.sync = NULL; /* nothing to wait for */
    double sus[3] = {1.0, 0.0, 0.0}, sus_sum[3];
    st = px_calib_sustain_run(&so, &sus[0], &sus[1], &sus[2], err);
    if (st != PX_OK)
        return st;
    memcpy(sus_sum, sus, sizeof sus);
    if (use_mpi && size > 1) {
        MPI_Allreduce(sus, sus_sum, 3, MPI_DOUBLE, MPI_SUM, world);
        for (int i = 0; i < 3; i++)
            sus_sum[i] /= size;
    }
    hw->sustained_frac = sus_sum[0];
    hw->sync_wait_s = sus_sum[1];
    hw->sync_interval_s = hw->sync_wait_s > 0.0 ? sus_sum[2] : 0.0;

    /* 4. Communication. */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    hw->gpus_per_node = ncpu > 0 ? (int)ncpu : 1; /* one rank per core */
    if (use_mpi) {
        st = px_calib_coll_run(o, world, hw, err);
        if (st != PX_OK)
            return st;
    }
    if (hw->intra_bw <= 0.0) {
        /* No MPI measurement: ranks on one node exchange through shared
         * memory, i.e. a copy; latency is a typical shared-memory MPI one. */
        hw->intra_bw = hw->inter_bw = mem.copy_bw / 2.0;
        hw->intra_lat_s = hw->inter_lat_s = 1e-6;
        px_calib_say(o, "mpi: not measured (no --mpi): p2p from the copy bandwidth, 1 us");
    }

    /* 5. Memory capacity per rank and checkpoint bandwidth. */
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
    return PX_OK;
}
