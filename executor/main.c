/* execute — runs a plan's training step for real:
 *   mpirun -np G execute --plan plan.json [--steps N] [--warmup N] [--seed N]
 *          [--data FILE] [--report report.json] [--dump-weights DIR]
 *          [--lr X] [--adam-eps X] [--adam-beta1 X] [--adam-beta2 X] [--weight-decay X]
 *          [--weight-decay-all] [--init-std X] [--mtp-loss-scale X] [--backend cpu|cuda]
 *          [--dtype bf16|fp32]
 *          [--timeout S] [--save DIR --save-interval N] [--load DIR] [--trace FILE]
 *   mpirun -np G execute --plans DIR [the options above but the per-plan outputs]
 *   execute --check (--plan plan.json | --plans DIR) [--backend cpu|cuda]
 * Only rank 0 prints the step table; errors name the rank.  --check runs as
 * one process without mpirun: it validates the plan's own consistency and this
 * executor's capabilities and runs nothing.  See docs/executor.md. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#ifdef PX_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include "px_args.h"
#include "px_backend.h"
#ifdef PX_HAVE_CUDA
#include "px_backend_cuda.h"
#endif
#include "px_ckpt.h"
#include "px_exec.h"
#include "px_io.h"
#include "px_memtrack.h"
#include "px_measure.h"
#include "px_plan_list.h"
#include "px_trace.h"
#include "px_train.h"
#include "px_watchdog.h"

typedef struct {
    const char *plan_path, *report_path, *dump_dir, *backend, *trace_path;
    const char *plans_dir; /* --plans: every plan file of a directory, in turn */
    const char *save_dir, *load_dir; /* checkpoints (px_ckpt.h) */
    int64_t steps, warmup, save_interval;
    double timeout_s;
    bool check; /* --check: validate the plan, run nothing */
    px_exec_options opt;
} cli;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpirun -np G execute --plan plan.json [--steps N] [--warmup N] [--seed N]\n"
            "                            [--data FILE] [--report report.json]\n"
            "                            [--dump-weights DIR] [--lr X] [--adam-eps X] [--init-std X]\n"
            "                            [--adam-beta1 X] [--adam-beta2 X] [--weight-decay X]\n"
            "                            [--weight-decay-all] [--mtp-loss-scale X]\n"
            "                            [--backend cpu|cuda] [--dtype bf16|fp32] [--trace FILE]\n"
            "                            [--timeout S] [--save DIR --save-interval N]\n"
            "                            [--load DIR]\n"
            "       mpirun -np G execute --plans DIR [the options above but --report,\n"
            "                            --dump-weights, --trace, --save and --load]\n"
            "       execute --check (--plan plan.json | --plans DIR) [--backend cpu|cuda]\n"
            "  --check             validate the plan (its own consistency and what this\n"
            "                      executor runs) in one process, without mpirun; runs nothing\n"
            "  --plan FILE         plan JSON written by `plan -o` (this or --plans)\n"
            "  --plans DIR         every plan file (*.json) of DIR in name order, one after\n"
            "                      another in this launch, each with its own step table (the\n"
            "                      plans `plan --write-top DIR` writes: one GPU count); the\n"
            "                      first that fails ends the job; with --check, every one\n"
            "                      is checked\n"
            "  --steps N           timed optimizer steps (default 3); with --save or --load\n"
            "                      the job's total steps (Megatron's --train-iters): a\n"
            "                      checkpoint of step 2 with --steps 4 runs steps 3 and 4\n"
            "  --warmup N          untimed steps before them (default 1)\n"
            "  --seed N            weights and synthetic tokens (default 1)\n"
            "  --data FILE         token ids, little-endian uint32, no header (default: synthetic)\n"
            "  --report FILE       write losses, measured vs predicted numbers as JSON\n"
            "  --dump-weights DIR  write each rank's final weights (rank<R>.bin/.tsv)\n"
            "  --lr X              AdamW learning rate (default 1e-3)\n"
            "  --adam-eps X        AdamW epsilon, > 0 (default 1e-8)\n"
            "  --adam-beta1 X      AdamW beta1, 0 <= X < 1 (default 0.9)\n"
            "  --adam-beta2 X      AdamW beta2, 0 <= X < 1 (default 0.95)\n"
            "  --weight-decay X    AdamW weight decay, >= 0 (default 0.1), on the weight\n"
            "                      matrices only: norms and biases are not decayed, as\n"
            "                      Megatron-LM and the Hugging Face Trainer do\n"
            "  --weight-decay-all  decay the norms and biases too\n"
            "  --init-std X        std of the random initial weights (default 0.02)\n"
            "  --mtp-loss-scale X  lambda of the multi-token-prediction term, >= 0: the loss\n"
            "                      is the main loss + lambda / D sum_k loss_k (default 0.1,\n"
            "                      Megatron-LM's --mtp-loss-scaling-factor)\n"
            "  --backend NAME      cpu (default: BLAS + MPI) or cuda (when built with CUDA)\n"
            "  --dtype NAME        storage of activations and the weights the kernels read:\n"
            "                      bf16 (fp32 master weights, gradients and AdamW state) or\n"
            "                      fp32 (default: the plan's hardware profile, dtype_bytes 2\n"
            "                      -> bf16, 4 -> fp32)\n"
            "  --trace FILE        every rank's kernels, collectives, pipeline messages and\n"
            "                      engine spans as Chrome trace-event JSON (Perfetto; pid = rank)\n"
            "  --timeout S         seconds any one collective or point-to-point may take\n"
            "                      before the job ends, naming the rank and the operation\n"
            "                      (default 600)\n"
            "  --save DIR          write a sharded checkpoint under DIR every\n"
            "  --save-interval N   N steps (and after the last step)\n"
            "  --load DIR          resume from DIR's latest checkpoint (or an iter_* dir)\n"
            "  --version           the Parallax version\n"
            "A step whose loss or gradient norm is NaN or infinite stops the job (exit 1)\n"
            "after the report is written.\n"
            "Every option takes its value as `--flag value` or `--flag=value`, once.\n");
}

