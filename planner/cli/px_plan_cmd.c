/* px_plan_cmd.c — the `plan` command as a library call: read the command
 * line, search the parallel configurations of a model on G GPUs of a
 * hardware profile, print them ranked (or as JSON), explain the chosen one
 * and write it as a plan file.  build/plan's main and the C API (and so the
 * Python package) run this same code. */
#include "px_plan_cmd.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_args.h"
#include "px_cost.h"
#include "px_cost_precision.h"
#include "px_framework.h"
#include "px_html.h"
#include "px_partition_refine.h"
#include "px_plan_json.h"
#include "px_plan_predict.h"
#include "px_run_cost.h"
#include "px_search.h"
#include "px_search_plan.h"
#include "px_sweep.h"
#include "px_validate.h"

/* PX_SEARCH_TOP_MAX as text for the usage string (it is a plain number) */
#define PX_STR_(x) #x
#define PX_STR(x) PX_STR_(x)
#define PX_TOP_MAX_STR PX_STR(PX_SEARCH_TOP_MAX)

static const char usage_text[] =
    "usage: plan --model NAME|FILE --gpus G [options]\n"
    "       plan --validate [FILE] [--json] [--check]   (as build/validate: docs/validation.md)\n"
    "       plan --list-models | --list-hw | --version\n"
    "\n"
    "Searches every valid way to split the training of a model over G GPUs and\n"
    "ranks them by the predicted step time (docs/cost-model.md).  Every option\n"
    "takes its value as `--flag value` or `--flag=value`, once.\n"
    "\n"
    "  --model NAME|FILE      model preset (models/), or a preset / Hugging Face config.json\n"
    "  --gpus G               number of GPUs\n"
    "  --hw NAME|FILE         hardware profile (hw_profiles/; default " PX_HW_DEFAULT ")\n"
    "  --framework NAME|FILE  the framework that will run the plan (frameworks/: parallax,\n"
    "                         megatron, torchtitan, llm-foundry, maxtext, deepspeed; default\n"
    "                         " PX_FRAMEWORK_DEFAULT ", this project's executor): only what it can run is\n"
    "                         searched, costed as it runs it (docs/framework-schema.md)\n"
    "  --seq S                sequence length (default: the model's); alias --seq-len\n"
    "  --global-batch SEQS    global batch in sequences (default: 2^24 tokens / S for 70B\n"
    "                         parameters and more, scaled by sqrt(N / 70e9) below; moved to\n"
    "                         the nearest the fixed layout divides, said so)\n"
    "  --tokens-per-step T    global batch in tokens\n"
    "  --tp N --cp N --ep N --etp N --pp N --vpp N --dp N\n"
    "                         fix a parallel dimension (etp: expert tensor parallel)\n"
    "  --shard-group N        ZeRO-3 hybrid sharding: shard within groups of N data-parallel\n"
    "                         ranks, replicate across them (frameworks with hybrid_shard)\n"
    "  --micro-batch N        fix the micro-batch size (sequences); alias --mbs\n"
    "  --micro-batches N      fix the micro-batches per step per replica (m)\n"
    "  --zero 0..3            fix the ZeRO stage\n"
    "  --recompute none|selective|full\n"
    "  --schedule gpipe|1f1b|interleaved|zb-h1|zb-h2\n"
    "  --grad-dtype bf16|fp32 gradient dtype (default fp32 main gradients)\n"
    "  --precision P          number format of the layers' GEMMs: bf16 (default), fp16,\n"
    "                         fp8, fp8-cs, fp8-rowwise, fp8-block, mxfp8, nvfp4; refused\n"
    "                         when the profile has no tensor-core path for it\n"
    "  --cp-comm p2p|all-gather|a2a\n"
    "                         CP attention communication (default p2p: ring)\n"
    "  --no-sp                sequence parallelism off (default on when TP > 1); --sp on|off\n"
    "  --overlap on|off       gradient reduction and backward TP collectives hidden under\n"
    "                         the backward (default: the framework's overlap traits; off\n"
    "                         for `execute` on CPUs, which runs them after the compute)\n"
    ;
/* (two strings: C11 compilers need to take only 4095 characters in one) */
static const char usage_text_2[] =
    "  --framework-release R  the framework as its release R ran (the profile's \"releases\":\n"
    "                         megatron 2020, 2021, 2022, nemo-24.03, nemo-25.09, ...; none =\n"
    "                         as it runs today, the default); docs/validation.md\n"
    "  --partition milp|uniform|glpk\n"
    "                         stage split and per-layer recompute of the top candidates:\n"
    "                         chosen by the GLPK program (default; docs/partition.md) or\n"
    "                         uniform layers per stage; --no-milp = --partition uniform;\n"
    "                         glpk: the program with every pass in GLPK (no exact DP)\n"
    "  --milp-time-limit S    GLPK time limit per candidate, seconds (default 0.5,\n"
    "                         0.05 for interleaved candidates)\n"
    "  --milp-budget S        all candidates' programs together, seconds (default 1); the\n"
    "                         candidates left when it is spent keep their uniform split\n"
    "  --top K                rows in the table (default 10, at most " PX_TOP_MAX_STR "); with\n"
    "                         the GLPK program on, K rows whenever K configurations fit\n"
    "  --tokens D             time to train D tokens, with goodput (suffixes K M B T)\n"
    "  --gpu-mtbf-hours H     per-GPU mean time between failures (default: the profile's)\n"
    "  --price-per-gpu-hour P US dollars per GPU-hour for the --tokens cost (default: the\n"
    "                         profile's price_per_gpu_hour, docs/hw-schema.md)\n"
    "  --explain              memory and time breakdown, rule-of-thumb plan beside the best\n"
    "  --html FILE            write a self-contained HTML report: the chosen plan's pipeline\n"
    "                         timeline, per-stage memory, time breakdown, the top plans\n"
    "  --json                 print JSON instead of the table\n"
    "  --threads N            threads of the search (default: the processors; the result\n"
    "                         is the same for any N)\n"
    "  --sweep-gpus A..B      the best plan for each GPU count A, 2A, 4A, ... up to B (or a\n"
    "                         list G1,G2,...), a table or (--json) an array; no --gpus\n"
    "  -o FILE                write the chosen plan (docs/plan-schema.md); alias --output\n"
    "  --write-top DIR        write every ranked plan too, as DIR/rank-<N>.json\n"
    "  --list-models          the model presets and their aliases\n"
    "  --list-hw              the hardware profiles\n"
    "  --version              the Parallax version\n"
    "  --help                 this text\n";

/* What the command line asks for. */
typedef struct {
    const char *model, *hw, *out, *framework;
    const char *framework_release; /* --framework-release; NULL: none */
    const char *html;          /* --html FILE */
    double price_per_gpu_hour; /* --price-per-gpu-hour; 0: the profile's */
    int gpus;
    bool json, explain, list_models, list_hw;
    bool partition_given; /* --partition or --no-milp on the command line */
    px_search_opts opts;
    const char *sweep;    /* --sweep-gpus */
    const char *top_dir;  /* --write-top */
} plan_cli;

/* ---- readers of the options whose values are words ---- */

static px_status read_tokens_per_step(void *s, const char *flag, const char *v, px_error *err)
{
    double x;
    px_status st = px_args_read_amount(flag, v, &x, err);
    if (st != PX_OK)
        return st;
    /* bounded before it becomes an integer */
    if (x > (double)PX_SEARCH_MAX_TOKENS_PER_STEP)
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": out of range (allowed: 1..%lld tokens, 2^50)",
                       flag, v, (long long)PX_SEARCH_MAX_TOKENS_PER_STEP);
    ((plan_cli *)s)->opts.tokens_per_step = (int64_t)llround(x);
    return PX_OK;
}

