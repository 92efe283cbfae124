/* calibrate — measures the machine it runs on and writes a hardware profile
 * (the schema of hw_profiles/, docs/hw-schema.md) for the cost model:
 *
 *   calibrate [-o profile.json] [--name NAME] [--quick] [--mpi] [--threads N] [--cpu]
 *   mpirun -np G calibrate --mpi ...     (adds MPI p2p and collectives)
 *
 * or fits profiles to a cluster's own measured runs (px_fit_runs.h), no
 * measuring:
 *
 *   calibrate --from-runs RUNS.json --hw BASE --framework BASE -o PREFIX
 *   calibrate --from-log LOG[,CONFIG.toml] [--from-log ...] [--json | --hw ... -o PREFIX]
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
#include "px_fit_runs.h"
#include "px_hw.h"
#include "px_io.h"
#include "px_jfield.h"
#include "px_runlog.h"


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
            "\n"
            "usage: calibrate --from-runs RUNS.json --hw BASE --framework BASE -o PREFIX\n"
            "       calibrate --from-log LOG[,CONFIG.toml] [--from-log ...] [--json]\n"
            "                 [--hw BASE --framework BASE -o PREFIX]\n"
            "  --from-runs FILE   measured runs (the published-runs schema) to fit profiles to\n"
            "  --from-log LOG     a Megatron-LM / NeMo or torchtitan training log as a run\n"
            "                     (torchtitan: its TOML after a comma unless the log echoes it);\n"
            "                     repeat for more runs; alone with --json: print the runs\n"
            "  --gpu-type GPU     the logs' GPU (H100, A100, ...; default: from the log, else\n"
            "                     the GPU of --hw)\n"
            "  --gpus-per-node N  the logs' GPUs per node\n"
            "  --hw BASE          the hardware profile the fit starts from (name or file)\n"
            "  --framework BASE   the framework profile the fit starts from (name or file)\n"
            "  -o PREFIX          writes PREFIX.hw.json and PREFIX.framework.json\n"
            "  --max-factors N    fit at most N factors (default: as many as runs, up to 6)\n"
            "  --json             print the fit (or, without -o, the runs) as JSON"
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

#define MAX_LOGS 32

typedef struct {
    const char *out_path, *name, *base;
    bool quick, use_mpi, force_cpu, force_gpu;
    int threads; /* 0: from the environment */
    /* fitting to measured runs */
    const char *from_runs, *hw, *framework, *gpu_type;
    const char *logs[MAX_LOGS];
    int n_logs, gpus_per_node, max_factors;
    bool json;
} calibrate_cli;

static px_status read_log_arg(void *settings, const char *flag, const char *value, px_error *err)
{
    calibrate_cli *cl = settings;
    if (cl->n_logs == MAX_LOGS)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: at most %d logs", flag, MAX_LOGS);
    if (!value[0])
        return PX_FAIL(err, PX_ERR_USAGE, "%s: expected LOG or LOG,CONFIG.toml", flag);
    cl->logs[cl->n_logs++] = value;
    return PX_OK;
}

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
    PX_ARG_STR("--from-runs", calibrate_cli, from_runs),
    PX_ARG_CUSTOM_REPEAT("--from-log", read_log_arg),
    PX_ARG_STR("--hw", calibrate_cli, hw),
    PX_ARG_STR("--framework", calibrate_cli, framework),
    PX_ARG_STR("--gpu-type", calibrate_cli, gpu_type),
    PX_ARG_INT("--gpus-per-node", calibrate_cli, gpus_per_node, 1, 1 << 16),
    PX_ARG_INT("--max-factors", calibrate_cli, max_factors, 1, PX_FIT_FACTOR_COUNT),
    PX_ARG_SWITCH("--json", calibrate_cli, json),
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

/* ---- fitting profiles to measured runs ---- */

/* The published-runs GPU name whose profile is `hw` (a name, or a file's
 * profile name), NULL when none maps to it. */
static const char *gpu_of_profile(const char *hw)
{
    static const char *const gpus[] = {"V100", "A100", "A800", "H100",  "H200",
                                       "H800", "B200", "B300", "GB200", "GB300", NULL};
    px_hw *p = malloc(sizeof *p);
    px_error err;
    const char *name = hw, *found = NULL;
    if (p && px_hw_load(hw, NULL, p, &err) == PX_OK)
        name = p->name;
    for (int i = 0; gpus[i] && !found; i++) {
        const char *n = px_row_hw_name(gpus[i], 0.0);
        if (n && !strcmp(n, name))
            found = gpus[i];
    }
    free(p);
    return found;
}

static int fit_fail(const px_error *err)
{
    char buf[1400];
    px_error_format(err, buf, sizeof buf);
    fprintf(stderr, "calibrate: %s\n", buf);
    return 1;
}

