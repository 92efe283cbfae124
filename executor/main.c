/* execute — runs a plan's training step for real:
 *   mpirun -np G execute --plan plan.json [--steps N] [--warmup N] [--seed N]
 *          [--data FILE] [--report report.json] [--dump-weights DIR]
 *          [--lr X] [--init-std X] [--backend cpu|cuda] [--dtype bf16|fp32]
 *   execute --check --plan plan.json [--backend cpu|cuda]
 * Only rank 0 prints the step table; errors name the rank.  --check runs as
 * one process without mpirun: it validates the plan's own consistency and this
 * executor's capabilities and runs nothing.  See docs/executor.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#ifdef PX_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "px_backend.h"
#ifdef PX_HAVE_CUDA
#include "px_backend_cuda.h"
#endif
#include "px_exec.h"
#include "px_memtrack.h"
#include "px_measure.h"

typedef struct {
    const char *plan_path, *report_path, *dump_dir, *backend;
    int64_t steps, warmup;
    bool check; /* --check: validate the plan, run nothing */
    px_exec_options opt;
} cli;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np G execute --plan plan.json [--steps N] [--warmup N] [--seed N]\n"
            "                            [--data FILE] [--report report.json]\n"
            "                            [--dump-weights DIR] [--lr X] [--init-std X]\n"
            "                            [--backend cpu|cuda] [--dtype bf16|fp32]\n"
            "       execute --check --plan plan.json [--backend cpu|cuda]\n"
            "  --check             validate the plan (its own consistency and what this\n"
            "                      executor runs) in one process, without mpirun; runs nothing\n"
            "  --plan FILE         plan JSON written by `plan -o` (required)\n"
            "  --steps N           timed optimizer steps (default 3)\n"
            "  --warmup N          untimed steps before them (default 1)\n"
            "  --seed N            weights and synthetic tokens (default 1)\n"
            "  --data FILE         token ids, little-endian uint32, no header (default: synthetic)\n"
            "  --report FILE       write losses, measured vs predicted numbers as JSON\n"
            "  --dump-weights DIR  write each rank's final weights (rank<R>.bin/.tsv)\n"
            "  --lr X              AdamW learning rate (default 1e-3)\n"
            "  --init-std X        std of the random initial weights (default 0.02)\n"
            "  --backend NAME      cpu (default: BLAS + MPI) or cuda (when built with CUDA)\n"
            "  --dtype NAME        storage of activations and the weights the kernels read:\n"
            "                      bf16 (fp32 master weights, gradients and AdamW state) or\n"
            "                      fp32 (default: the plan's hardware profile, dtype_bytes 2\n"
            "                      -> bf16, 4 -> fp32)\n");
}

static int parse_i64(const char *s, int64_t min, int64_t *out)
{
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (!end || *end || v < min)
        return -1;
    *out = v;
    return 0;
}