static px_status read_recompute(void *s, const char *flag, const char *v, px_error *err)
{
    px_recompute r;
    px_error e;
    if (px_recompute_parse(v, &r, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s \"%s\": allowed values are none, selective, full", flag, v);
    ((plan_cli *)s)->opts.recompute = (int)r;
    return PX_OK;
}

static px_status read_schedule(void *s, const char *flag, const char *v, px_error *err)
{
    px_schedule sc;
    px_error e;
    if (px_schedule_parse(v, &sc, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s \"%s\": allowed values are gpipe, 1f1b, interleaved, zb-h1, zb-h2",
                       flag, v);
    ((plan_cli *)s)->opts.schedule = (int)sc;
    return PX_OK;
}

static px_status read_grad_dtype(void *s, const char *flag, const char *v, px_error *err)
{
    px_search_opts *o = &((plan_cli *)s)->opts;
    if (!strcmp(v, "bf16"))
        o->grad_fp32 = 0;
    else if (!strcmp(v, "fp32"))
        o->grad_fp32 = 1;
    else
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": allowed values are bf16, fp32", flag, v);
    return PX_OK;
}

static px_status read_precision(void *s, const char *flag, const char *v, px_error *err)
{
    px_error e;
    if (px_precision_parse(v, &((plan_cli *)s)->opts.precision, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: %s", flag, e.msg);
    return PX_OK;
}

static px_status read_cp_comm(void *s, const char *flag, const char *v, px_error *err)
{
    px_error e;
    if (px_cp_comm_parse(v, &((plan_cli *)s)->opts.cp_comm, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: %s", flag, e.msg);
    return PX_OK;
}

static px_status read_overlap(void *s, const char *flag, const char *v, px_error *err)
{
    px_search_opts *o = &((plan_cli *)s)->opts;
    int on;
    px_status st = px_args_read_on_off(flag, v, &on, err);
    if (st == PX_OK)
        o->dp_overlap = o->tp_overlap = on;
    return st;
}

static px_status read_sp(void *s, const char *flag, const char *v, px_error *err)
{
    return px_args_read_on_off(flag, v, &((plan_cli *)s)->opts.sp, err);
}

static px_status read_partition(void *s, const char *flag, const char *v, px_error *err)
{
    plan_cli *c = s;
    c->opts.milp_glpk_only = !strcmp(v, "glpk");
    if (!strcmp(v, "milp") || !strcmp(v, "glpk"))
        c->opts.milp = true;
    else if (!strcmp(v, "uniform"))
        c->opts.milp = false;
    else
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": allowed values are milp, uniform, glpk",
                       flag, v);
    c->partition_given = true;
    return PX_OK;
}

/* Seconds in (0, 3600] (the partition program's limits). */
static px_status read_seconds(const char *flag, const char *v, double *out, px_error *err)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x > 0.0) || x > 3600.0)
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": expected seconds in (0, 3600]", flag, v);
    *out = x;
    return PX_OK;
}

static px_status read_milp_time_limit(void *s, const char *flag, const char *v, px_error *err)
{
    return read_seconds(flag, v, &((plan_cli *)s)->opts.milp_time_limit_s, err);
}

static px_status read_milp_budget(void *s, const char *flag, const char *v, px_error *err)
{
    return read_seconds(flag, v, &((plan_cli *)s)->opts.milp_budget_s, err);
}

/* Every option of `plan`, one row per spelling (px_args.h).  The first
 * spelling of an option is the one messages use. */
#define BIG (double)(1LL << 40)
static const px_arg plan_rows[] = {
    PX_ARG_STR("--model", plan_cli, model),
    PX_ARG_STR("--hw", plan_cli, hw),
    PX_ARG_STR("--framework", plan_cli, framework),
    PX_ARG_STR("--framework-release", plan_cli, framework_release),
    PX_ARG_STR("-o", plan_cli, out),
    PX_ARG_ALIAS("--output", "-o"),
    PX_ARG_INT("--gpus", plan_cli, gpus, 1, 1 << 24),
    PX_ARG_I64("--seq", plan_cli, opts.seq_len, 1, BIG),
    PX_ARG_ALIAS("--seq-len", "--seq"),
    PX_ARG_I64("--global-batch", plan_cli, opts.global_batch, 1, BIG),
    PX_ARG_CUSTOM("--tokens-per-step", read_tokens_per_step),
    PX_ARG_INT("--tp", plan_cli, opts.tp, 1, 1 << 20),
    PX_ARG_INT("--cp", plan_cli, opts.cp, 1, 1 << 20),
    PX_ARG_INT("--ep", plan_cli, opts.ep, 1, 1 << 20),
    PX_ARG_INT("--etp", plan_cli, opts.etp, 1, 1 << 20),
    PX_ARG_INT("--pp", plan_cli, opts.pp, 1, 1 << 20),
    PX_ARG_INT("--vpp", plan_cli, opts.vpp, 1, 1 << 10),
    PX_ARG_INT("--dp", plan_cli, opts.dp, 1, 1 << 24),
    PX_ARG_INT("--shard-group", plan_cli, opts.shard_group, 1, 1 << 20),
    PX_ARG_I64("--micro-batch", plan_cli, opts.micro_batch, 1, BIG),
    PX_ARG_ALIAS("--mbs", "--micro-batch"),
    PX_ARG_I64("--micro-batches", plan_cli, opts.n_micro, 1, BIG),
    PX_ARG_INT("--zero", plan_cli, opts.zero, 0, 3),
    PX_ARG_CUSTOM("--recompute", read_recompute),
    PX_ARG_CUSTOM("--schedule", read_schedule),
    PX_ARG_CUSTOM("--grad-dtype", read_grad_dtype),
    PX_ARG_CUSTOM("--precision", read_precision),
    PX_ARG_CUSTOM("--cp-comm", read_cp_comm),
    PX_ARG_CUSTOM("--overlap", read_overlap),
    PX_ARG_CUSTOM("--sp", read_sp),
    PX_ARG_MEANS("--no-sp", "--sp", "off"),
    PX_ARG_CUSTOM("--partition", read_partition),
    PX_ARG_MEANS("--no-milp", "--partition", "uniform"),
    PX_ARG_CUSTOM("--milp-time-limit", read_milp_time_limit),
    PX_ARG_CUSTOM("--milp-budget", read_milp_budget),
    PX_ARG_INT("--top", plan_cli, opts.top, 1, PX_SEARCH_TOP_MAX),
    PX_ARG_AMOUNT("--tokens", plan_cli, opts.train_tokens),
    PX_ARG_AMOUNT("--gpu-mtbf-hours", plan_cli, opts.gpu_mtbf_hours),
    PX_ARG_AMOUNT("--price-per-gpu-hour", plan_cli, price_per_gpu_hour),
    PX_ARG_STR("--html", plan_cli, html),
    PX_ARG_SWITCH("--explain", plan_cli, explain),
    PX_ARG_SWITCH("--json", plan_cli, json),
    PX_ARG_INT("--threads", plan_cli, opts.threads, 1, PX_SEARCH_THREADS_MAX),
    PX_ARG_STR("--sweep-gpus", plan_cli, sweep),
    PX_ARG_STR("--write-top", plan_cli, top_dir),
    PX_ARG_SWITCH("--list-models", plan_cli, list_models),
    PX_ARG_SWITCH("--list-hw", plan_cli, list_hw),
};
enum { N_PLAN_ROWS = sizeof plan_rows / sizeof plan_rows[0] };

void px_plan_option_names_json(char *buf, size_t buf_len)
{
    px_args_names_json(plan_rows, N_PLAN_ROWS, buf, buf_len);
}

int px_plan_option_takes_value(const char *name)
{
    return px_args_takes_value(plan_rows, N_PLAN_ROWS, name);
}

/* Reads argv into c; *action says whether to run, or print help/version. */
static px_status parse_args(int argc, char **argv, bool model_given, plan_cli *c,
                            px_args_action *action, px_error *err)
{
    memset(c, 0, sizeof *c);
    c->hw = PX_HW_DEFAULT;
    px_search_opts_init(&c->opts);
    px_args_result res;
    px_status st = px_args_parse(plan_rows, N_PLAN_ROWS, argc, argv, c, 0, &res, err);
    if (st != PX_OK)
        return st;
    *action = res.action;
    px_args_free(&res);
    if (*action != PX_ARGS_RUN || c->list_models || c->list_hw)
        return PX_OK;
    if (model_given && c->model)
        return PX_FAIL(err, PX_ERR_USAGE, "--model \"%s\" given beside a model object: give "
                                          "one of them", c->model);
    if (!c->model && !model_given)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "--model is required (a preset name such as 70b, or a config.json)");
    if (c->sweep && c->gpus > 0)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "--sweep-gpus and --gpus both set the GPU count: give one of them");
    if (c->sweep && c->out)
        return PX_FAIL(err, PX_ERR_USAGE, "-o writes one plan; --sweep-gpus makes one per GPU "
                                          "count: leave -o out");
    if (c->gpus < 1 && !c->sweep)
        return PX_FAIL(err, PX_ERR_USAGE, "--gpus is required (a positive integer)");
    if (c->opts.global_batch > 0 && c->opts.tokens_per_step > 0)
        return PX_FAIL(err, PX_ERR_USAGE, "--global-batch and --tokens-per-step both set the "
                                          "global batch: give one of them");
    return PX_OK;
}

