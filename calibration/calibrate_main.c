/* calibrate — measures the machine it runs on and writes a hardware profile
 * (the schema of hw_profiles/, docs/hw-schema.md) for the cost model:
 *
 *   calibrate [-o profile.json] [--name NAME] [--quick] [--mpi] [--threads N] [--cpu]
 *   mpirun -np G calibrate --mpi ...     (adds MPI p2p and collectives)
 *
 * On a CUDA build with a GPU present it measures the GPU (the CUDA backend's
 * calibrator, executor/px_calib_cuda.h) unless --cpu.
 *
 * What is measured and how each field is derived: docs/calibration.md.
 * Progress goes to stderr (rank 0 only); nothing is printed on stdout. */
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "px_calib.h"
#include "px_calib_coll.h"
#include "px_calib_disk.h"
#include "px_calib_fit.h"
#include "px_calib_gemm.h"
#include "px_calib_sustain.h"
#include "px_calib_kernels.h"
#include "px_calib_mem.h"
#ifdef PX_HAVE_CUDA
#include <cuda_runtime.h>

#include "px_calib_cuda.h" /* executor/: the CUDA backend's GPU calibrator */
#include "px_cuda_status.h"
#endif
#include "px_args.h"
#include "px_error.h"
#include "px_hw.h"

/* Defaults for what a CPU run cannot measure, written once here and
 * documented in docs/calibration.md. */
#define CAL_GPU_MTBF_HOURS 50676.0 /* Llama 3: 419 interruptions, 54 days, 16384 GPUs */
#define CAL_RESTART_S 60.0         /* relaunch of an MPI job on this machine */
#define CAL_RESERVE_FRACTION 0.05  /* of a rank's memory share, at least 256 MiB */
#define CAL_RESERVE_MIN_BYTES ((int64_t)256 << 20)

typedef struct {
    bool show;
    double t0;
} progress_ctx;