/* Returns 0 ok, 1 help, 2 error (message in buf). */
static int parse_args(int argc, char **argv, cli *c, char *buf, size_t n)
{
    memset(c, 0, sizeof *c);
    c->steps = 3;
    c->warmup = 1;
    c->backend = "cpu";
    px_exec_options_default(&c->opt);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help"))
            return 1;
        if (!strcmp(a, "--check")) {
            c->check = true;
            continue;
        }
        if (i + 1 >= argc) {
            snprintf(buf, n, "option %s: missing value (or unknown option)", a);
            return 2;
        }
        const char *v = argv[++i];
        int64_t x;
        if (!strcmp(a, "--plan")) {
            c->plan_path = v;
        } else if (!strcmp(a, "--report")) {
            c->report_path = v;
        } else if (!strcmp(a, "--data")) {
            c->opt.data_path = v;
        } else if (!strcmp(a, "--dump-weights")) {
            c->dump_dir = v;
        } else if (!strcmp(a, "--dtype")) {
            if (strcmp(v, "bf16") && strcmp(v, "fp32")) {
                snprintf(buf, n, "option --dtype: \"%s\": allowed values are bf16, fp32", v);
                return 2;
            }
            c->opt.dtype_bytes = !strcmp(v, "bf16") ? 2 : 4;
        } else if (!strcmp(a, "--backend")) {
            if (strcmp(v, "cpu") && strcmp(v, "cuda")) {
                snprintf(buf, n, "option --backend: \"%s\": allowed values are cpu, cuda", v);
                return 2;
            }
            c->backend = v;
        } else if (!strcmp(a, "--steps") || !strcmp(a, "--warmup") || !strcmp(a, "--seed")) {
            if (parse_i64(v, !strcmp(a, "--steps") ? 1 : 0, &x)) {
                snprintf(buf, n, "option %s: \"%s\" is not an integer >= %d", a, v,
                         !strcmp(a, "--steps") ? 1 : 0);
                return 2;
            }
            if (!strcmp(a, "--steps"))
                c->steps = x;
            else if (!strcmp(a, "--warmup"))
                c->warmup = x;
            else
                c->opt.seed = (uint64_t)x;
        } else if (!strcmp(a, "--lr") || !strcmp(a, "--init-std")) {
            char *end = NULL;
            double d = strtod(v, &end);
            if (!end || *end || !(d >= 0.0)) {
                snprintf(buf, n, "option %s: \"%s\" is not a number >= 0", a, v);
                return 2;
            }
            if (!strcmp(a, "--lr"))
                c->opt.lr = (float)d;
            else
                c->opt.init_std = (float)d;
        } else {
            snprintf(buf, n, "unknown option %s", a);
            return 2;
        }
    }
    if (!c->plan_path) {
        snprintf(buf, n, "--plan FILE is required");
        return 2;
    }
    return 0;
}

static void print_error(int rank, const px_error *err)
{
    char msg[2048];
    px_error_format(err, msg, sizeof msg);
    fprintf(stderr, "execute: rank %d: %s: %s\n", rank, px_status_name(err->code), msg);
}

/* A failure in the middle of a step may leave other ranks inside a
 * collective: end the whole job instead of hanging. */
static void fail_abort(int rank, const px_error *err)
{
    print_error(rank, err);
    fprintf(stderr, "execute: rank %d: aborting the job\n", rank);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* execute --check: the plan against this executor's capability set, in one
 * process without MPI.  Exit 0 when it would run, 1 when not, 2 on bad usage. */
static int check_only(const cli *c)
{
    px_error err;
    px_error_clear(&err);
    px_plan plan;
    px_caps caps;
    px_exec_caps(c->backend, &caps);
    px_status st = px_plan_read(c->plan_path, &plan, &err);
    if (st == PX_OK)
        st = px_exec_check_plan(&plan, &caps, &err);
    if (st != PX_OK) {
        char msg[2048];
        px_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "execute: %s: %s\n", px_status_name(err.code), msg);
        return 1;
    }
    const px_parallel *p = &plan.par;
    printf("%s: runs on the %s: %s on %d ranks (tp %d, cp %d, pp %d, vpp %d, dp %d, ep %d, "
           "etp %d, %s, zero %d)\n",
           c->plan_path, caps.name, plan.model.name, px_parallel_gpus(p), p->tp, p->cp, p->pp,
           p->vpp, p->dp, p->ep, p->etp, px_schedule_name(p->schedule), p->zero);
    return 0;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--check")) { /* no MPI: one process, no launcher */
            cli c;
            char msg[512] = "";
            int pr = parse_args(argc, argv, &c, msg, sizeof msg);
            if (pr == 2)
                fprintf(stderr, "execute: %s\n", msg);
            if (pr)
                usage(pr == 1 ? stdout : stderr);
            return pr == 1 ? 0 : pr == 2 ? 2 : check_only(&c);
        }
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    cli c;
    char msg[512] = "";
    int pr = parse_args(argc, argv, &c, msg, sizeof msg);
    if (pr) {
        if (rank == 0) {
            if (pr == 2)
                fprintf(stderr, "execute: %s\n", msg);
            usage(pr == 1 ? stdout : stderr);
        }
        MPI_Finalize();
        return pr == 1 ? 0 : 2;
    }
#ifdef PX_HAVE_OPENBLAS
    /* Ranks share the cores: one BLAS thread each unless the user says. */
    if (!getenv("OPENBLAS_NUM_THREADS"))
        openblas_set_num_threads(1);