/* ------------------------------------------------------------------ */
/* people's output                                                     */

static double gb(double bytes) { return bytes / 1e9; }

/* The recompute column: the uniform choice, or "mixed" when the partition
 * program chose per layer and the layers differ. */
static const char *recompute_label(const px_parallel *p)
{
    for (int i = 1; i < p->n_layer_recompute; i++)
        if (p->layer_recompute[i] != p->layer_recompute[0])
            return "mixed";
    if (p->n_layer_recompute > 0 && p->layer_recompute[0] < PX_RECOMPUTE_COUNT)
        return px_recompute_name((px_recompute)p->layer_recompute[0]);
    return px_recompute_name(p->recompute);
}

/* "8,9,9,6" or "uniform" */
static void split_label(const px_parallel *p, char *buf, size_t n)
{
    if (p->n_chunks <= 0) {
        snprintf(buf, n, "uniform");
        return;
    }
    size_t len = 0;
    buf[0] = '\0';
    for (int c = 0; c < p->n_chunks && len + 8 < n; c++)
        len += (size_t)snprintf(buf + len, n - len, "%s%d", c ? "," : "", p->layers_per_chunk[c]);
}

static void layer_counts(const px_parallel *p, int64_t n_layers, int counts[PX_RECOMPUTE_COUNT])
{
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
        counts[r] = 0;
    for (int64_t i = 0; i < n_layers; i++) {
        int r = i < p->n_layer_recompute ? p->layer_recompute[i] : (int)p->recompute;
        counts[r < PX_RECOMPUTE_COUNT ? r : 0]++;
    }
}

static void print_row(FILE *out, const char *label, const px_candidate *c, bool chosen)
{
    const px_parallel *p = &c->par;
    const px_prediction *q = &c->pred;
    fprintf(out, "%4s %4d %3d %3d %3d %3d %3d %5d %4lld %5lld %4d %-9s %-11s %-3s %9.1f %8.3f %10.4g %5.1f%% %s\n",
           label, p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
           (long long)p->n_micro, p->zero, recompute_label(p),
           px_schedule_name(p->schedule), p->sp ? "on" : "off", gb((double)q->mem.total),
           q->time.step_s, q->tokens_per_s, 100.0 * q->mfu, chosen ? "*" : "");
}

static void print_header(FILE *out)
{
    fprintf(out, "%4s %4s %3s %3s %3s %3s %3s %5s %4s %5s %4s %-9s %-11s %-3s %9s %8s %10s %6s %s\n",
           "rank", "TP", "CP", "EP", "ETP", "PP", "VPP", "DP", "mbs", "m", "ZeRO", "recompute",
           "schedule", "SP", "mem[GB]", "step[s]", "tokens/s", "MFU", "chosen");
}

/* One communication kind of the cost detail, for the table and the JSON. */
typedef struct {
    const char *label, *key; /* "TP/SP" in the table, "tp" in the JSON */
    double tot, exp, bytes;
    bool cross;
} comm_row;
enum { N_COMM_KINDS = 5 };

static void comm_rows(const px_cost_detail *d, comm_row rows[N_COMM_KINDS])
{
    const comm_row r[N_COMM_KINDS] = {
        {"TP/SP", "tp", d->tp_total_s, d->tp_exposed_s, d->tp_bytes_per_step, d->tp_crosses},
        {"CP ring", "cp", d->cp_total_s, d->cp_exposed_s, d->cp_bytes_per_step, d->cp_crosses},
        {"EP a2a", "ep", d->ep_total_s, d->ep_exposed_s, d->ep_bytes_per_step, d->ep_crosses},
        {"PP p2p", "pp", d->pp_total_s, d->pp_exposed_s, d->pp_bytes_per_step, d->pp_crosses},
        {"DP/ZeRO", "dp", d->dp_total_s, d->dp_exposed_s, d->dp_bytes_per_step, d->dp_crosses},
    };
    memcpy(rows, r, sizeof r);
}

static void explain(FILE *out, px_cost_ctx *ctx, const px_candidate *c, const px_search_result *res,
                    const px_hw *hw)
{
    px_cost_detail d;
    px_prediction pr;
    px_cost_eval(ctx, &c->par, c->pred.train_tokens, 0.0, &pr, &d, NULL);
    const px_memory *m = &pr.mem;
    fprintf(out, "\n# memory per GPU, worst stage (stage %d of %d), GB (1e9 bytes)\n", m->worst_stage,
           c->par.pp);
    fprintf(out, "  %-34s %10.2f\n", "weights", gb((double)m->weights));
    fprintf(out, "  %-34s %10.2f   (%s)\n", "gradients", gb((double)m->grads),
           c->par.grad_fp32 ? "fp32 main gradients" : "bf16");
    fprintf(out, "  %-34s %10.2f   (ZeRO-%d)\n", "optimizer state", gb((double)m->optimizer),
           c->par.zero);
    fprintf(out, "  %-34s %10.2f   (%.2f micro-batches in flight, %.1f MB a layer)\n",
           "activations", gb((double)m->activations), d.inflight, d.layer_act_bytes / 1e6);
    fprintf(out, "    %-32s %10.2f\n", "attention", gb(d.act_attention));
    fprintf(out, "    %-32s %10.2f\n", "MLP", gb(d.act_mlp));
    fprintf(out, "    %-32s %10.2f\n", "norms", gb(d.act_norm));
    fprintf(out, "  %-34s %10.2f\n", "buffers", gb((double)m->buffers));
    fprintf(out, "    %-32s %10.2f\n", "embedding output", gb(d.buf_embedding));
    fprintf(out, "    %-32s %10.2f\n", "final norm + head input", gb(d.buf_final_norm));
    fprintf(out, "    %-32s %10.2f\n", "logits (fp32, current)", gb(d.buf_logits));
    fprintf(out, "    %-32s %10.2f\n", "loss softmax (fp32)", gb(d.buf_loss));
    fprintf(out, "    %-32s %10.2f\n", "recompute working set", gb(d.buf_recompute));
    fprintf(out, "    %-32s %10.2f\n", "p2p / ZeRO-3 gather", gb(d.buf_p2p));
    fprintf(out, "    %-32s %10.2f\n", "zero-bubble grads kept B->W", gb(d.buf_zb_grads));
    fprintf(out, "  %-34s %10.2f   of %.2f usable (%.2f HBM - %.2f reserve)\n", "total",
           gb((double)m->total), gb((double)res->mem_limit_bytes), gb((double)hw->hbm_bytes),
           gb((double)hw->mem_reserve_bytes));

    const px_time *t = &pr.time;
    fprintf(out, "\n# time per step, seconds (exposed = on the critical path)\n");
    fprintf(out, "  %-34s %10.4f\n", "compute forward", d.compute_fwd_s);
    fprintf(out, "  %-34s %10.4f\n", "compute backward", d.compute_bwd_s);
    fprintf(out, "  %-34s %10.4f\n", "recompute", d.compute_recompute_s);
    fprintf(out, "    %-32s %10.4f\n", "GEMMs (fwd+bwd)", d.gemm_s);
    fprintf(out, "    %-32s %10.4f\n", "attention core", d.attn_s);
    fprintf(out, "    %-32s %10.4f\n", "memory-bound ops, head, loss", d.membound_s);
    fprintf(out, "  %-10s %12s %12s %12s  %s\n", "comm", "total", "exposed", "overlapped",
           "GB/step   link");
    comm_row rows[N_COMM_KINDS];
    comm_rows(&d, rows);
    for (int i = 0; i < N_COMM_KINDS; i++)
        fprintf(out, "  %-10s %12.4f %12.4f %12.4f  %8.2f  %s\n", rows[i].label, rows[i].tot,
               rows[i].exp, rows[i].tot - rows[i].exp, gb(rows[i].bytes),
               hw->torus ? "torus" : rows[i].cross ? "inter-node" : "intra-node");
    fprintf(out, "  %-34s %10.4f   (%.2f %% of the step; %.4f of ideal)\n", "pipeline bubble",
           t->bubble_s, 100.0 * pr.bubble_fraction, d.bubble_over_ideal);
    fprintf(out, "  %-34s %10.4f\n", "optimizer step", t->optimizer_s);
    fprintf(out, "  %-34s %10.4f   (MFU %.1f %%, HFU %.1f %%)\n", "step", t->step_s, 100.0 * pr.mfu,
           100.0 * pr.hfu);
}