/* The runs: the file's rows, then one row per log. */
static px_status gather_runs(const calibrate_cli *cl, json_t **rows, px_error *err)
{
    *rows = NULL;
    px_status st = PX_OK;
    if (cl->from_runs) {
        st = px_jf_load_file(cl->from_runs, rows, err);
        if (st == PX_OK && !json_is_array(*rows))
            st = px_error_set(err, PX_ERR_INVALID, cl->from_runs, 0, 0,
                              "expected a JSON array of runs (the published-runs schema)");
    } else if (!(*rows = json_array())) {
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    px_runlog_opts lo = {.gpu = cl->gpu_type,
                         .gpu_default = cl->hw ? gpu_of_profile(cl->hw) : NULL,
                         .gpus_per_node = cl->gpus_per_node};
    for (int i = 0; i < cl->n_logs && st == PX_OK; i++) {
        char log[1024];
        snprintf(log, sizeof log, "%s", cl->logs[i]);
        char *comma = strchr(log, ',');
        if (comma)
            *comma = '\0';
        json_t *row = NULL;
        st = px_runlog_row(log, comma ? comma + 1 : NULL, &lo, &row, err);
        if (st == PX_OK)
            json_array_append_new(*rows, row);
    }
    if (st != PX_OK) {
        json_decref(*rows);
        *rows = NULL;
    }
    return st;
}

/* Writes the fitted profiles, then reads them back as `plan` will. */
static px_status write_profiles(const char *prefix, const px_fit_runs_result *r, px_error *err)
{
    char hw_path[1100], fw_path[1100];
    snprintf(hw_path, sizeof hw_path, "%s.hw.json", prefix);
    snprintf(fw_path, sizeof fw_path, "%s.framework.json", prefix);
    size_t flags = JSON_SORT_KEYS | JSON_INDENT(2);
    px_status st = px_io_write_json(hw_path, r->hw_doc, flags, err);
    if (st == PX_OK)
        st = px_io_write_json(fw_path, r->fw_doc, flags, err);
    px_hw *hw = malloc(sizeof *hw);
    px_framework *fw = malloc(sizeof *fw);
    if (st == PX_OK && (!hw || !fw))
        st = PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    if (st == PX_OK)
        st = px_hw_load(hw_path, NULL, hw, err);
    if (st == PX_OK)
        st = px_framework_load(fw_path, NULL, fw, err);
    free(hw);
    free(fw);
    return st;
}

static int fit_mode(const calibrate_cli *cl, bool out_given)
{
    if (cl->quick || cl->use_mpi || cl->force_cpu || cl->force_gpu || cl->base || cl->name ||
        cl->threads) {
        fprintf(stderr, "calibrate: --from-runs / --from-log fit profiles to measured runs: "
                        "--quick, --mpi, --cpu, --gpu, --base, --name and --threads measure "
                        "this machine and do not apply\n");
        return 2;
    }
    bool print_runs = !cl->from_runs && cl->json && !out_given && !cl->hw && !cl->framework;
    if (!print_runs && (!cl->hw || !cl->framework || !out_given)) {
        fprintf(stderr, "calibrate: fitting needs --hw BASE, --framework BASE and -o PREFIX "
                        "(with --from-log alone, --json prints the runs instead)\n");
        return 2;
    }
    px_error err;
    px_error_clear(&err);
    json_t *rows = NULL;
    if (gather_runs(cl, &rows, &err) != PX_OK)
        return fit_fail(&err);
    if (print_runs) {
        char *s = json_dumps(rows, JSON_SORT_KEYS | JSON_INDENT(2));
        json_decref(rows);
        if (!s || printf("%s\n", s) < 0 || fflush(stdout) != 0) {
            free(s);
            fprintf(stderr, "calibrate: cannot write the runs to stdout\n");
            return 1;
        }
        free(s);
        return 0;
    }
    px_fit_runs_opts o = {.hw = cl->hw, .framework = cl->framework,
                          .max_factors = cl->max_factors, .leave_one_out = true};
    px_fit_runs_result r;
    px_status st = px_fit_runs(rows, cl->from_runs ? cl->from_runs : cl->logs[0], &o, &r, &err);
    json_decref(rows);
    if (st == PX_OK)
        st = write_profiles(cl->out_path, &r, &err);
    if (st != PX_OK) {
        if (r.fit)
            px_fit_runs_free(&r);
        return fit_fail(&err);
    }
    if (cl->json) {
        json_t *t = px_fit_runs_table_json(&r);
        char *s = t ? json_dumps(t, JSON_SORT_KEYS | JSON_INDENT(2)) : NULL;
        if (s)
            printf("%s\n", s);
        free(s);
        json_decref(t);
    } else {
        px_fit_runs_write_table(&r, stdout);
        printf("wrote %s.hw.json and %s.framework.json\n", cl->out_path, cl->out_path);
    }
    px_fit_runs_free(&r);
    px_error out_err;
    if (px_io_flush_stdout(&out_err) != PX_OK) {
        fprintf(stderr, "calibrate: error: %s\n", out_err.msg);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    calibrate_cli cl = {0};
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
    bool out_given = cl.out_path != NULL;
    if (cl.from_runs || cl.n_logs > 0)
        return fit_mode(&cl, out_given);
    if (cl.hw || cl.framework || cl.gpu_type || cl.gpus_per_node || cl.max_factors || cl.json) {
        fprintf(stderr, "calibrate: --hw, --framework, --gpu-type, --gpus-per-node, "
                        "--max-factors and --json belong to --from-runs / --from-log\n");
        return 2;
    }
    if (!out_given)
        cl.out_path = "calibrated.json";
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