static px_status read_dtype(void *s, const char *flag, const char *v, px_error *err)
{
    if (strcmp(v, "bf16") && strcmp(v, "fp32"))
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": allowed values are bf16, fp32", flag, v);
    ((cli *)s)->opt.dtype_bytes = !strcmp(v, "bf16") ? 2 : 4;
    return PX_OK;
}

static px_status read_backend(void *s, const char *flag, const char *v, px_error *err)
{
    if (strcmp(v, "cpu") && strcmp(v, "cuda"))
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": allowed values are cpu, cuda", flag, v);
    ((cli *)s)->backend = v;
    return PX_OK;
}

static px_status read_seed(void *s, const char *flag, const char *v, px_error *err)
{
    long long x;
    px_status st = px_args_read_int(flag, v, 0, (double)(1LL << 53), &x, err);
    if (st == PX_OK)
        ((cli *)s)->opt.seed = (uint64_t)x;
    return st;
}

/* A number >= 0 into *out. */
static px_status read_nonneg(const char *flag, const char *v, float *out, px_error *err)
{
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end || !(d >= 0.0) || !isfinite((float)d))
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": is not a finite number >= 0 (a float)",
                       flag, v);
    *out = (float)d;
    return PX_OK;
}

static px_status read_timeout(void *s, const char *flag, const char *v, px_error *err)
{
    char *end = NULL;
    double d = strtod(v, &end);
    if (end == v || *end || !(d > 0.0 && d <= 1e6))
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": is not a number of seconds in (0, 1e6]",
                       flag, v);
    ((cli *)s)->timeout_s = d;
    return PX_OK;
}

static px_status read_lr(void *s, const char *flag, const char *v, px_error *err)
{
    return read_nonneg(flag, v, &((cli *)s)->opt.lr, err);
}

/* AdamW's epsilon: positive, or a zero gradient's update is 0/0. */
static px_status read_adam_eps(void *s, const char *flag, const char *v, px_error *err)
{
    float eps = 0.0f;
    PX_TRY(read_nonneg(flag, v, &eps, err));
    if (!(eps > 0.0f))
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": must be > 0 (a float)", flag, v);
    ((cli *)s)->opt.adam_eps = eps;
    return PX_OK;
}