static void progress_stderr(void *vctx, const char *fmt, ...)
{
    progress_ctx *ctx = vctx;
    if (!ctx->show)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[calibrate %6.1fs] ", px_calib_now_s() - ctx->t0);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void barrier_sync(void *ctx)
{
    MPI_Barrier(*(MPI_Comm *)ctx);
}

/* The CPU: BLAS GEMMs by shape, memory bandwidth, the executor's kernels,
 * MPI (with use_mpi), memory capacity; every field of hw but the
 * description, name and checkpoint bandwidth. */
static px_status calibrate_cpu(const px_calib_opts *o, MPI_Comm world, bool use_mpi, int size,
                               px_hw *hw, px_error *err)
{
    /* 1. GEMM by shape, on every rank at once. */
    static px_gemm_point pts[PX_HW_MAX_GEMM_POINTS];
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

#ifdef PX_HAVE_CUDA
/* A GPU: the CUDA backend's calibrator (executor/px_calib_cuda.h: cuBLAS
 * GEMMs by shape in bf16 and fp32 storage, HBM bandwidth, NCCL p2p and the
 * four collectives with several ranks), starting from the datasheet profile
 * of this GPU (`base`, else the one its name matches): its peak, and its
 * links when one rank has nothing to measure, are kept. */
static const char *datasheet_for(const char *device)
{
    /* most specific first: "GB200" contains "B200", an H800 is no H100 */
    static const char *const map[][2] = {{"GB200", "gb200-nvl72"}, {"B200", "b200"},
                                         {"H200", "h200"},         {"H800", "h800"},
                                         {"H100", "h100-sxm"},     {"A100", "a100-80g"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (strstr(device, map[i][0]))
            return map[i][1];
    return PX_HW_DEFAULT;
}

static px_status calibrate_gpu(const px_calib_opts *o, MPI_Comm world, const char *base,
                               const char *host, const char *name, px_hw *hw, char *note,
                               size_t note_len, px_error *err)
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
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "usage: calibrate [-o FILE] [--name NAME] [--quick] [--mpi] [--threads N]\n"
            "                 [--cpu | --gpu [--base NAME]]\n"
            "  -o FILE       profile to write (default calibrated.json)\n"
            "  --name NAME   the profile's name (default cpu-<hostname>)\n"
            "  --quick       short sweep (GEMM dims 16..1024, fewer sizes): seconds\n"
            "  --mpi         also measure MPI p2p and collectives (run under mpirun;\n"
            "                every rank computes at once, as the executor's ranks do)\n"
            "  --threads N   BLAS threads per rank (default OPENBLAS_NUM_THREADS,\n"
            "                else OMP_NUM_THREADS, else 1: the executor's one rank per core)\n"
            "  --cpu         measure the CPU even when a GPU is present\n"
            "  --gpu         measure the GPU (CUDA builds; the default when a GPU is present)\n"
            "  --base NAME   GPU: the datasheet profile to start from (default: the one\n"
            "                matching the device name, e.g. h200); an error on the CPU path\n"
            "  --version     the Parallax version\n"
            "Every option takes its value as `--flag value` or `--flag=value`, once.\n");
}

static int fail(const px_error *err, int rank, bool mpi)
{
    char buf[1400];
    px_error_format(err, buf, sizeof buf);
    fprintf(stderr, "calibrate: rank %d: %s: %s\n", rank, px_status_name(err->code), buf);
    if (mpi)
        MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

typedef struct {
    const char *out_path, *name, *base;
    bool quick, use_mpi, force_cpu, force_gpu;
    int threads; /* 0: from the environment */
} calibrate_cli;

static const px_arg calibrate_rows[] = {
    PX_ARG_STR("-o", calibrate_cli, out_path),
    PX_ARG_ALIAS("--output", "-o"),
    PX_ARG_STR("--name", calibrate_cli, name),
    PX_ARG_SWITCH("--quick", calibrate_cli, quick),
    PX_ARG_SWITCH("--mpi", calibrate_cli, use_mpi),
    PX_ARG_SWITCH("--cpu", calibrate_cli, force_cpu),
    PX_ARG_SWITCH("--gpu", calibrate_cli, force_gpu),
    PX_ARG_STR("--base", calibrate_cli, base),
    PX_ARG_INT("--threads", calibrate_cli, threads, 1, 1024),
};

int main(int argc, char **argv)
{
    calibrate_cli cl = {"calibrated.json", NULL, NULL, false, false, false, false, 0};
    px_args_result args;
    px_error aerr;
    if (px_args_parse(calibrate_rows, (int)(sizeof calibrate_rows / sizeof calibrate_rows[0]),
                      argc, argv, &cl, 0, &args, &aerr) != PX_OK) {
        char msg[2048];
        px_args_error_text("calibrate", &aerr, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    px_args_free(&args);
    if (args.action == PX_ARGS_HELP) {
        usage(stdout);
        return 0;
    }
    if (args.action == PX_ARGS_VERSION) {
        printf("calibrate (parallax) %s\n", px_version());
        return 0;
    }
    const char *out_path = cl.out_path, *name = cl.name, *base = cl.base;
    bool quick = cl.quick, use_mpi = cl.use_mpi, force_cpu = cl.force_cpu,
         force_gpu = cl.force_gpu;
    int threads = cl.threads;

    if (force_cpu && force_gpu) {
        fprintf(stderr, "calibrate: --cpu and --gpu exclude each other\n");
        return 2;
    }
    /* px_hw_validate would refuse the nameless profile only after minutes of
     * measuring. */
    if (name && !name[0]) {
        fprintf(stderr, "calibrate: --name \"\": a profile needs a name (default "
                        "cpu-<hostname>)\n");
        return 2;
    }
    if (!out_path[0]) {
        fprintf(stderr, "calibrate: -o \"\": a file name is needed\n");
        return 2;
    }
    /* More BLAS threads than cores time-slice each other: allowed (the user
     * may mean it) but warned about, before any measuring.  MPI is not up
     * yet: under mpirun only the launcher's rank 0 says it. */
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    const char *mpi_rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!mpi_rank)
        mpi_rank = getenv("PMI_RANK");
    if (threads > 0 && online > 0 && threads > online && (!mpi_rank || !strcmp(mpi_rank, "0")))
        fprintf(stderr, "calibrate: warning: --threads %d but only %ld core(s) online: the "
                        "threads share cores and the GEMM rates will be low\n", threads, online);

    /* Other processes on the cores skew every timing: say how busy the
     * machine was (in the description and on stderr). */
    double load_at_start = 0.0;
    FILE *lf = fopen("/proc/loadavg", "r");
    if (lf) {
        if (fscanf(lf, "%lf", &load_at_start) != 1)
            load_at_start = 0.0;
        fclose(lf);
    }

    /* Fail before minutes of measuring if the profile cannot be written. */
    char out_dir[PATH_MAX];
    snprintf(out_dir, sizeof out_dir, "%s", out_path);
    char *slash = strrchr(out_dir, '/');
    if (slash == out_dir)
        out_dir[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(out_dir, sizeof out_dir, ".");
    if (access(out_dir, W_OK) != 0) {
        fprintf(stderr, "calibrate: -o %s: directory %s is not writable\n", out_path, out_dir);
        return 1;
    }
    /* A writable parent is not enough: -o naming a directory, or an existing
     * file we may not overwrite, would otherwise fail at the very end. */
    struct stat out_st;
    if (stat(out_path, &out_st) == 0) {
        if (S_ISDIR(out_st.st_mode)) {
            size_t n = strlen(out_path);
            fprintf(stderr, "calibrate: -o %s: is a directory (give a file name, e.g. "
                            "%s%scalibrated.json)\n", out_path, out_path,
                    out_path[n - 1] == '/' ? "" : "/");
            return 1;
        }
        if (access(out_path, W_OK) != 0) {
            fprintf(stderr, "calibrate: -o %s: the existing file is not writable\n", out_path);
            return 1;
        }
    }

    /* The GPU path: asked for, or a CUDA build that sees a GPU (--cpu not
     * given).  It needs MPI even for one process (the device is chosen by
     * node-local rank), a singleton MPI_Init without mpirun. */
    bool on_gpu = false;
#ifdef PX_HAVE_CUDA
    on_gpu = !force_cpu && (force_gpu || px_cuda_device_count() > 0);
#else
    if (force_gpu) {
        fprintf(stderr, "calibrate: --gpu: this build has no CUDA backend (meson -Dcuda=enabled "
                        "with nvcc, cuBLAS and NCCL)\n");
        return 2;
    }
#endif
#ifdef PX_HAVE_CUDA
    if (force_gpu && px_cuda_device_count() <= 0) {
        fprintf(stderr, "calibrate: --gpu: no CUDA device is visible\n");
        return 1;
    }
#endif
    /* --base picks the datasheet a GPU calibration starts from; the CPU path
     * measures every field itself, so there a --base would be silently
     * ignored: refuse it instead (docs/calibration.md). */
    if (base && !on_gpu) {
        fprintf(stderr, "calibrate: --base %s: only with --gpu (the datasheet profile a GPU "
                        "calibration starts from); this run measures the CPU\n", base);
        return 2;
    }
    bool mpi_on = use_mpi || on_gpu;
    int rank = 0, size = 1;
    MPI_Comm world = MPI_COMM_WORLD;
    if (mpi_on) {
        MPI_Init(&argc, &argv);
        MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
        MPI_Comm_rank(world, &rank);
        MPI_Comm_size(world, &size);
    }

    progress_ctx pctx = {.show = rank == 0, .t0 = px_calib_now_s()};
    px_calib_opts o;
    px_calib_opts_init(&o, quick);
    if (threads > 0)
        o.blas_threads = threads;
    o.progress = progress_stderr;
    o.progress_ctx = &pctx;
    if (use_mpi) {
        o.sync = barrier_sync;
        o.sync_ctx = &world;
    }

    long ncores = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncores > 0 && load_at_start > 0.5 * (double)ncores)
        px_calib_say(&o, "warning: load average %.2f on %ld cores: other processes will slow "
                     "the measurements down", load_at_start, ncores);

    px_hw hw;
    px_hw_init(&hw);
    px_error err;
    px_error_clear(&err);
    char gpu_note[256] = "";
    (void)gpu_note;
    (void)force_cpu; /* only a CUDA build has a GPU path */
    (void)force_gpu;
    (void)base;
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(hw.name, sizeof hw.name, "%s", name ? name : "");
    if (!name)
        snprintf(hw.name, sizeof hw.name, "cpu-%.59s", host);

#ifdef PX_HAVE_CUDA
    if (on_gpu && calibrate_gpu(&o, world, base, host, name, &hw, gpu_note, sizeof gpu_note,
                                &err) != PX_OK)
        return fail(&err, rank, mpi_on);
#endif
    if (!on_gpu && calibrate_cpu(&o, world, use_mpi, size, &hw, &err) != PX_OK)
        return fail(&err, rank, mpi_on);

    if (rank == 0) {
        int64_t bytes = quick ? (int64_t)16 << 20 : (int64_t)64 << 20;
        if (px_calib_disk_write_bw(&o, out_dir, bytes, &hw.ckpt_write_bw, &err) != PX_OK)
            return fail(&err, rank, mpi_on);
    }

    char when[64];
    time_t now = time(NULL);
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    const char *coretype = getenv("OPENBLAS_CORETYPE");
    if (on_gpu)
        snprintf(hw.description, sizeof hw.description,
                 "calibrated on %.32s at %.20s: %.158s; %d rank(s)",
                 host, when, gpu_note, size);
    else
        snprintf(hw.description, sizeof hw.description,
                 "calibrated on %.60s at %.24s: fp32 BLAS GEMM, %d thread(s) per rank%s%.20s; "
                 "%d rank(s)%s; load average %.2f at the start", host, when,
                 px_calib_set_blas_threads(o.blas_threads),
                 coretype ? ", OPENBLAS_CORETYPE=" : "", coretype ? coretype : "", size,
                 use_mpi ? ", MPI measured" : ", MPI not measured", load_at_start);

    if (rank == 0) {
        if (px_hw_validate(&hw, &err) != PX_OK || px_hw_save(&hw, out_path, &err) != PX_OK)
            return fail(&err, rank, mpi_on);
        px_calib_say(&o, "wrote %s (%d GEMM shapes, %d collective group sizes) in %.1f s",
                     out_path, hw.n_gemm_points, hw.n_coll_points,
                     px_calib_now_s() - pctx.t0);
    }
    if (mpi_on)
        MPI_Finalize();
    return 0;
}