/* The candidate's split stage by stage, in the partition program's terms
 * (px_partition_build + px_partition_evaluate: layers, time per
 * micro-batch, memory, recompute choices), and the uniform split with the
 * candidate's uniform recompute choice beside it (uni->n_chunks 0 when that
 * choice cannot be evaluated). */
static px_status stage_table_fill(const px_model *m, const px_parallel *par,
                                  px_partition_problem *pb, px_partition_solution *cur,
                                  px_partition_solution *uni, int64_t *limit, px_error *err);

static px_status stage_table(const px_model *m, const px_hw *hw,
                             const struct px_fw_runtime *run, const px_parallel *par,
                             px_partition_solution *cur, px_partition_solution *uni,
                             int64_t *limit, px_error *err)
{
    px_partition_problem *pb = calloc(1, sizeof *pb);
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_status st = pb && ctx ? px_cost_ctx_init(ctx, m, hw, err)
                             : PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the stage table");
    if (st == PX_OK) {
        ctx->run = run; /* as the search's partitioner costed it */
        st = px_partition_build(ctx, par, pb, err);
    }
    if (st == PX_OK)
        st = stage_table_fill(m, par, pb, cur, uni, limit, err);
    free(pb);
    /* memory: the cost model's own per-stage numbers (the plan file's) */
    if (st == PX_OK)
        st = px_partition_cost_memory(ctx, par, cur, limit, err);
    px_parallel *upar = st == PX_OK && uni->n_chunks > 0 ? malloc(sizeof *upar) : NULL;
    if (upar) {
        *upar = *par;
        upar->n_chunks = 0; /* the default split, the candidate's one recompute choice */
        upar->n_layer_recompute = 0;
        px_error e2;
        if (px_partition_cost_memory(ctx, upar, uni, limit, &e2) != PX_OK)
            uni->n_chunks = 0;
    }
    free(upar);
    free(ctx);
    return st;
}

static px_status stage_table_fill(const px_model *m, const px_parallel *par,
                                  px_partition_problem *pb, px_partition_solution *cur,
                                  px_partition_solution *uni, int64_t *limit, px_error *err)
{
    *limit = pb->mem_limit_bytes;
    memset(cur, 0, sizeof *cur);
    cur->n_chunks = par->pp * par->vpp;
    if (par->n_chunks > 0)
        memcpy(cur->layers_per_chunk, par->layers_per_chunk,
               (size_t)par->n_chunks * sizeof par->layers_per_chunk[0]);
    else
        px_cost_default_split(m->n_layers, cur->n_chunks, cur->layers_per_chunk);
    for (int64_t i = 0; i < m->n_layers; i++)
        cur->layer_recompute[i] = (unsigned char)(i < par->n_layer_recompute
                                                      ? par->layer_recompute[i]
                                                      : (unsigned char)par->recompute);
    px_status st = px_partition_evaluate(pb, cur, err);
    if (st != PX_OK)
        return st;
    memset(uni, 0, sizeof *uni);
    px_error e2;
    if (px_partition_uniform(pb, par->recompute, uni, &e2) != PX_OK)
        uni->n_chunks = 0;
    return PX_OK;
}

static void explain_stages(FILE *out, const px_model *m, const px_hw *hw,
                           const struct px_fw_runtime *run, const px_candidate *c,
                           const px_search_result *res)
{
    px_partition_solution *sol = calloc(2, sizeof *sol);
    px_partition_solution *cur = sol, *uni = sol ? sol + 1 : NULL;
    int64_t limit = 0;
    px_error err;
    char split[1024];
    split_label(&c->par, split, sizeof split);
    fprintf(out, "\n# pipeline stages: layers per chunk %s (%s)\n", split,
           !res->milp_ran ? "--partition uniform"
           : c->par.n_layer_recompute > 0 ? "chosen by the GLPK program, docs/partition.md"
                                          : "the program found nothing better");
    if (!sol || stage_table(m, hw, run, &c->par, cur, uni, &limit, &err) != PX_OK) {
        fprintf(out, "# per-stage table unavailable: %s\n", sol ? err.msg : "out of memory");
        free(sol);
        return;
    }
    fprintf(out, "# limit_%% is of %.2f GB: HBM - reserve; memory_GB is the cost model's, as in "
           "the breakdown and the plan file\n",
           gb((double)limit));
    char *table = malloc(PX_MAX_CHUNKS * 96);
    if (table) {
        px_partition_format_stages(cur, limit, table, PX_MAX_CHUNKS * 96);
        fputs(table, out);
    }
    free(table);
    if (uni->n_chunks > 0)
        fprintf(out, "# uniform split, recompute %s: slowest stage %.3f ms, fullest stage %.2f GB%s; "
               "this split: %.3f ms, %.2f GB\n",
               px_recompute_name(c->par.recompute), 1e3 * uni->max_stage_time_s,
               gb((double)uni->stage_mem_bytes[uni->fullest_stage]),
               uni->fits ? "" : " (does not fit)", 1e3 * cur->max_stage_time_s,
               gb((double)cur->stage_mem_bytes[cur->fullest_stage]));
    free(sol);
}

static json_t *stages_json(const px_model *m, const px_hw *hw,
                           const struct px_fw_runtime *run, const px_candidate *c)
{
    px_partition_solution *sol = calloc(2, sizeof *sol);
    px_partition_solution *cur = sol, *uni = sol ? sol + 1 : NULL;
    int64_t limit = 0;
    px_error err;
    if (!sol || stage_table(m, hw, run, &c->par, cur, uni, &limit, &err) != PX_OK) {
        free(sol);
        return json_null();
    }
    json_t *arr = json_array();
    for (int s = 0; s < cur->pp; s++)
        json_array_append_new(
            arr, json_pack("{s:i,s:i,s:f,s:I,s:{s:i,s:i,s:i}}", "stage", s, "layers",
                           cur->stage_layers[s], "time_s", cur->stage_time_s[s], "mem_bytes",
                           (json_int_t)cur->stage_mem_bytes[s], "recompute_layers", "none",
                           cur->stage_recompute[s][PX_RECOMPUTE_NONE], "selective",
                           cur->stage_recompute[s][PX_RECOMPUTE_SELECTIVE], "full",
                           cur->stage_recompute[s][PX_RECOMPUTE_FULL]));
    json_t *o = json_pack("{s:o,s:I,s:f,s:f}", "per_stage", arr, "mem_limit_bytes",
                          (json_int_t)limit, "max_stage_time_s", cur->max_stage_time_s,
                          "uniform_max_stage_time_s",
                          uni->n_chunks > 0 ? uni->max_stage_time_s : -1.0);
    free(sol);
    return o;
}

static void print_goodput(FILE *out, const px_prediction *q, int gpus, const px_hw *hw,
                          double price)
{
    if (q->train_tokens <= 0)
        return;
    px_run_cost rc;
    bool has_cost = px_run_cost_of(q, gpus, hw, price, &rc);
    fprintf(out, "\n# time to train %.3g tokens at %.4g tokens/s\n", q->train_tokens,
            q->tokens_per_s);
    fprintf(out, "  %-34s %10.1f\n", "days (no failures)", q->days_to_train);
    fprintf(out, "  %-34s %10.0f s (%.2f h)\n", "job MTBF", q->job_mtbf_s, q->job_mtbf_s / 3600.0);
    fprintf(out, "  %-34s %10.2f GB, %.1f s to write\n", "sharded checkpoint per GPU",
            gb(q->ckpt_bytes_per_gpu), q->ckpt_write_s);
    fprintf(out, "  %-34s %10.0f s (Young/Daly)\n", "checkpoint interval", q->ckpt_interval_s);
    fprintf(out, "  %-34s %10.2f %%\n", "time lost to failures", 100.0 * q->lost_fraction);
    fprintf(out, "  %-34s %10.1f\n", "goodput-adjusted days", q->goodput_days);
    if (!has_cost) {
        fprintf(out, "  %-34s %10s   (no finite time to train)\n", "GPU-hours, energy, cost",
                "n/a");
        return;
    }
    fprintf(out, "  %-34s %10.4g   (%d GPUs x %.1f days)\n", "GPU-hours", rc.gpu_hours, gpus,
            rc.days);
    if (rc.has_energy)
        fprintf(out, "  %-34s %10.4g   (%.0f W a GPU, board power only)\n", "energy [MWh]",
                rc.energy_mwh, rc.power_w);
    else
        fprintf(out, "  %-34s %10s   (profile %s has no power_w)\n", "energy [MWh]", "n/a",
                hw->name);
    if (rc.has_cost)
        fprintf(out, "  %-34s %10.4g   (%.2f USD a GPU-hour%s)\n", "cost [USD]", rc.cost_usd,
                rc.price_per_gpu_hour, price > 0 ? ", --price-per-gpu-hour" : ", the profile's");
    else
        fprintf(out, "  %-34s %10s   (profile %s has no price: give --price-per-gpu-hour)\n",
                "cost [USD]", "n/a", hw->name);
}