/* AdamW's betas: in [0, 1) (1 would divide by 1 - beta^t = 0). */
static px_status read_beta(const char *flag, const char *v, float *out, px_error *err)
{
    PX_TRY(read_nonneg(flag, v, out, err));
    if (!(*out < 1.0f))
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": allowed values are 0 <= beta < 1", flag, v);
    return PX_OK;
}

static px_status read_beta1(void *s, const char *flag, const char *v, px_error *err)
{
    return read_beta(flag, v, &((cli *)s)->opt.beta1, err);
}

static px_status read_beta2(void *s, const char *flag, const char *v, px_error *err)
{
    return read_beta(flag, v, &((cli *)s)->opt.beta2, err);
}

static px_status read_weight_decay(void *s, const char *flag, const char *v, px_error *err)
{
    return read_nonneg(flag, v, &((cli *)s)->opt.weight_decay, err);
}

static px_status read_decay_all(void *s, const char *flag, const char *v, px_error *err)
{
    (void)flag, (void)v, (void)err;
    ((cli *)s)->opt.vector_wd_mult = 1.0f;
    return PX_OK;
}

static px_status read_mtp_scale(void *s, const char *flag, const char *v, px_error *err)
{
    return read_nonneg(flag, v, &((cli *)s)->opt.mtp_loss_scale, err);
}

static px_status read_init_std(void *s, const char *flag, const char *v, px_error *err)
{
    return read_nonneg(flag, v, &((cli *)s)->opt.init_std, err);
}

/* execute's options (px_args.h: one row per spelling). */
static const px_arg execute_rows[] = {
    PX_ARG_STR("--plan", cli, plan_path),
    PX_ARG_STR("--plans", cli, plans_dir),
    PX_ARG_STR("--report", cli, report_path),
    PX_ARG_STR("--data", cli, opt.data_path),
    PX_ARG_STR("--dump-weights", cli, dump_dir),
    PX_ARG_STR("--trace", cli, trace_path),
    PX_ARG_SWITCH("--check", cli, check),
    PX_ARG_CUSTOM("--dtype", read_dtype),
    PX_ARG_CUSTOM("--backend", read_backend),
    PX_ARG_I64("--steps", cli, steps, 1, (double)PX_EXEC_MAX_STEPS),
    PX_ARG_I64("--warmup", cli, warmup, 0, (double)PX_EXEC_MAX_STEPS),
    PX_ARG_CUSTOM("--seed", read_seed),
    PX_ARG_CUSTOM("--lr", read_lr),
    PX_ARG_CUSTOM("--adam-eps", read_adam_eps),
    PX_ARG_CUSTOM("--adam-beta1", read_beta1),
    PX_ARG_CUSTOM("--adam-beta2", read_beta2),
    PX_ARG_CUSTOM("--weight-decay", read_weight_decay),
    PX_ARG_CUSTOM_SWITCH("--weight-decay-all", read_decay_all),
    PX_ARG_CUSTOM("--init-std", read_init_std),
    PX_ARG_CUSTOM("--mtp-loss-scale", read_mtp_scale),
    PX_ARG_STR("--save", cli, save_dir),
    PX_ARG_STR("--load", cli, load_dir),
    PX_ARG_I64("--save-interval", cli, save_interval, 1, (double)PX_EXEC_MAX_STEPS),
    PX_ARG_CUSTOM("--timeout", read_timeout),
};

