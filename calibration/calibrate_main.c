/* calibrate — measures the machine it runs on and writes a hardware profile
 * (the schema of hw_profiles/, docs/hw-schema.md) for the cost model:
 *
 *   calibrate [-o profile.json] [--name NAME] [--quick] [--mpi] [--threads N] [--cpu]
 *   mpirun -np G calibrate --mpi ...     (adds MPI p2p and collectives)
 *
 * On a CUDA build with a GPU present it measures the GPU (the CUDA backend's
 * calibrator, calibration/px_calib_gpu.h) unless --cpu.
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
#include <unistd.h>

#include "px_calib.h"
#include "px_calib_cpu.h"
#include "px_calib_disk.h"
#include "px_calib_run.h"
#ifdef PX_HAVE_CUDA
#include "px_calib_gpu.h"
#include "px_cuda_status.h"
#endif
#include "px_args.h"
#include "px_error.h"
#include "px_hw.h"


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

/* The options' own contradictions, before any measuring: 0, or the exit
 * status after the message.  Warns of more BLAS threads than cores (allowed:
 * the user may mean it); MPI is not up yet, so under mpirun only the
 * launcher's rank 0 says it. */
static int refuse_options(const calibrate_cli *cl)
{
    if (cl->force_cpu && cl->force_gpu) {
        fprintf(stderr, "calibrate: --cpu and --gpu exclude each other\n");
        return 2;
    }
    /* px_hw_validate would refuse the nameless profile only after minutes of
     * measuring. */
    if (cl->name && !cl->name[0]) {
        fprintf(stderr, "calibrate: --name \"\": a profile needs a name (default "
                        "cpu-<hostname>)\n");
        return 2;
    }
    if (!cl->out_path[0]) {
        fprintf(stderr, "calibrate: -o \"\": a file name is needed\n");
        return 2;
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    const char *mpi_rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!mpi_rank)
        mpi_rank = getenv("PMI_RANK");
    if (cl->threads > 0 && online > 0 && cl->threads > online &&
        (!mpi_rank || !strcmp(mpi_rank, "0")))
        fprintf(stderr, "calibrate: warning: --threads %d but only %ld core(s) online: the "
                        "threads share cores and the GEMM rates will be low\n", cl->threads,
                online);
    return 0;
}

/* The GPU path: asked for, or a CUDA build that sees a GPU (--cpu not
 * given).  0 with *on_gpu set, or the exit status after the message. */
static int choose_device(const calibrate_cli *cl, bool *on_gpu)
{
    *on_gpu = false;
#ifdef PX_HAVE_CUDA
    *on_gpu = !cl->force_cpu && (cl->force_gpu || px_cuda_device_count() > 0);
    if (cl->force_gpu && px_cuda_device_count() <= 0) {
        fprintf(stderr, "calibrate: --gpu: no CUDA device is visible\n");
        return 1;
    }
#else
    if (cl->force_gpu) {
        fprintf(stderr, "calibrate: --gpu: this build has no CUDA backend (meson -Dcuda=enabled "
                        "with nvcc, cuBLAS and NCCL)\n");
        return 2;
    }
#endif
    /* --base picks the datasheet a GPU calibration starts from; the CPU path
     * measures every field itself, so there a --base would be silently
     * ignored: refuse it instead (docs/calibration.md). */
    if (cl->base && !*on_gpu) {
        fprintf(stderr, "calibrate: --base %s: only with --gpu (the datasheet profile a GPU "
                        "calibration starts from); this run measures the CPU\n", cl->base);
        return 2;
    }
    return 0;
}

/* Measures (the GPU or the CPU), then on rank 0 the disk, and writes the
 * profile.  The GPU path needs MPI even for one process (the device is
 * chosen by node-local rank), a singleton MPI_Init without mpirun. */
static int measure(const calibrate_cli *cl, bool on_gpu, const char *out_dir,
                   double load_at_start, int *argc, char ***argv)
{
    bool mpi_on = cl->use_mpi || on_gpu;
    int rank = 0, size = 1;
    MPI_Comm world = MPI_COMM_WORLD;
    if (mpi_on) {
        MPI_Init(argc, argv);
        MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
        MPI_Comm_rank(world, &rank);
        MPI_Comm_size(world, &size);
    }
    progress_ctx pctx = {.show = rank == 0, .t0 = px_calib_now_s()};
    px_calib_opts o;
    px_calib_opts_init(&o, cl->quick);
    if (cl->threads > 0)
        o.blas_threads = cl->threads;
    o.progress = progress_stderr;
    o.progress_ctx = &pctx;
    if (cl->use_mpi) {
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
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    snprintf(hw.name, sizeof hw.name, "%s", cl->name ? cl->name : "");
    if (!cl->name)
        snprintf(hw.name, sizeof hw.name, "cpu-%.59s", host);
#ifdef PX_HAVE_CUDA
    if (on_gpu && px_calib_gpu(&o, world, cl->base, host, cl->name, &hw, gpu_note,
                               sizeof gpu_note, &err) != PX_OK)
        return fail(&err, rank, mpi_on);
#endif
    if (!on_gpu && px_calib_cpu(&o, world, cl->use_mpi, size, &hw, &err) != PX_OK)
        return fail(&err, rank, mpi_on);
    if (rank == 0) {
        int64_t bytes = cl->quick ? (int64_t)16 << 20 : (int64_t)64 << 20;
        if (px_calib_disk_write_bw(&o, out_dir, bytes, &hw.ckpt_write_bw, &err) != PX_OK)
            return fail(&err, rank, mpi_on);
    }
    px_calib_describe(&hw, host, on_gpu ? gpu_note : NULL, o.blas_threads, size, cl->use_mpi,
                      load_at_start);
    if (rank == 0) {
        if (px_hw_validate(&hw, &err) != PX_OK || px_hw_save(&hw, cl->out_path, &err) != PX_OK)
            return fail(&err, rank, mpi_on);
        px_calib_say(&o, "wrote %s (%d GEMM shapes, %d all-reduce points) in %.1f s",
                     cl->out_path, hw.n_gemm_points, hw.n_coll_points,
                     px_calib_now_s() - pctx.t0);
    }
    if (mpi_on)
        MPI_Finalize();
    return 0;
}

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
    int rc = refuse_options(&cl);
    if (rc)
        return rc;
    /* Other processes on the cores skew every timing: say how busy the
     * machine was (in the description and on stderr). */
    double load_at_start = px_calib_load_average();
    /* Fail before minutes of measuring if the profile cannot be written. */
    char out_dir[PATH_MAX];
    px_error oerr;
    if (px_calib_check_output(cl.out_path, out_dir, sizeof out_dir, &oerr) != PX_OK) {
        char msg[2048];
        px_error_format(&oerr, msg, sizeof msg);
        fprintf(stderr, "calibrate: %s\n", msg);
        return 1;
    }
    bool on_gpu = false;
    rc = choose_device(&cl, &on_gpu);
    if (rc)
        return rc;
    return measure(&cl, on_gpu, out_dir, load_at_start, &argc, &argv);
}