/* The cost of the run for --json: null where the profile does not say. */
static json_t *run_cost_json(const px_prediction *q, int gpus, const px_hw *hw, double price)
{
    px_run_cost rc;
    if (!px_run_cost_of(q, gpus, hw, price, &rc))
        return json_null();
    return json_pack("{s:f,s:f,s:o,s:o,s:o,s:o}", "days", rc.days, "gpu_hours", rc.gpu_hours,
                     "power_w", rc.power_w > 0 ? json_real(rc.power_w) : json_null(),
                     "energy_mwh", rc.has_energy ? json_real(rc.energy_mwh) : json_null(),
                     "price_per_gpu_hour",
                     rc.has_cost ? json_real(rc.price_per_gpu_hour) : json_null(), "cost_usd",
                     rc.has_cost ? json_real(rc.cost_usd) : json_null());
}

/* ------------------------------------------------------------------ */
/* machines' output                                                    */

static json_int_t ib(double bytes) { return (json_int_t)llround(bytes); }

/* The cost context every number of plan's output comes from (--json's
 * breakdown, --explain): the search's, under how the framework runs the plan
 * (c->opts.run), so that a breakdown adds up to its row.  *out is the
 * caller's to free. */
static px_status plan_cost_ctx(const plan_cli *c, const px_model *model, const px_hw *hw,
                               px_cost_ctx **out, px_error *err)
{
    px_cost_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the cost model");
    px_status st = px_cost_ctx_init(ctx, model, hw, err);
    if (st != PX_OK) {
        free(ctx);
        return st;
    }
    ctx->run = c->opts.run; /* as the search and the plan file cost it */
    *out = ctx;
    return PX_OK;
}

/* The --explain numbers for machines: activations by part, comm by kind. */
static json_t *detail_json(px_cost_ctx *ctx, const px_candidate *c)
{
    px_cost_detail d;
    px_prediction pr;
    px_cost_eval(ctx, &c->par, 0.0, 0.0, &pr, &d, NULL);
    json_t *comm = json_object();
    comm_row rows[N_COMM_KINDS];
    comm_rows(&d, rows);
    for (int i = 0; i < N_COMM_KINDS; i++)
        json_object_set_new(comm, rows[i].key,
                            json_pack("{s:f,s:f,s:I,s:b}", "total_s", rows[i].tot, "exposed_s",
                                      rows[i].exp, "bytes_per_step", ib(rows[i].bytes),
                                      "crosses_node", rows[i].cross));
    return json_pack(
        "{s:f,s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:o}",
        "step_s", pr.time.step_s, "layer_activation_bytes", ib(d.layer_act_bytes), "act_attention_bytes",
        ib(d.act_attention), "act_mlp_bytes", ib(d.act_mlp), "act_norm_bytes", ib(d.act_norm),
        "inflight_microbatches", d.inflight, "buf_embedding_bytes", ib(d.buf_embedding),
        "buf_logits_bytes", ib(d.buf_logits), "buf_loss_bytes", ib(d.buf_loss),
        "buf_final_norm_bytes", ib(d.buf_final_norm), "buf_recompute_bytes",
        ib(d.buf_recompute), "buf_p2p_bytes", ib(d.buf_p2p), "buf_zb_grads_bytes",
        ib(d.buf_zb_grads), "params_per_gpu",
        (json_int_t)d.params_per_gpu, "tp_bytes_per_layer", ib(d.tp_bytes_per_layer),
        "compute_fwd_s", d.compute_fwd_s, "compute_bwd_s", d.compute_bwd_s,
        "compute_recompute_s", d.compute_recompute_s, "gemm_s", d.gemm_s, "attn_s", d.attn_s,
        "membound_s", d.membound_s, "comm", comm);
}

static json_t *candidate_json(const px_candidate *c, int64_t seq, int64_t n_layers)
{
    const px_parallel *p = &c->par;
    const px_prediction *q = &c->pred;
    json_t *par = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:b,s:i,s:s,s:s,s:s}", "tp", p->tp,
                            "cp", p->cp, "ep", p->ep, "etp", p->etp, "pp", p->pp, "vpp", p->vpp,
                            "dp", p->dp, "sp", p->sp, "zero", p->zero, "schedule",
                            px_schedule_name(p->schedule), "recompute",
                            px_recompute_name(p->recompute), "grad_dtype",
                            p->grad_fp32 ? "fp32" : "bf16");
    json_t *mem = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:i}", "weights_bytes",
                            (json_int_t)q->mem.weights, "grads_bytes", (json_int_t)q->mem.grads,
                            "optimizer_bytes", (json_int_t)q->mem.optimizer, "activations_bytes",
                            (json_int_t)q->mem.activations, "buffers_bytes",
                            (json_int_t)q->mem.buffers, "total_bytes", (json_int_t)q->mem.total,
                            "worst_stage", q->mem.worst_stage);
    const px_time *t = &q->time;
    json_t *tm = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "step_s",
                           t->step_s, "compute_s", t->compute_s, "recompute_s", t->recompute_s,
                           "tp_comm_s", t->tp_comm_s, "cp_comm_s", t->cp_comm_s, "ep_comm_s",
                           t->ep_comm_s, "pp_comm_s", t->pp_comm_s, "dp_comm_s", t->dp_comm_s,
                           "dp_comm_total_s", t->dp_comm_total_s, "cp_comm_total_s",
                           t->cp_comm_total_s, "bubble_s", t->bubble_s, "optimizer_s",
                           t->optimizer_s);
    int64_t gbatch = px_parallel_global_batch(p);
    json_t *o = json_pack("{s:o,s:I,s:I,s:I,s:I,s:o,s:o,s:f,s:f,s:f,s:f,s:f,s:f,s:f}",
                          "parallel", par, "micro_batch", (json_int_t)p->micro_batch,
                          "num_microbatches", (json_int_t)p->n_micro, "global_batch",
                          (json_int_t)gbatch, "tokens_per_step", (json_int_t)(gbatch * seq),
                          "memory", mem, "time", tm, "step_time_s", t->step_s,
                          "bubble_fraction", q->bubble_fraction, "mfu", q->mfu, "hfu", q->hfu,
                          "tokens_per_s", q->tokens_per_s, "model_flops_per_step",
                          q->model_flops_per_step, "hw_flops_per_step", q->hw_flops_per_step);
    json_t *lpc = json_array();
    for (int i = 0; i < p->n_chunks; i++)
        json_array_append_new(lpc, json_integer(p->layers_per_chunk[i]));
    json_object_set_new(o, "layers_per_chunk", lpc); /* [] = uniform */
    json_object_set_new(o, "mfu_causal", json_real(q->mfu_causal));
    json_object_set_new(par, "precision", json_string(px_precision_name(p->precision)));
    json_object_set_new(par, "cp_comm", json_string(px_cp_comm_name(p->cp_comm)));
    json_t *lrc = json_array(); /* [] = every layer as parallel.recompute */
    for (int i = 0; i < p->n_layer_recompute; i++)
        json_array_append_new(lrc, json_string(px_recompute_name(
                                       (px_recompute)(p->layer_recompute[i] < PX_RECOMPUTE_COUNT
                                                          ? p->layer_recompute[i]
                                                          : 0))));
    json_object_set_new(o, "layer_recompute", lrc);
    int cnt[PX_RECOMPUTE_COUNT];
    layer_counts(p, n_layers, cnt);
    json_object_set_new(o, "recompute_layers",
                        json_pack("{s:i,s:i,s:i}", "none", cnt[PX_RECOMPUTE_NONE], "selective",
                                  cnt[PX_RECOMPUTE_SELECTIVE], "full", cnt[PX_RECOMPUTE_FULL]));
    if (q->train_tokens > 0) {
        json_t *g = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f}", "train_tokens",
                              q->train_tokens, "days_to_train", q->days_to_train,
                              "ckpt_write_s",
                              q->ckpt_write_s, "ckpt_interval_s", q->ckpt_interval_s,
                              "job_mtbf_s", q->job_mtbf_s, "lost_fraction", q->lost_fraction,
                              "goodput_days", isfinite(q->goodput_days) ? q->goodput_days : -1.0);
        /* bytes are JSON integers */
        json_object_set_new(g, "ckpt_bytes_per_gpu",
                            json_integer((json_int_t)llround(q->ckpt_bytes_per_gpu)));
        json_object_set_new(o, "time_to_train", g);
    }
    return o;
}