/* Returns 0 ok, 1 help, 3 version, 2 error (message in err). */
static int parse_args(int argc, char **argv, cli *c, px_error *err)
{
    memset(c, 0, sizeof *c);
    c->steps = 3;
    c->warmup = 1;
    c->timeout_s = PX_WATCHDOG_DEFAULT_TIMEOUT_S;
    c->backend = "cpu";
    px_exec_options_default(&c->opt);
    px_args_result res;
    if (px_args_parse(execute_rows, (int)(sizeof execute_rows / sizeof execute_rows[0]), argc,
                      argv, c, 0, &res, err) != PX_OK)
        return 2;
    px_args_free(&res);
    if (res.action != PX_ARGS_RUN)
        return res.action == PX_ARGS_HELP ? 1 : 3;
    if (!c->plan_path == !c->plans_dir) {
        PX_FAIL(err, PX_ERR_USAGE, "one of --plan FILE and --plans DIR is required");
        return 2;
    }
    /* one plan's outputs: a directory of plans would overwrite them */
    const char *per_plan = !c->plans_dir ? NULL
                           : c->report_path ? "--report"
                           : c->dump_dir    ? "--dump-weights"
                           : c->trace_path  ? "--trace"
                           : c->save_dir    ? "--save"
                           : c->load_dir    ? "--load"
                                            : NULL;
    if (per_plan) {
        PX_FAIL(err, PX_ERR_USAGE,
                "%s is one plan's output or input: with --plans DIR run the plans one by one "
                "(--plan FILE)",
                per_plan);
        return 2;
    }
    if ((c->save_dir != NULL) != (c->save_interval > 0)) {
        PX_FAIL(err, PX_ERR_USAGE, "--save DIR and --save-interval N go together");
        return 2;
    }
    /* the output rules (px_io.h), before a step is run */
    if ((c->report_path && px_io_check_option("--report", c->report_path, false, err)) ||
        (c->trace_path && px_io_check_option("--trace", c->trace_path, false, err)) ||
        (c->dump_dir && !c->dump_dir[0] && px_io_check_option("--dump-weights", "", true, err)) ||
        (c->save_dir && !c->save_dir[0] && px_io_check_option("--save", "", true, err)) ||
        (c->load_dir && !c->load_dir[0] &&
         PX_FAIL(err, PX_ERR_USAGE, "--load: the directory is empty (give a directory)")))
        return 2;
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

/* One plan against this executor's capability set: 0 when it would run, 1
 * when not (said on stderr, naming the file where the message does not). */
static int check_plan(const cli *c, const char *path)
{
    px_error err;
    px_error_clear(&err);
    px_plan plan;
    px_caps caps;
    px_exec_caps(c->backend, &caps);
    px_status st = px_plan_read(path, &plan, &err);
    if (st == PX_OK)
        st = px_exec_check_plan(&plan, &caps, &err);
    if (st != PX_OK) {
        char msg[2048];
        px_error_format(&err, msg, sizeof msg);
        bool named = strstr(msg, path) != NULL;
        fprintf(stderr, "execute: %s%s%s: %s\n", named ? "" : path, named ? "" : ": ",
                px_status_name(err.code), msg);
        return 1;
    }
    const px_parallel *p = &plan.par;
    printf("%s: runs on the %s: %s on %d ranks (tp %d, cp %d, pp %d, vpp %d, dp %d, ep %d, "
           "etp %d, %s, zero %d)\n",
           path, caps.name, plan.model.name, px_parallel_gpus(p), p->tp, p->cp, p->pp,
           p->vpp, p->dp, p->ep, p->etp, px_schedule_name(p->schedule), p->zero);
    return 0;
}

/* execute --check: the plan, or every plan of --plans DIR, against this
 * executor's capability set, in one process without MPI.  Exit 0 when each
 * would run, 1 when one would not or the directory has no plan. */
static int check_only(const cli *c)
{
    if (!c->plans_dir)
        return check_plan(c, c->plan_path);
    char **paths = NULL;
    int n = 0, bad = 0;
    px_error err;
    px_error_clear(&err);
    if (px_plan_list(c->plans_dir, &paths, &n, &err) != PX_OK) {
        char msg[2048];
        px_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "execute: %s: %s\n", px_status_name(err.code), msg);
        return 1;
    }
    for (int i = 0; i < n; i++)
        bad |= check_plan(c, paths[i]);
    px_plan_list_free(paths, n);
    return bad;
}

/* The result of parse_args that is not a run: the error (2), the version
 * (3) or the help (1). */