#endif

    px_error err;
    px_error_clear(&err);
    px_plan plan;
    px_status st = px_plan_read(c.plan_path, &plan, &err);
    px_backend be;
    px_exec *ex = NULL;
    px_caps caps;
    px_exec_caps(c.backend, &caps);
    if (!st)
        st = px_exec_check_plan(&plan, &caps, &err);
    if (!st)
        st = px_exec_check_world(&plan, world, &err);
    memset(&be, 0, sizeof be);
    if (!st && !strcmp(c.backend, "cpu"))
        st = px_backend_cpu_create(&be, &err);
    else if (!st) {
#ifdef PX_HAVE_CUDA
        st = px_backend_cuda_create(&be, MPI_COMM_WORLD, &err);
#else
        st = px_error_set(&err, PX_ERR_UNSUPPORTED, NULL, 0, 0,
                          "--backend cuda: this build has no CUDA backend (configure with "
                          "-Dcuda=enabled on a machine with nvcc, cuBLAS and NCCL)");
#endif
    }
    if (!st)
        st = px_exec_create(&ex, &plan, &c.opt, &be, MPI_COMM_WORLD, &err);
    /* Every rank learns whether set-up failed anywhere, so no rank waits in
     * a collective for one that gave up. */
    int bad = st != PX_OK, any_bad = bad;
    if (MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        any_bad = 1;
    if (any_bad) {
        if (bad)
            print_error(rank, &err);
        px_exec_destroy(ex);
        if (be.destroy)
            be.destroy(&be);
        MPI_Finalize();
        return 1;
    }

    int64_t total = c.warmup + c.steps;
    px_run run;
    memset(&run, 0, sizeof run);
    run.steps = c.steps;
    run.warmup = c.warmup;
    run.world = world;
    run.backend = be.name;
    run.dtype = px_dtype_name(px_exec_dtype(ex));
    bool device_clock = be.timer_start && be.timer_stop;
    if (device_clock)
        run.device_time_s = calloc((size_t)total, sizeof *run.device_time_s);
    run.losses = calloc((size_t)total, sizeof *run.losses);
    run.step_time_s = calloc((size_t)total, sizeof *run.step_time_s);
    run.peak_memory_bytes = calloc((size_t)world, sizeof *run.peak_memory_bytes);
    run.peak_breakdown = calloc((size_t)world, sizeof *run.peak_breakdown);
    if (!run.losses || !run.step_time_s || !run.peak_memory_bytes || !run.peak_breakdown ||
        (device_clock && !run.device_time_s)) {
        px_error_set(&err, PX_ERR_NOMEM, NULL, 0, 0, "out of memory");
        fail_abort(rank, &err);
    }
    if (rank == 0) {
        px_measure_print_header(stdout, &plan, c.steps, c.warmup);
        printf("# storage: %s activations and weights%s\n", px_dtype_name(px_exec_dtype(ex)),
               px_exec_dtype(ex) == PX_BF16 ? " (fp32 master weights, gradients, AdamW state)"
                                            : "");
    }
    /* Test hook: PX_EXECUTE_INJECT_FAILURE="RANK:STEP" makes that rank fail
     * at the start of that step while the others enter it, to check that a
     * failure on one rank ends the job instead of hanging it. */
    int fail_rank = -1;
    long long fail_step = -1;
    const char *inject = getenv("PX_EXECUTE_INJECT_FAILURE");
    if (inject && sscanf(inject, "%d:%lld", &fail_rank, &fail_step) != 2)
        fail_rank = -1;

    for (int64_t i = 0; i < total; i++) {
        if (i == c.warmup) { /* peak memory over the timed steps */
            px_exec_reset_peak(ex);
            if (be.reset_reserved_peak)
                be.reset_reserved_peak(&be);
        }
        if (MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS) {
            px_error_set(&err, PX_ERR_MPI, NULL, 0, 0, "MPI_Barrier failed");
            fail_abort(rank, &err);
        }
        double t0 = MPI_Wtime(), loss = 0.0;
        if (rank == fail_rank && i == fail_step) {
            px_error_set(&err, PX_ERR_INTERNAL, NULL, 0, 0,
                         "injected failure at step %lld (PX_EXECUTE_INJECT_FAILURE)",
                         (long long)i);
            fail_abort(rank, &err);
        }
        if (device_clock && be.timer_start(&be, &err))
            fail_abort(rank, &err);
        if (px_exec_step(ex, i, true, &loss, &err))
            fail_abort(rank, &err);
        double dev = 0.0, dev_max = 0.0;
        if (device_clock && be.timer_stop(&be, &dev, &err))
            fail_abort(rank, &err);
        double dt = MPI_Wtime() - t0, dt_max = dt;
        int64_t peak = px_exec_memory(ex)->peak_bytes, peak_max = peak;
        if (MPI_Reduce(&dt, &dt_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD) ||
            MPI_Reduce(&peak, &peak_max, 1, MPI_INT64_T, MPI_MAX, 0, MPI_COMM_WORLD) ||
            MPI_Reduce(&dev, &dev_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD)) {
            px_error_set(&err, PX_ERR_MPI, NULL, 0, 0, "MPI_Reduce of the step numbers failed");
            fail_abort(rank, &err);
        }
        run.losses[i] = loss;
        run.step_time_s[i] = dt_max;
        if (device_clock)
            run.device_time_s[i] = dev_max;
        if (rank == 0)
            px_measure_print_step(stdout, i, i < c.warmup, loss, dt_max, &plan, peak_max);
    }

    const px_memtrack *mt = px_exec_memory(ex);
    /* per rank: tracked peak, its breakdown by kind, the device allocator's
     * reserved peak (-1 where the backend has none) */
    enum { N_MEM = 2 + PX_MEM_KINDS };
    int64_t mine[N_MEM];
    mine[0] = mt->peak_bytes;
    for (int k = 0; k < PX_MEM_KINDS; k++)
        mine[1 + k] = mt->at_peak[k];
    mine[1 + PX_MEM_KINDS] = be.reserved_peak_bytes ? be.reserved_peak_bytes(&be) : -1;
    int64_t *all = calloc((size_t)world * N_MEM, sizeof *all);
    if (be.reserved_peak_bytes)
        run.reserved_peak_bytes = calloc((size_t)world, sizeof *run.reserved_peak_bytes);
    if (!all || (be.reserved_peak_bytes && !run.reserved_peak_bytes) ||
        MPI_Gather(mine, N_MEM, MPI_INT64_T, all, N_MEM, MPI_INT64_T, 0, MPI_COMM_WORLD) !=
            MPI_SUCCESS) {
        px_error_set(&err, PX_ERR_MPI, NULL, 0, 0, "gathering the peak memory failed");
        fail_abort(rank, &err);
    }
    int status = 0;
    if (rank == 0) {
        for (int r = 0; r < world; r++) {
            run.peak_memory_bytes[r] = all[r * N_MEM];
            for (int k = 0; k < PX_MEM_KINDS; k++)
                run.peak_breakdown[r][k] = all[r * N_MEM + 1 + k];
            if (run.reserved_peak_bytes)
                run.reserved_peak_bytes[r] = all[r * N_MEM + 1 + PX_MEM_KINDS];
        }
        px_measure_measure(&run, &plan);
        /* the prediction per pipeline stage, for the per-rank table and the
         * report; without it both keep the worst-stage comparison only */
        px_error serr;
        px_error_clear(&serr);
        if (px_measure_stages(&run, &plan, &serr) != PX_OK) {
            char sm[1024];
            px_error_format(&serr, sm, sizeof sm);
            fprintf(stderr, "execute: warning: no per-stage memory prediction: %s\n", sm);
        }
        px_measure_print_summary(stdout, &run, &plan);
        if (c.report_path && px_measure_write(c.report_path, &run, &plan, c.plan_path, &err)) {
            print_error(rank, &err);
            status = 1;
        }
    }
    free(all);
    if (c.dump_dir && px_exec_dump_weights(ex, c.dump_dir, &err)) {
        print_error(rank, &err);
        status = 1;
    }
    int any = status;
    MPI_Allreduce(&status, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    px_exec_destroy(ex);
    be.destroy(&be);
    free(run.losses);
    free(run.step_time_s);
    free(run.device_time_s);
    free(run.reserved_peak_bytes);
    free(run.peak_memory_bytes);
    free(run.peak_breakdown);
    px_measure_free_stages(&run);
    MPI_Finalize();
    return any ? 1 : 0;
}