static px_status make_plan(px_plan *plan, const px_model *m, const px_hw *hw,
                           const px_candidate *c, const struct px_fw_runtime *run,
                           px_error *err)
{
    memset(plan, 0, sizeof *plan);
    plan->version = PX_PLAN_VERSION;
    plan->model = *m;
    plan->hw = *hw;
    plan->par = c->par;
    plan->pred = c->pred;
    /* an uneven split the search did not record runs as it was costed */
    px_cost_record_split(m, &plan->par);
    return px_plan_predict(plan, run, err); /* the per-stage numbers its readers use */
}

/* --html FILE: the top plans side by side, the chosen one in detail. */
static px_status write_html(const char *path, const px_model *m, const px_hw *hw, int gpus,
                            const struct px_fw_runtime *run, const px_search_result *res,
                            px_error *err)
{
    px_html_run *runs = calloc(PX_SEARCH_TOP_MAX, sizeof *runs);
    char(*labels)[32] = calloc(PX_SEARCH_TOP_MAX, sizeof *labels);
    if (!runs || !labels) {
        free(runs);
        free(labels);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the HTML report");
    }
    for (int i = 0; i < res->n_top; i++) {
        snprintf(labels[i], sizeof labels[i], i == 0 ? "rank 1 (chosen)" : "rank %d", i + 1);
        runs[i] = (px_html_run){.label = labels[i], .model = m, .hw = hw,
                                .par = &res->top[i].par, .pred = &res->top[i].pred,
                                .run = run, .detail = i == 0};
    }
    char title[160], sub[320];
    snprintf(title, sizeof title, "Parallax plan: %s on %d x %s", m->name, gpus, hw->name);
    snprintf(sub, sizeof sub, "sequence %lld, global batch %lld sequences (%lld tokens); "
             "memory limit %.1f GB per GPU; %d plans ranked by predicted step time",
             (long long)res->seq_len, (long long)res->global_batch,
             (long long)res->tokens_per_step, (double)res->mem_limit_bytes / 1e9, res->n_top);
    px_status st = px_html_write(path, title, sub, runs, res->n_top, err);
    free(runs);
    free(labels);
    return st;
}

/* The JSON document of `plan --json` (docs/plan-cli.md). */
static px_status write_json(FILE *out, const plan_cli *c, const px_model *model,
                            const px_hw *hw, const px_framework *fw,
                            const px_search_result *res, const px_plan *plan, px_error *err)
{
    const px_candidate *best = &res->top[0];
    px_param_count pc;
    px_model_count_params(model, &pc);
    px_cost_ctx *ctx = NULL;
    px_status st = plan_cost_ctx(c, model, hw, &ctx, err);
    if (st != PX_OK)
        return st;
    json_t *root = json_object();
    json_object_set_new(root, "model", json_string(model->name));
    json_object_set_new(root, "hw", json_string(hw->name));
    json_object_set_new(root, "framework", json_string(fw->name));
    json_object_set_new(root, "framework_release",
                        json_string(fw->release[0] ? fw->release : "none"));
    if (res->batch_note[0])
        json_object_set_new(root, "batch_note", json_string(res->batch_note));
    json_object_set_new(root, "gpus", json_integer(c->gpus));
    json_object_set_new(root, "seq_len", json_integer(res->seq_len));
    json_object_set_new(root, "global_batch", json_integer(res->global_batch));
    json_object_set_new(root, "tokens_per_step", json_integer(res->tokens_per_step));
    json_object_set_new(root, "params", json_integer(pc.total));
    json_object_set_new(root, "mem_limit_bytes", json_integer(res->mem_limit_bytes));
    json_t *rej = json_object();
    for (int r = 0; r < PX_REJ_COUNT; r++)
        json_object_set_new(rej, px_reject_name((px_reject)r), json_integer(res->rejected[r]));
    json_object_set_new(
        root, "search",
        json_pack("{s:I,s:I,s:f,s:f,s:o}", "evaluated", (json_int_t)res->n_evaluated, "valid",
                  (json_int_t)res->n_valid, "elapsed_s", res->elapsed_s, "configs_per_s",
                  res->analytic_s > 0 ? (double)res->n_evaluated / res->analytic_s : 0.0,
                  "rejected", rej));
    json_t *plans = json_array();
    for (int i = 0; i < res->n_top; i++) {
        json_t *cj = candidate_json(&res->top[i], res->seq_len, model->n_layers);
        json_t *ttt = json_object_get(cj, "time_to_train");
        if (ttt) /* days, GPU-hours, energy and cost beside the goodput */
            json_object_set_new(ttt, "run_cost", run_cost_json(&res->top[i].pred, c->gpus, hw,
                                                               c->price_per_gpu_hour));
        json_object_set_new(cj, "breakdown", detail_json(ctx, &res->top[i]));
        json_array_append_new(plans, cj);
    }
    json_object_set_new(root, "plans", plans);
    json_object_set_new(root, "chosen", json_integer(0));
    json_object_set_new(
        root, "partition",
        json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:s}", "method",
                  res->milp_ran ? "milp" : "uniform", "refined", res->milp_refined, "changed",
                  res->milp_changed, "rescued", res->milp_rescued, "failed", res->milp_failed,
                  "not_proven", res->milp_not_proven, "skipped", res->milp_skipped,
                  "pruned", res->milp_pruned, "exact_dp", res->milp_by_dp,
                  "elapsed_s", res->milp_s, "note", res->milp_note));
    json_object_set_new(root, "stages", stages_json(model, hw, c->opts.run, best));
    if (res->has_rule) {
        json_t *r = candidate_json(&res->rule, res->seq_len, model->n_layers);
        json_object_set_new(r, "breakdown", detail_json(ctx, &res->rule));
        json_object_set_new(r, "fits", json_boolean(res->rule_fits));
        json_object_set_new(r, "same_global_batch", json_boolean(res->rule_same_batch));
        json_object_set_new(r, "steps", json_string(res->rule_notes));
        json_object_set_new(root, "rule_of_thumb", r);
    }
    free(ctx);
    json_t *pj = NULL;
    if (px_plan_to_json(plan, &pj, err) == PX_OK && pj)
        json_object_set_new(root, "plan", pj);
    st = PX_OK;
    if (json_dumpf(root, out, JSON_SORT_KEYS | JSON_INDENT(2)) != 0 || fputc('\n', out) == EOF)
        st = PX_FAIL(err, PX_ERR_IO, "writing the JSON output failed");
    json_decref(root);
    return st;
}

/* The rule of thumb beside the searched best (--explain). */
static void explain_rule(FILE *out, const px_candidate *best, const px_search_result *res)
{
    fprintf(out, "\n# the rule-of-thumb plan (ZeRO within a node if it fits, else TP, then PP, "
                 "the rest DP) beside the searched best\n");
    if (!res->has_rule) {
        fprintf(out, "# no rule-of-thumb plan is valid for this model and GPU count\n");
        return;
    }
    fprintf(out, "# rule steps: %s\n", res->rule_notes);
    print_header(out);
    print_row(out, "best", best, true);
    print_row(out, "rule", &res->rule, false);
    if (!res->rule_fits)
        fprintf(out, "# the rule-of-thumb plan does NOT fit in %.1f GB\n",
                gb((double)res->mem_limit_bytes));
    fprintf(out, "# scores: searched best %.4g tokens/s (MFU %.1f %%), rule of thumb %.4g "
                 "tokens/s (MFU %.1f %%)",
            best->pred.tokens_per_s, 100.0 * best->pred.mfu, res->rule.pred.tokens_per_s,
            100.0 * res->rule.pred.mfu);
    /* a ratio only between plans of one global batch, and only against a
     * rule plan that can run */
    if (res->rule_same_batch && res->rule_fits)
        fprintf(out, ": best / rule = %.3f\n",
                best->pred.tokens_per_s / res->rule.pred.tokens_per_s);
    else
        fprintf(out, ": no ratio (the rule plan %s)\n",
                !res->rule_fits ? "does not fit" : "runs a different global batch");
}