static void say_parse_result(int pr, const px_error *perr)
{
    if (pr == 2) {
        char msg[2048];
        px_args_error_text("execute", perr, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    } else if (pr == 3) {
        printf("execute (parallax) %s\n", px_version());
    } else if (pr == 1) {
        usage(stdout);
    }
}

/* The backend --backend names, every blocking communication from then on
 * bounded by --timeout (px_watchdog.h). */
static px_status start_backend(const cli *c, int rank, px_backend *be, px_error *err)
{
    px_status st;
    if (!strcmp(c->backend, "cpu"))
        st = px_backend_cpu_create(be, err);
    else {
#ifdef PX_HAVE_CUDA
        st = px_backend_cuda_create(be, MPI_COMM_WORLD, err);
#else
        st = px_error_set(err, PX_ERR_UNSUPPORTED, NULL, 0, 0,
                          "--backend cuda: this build has no CUDA backend (configure with "
                          "-Dcuda=enabled on a machine with nvcc, cuBLAS and NCCL)");
#endif
    }
    int world = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (!st)
        st = px_watchdog_start(c->timeout_s, rank, world, err);
    if (!st)
        px_watchdog_wrap_backend(be);
#ifdef PX_HAVE_CUDA
    if (!st && !strcmp(c->backend, "cuda"))
        px_watchdog_set_abort_hook(px_backend_cuda_abort, NULL);
#endif
    return st;
}

/* Rank 0's summary and report, every rank's trace and weights: 0, or 1
 * when one of them could not be written. */
static int write_outputs(const cli *c, px_run *run, const px_plan *plan, px_trace *trace,
                         px_exec *ex, int rank)
{
    px_error err;
    px_error_clear(&err);
    int status = 0;
    if (rank == 0) {
        px_measure_measure(run, plan);
        /* the prediction per pipeline stage, for the per-rank table and the
         * report; without it both keep the worst-stage comparison only */
        px_error serr;
        px_error_clear(&serr);
        if (px_measure_stages(run, plan, &serr) != PX_OK) {
            char sm[1024];
            px_error_format(&serr, sm, sizeof sm);
            fprintf(stderr, "execute: warning: no per-stage memory prediction: %s\n", sm);
        }
        px_measure_print_summary(stdout, run, plan);
        if (c->report_path && px_measure_write(c->report_path, run, plan, c->plan_path, &err)) {
            print_error(rank, &err);
            status = 1;
        }
    }
    if (c->trace_path && px_trace_write(trace, c->trace_path, MPI_COMM_WORLD, &err)) {
        if (rank == 0)
            print_error(rank, &err);
        status = 1;
    }
    if (c->dump_dir && px_exec_dump_weights(ex, c->dump_dir, &err)) {
        print_error(rank, &err);
        status = 1;
    }
    return status;
}

/* What one run holds from set-up to teardown. */
typedef struct {
    px_plan plan;
    px_backend be;
    px_exec *ex;
    px_trace trace;
    bool traced;
} job;

/* Releases what set_up made: the tracer last (the backend's table points
 * into it). */
static void job_free(job *j)
{
    px_exec_destroy(j->ex);
    if (j->be.destroy)
        j->be.destroy(&j->be);
    px_watchdog_stop();
    if (j->traced)
        px_trace_free(&j->trace);
}

/* The environment's test switches and thread count.  PX_EXECUTE_INJECT_NAN
 * = "RANK:STEP" makes that rank's loss and gradients NaN at that step, to
 * test the divergence stop; ranks share the cores, so one BLAS thread each
 * unless the user says. */
static void apply_environment(cli *c, int rank)
{
    const char *inject_nan = getenv("PX_EXECUTE_INJECT_NAN");
    int nan_rank = -1;
    long long nan_step = -1;
    if (inject_nan && sscanf(inject_nan, "%d:%lld", &nan_rank, &nan_step) == 2 &&
        nan_rank == rank)
        c->opt.inject_nan_step = nan_step;
#ifdef PX_HAVE_OPENBLAS
    if (!getenv("OPENBLAS_NUM_THREADS"))
        openblas_set_num_threads(1);
#endif
}

/* Reads and checks the plan, starts the backend, the tracer and the
 * engine, then loads the checkpoint (*start: the steps it has done).  Every
 * rank learns whether set-up failed anywhere, so no rank waits in a
 * collective for one that gave up.  Returns false (this rank's error
 * printed where it failed here) when set-up failed on some rank. */
static bool set_up(const cli *c, int rank, int world, job *j, int64_t *start)
{
    px_error err;
    px_error_clear(&err);
    px_status st = px_plan_read(c->plan_path, &j->plan, &err);
    px_caps caps;
    px_exec_caps(c->backend, &caps);
    if (!st)
        st = px_exec_check_plan(&j->plan, &caps, &err);
    if (!st)
        st = px_exec_check_world(&j->plan, world, &err);
    if (!st)
        st = start_backend(c, rank, &j->be, &err);
    /* The tracer (px_trace.h): class sums for the report on a synchronous
     * backend (no device clock), and every span with --trace. */
    if (!st && (c->trace_path || !j->be.timer_start)) {
        st = px_trace_attach(&j->trace, &j->be, c->trace_path != NULL, &err);
        j->traced = st == PX_OK;
    }
    if (!st)
        st = px_exec_create(&j->ex, &j->plan, &c->opt, &j->be, MPI_COMM_WORLD, &err);
    int bad = st != PX_OK, any_bad = bad;
    px_watchdog_enter("MPI_Allreduce (set-up status)");
    if (MPI_Allreduce(&bad, &any_bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        any_bad = 1;
    px_watchdog_leave();
    *start = 0;
    if (!any_bad && c->load_dir) {
        st = px_ckpt_load(j->ex, c->load_dir, start, &err);
        bad = any_bad = st != PX_OK; /* px_ckpt_load agrees across the ranks */
    }
    if (bad)
        print_error(rank, &err);
    return !any_bad;
}

/* Steps [start, *end): warmup + steps, or with checkpoints --steps in all
 * (Megatron's --train-iters), the first *warmup of this run untimed.  False
 * (said on rank 0) when no step is left to run. */
static bool step_range(const cli *c, int rank, int64_t start, int64_t *end, int64_t *warmup)
{
    bool ckpt = c->save_dir || c->load_dir;
    *end = ckpt ? c->steps : c->warmup + c->steps;
    if (*end <= start) {
        if (rank == 0)
            fprintf(stderr, "execute: the checkpoint in %s is at step %lld: --steps %lld (the "
                            "total, with --load) leaves no step to run\n",
                    c->load_dir, (long long)start, (long long)c->steps);
        return false;
    }
    int64_t total = *end - start;
    *warmup = !ckpt ? c->warmup : (c->warmup < total ? c->warmup : total - 1);
    return true;
}

/* The timed run (px_train.h) and its outputs; returns the exit status all
 * ranks agree on.  A failure inside a step ends the whole job. */
static int train(const cli *c, job *j, int rank, int world, int64_t start, int64_t end,
                 int64_t warmup)
{
    /* Test hook: PX_EXECUTE_INJECT_FAILURE="RANK:STEP" makes that rank fail
     * at the start of that step while the others enter it, to check that a
     * failure on one rank ends the job instead of hanging it. */
    int fail_rank = -1;
    long long fail_step = -1;
    const char *inject = getenv("PX_EXECUTE_INJECT_FAILURE");
    if (inject && sscanf(inject, "%d:%lld", &fail_rank, &fail_step) != 2)
        fail_rank = -1;
    px_train t = {.ex = j->ex, .be = &j->be, .plan = &j->plan,
                  .trace = j->traced ? &j->trace : NULL, .rank = rank, .world = world,
                  .start = start, .end = end, .warmup = warmup, .trace_warmup = c->warmup,
                  .save_dir = c->save_dir, .save_interval = c->save_interval,
                  .fail_rank = fail_rank, .fail_step = fail_step,
                  .out = rank == 0 ? stdout : NULL};
    px_error err;
    px_error_clear(&err);
    px_run run;
    if (px_train_run_init(&t, &run, &err))
        fail_abort(rank, &err);
    if (rank == 0) {
        px_exec *ex = j->ex;
        px_measure_print_header(stdout, &j->plan, run.steps, run.warmup);
        printf("# storage: %s activations and weights%s\n", px_dtype_name(px_exec_dtype(ex)),
               px_exec_dtype(ex) == PX_BF16 ? " (fp32 master weights, gradients, AdamW state)"
                                            : "");
        if (j->plan.model.n_mtp_modules > 0) /* what the loss column holds */
            printf("# multi-token prediction: %lld modules; loss = main + %g / %lld x the sum "
                   "of their losses (report: mtp_losses)\n",
                   (long long)j->plan.model.n_mtp_modules, (double)c->opt.mtp_loss_scale,
                   (long long)j->plan.model.n_mtp_modules);
        const px_finetune *ft = &j->plan.par.finetune;
        if (px_finetune_is_lora(ft)) {
            char targets[64];
            px_lora_targets_format(ft->targets, targets, sizeof targets);
            printf("# finetune: lora rank %d, alpha %g, targets %s (base frozen, adapters "
                   "trained)\n",
                   ft->rank, ft->alpha, targets);
        }
    }
    if (px_train_steps(&t, &run, &err) || px_train_gather(&t, &run, &err))
        fail_abort(rank, &err);
    int status = write_outputs(c, &run, &j->plan, j->traced ? &j->trace : NULL, j->ex, rank);
    if (run.diverged_step >= 0)
        status = 1;
    int any = status;
    px_watchdog_enter("MPI_Allreduce (exit status)");
    MPI_Allreduce(&status, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    px_watchdog_leave();
    px_train_run_free(&run);
    return any;
}

/* One plan from set-up to teardown: the exit status every rank agrees on
 * (0, 1 failed, 2 no step to run). */
static int run_plan(const cli *c, int rank, int world)
{
    job *j = calloc(1, sizeof *j); /* the plan is large: off the stack */
    if (!j) {
        fprintf(stderr, "execute: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    int64_t start = 0, end = 0, warmup = 0;
    int code = !set_up(c, rank, world, j, &start)             ? 1
               : !step_range(c, rank, start, &end, &warmup) ? 2
               : train(c, j, rank, world, start, end, warmup) ? 1
                                                              : 0;
    job_free(j);
    free(j);
    return code;
}

/* --plans DIR: every rank lists the directory itself, as it reads each plan
 * file itself (set_up), and the ranks agree on the count before any plan
 * runs.  False (rank 0 says why) when a rank lists none or the counts
 * differ. */
static bool plan_list_all_ranks(const char *dir, int rank, char ***paths, int *n)
{
    px_error err;
    px_error_clear(&err);
    if (px_plan_list(dir, paths, n, &err) != PX_OK) {
        *paths = NULL;
        *n = -1;
    }
    int mine = *n, lo = 0, hi = 0;
    MPI_Allreduce(&mine, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&mine, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (lo == hi && lo >= 0)
        return true;
    if (rank == 0 && mine < 0)
        print_error(rank, &err);
    else if (rank == 0)
        fprintf(stderr, "execute: %s: the ranks do not list the same plan files (%d here, "
                "%s on another rank): give every rank the same directory\n", dir, mine,
                lo < 0 ? "none" : "a different count");
    px_plan_list_free(*paths, mine > 0 ? mine : 0);
    *paths = NULL;
    *n = 0;
    return false;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--check")) { /* no MPI: one process, no launcher */
            cli c;
            px_error perr;
            int pr = parse_args(argc, argv, &c, &perr);
            say_parse_result(pr, &perr);
            return pr == 2 ? 2 : pr ? 0 : check_only(&c);
        }
    /* Funneled: the optimizer-offload thread (px_host_step.c) makes no MPI
     * call. */
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = 0, world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);

    cli c;
    px_error perr;
    int pr = parse_args(argc, argv, &c, &perr);
    if (pr) {
        if (rank == 0)
            say_parse_result(pr, &perr);
        MPI_Finalize();
        return pr == 2 ? 2 : 0;
    }
    apply_environment(&c, rank);

    int code = 0;
    if (!c.plans_dir) {
        code = run_plan(&c, rank, world);
    } else {
        char **paths = NULL;
        int n = 0;
        code = plan_list_all_ranks(c.plans_dir, rank, &paths, &n) ? 0 : 1;
        for (int i = 0; i < n && !code; i++) {
            c.plan_path = paths[i];
            if (rank == 0)
                printf("%s# plan %d of %d: %s\n", i ? "\n" : "", i + 1, n, paths[i]);
            code = run_plan(&c, rank, world);
        }
        c.plan_path = NULL;
        px_plan_list_free(paths, n);
    }
    px_error out_err;
    if (rank == 0 && px_io_flush_stdout(&out_err) != PX_OK) {
        fprintf(stderr, "execute: error: %s\n", out_err.msg);
        code = code ? code : 1;
    }
    MPI_Finalize();
    return code;
}