/* The precision line of the table's header. */
static void print_precision(FILE *out, const px_hw *hw, const px_search_opts *o)
{
    px_precision p = o->precision;
    fprintf(out, "# precision %s: linear GEMMs at %.4g TFLOP/s dense%s; MFU counts against the "
                 "bf16 peak %.4g TFLOP/s",
            px_precision_name(p), px_prec_peak_flops(hw, p) / 1e12,
            px_prec_is_low(p) ? " (attention core, LM head and router in bf16)" : "",
            hw->peak_flops / 1e12);
    if (o->cp_comm != PX_CPC_P2P)
        fprintf(out, "; CP communication %s", px_cp_comm_name(o->cp_comm));
    fprintf(out, "\n");
}

/* The search's '#' header lines of the table. */
static void table_header(FILE *out, const plan_cli *c, const px_model *model, const px_hw *hw,
                         const px_framework *fw, const px_search_result *res,
                         bool fixed_uniform)
{
    px_param_count pc;
    px_model_count_params(model, &pc);
    bool billions = pc.total >= 1000000000;
    fprintf(out, "# plan: %s (%.4g %s parameters, %lld layers) on %d x %s (%d per node%s)\n",
            model->name, (double)pc.total / (billions ? 1e9 : 1e6), billions ? "B" : "M",
            (long long)model->n_layers, c->gpus, hw->name, hw->gpus_per_node,
            hw->torus ? ", torus" : "");
    fprintf(out, "# framework: %s (%s)%s%s\n", fw->name, fw->path,
            fw->release[0] ? ", release " : "", fw->release);
    if (res->batch_note[0])
        fprintf(out, "# %s\n", res->batch_note);
    fprintf(out, "# sequence %lld, global batch %lld sequences = %lld tokens; memory limit %.1f "
                 "GB per GPU (%.1f HBM - %.1f reserve)\n",
            (long long)res->seq_len, (long long)res->global_batch,
            (long long)res->tokens_per_step, gb((double)res->mem_limit_bytes),
            gb((double)hw->hbm_bytes), gb((double)hw->mem_reserve_bytes));
    double analytic_s = res->analytic_s; /* the stage partitioner's below */
    print_precision(out, hw, &c->opts);
    fprintf(out, "# searched %lld configurations in %.1f ms (%.3g per second); %lld fit\n",
            (long long)res->n_evaluated, 1e3 * analytic_s,
            analytic_s > 0 ? (double)res->n_evaluated / analytic_s : 0.0,
            (long long)res->n_valid);
    if (res->milp_ran)
        fprintf(out, "# stage partition: GLPK program (docs/partition.md) on %d candidates (top "
                     "%d + %d closest misses): %d changed, %d made to fit, %d not proven "
                     "optimal (time limit or gap), %d failed, %d skipped (budget), %d pruned "
                     "(lower bound), %d solved by the exact DP without GLPK; %.1f ms\n",
                res->milp_refined, res->milp_top, res->milp_misses, res->milp_changed,
                res->milp_rescued, res->milp_not_proven, res->milp_failed, res->milp_skipped,
                res->milp_pruned, res->milp_by_dp, 1e3 * res->milp_s);
    else
        fprintf(out, "# stage partition: uniform (%s): no GLPK program\n",
                fixed_uniform ? "every dimension fixed; --partition milp runs the program"
                              : "--partition uniform");
    if (res->milp_note[0])
        fprintf(out, "# stage partition, first failure (candidate kept as it was): %s\n",
                res->milp_note);
    fprintf(out, "# rejected:");
    for (int r = 0; r < PX_REJ_COUNT; r++)
        fprintf(out, "%s %s %lld", r ? "," : "", px_reject_name((px_reject)r),
                (long long)res->rejected[r]);
    fprintf(out, "\n# units: mem = GB (1e9 bytes) per GPU, worst stage; step = seconds per "
                 "optimizer step; m = micro-batches per step\n");
}

/* The people's table: header lines, ranked rows, the chosen plan, and with
 * --explain its breakdown. */
static px_status write_table(FILE *out, const plan_cli *c, const px_model *model,
                             const px_hw *hw, const px_framework *fw,
                             const px_search_result *res, bool fixed_uniform, px_error *err)
{
    const px_candidate *best = &res->top[0];
    table_header(out, c, model, hw, fw, res, fixed_uniform);
    print_header(out);
    for (int i = 0; i < res->n_top; i++) {
        char label[16];
        snprintf(label, sizeof label, "%d", i + 1);
        print_row(out, label, &res->top[i], i == 0);
    }
    char split[1024];
    split_label(&best->par, split, sizeof split);
    int cnt[PX_RECOMPUTE_COUNT];
    layer_counts(&best->par, model->n_layers, cnt);
    fprintf(out, "# chosen: rank 1: TP %d, CP %d, EP %d, ETP %d, PP %d, VPP %d, DP %d, "
                 "micro-batch %lld x %lld, ZeRO-%d, recompute %s, %s, %s, %.3f s a step, MFU "
                 "%.1f %% (attention as executed: MFU_causal %.1f %%)\n",
            best->par.tp, best->par.cp, best->par.ep, best->par.etp, best->par.pp,
            best->par.vpp, best->par.dp, (long long)best->par.micro_batch,
            (long long)best->par.n_micro, best->par.zero, recompute_label(&best->par),
            px_schedule_name(best->par.schedule), px_precision_name(best->par.precision),
            best->pred.time.step_s, 100.0 * best->pred.mfu, 100.0 * best->pred.mfu_causal);
    fprintf(out, "# chosen split: layers per chunk %s; layers recomputing: none %d, selective "
                 "%d, full %d\n",
            split, cnt[PX_RECOMPUTE_NONE], cnt[PX_RECOMPUTE_SELECTIVE], cnt[PX_RECOMPUTE_FULL]);
    if (c->explain) {
        px_cost_ctx *ctx = NULL;
        px_status st = plan_cost_ctx(c, model, hw, &ctx, err);
        if (st != PX_OK)
            return st;
        explain(out, ctx, best, res, hw);
        explain_stages(out, model, hw, c->opts.run, best, res);
        explain_rule(out, best, res);
        free(ctx);
    }
    print_goodput(out, &best->pred, c->gpus, hw, c->price_per_gpu_hour);
    return PX_OK;
}

/* -o: find out before a search and a table that the file cannot be written
 * (a file created only for the check is removed again). */
static px_status probe_output(const char *path, px_error *err)
{
    FILE *probe = fopen(path, "r");
    bool existed = probe != NULL;
    if (probe)
        fclose(probe);
    probe = fopen(path, "a");
    if (!probe)
        return PX_FAIL(err, PX_ERR_IO, "-o %s: cannot write the plan there: %s", path,
                       strerror(errno));
    fclose(probe);
    if (!existed)
        remove(path);
    return PX_OK;
}

/* --sweep-gpus: one search per GPU count, the best of each as a table row
 * or a JSON array element.  Fails when no count could be planned. */
static px_status sweep_write(FILE *out, const plan_cli *c, const px_model *model,
                             const px_hw *hw, const px_sweep_row *rows, int n, px_error *err)
{
    int n_ok = 0;
    json_t *arr = c->json ? json_array() : NULL;
    if (!c->json)
        fprintf(out, "# plan sweep: %s on %s, the best plan per GPU count (ms = whole search)\n"
                     "%6s %10s %9s %8s %4s %3s %3s %3s %3s %3s %5s %4s %5s %4s %-9s %-11s %8s "
                     "%10s %6s\n",
                model->name, hw->name, "gpus", "evaluated", "fit", "ms", "TP", "CP", "EP", "ETP",
                "PP", "VPP", "DP", "mbs", "m", "ZeRO", "recompute", "schedule", "step[s]",
                "tokens/s", "MFU");
    for (int i = 0; i < n; i++) {
        const px_sweep_row *r = &rows[i];
        n_ok += r->st == PX_OK;
        if (c->json) {
            json_t *o = json_pack("{s:i,s:I,s:I,s:f}", "gpus", r->gpus, "evaluated",
                                  (json_int_t)r->n_evaluated, "valid", (json_int_t)r->n_valid,
                                  "elapsed_s", r->elapsed_s);
            if (r->st == PX_OK)
                json_object_set_new(o, "best",
                                    candidate_json(&r->best, r->seq_len, model->n_layers));
            else
                json_object_set_new(o, "error", json_string(r->msg));
            json_array_append_new(arr, o);
            continue;
        }
        if (r->st != PX_OK) {
            fprintf(out, "%6d %10lld %9lld %8.1f  no plan: %s\n", r->gpus,
                    (long long)r->n_evaluated, (long long)r->n_valid, 1e3 * r->elapsed_s, r->msg);
            continue;
        }
        const px_parallel *p = &r->best.par;
        fprintf(out, "%6d %10lld %9lld %8.1f %4d %3d %3d %3d %3d %3d %5d %4lld %5lld %4d %-9s "
                     "%-11s %8.3f %10.4g %5.1f%%\n",
                r->gpus, (long long)r->n_evaluated, (long long)r->n_valid, 1e3 * r->elapsed_s,
                p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
                (long long)p->n_micro, p->zero, recompute_label(p), px_schedule_name(p->schedule),
                r->best.pred.time.step_s, r->best.pred.tokens_per_s, 100.0 * r->best.pred.mfu);
    }
    px_status st = PX_OK;
    if (c->json) {
        json_t *root = json_pack("{s:s,s:s,s:o}", "model", model->name, "hw", hw->name,
                                 "sweep", arr);
        if (json_dumpf(root, out, JSON_SORT_KEYS | JSON_INDENT(2)) != 0)
            st = PX_FAIL(err, PX_ERR_IO, "writing the JSON output failed");
        else
            fputc('\n', out);
        json_decref(root);
    }
    if (st == PX_OK && n_ok == 0)
        st = PX_FAIL(err, PX_ERR_INFEASIBLE, "--sweep-gpus: no GPU count could be planned");
    return st;
}

static px_status run_sweep(const plan_cli *c, const px_model *model, const px_hw *hw, FILE *out,
                           px_error *err)
{
    px_sweep_list list;
    px_status st = px_sweep_parse(c->sweep, &list, err);
    if (st != PX_OK)
        return st;
    px_sweep_row *rows = malloc((size_t)list.n * sizeof *rows);
    if (!rows)
        return PX_FAIL(err, PX_ERR_NOMEM, "--sweep-gpus: out of memory");
    st = px_sweep_run(model, hw, &list, &c->opts, rows, err);
    if (st == PX_OK)
        st = sweep_write(out, c, model, hw, rows, list.n, err);
    free(rows);
    return st;
}

/* What the search needs, on the heap (the structs are large). */
typedef struct {
    px_model model;
    px_hw hw;
    px_framework fw;
    px_search_result res;
    px_plan plan;
    px_plan ranked; /* --write-top: one ranked plan at a time */
} plan_work;

static px_status run_search(plan_cli *c, const px_model *model, FILE *out, px_error *err)
{
    if (c->out) {
        px_status st = probe_output(c->out, err);
        if (st != PX_OK)
            return st;
    }
    plan_work *w = calloc(1, sizeof *w);
    if (!w)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the search");
    px_status st = PX_OK;
    if (model)
        w->model = *model;
    else
        st = px_model_load(c->model, NULL, &w->model, err);
    if (st == PX_OK)
        st = px_hw_load(c->hw, NULL, &w->hw, err);
    if (st == PX_OK)
        st = px_framework_load_release(c->framework, NULL, c->framework_release, &w->fw, err);
    if (st == PX_OK && c->sweep) {
        c->opts.caps = &w->fw.caps;
        c->opts.run = &w->fw.run; /* --overlap, when given, has set the opts it overrides */
        st = run_sweep(c, &w->model, &w->hw, out, err);
        free(w);
        return st;
    }
    /* the search validate's rows run too (px_search_plan.h) */
    bool fixed_uniform = false;
    if (st == PX_OK)
        st = px_search_for_plan(&w->model, &w->hw, &w->fw, c->gpus, &c->opts,
                                c->partition_given, &w->res, &fixed_uniform, err);
    if (st == PX_OK) {
        st = make_plan(&w->plan, &w->model, &w->hw, &w->res.top[0], c->opts.run, err);
        snprintf(w->plan.framework, sizeof w->plan.framework, "%s", w->fw.name);
        st = st != PX_OK ? st
             : c->json ? write_json(out, c, &w->model, &w->hw, &w->fw, &w->res, &w->plan, err)
                     : write_table(out, c, &w->model, &w->hw, &w->fw, &w->res, fixed_uniform,
                                   err);
    }
    if (st == PX_OK && c->html) {
        st = write_html(c->html, &w->model, &w->hw, c->gpus, c->opts.run, &w->res, err);
        if (st == PX_OK && !c->json)
            fprintf(out, "# wrote %s\n", c->html);
    }
    /* every ranked plan, as -o writes the chosen one */
    for (int i = 0; st == PX_OK && c->top_dir && i < w->res.n_top; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.json", c->top_dir, i + 1);
        px_plan *p = &w->ranked;
        st = make_plan(p, &w->model, &w->hw, &w->res.top[i], c->opts.run, err);
        snprintf(p->framework, sizeof p->framework, "%s", w->fw.name);
        if (st == PX_OK)
            st = px_plan_write(p, path, err);
    }
    if (st == PX_OK && c->out) {
        errno = 0;
        st = px_plan_write(&w->plan, c->out, err);
        if (st != PX_OK && errno && err) {
            size_t len = strlen(err->msg);
            snprintf(err->msg + len, sizeof err->msg - len, ": %s", strerror(errno));
        }
        if (st == PX_OK && !c->json)
            fprintf(out, "# wrote %s\n", c->out);
    }
    free(w);
    return st;
}

/* --list-models, --list-hw: the presets one a line. */
static void list_names(FILE *out, bool models)
{
    char *buf = malloc(65536);
    if (!buf)
        return;
    if (models)
        px_model_list_presets(NULL, buf, 65536);
    else
        px_hw_list_profiles(NULL, buf, 65536);
    fprintf(out, "# %s (in %s)\n", models ? "model presets, aliases in parentheses"
                                          : "hardware profiles",
            models ? px_models_dir_default() : px_hw_profiles_dir_default());
    /* the list is "a (alias x, y), b": one entry a line */
    int depth = 0;
    for (const char *p = buf; *p; p++) {
        if (*p == '(')
            depth++;
        else if (*p == ')')
            depth--;
        if (depth == 0 && p[0] == ',' && p[1] == ' ') {
            fputc('\n', out);
            p++;
            continue;
        }
        fputc(*p, out);
    }
    if (buf[0])
        fputc('\n', out);
    free(buf);
}

px_status px_plan_command_model(int argc, char **argv, const px_model *model, FILE *out,
                                px_error *err)
{
    px_error_clear(err);
    if (argc >= 2 && !strcmp(argv[1], "--validate"))
        return px_validate_command(argc - 1, argv + 1, out, err);
    plan_cli c;
    px_args_action action = PX_ARGS_RUN;
    px_status st = parse_args(argc, argv, model != NULL, &c, &action, err);
    if (st != PX_OK)
        return st;
    if (action == PX_ARGS_HELP) {
        fputs(usage_text, out);
        fputs(usage_text_2, out);
        return PX_OK;
    }
    if (action == PX_ARGS_VERSION) {
        fprintf(out, "plan (parallax) %s\n", px_version());
        return PX_OK;
    }
    if (c.list_models || c.list_hw) {
        if (c.list_models)
            list_names(out, true);
        if (c.list_hw)
            list_names(out, false);
        return PX_OK;
    }
    return run_search(&c, model, out, err);
}

px_status px_plan_command(int argc, char **argv, FILE *out, px_error *err)
{
    return px_plan_command_model(argc, argv, NULL, out, err);
}
