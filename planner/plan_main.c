/* plan_main.c — the `plan` tool: search the parallel configurations of a
 * model on G GPUs of a hardware profile, print them ranked (or as JSON),
 * explain the chosen one and write it as a plan file. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_cost.h"
#include "px_cost_precision.h"
#include "px_framework.h"
#include "px_partition_refine.h"
#include "px_plan_json.h"
#include "px_search.h"
#include "px_validate.h"

/* PX_SEARCH_TOP_MAX as text for the usage string (it is a plain number) */
#define PX_STR_(x) #x
#define PX_STR(x) PX_STR_(x)
#define PX_TOP_MAX_STR PX_STR(PX_SEARCH_TOP_MAX)

static const char usage_text[] =
    "usage: plan --model NAME|FILE --gpus G [options]\n"
    "       plan --validate [FILE] [--json] [--check]   (as build/validate: docs/validation.md)\n"
    "\n"
    "Searches every valid way to split the training of a model over G GPUs and\n"
    "ranks them by the predicted step time (docs/cost-model.md).\n"
    "\n"
    "  --model NAME|FILE      model preset (models/), or a preset / Hugging Face config.json\n"
    "  --gpus G               number of GPUs\n"
    "  --hw NAME|FILE         hardware profile (hw_profiles/; default " PX_HW_DEFAULT ")\n"
    "  --framework NAME|FILE  the framework that will run the plan (frameworks/: parallax,\n"
    "                         megatron, torchtitan, llm-foundry, maxtext, deepspeed; default\n"
    "                         " PX_FRAMEWORK_DEFAULT ", this project's executor): only what it can run is\n"
    "                         searched, costed as it runs it (docs/framework-schema.md)\n"
    "  --seq S                sequence length (default: the model's); alias --seq-len\n"
    "  --global-batch SEQS    global batch in sequences (default: 2^24 tokens / S, moved to\n"
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
    "  --partition milp|uniform\n"
    "                         stage split and per-layer recompute of the top candidates:\n"
    "                         chosen by the GLPK program (default; docs/partition.md) or\n"
    "                         uniform layers per stage; --no-milp = --partition uniform\n"
    "  --milp-time-limit S    GLPK time limit per candidate, seconds (default 0.5,\n"
    "                         0.05 for interleaved candidates)\n"
    "  --top K                rows in the table (default 10, at most " PX_TOP_MAX_STR "); with\n"
    "                         the GLPK program on, K rows whenever K configurations fit\n"
    "  --tokens D             time to train D tokens, with goodput (suffixes K M B T)\n"
    "  --gpu-mtbf-hours H     per-GPU mean time between failures (default: the profile's)\n"
    "  --explain              memory and time breakdown, rule-of-thumb plan beside the best\n"
    "  --json                 print JSON instead of the table\n"
    "  -o FILE                write the chosen plan (docs/plan-schema.md)\n"
    "  --help                 this text\n";

static void die_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "plan: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(plan --help lists the options)\n");
    exit(2);
}

static void die_error(const px_error *err)
{
    char buf[2048];
    px_error_format(err, buf, sizeof buf);
    fprintf(stderr, "plan: error: %s\n", buf);
    exit(1);
}

static int64_t parse_int(const char *flag, const char *s, int64_t lo, int64_t hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s \"%%s\": expected an integer in %lld..%lld", flag,
                 (long long)lo, (long long)hi);
        die_usage(msg, s);
    }
    return v;
}

/* A positive number with an optional K/M/B/T (1e3..1e12) suffix. */
static double parse_amount(const char *flag, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    double mult = 1.0;
    if (end != s && *end && !end[1]) {
        switch (*end) {
        case 'K': case 'k': mult = 1e3; end++; break;
        case 'M': case 'm': mult = 1e6; end++; break;
        case 'B': case 'b': case 'G': case 'g': mult = 1e9; end++; break;
        case 'T': case 't': mult = 1e12; end++; break;
        default: break;
        }
    }
    if (errno || end == s || *end || !(v > 0) || !isfinite(v)) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s \"%%s\": expected a positive number (suffix K, M, B, T)",
                 flag);
        die_usage(msg, s);
    }
    return v * mult;
}

typedef struct {
    const char *model, *hw, *out, *framework;
    int gpus;
    bool json, explain;
    bool partition_given; /* --partition or --no-milp on the command line */
    px_search_opts opts;
} cli;

/* The options that take a value, each with its aliases: the first name is
 * the one messages use. */
static const char *const value_flags[][3] = {
    {"--model", NULL, NULL},         {"--hw", NULL, NULL},
    {"--framework", NULL, NULL},     {"--shard-group", NULL, NULL},
    {"-o", "--output", NULL},        {"--gpus", NULL, NULL},
    {"--seq", "--seq-len", NULL},    {"--global-batch", NULL, NULL},
    {"--tokens-per-step", NULL, NULL}, {"--tp", NULL, NULL},
    {"--cp", NULL, NULL},            {"--ep", NULL, NULL},
    {"--etp", NULL, NULL},           {"--pp", NULL, NULL},
    {"--vpp", NULL, NULL},           {"--dp", NULL, NULL},
    {"--micro-batch", "--mbs", NULL}, {"--micro-batches", NULL, NULL},
    {"--zero", NULL, NULL},          {"--recompute", NULL, NULL},
    {"--schedule", NULL, NULL},      {"--grad-dtype", NULL, NULL},
    {"--overlap", NULL, NULL},       {"--sp", "--no-sp", NULL},
    {"--partition", "--no-milp", NULL}, {"--milp-time-limit", NULL, NULL},
    {"--top", NULL, NULL},           {"--tokens", NULL, NULL},
    {"--gpu-mtbf-hours", NULL, NULL},
    {"--precision", NULL, NULL},     {"--cp-comm", NULL, NULL},
};
enum { N_VALUE_FLAGS = sizeof value_flags / sizeof value_flags[0] };

/* Index of flag in value_flags, or -1. */
static int flag_index(const char *flag)
{
    for (int i = 0; i < N_VALUE_FLAGS; i++)
        for (int k = 0; k < 3 && value_flags[i][k]; k++)
            if (!strcmp(flag, value_flags[i][k]))
                return i;
    return -1;
}

/* A second --gpus (or --seq after --seq-len...) is an error rather than
 * "the last one wins": a script that sets a flag twice has a bug. */
static void note_seen(bool *seen, const char *flag)
{
    int i = flag_index(flag);
    if (i < 0)
        return;
    if (seen[i]) {
        char msg[256];
        if (value_flags[i][1])
            snprintf(msg, sizeof msg, "%%s given more than once (%s and %s are one option): "
                     "give it once", value_flags[i][0], value_flags[i][1]);
        else
            snprintf(msg, sizeof msg, "%%s given more than once: give it once");
        die_usage(msg, flag);
    }
    seen[i] = true;
}

static void parse_args(int argc, char **argv, cli *c)
{
    memset(c, 0, sizeof *c);
    c->hw = PX_HW_DEFAULT;
    px_search_opts_init(&c->opts);
    px_search_opts *o = &c->opts;
    bool seen[N_VALUE_FLAGS] = {false};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            exit(0);
        }
        if (!strcmp(a, "--json")) {
            c->json = true;
            continue;
        }
        if (!strcmp(a, "--explain")) {
            c->explain = true;
            continue;
        }
        if (!strcmp(a, "--no-sp")) {
            note_seen(seen, a);
            o->sp = 0;
            continue;
        }
        if (!strcmp(a, "--no-milp")) {
            note_seen(seen, a);
            o->milp = false;
            c->partition_given = true;
            continue;
        }
        /* every other option takes a value */
        const char *v = NULL;
        char flag[64];
        const char *eq = strchr(a, '=');
        if (a[0] == '-' && a[1] == '-' && eq) {
            snprintf(flag, sizeof flag, "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", a);
            if (flag[0] == '-' && i + 1 < argc)
                v = argv[++i];
        }
        if (flag[0] != '-')
            die_usage("unexpected argument \"%s\"", a);
        if (flag_index(flag) < 0)
            die_usage("unknown option \"%s\"", flag);
        if (!v)
            die_usage("%s needs a value", flag);
        note_seen(seen, flag);
        const int64_t big = 1LL << 40;
        if (!strcmp(flag, "--model"))
            c->model = v;
        else if (!strcmp(flag, "--hw"))
            c->hw = v;
        else if (!strcmp(flag, "--framework"))
            c->framework = v;
        else if (!strcmp(flag, "--shard-group"))
            o->shard_group = (int)parse_int(flag, v, 1, 1 << 20);
        else if (!strcmp(flag, "-o") || !strcmp(flag, "--output"))
            c->out = v;
        else if (!strcmp(flag, "--gpus"))
            c->gpus = (int)parse_int(flag, v, 1, 1 << 24);
        else if (!strcmp(flag, "--seq") || !strcmp(flag, "--seq-len"))
            o->seq_len = parse_int(flag, v, 1, big);
        else if (!strcmp(flag, "--global-batch"))
            o->global_batch = parse_int(flag, v, 1, big);
        else if (!strcmp(flag, "--tokens-per-step"))
            o->tokens_per_step = (int64_t)llround(parse_amount(flag, v));
        else if (!strcmp(flag, "--tp"))
            o->tp = (int)parse_int(flag, v, 1, 1 << 20);
        else if (!strcmp(flag, "--cp"))
            o->cp = (int)parse_int(flag, v, 1, 1 << 20);
        else if (!strcmp(flag, "--ep"))
            o->ep = (int)parse_int(flag, v, 1, 1 << 20);
        else if (!strcmp(flag, "--etp"))
            o->etp = (int)parse_int(flag, v, 1, 1 << 20);
        else if (!strcmp(flag, "--pp"))
            o->pp = (int)parse_int(flag, v, 1, 1 << 20);
        else if (!strcmp(flag, "--vpp"))
            o->vpp = (int)parse_int(flag, v, 1, 1 << 10);
        else if (!strcmp(flag, "--dp"))
            o->dp = (int)parse_int(flag, v, 1, 1 << 24);
        else if (!strcmp(flag, "--micro-batch") || !strcmp(flag, "--mbs"))
            o->micro_batch = parse_int(flag, v, 1, big);
        else if (!strcmp(flag, "--micro-batches"))
            o->n_micro = parse_int(flag, v, 1, big);
        else if (!strcmp(flag, "--zero"))
            o->zero = (int)parse_int(flag, v, 0, 3);
        else if (!strcmp(flag, "--recompute")) {
            px_recompute r;
            px_error e;
            if (px_recompute_parse(v, &r, &e) != PX_OK)
                die_usage("--recompute \"%s\": allowed values are none, selective, full", v);
            o->recompute = (int)r;
        } else if (!strcmp(flag, "--schedule")) {
            px_schedule s;
            px_error e;
            if (px_schedule_parse(v, &s, &e) != PX_OK)
                die_usage("--schedule \"%s\": allowed values are gpipe, 1f1b, interleaved, "
                          "zb-h1, zb-h2",
                          v);
            o->schedule = (int)s;
        } else if (!strcmp(flag, "--precision")) {
            px_error perr = {0};
            if (px_precision_parse(v, &o->precision, &perr) != PX_OK)
                die_usage("--%s", perr.msg);
        } else if (!strcmp(flag, "--cp-comm")) {
            px_error perr = {0};
            if (px_cp_comm_parse(v, &o->cp_comm, &perr) != PX_OK)
                die_usage("--%s", perr.msg);
        } else if (!strcmp(flag, "--grad-dtype")) {
            if (!strcmp(v, "bf16"))
                o->grad_fp32 = 0;
            else if (!strcmp(v, "fp32"))
                o->grad_fp32 = 1;
            else
                die_usage("--grad-dtype \"%s\": allowed values are bf16, fp32", v);
        } else if (!strcmp(flag, "--overlap")) {
            if (!strcmp(v, "on"))
                o->dp_overlap = o->tp_overlap = 1;
            else if (!strcmp(v, "off"))
                o->dp_overlap = o->tp_overlap = 0;
            else
                die_usage("--overlap \"%s\": allowed values are on, off", v);
        } else if (!strcmp(flag, "--sp")) {
            if (!strcmp(v, "on"))
                o->sp = 1;
            else if (!strcmp(v, "off"))
                o->sp = 0;
            else
                die_usage("--sp \"%s\": allowed values are on, off", v);
        } else if (!strcmp(flag, "--partition")) {
            c->partition_given = true;
            if (!strcmp(v, "milp"))
                o->milp = true;
            else if (!strcmp(v, "uniform"))
                o->milp = false;
            else
                die_usage("--partition \"%s\": allowed values are milp, uniform", v);
        } else if (!strcmp(flag, "--milp-time-limit")) {
            char *end;
            double x = strtod(v, &end);
            if (end == v || *end || !(x > 0.0) || x > 3600.0)
                die_usage("--milp-time-limit \"%s\": expected seconds in (0, 3600]", v);
            o->milp_time_limit_s = x;
        } else if (!strcmp(flag, "--top"))
            o->top = (int)parse_int(flag, v, 1, PX_SEARCH_TOP_MAX);
        else if (!strcmp(flag, "--tokens"))
            o->train_tokens = parse_amount(flag, v);
        else if (!strcmp(flag, "--gpu-mtbf-hours"))
            o->gpu_mtbf_hours = parse_amount(flag, v);
        else
            die_usage("unknown option \"%s\"", flag);
    }
    if (!c->model)
        die_usage("%s", "--model is required (a preset name such as 70b, or a config.json)");
    if (c->gpus < 1)
        die_usage("%s", "--gpus is required (a positive integer)");
    if (o->global_batch > 0 && o->tokens_per_step > 0)
        die_usage("%s", "--global-batch and --tokens-per-step both set the global batch: give "
                        "one of them");
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

static void print_row(const char *label, const px_candidate *c, bool chosen)
{
    const px_parallel *p = &c->par;
    const px_prediction *q = &c->pred;
    printf("%4s %4d %3d %3d %3d %3d %3d %5d %4lld %5lld %4d %-9s %-11s %-3s %9.1f %8.3f %10.4g %5.1f%% %s\n",
           label, p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
           (long long)p->n_micro, p->zero, recompute_label(p),
           px_schedule_name(p->schedule), p->sp ? "on" : "off", gb((double)q->mem.total),
           q->time.step_s, q->tokens_per_s, 100.0 * q->mfu, chosen ? "*" : "");
}

/* The precision line of the table's header. */
static void print_precision(const px_hw *hw, const px_search_opts *o)
{
    px_precision p = o->precision;
    printf("# precision %s: linear GEMMs at %.0f TFLOP/s dense%s; MFU counts against the bf16 "
           "peak %.0f TFLOP/s", px_precision_name(p), px_prec_peak_flops(hw, p) / 1e12,
           px_prec_is_low(p) ? " (attention core, LM head and router in bf16)" : "",
           hw->peak_flops / 1e12);
    if (o->cp_comm != PX_CPC_P2P)
        printf("; CP communication %s", px_cp_comm_name(o->cp_comm));
    printf("\n");
}

static void print_header(void)
{
    printf("%4s %4s %3s %3s %3s %3s %3s %5s %4s %5s %4s %-9s %-11s %-3s %9s %8s %10s %6s %s\n",
           "rank", "TP", "CP", "EP", "ETP", "PP", "VPP", "DP", "mbs", "m", "ZeRO", "recompute",
           "schedule", "SP", "mem[GB]", "step[s]", "tokens/s", "MFU", "chosen");
}

static void explain(px_cost_ctx *ctx, const px_candidate *c, const px_search_result *res,
                    const px_hw *hw)
{
    px_cost_detail d;
    px_prediction pr;
    px_cost_eval(ctx, &c->par, c->pred.train_tokens, 0.0, &pr, &d, NULL);
    const px_memory *m = &pr.mem;
    printf("\n# memory per GPU, worst stage (stage %d of %d), GB (1e9 bytes)\n", m->worst_stage,
           c->par.pp);
    printf("  %-34s %10.2f\n", "weights", gb((double)m->weights));
    printf("  %-34s %10.2f   (%s)\n", "gradients", gb((double)m->grads),
           c->par.grad_fp32 ? "fp32 main gradients" : "bf16");
    printf("  %-34s %10.2f   (ZeRO-%d)\n", "optimizer state", gb((double)m->optimizer),
           c->par.zero);
    printf("  %-34s %10.2f   (%.2f micro-batches in flight, %.1f MB a layer)\n",
           "activations", gb((double)m->activations), d.inflight, d.layer_act_bytes / 1e6);
    printf("    %-32s %10.2f\n", "attention", gb(d.act_attention));
    printf("    %-32s %10.2f\n", "MLP", gb(d.act_mlp));
    printf("    %-32s %10.2f\n", "norms", gb(d.act_norm));
    printf("  %-34s %10.2f\n", "buffers", gb((double)m->buffers));
    printf("    %-32s %10.2f\n", "embedding output", gb(d.buf_embedding));
    printf("    %-32s %10.2f\n", "final norm + head input", gb(d.buf_final_norm));
    printf("    %-32s %10.2f\n", "logits (fp32, current)", gb(d.buf_logits));
    printf("    %-32s %10.2f\n", "loss softmax (fp32)", gb(d.buf_loss));
    printf("    %-32s %10.2f\n", "recompute working set", gb(d.buf_recompute));
    printf("    %-32s %10.2f\n", "p2p / ZeRO-3 gather", gb(d.buf_p2p));
    printf("    %-32s %10.2f\n", "zero-bubble grads kept B->W", gb(d.buf_zb_grads));
    printf("  %-34s %10.2f   of %.2f usable (%.2f HBM - %.2f reserve)\n", "total",
           gb((double)m->total), gb((double)res->mem_limit_bytes), gb((double)hw->hbm_bytes),
           gb((double)hw->mem_reserve_bytes));

    const px_time *t = &pr.time;
    printf("\n# time per step, seconds (exposed = on the critical path)\n");
    printf("  %-34s %10.4f\n", "compute forward", d.compute_fwd_s);
    printf("  %-34s %10.4f\n", "compute backward", d.compute_bwd_s);
    printf("  %-34s %10.4f\n", "recompute", d.compute_recompute_s);
    printf("    %-32s %10.4f\n", "GEMMs (fwd+bwd)", d.gemm_s);
    printf("    %-32s %10.4f\n", "attention core", d.attn_s);
    printf("    %-32s %10.4f\n", "memory-bound ops, head, loss", d.membound_s);
    printf("  %-10s %12s %12s %12s  %s\n", "comm", "total", "exposed", "overlapped",
           "GB/step   link");
    struct {
        const char *name;
        double tot, exp, bytes;
        bool cross;
    } rows[5] = {
        {"TP/SP", d.tp_total_s, d.tp_exposed_s, d.tp_bytes_per_step, d.tp_crosses},
        {"CP ring", d.cp_total_s, d.cp_exposed_s, d.cp_bytes_per_step, d.cp_crosses},
        {"EP a2a", d.ep_total_s, d.ep_exposed_s, d.ep_bytes_per_step, d.ep_crosses},
        {"PP p2p", d.pp_total_s, d.pp_exposed_s, d.pp_bytes_per_step, d.pp_crosses},
        {"DP/ZeRO", d.dp_total_s, d.dp_exposed_s, d.dp_bytes_per_step, d.dp_crosses},
    };
    for (int i = 0; i < 5; i++)
        printf("  %-10s %12.4f %12.4f %12.4f  %8.2f  %s\n", rows[i].name, rows[i].tot,
               rows[i].exp, rows[i].tot - rows[i].exp, gb(rows[i].bytes),
               hw->torus ? "torus" : rows[i].cross ? "inter-node" : "intra-node");
    printf("  %-34s %10.4f   (%.2f %% of the step; %.4f of ideal)\n", "pipeline bubble",
           t->bubble_s, 100.0 * pr.bubble_fraction, d.bubble_over_ideal);
    printf("  %-34s %10.4f\n", "optimizer step", t->optimizer_s);
    printf("  %-34s %10.4f   (MFU %.1f %%, HFU %.1f %%)\n", "step", t->step_s, 100.0 * pr.mfu,
           100.0 * pr.hfu);
}

/* The candidate's split stage by stage, in the partition program's terms
 * (px_partition_build + px_partition_evaluate: layers, time per
 * micro-batch, memory, recompute choices), and the uniform split with the
 * candidate's uniform recompute choice beside it (uni->n_chunks 0 when that
 * choice cannot be evaluated). */
static px_status stage_table(const px_model *m, const px_hw *hw, const px_parallel *par,
                             px_partition_solution *cur, px_partition_solution *uni,
                             int64_t *limit, px_error *err)
{
    static px_partition_problem pb;
    px_status st = px_partition_build(m, hw, par, &pb, err);
    if (st != PX_OK)
        return st;
    *limit = pb.mem_limit_bytes;
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
    st = px_partition_evaluate(&pb, cur, err);
    if (st != PX_OK)
        return st;
    memset(uni, 0, sizeof *uni);
    px_error e2;
    if (px_partition_uniform(&pb, par->recompute, uni, &e2) != PX_OK)
        uni->n_chunks = 0;
    return PX_OK;
}

static void explain_stages(const px_model *m, const px_hw *hw, const px_candidate *c,
                           const px_search_result *res)
{
    static px_partition_solution cur, uni;
    int64_t limit = 0;
    px_error err;
    char split[1024];
    split_label(&c->par, split, sizeof split);
    printf("\n# pipeline stages: layers per chunk %s (%s)\n", split,
           !res->milp_ran ? "--partition uniform"
           : c->par.n_layer_recompute > 0 ? "chosen by the GLPK program, docs/partition.md"
                                          : "the program found nothing better");
    if (stage_table(m, hw, &c->par, &cur, &uni, &limit, &err) != PX_OK) {
        printf("# per-stage table unavailable: %s\n", err.msg);
        return;
    }
    printf("# limit_%% is of %.2f GB: HBM - reserve - one layer's activations (the rerun "
           "buffer of a full-recompute stage)\n",
           gb((double)limit));
    static char table[PX_MAX_CHUNKS * 96];
    px_partition_format_stages(&cur, limit, table, (int)sizeof table);
    fputs(table, stdout);
    if (uni.n_chunks > 0)
        printf("# uniform split, recompute %s: slowest stage %.3f ms, fullest stage %.2f GB%s; "
               "this split: %.3f ms, %.2f GB\n",
               px_recompute_name(c->par.recompute), 1e3 * uni.max_stage_time_s,
               gb((double)uni.stage_mem_bytes[uni.fullest_stage]),
               uni.fits ? "" : " (does not fit)", 1e3 * cur.max_stage_time_s,
               gb((double)cur.stage_mem_bytes[cur.fullest_stage]));
}

static json_t *stages_json(const px_model *m, const px_hw *hw, const px_candidate *c)
{
    static px_partition_solution cur, uni;
    int64_t limit = 0;
    px_error err;
    if (stage_table(m, hw, &c->par, &cur, &uni, &limit, &err) != PX_OK)
        return json_null();
    json_t *arr = json_array();
    for (int s = 0; s < cur.pp; s++)
        json_array_append_new(
            arr, json_pack("{s:i,s:i,s:f,s:I,s:{s:i,s:i,s:i}}", "stage", s, "layers",
                           cur.stage_layers[s], "time_s", cur.stage_time_s[s], "mem_bytes",
                           (json_int_t)cur.stage_mem_bytes[s], "recompute_layers", "none",
                           cur.stage_recompute[s][PX_RECOMPUTE_NONE], "selective",
                           cur.stage_recompute[s][PX_RECOMPUTE_SELECTIVE], "full",
                           cur.stage_recompute[s][PX_RECOMPUTE_FULL]));
    return json_pack("{s:o,s:I,s:f,s:f}", "per_stage", arr, "mem_limit_bytes",
                     (json_int_t)limit, "max_stage_time_s", cur.max_stage_time_s,
                     "uniform_max_stage_time_s", uni.n_chunks > 0 ? uni.max_stage_time_s : -1.0);
}

static void print_goodput(const px_prediction *q)
{
    if (q->train_tokens <= 0)
        return;
    printf("\n# time to train %.3g tokens at %.4g tokens/s\n", q->train_tokens, q->tokens_per_s);
    printf("  %-34s %10.1f\n", "days (no failures)", q->days_to_train);
    printf("  %-34s %10.0f s (%.2f h)\n", "job MTBF", q->job_mtbf_s, q->job_mtbf_s / 3600.0);
    printf("  %-34s %10.2f GB, %.1f s to write\n", "sharded checkpoint per GPU",
           gb(q->ckpt_bytes_per_gpu), q->ckpt_write_s);
    printf("  %-34s %10.0f s (Young/Daly)\n", "checkpoint interval", q->ckpt_interval_s);
    printf("  %-34s %10.2f %%\n", "time lost to failures", 100.0 * q->lost_fraction);
    printf("  %-34s %10.1f\n", "goodput-adjusted days", q->goodput_days);
}

/* ------------------------------------------------------------------ */
/* machines' output                                                    */

static json_int_t ib(double bytes) { return (json_int_t)llround(bytes); }

/* The --explain numbers for machines: activations by part, comm by kind. */
static json_t *detail_json(px_cost_ctx *ctx, const px_candidate *c)
{
    px_cost_detail d;
    px_prediction pr;
    px_cost_eval(ctx, &c->par, 0.0, 0.0, &pr, &d, NULL);
    json_t *comm = json_object();
    struct {
        const char *name;
        double tot, exp, bytes;
        bool cross;
    } rows[5] = {
        {"tp", d.tp_total_s, d.tp_exposed_s, d.tp_bytes_per_step, d.tp_crosses},
        {"cp", d.cp_total_s, d.cp_exposed_s, d.cp_bytes_per_step, d.cp_crosses},
        {"ep", d.ep_total_s, d.ep_exposed_s, d.ep_bytes_per_step, d.ep_crosses},
        {"pp", d.pp_total_s, d.pp_exposed_s, d.pp_bytes_per_step, d.pp_crosses},
        {"dp", d.dp_total_s, d.dp_exposed_s, d.dp_bytes_per_step, d.dp_crosses},
    };
    for (int i = 0; i < 5; i++)
        json_object_set_new(comm, rows[i].name,
                            json_pack("{s:f,s:f,s:I,s:b}", "total_s", rows[i].tot, "exposed_s",
                                      rows[i].exp, "bytes_per_step", ib(rows[i].bytes),
                                      "crosses_node", rows[i].cross));
    return json_pack(
        "{s:I,s:I,s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f,s:o}",
        "layer_activation_bytes", ib(d.layer_act_bytes), "act_attention_bytes",
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

static void make_plan(px_plan *plan, const px_model *m, const px_hw *hw, const px_candidate *c)
{
    memset(plan, 0, sizeof *plan);
    plan->version = PX_PLAN_VERSION;
    plan->model = *m;
    plan->hw = *hw;
    plan->par = c->par;
    plan->pred = c->pred;
    /* an uneven split the search did not record runs as it was costed */
    px_cost_record_split(m, &plan->par);
}

/* plan --validate [FILE] [--json] [--check]: the published-runs check of
 * docs/validation.md, the same library call as build/validate. */
static int validate_cmd(int argc, char **argv)
{
    const char *path = NULL;
    bool json = false, check = false;
    char def[1024];
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json = true;
        else if (!strcmp(argv[i], "--check"))
            check = true;
        else if (argv[i][0] != '-' && !path)
            path = argv[i];
        else
            die_usage("plan --validate: unexpected argument \"%s\"", argv[i]);
    }
    if (!path) {
        px_validate_default_path(def, sizeof def);
        path = def;
    }
    static px_val_report rep;
    px_error err;
    px_error_clear(&err);
    if (px_validate_file(path, NULL, &rep, &err) != PX_OK)
        die_error(&err);
    int rc = 0;
    if (json) {
        if (px_validate_write_json(&rep, stdout, &err) != PX_OK)
            die_error(&err);
    } else {
        px_validate_write_table(&rep, stdout);
    }
    if (check && !px_validate_within_bounds(&rep, NULL, 0))
        rc = 1;
    px_validate_free(&rep);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--validate"))
        return validate_cmd(argc, argv);
    cli c;
    parse_args(argc, argv, &c);
    /* -o: find out now, before a search and a table, that the file cannot
     * be written (a file created only for the check is removed again) */
    if (c.out) {
        FILE *probe = fopen(c.out, "r");
        bool existed = probe != NULL;
        if (probe)
            fclose(probe);
        probe = fopen(c.out, "a");
        if (!probe) {
            fprintf(stderr, "plan: error: -o %s: cannot write the plan there: %s\n", c.out,
                    strerror(errno));
            return 1;
        }
        fclose(probe);
        if (!existed)
            remove(c.out);
    }
    px_error err;
    px_error_clear(&err);
    static px_model model;
    static px_hw hw;
    if (px_model_load(c.model, NULL, &model, &err) != PX_OK)
        die_error(&err);
    if (px_hw_load(c.hw, NULL, &hw, &err) != PX_OK)
        die_error(&err);
    static px_framework fw;
    if (px_framework_load(c.framework, NULL, &fw, &err) != PX_OK)
        die_error(&err);
    c.opts.caps = &fw.caps;
    c.opts.run = &fw.run; /* --overlap, when given, has set the opts it overrides */
    /* every dimension fixed: evaluate exactly that configuration, layers
     * split uniformly, unless the program was asked for by name */
    bool fixed_uniform = !c.partition_given && px_search_fully_fixed(&model, c.gpus, &c.opts);
    if (fixed_uniform)
        c.opts.milp = false;
    static px_search_result res;
    px_status st = px_search_run(&model, &hw, c.gpus, &c.opts, &res, &err);
    if (st != PX_OK)
        die_error(&err);

    const px_candidate *best = &res.top[0];
    px_param_count pc;
    px_model_count_params(&model, &pc);
    static px_plan plan;
    make_plan(&plan, &model, &hw, best);
    snprintf(plan.framework, sizeof plan.framework, "%s", fw.name);

    if (c.json) {
        json_t *root = json_object();
        json_object_set_new(root, "model", json_string(model.name));
        json_object_set_new(root, "hw", json_string(hw.name));
        json_object_set_new(root, "framework", json_string(fw.name));
        if (res.batch_note[0])
            json_object_set_new(root, "batch_note", json_string(res.batch_note));
        json_object_set_new(root, "gpus", json_integer(c.gpus));
        json_object_set_new(root, "seq_len", json_integer(res.seq_len));
        json_object_set_new(root, "global_batch", json_integer(res.global_batch));
        json_object_set_new(root, "tokens_per_step", json_integer(res.tokens_per_step));
        json_object_set_new(root, "params", json_integer(pc.total));
        json_object_set_new(root, "mem_limit_bytes", json_integer(res.mem_limit_bytes));
        json_t *rej = json_object();
        for (int r = 0; r < PX_REJ_COUNT; r++)
            json_object_set_new(rej, px_reject_name((px_reject)r),
                                json_integer(res.rejected[r]));
        json_object_set_new(
            root, "search",
            json_pack("{s:I,s:I,s:f,s:f,s:o}", "evaluated", (json_int_t)res.n_evaluated, "valid",
                      (json_int_t)res.n_valid, "elapsed_s", res.elapsed_s, "configs_per_s",
                      res.elapsed_s - res.milp_s > 0
                          ? (double)res.n_evaluated / (res.elapsed_s - res.milp_s)
                          : 0.0,
                      "rejected", rej));
        static px_cost_ctx ctx;
        if (px_cost_ctx_init(&ctx, &model, &hw, &err) != PX_OK)
            die_error(&err);
        json_t *plans = json_array();
        for (int i = 0; i < res.n_top; i++) {
            json_t *cj = candidate_json(&res.top[i], res.seq_len, model.n_layers);
            json_object_set_new(cj, "breakdown", detail_json(&ctx, &res.top[i]));
            json_array_append_new(plans, cj);
        }
        json_object_set_new(root, "plans", plans);
        json_object_set_new(root, "chosen", json_integer(0));
        json_object_set_new(
            root, "partition",
            json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:i,s:f,s:s}", "method",
                      res.milp_ran ? "milp" : "uniform", "refined", res.milp_refined, "changed",
                      res.milp_changed, "rescued", res.milp_rescued, "failed", res.milp_failed,
                      "not_proven", res.milp_not_proven, "skipped", res.milp_skipped,
                      "elapsed_s", res.milp_s, "note",
                      res.milp_note));
        json_object_set_new(root, "stages", stages_json(&model, &hw, best));
        if (res.has_rule) {
            json_t *r = candidate_json(&res.rule, res.seq_len, model.n_layers);
            json_object_set_new(r, "breakdown", detail_json(&ctx, &res.rule));
            json_object_set_new(r, "fits", json_boolean(res.rule_fits));
            json_object_set_new(r, "same_global_batch", json_boolean(res.rule_same_batch));
            json_object_set_new(r, "steps", json_string(res.rule_notes));
            json_object_set_new(root, "rule_of_thumb", r);
        }
        json_t *pj = NULL;
        if (px_plan_to_json(&plan, &pj, &err) == PX_OK && pj)
            json_object_set_new(root, "plan", pj);
        if (json_dumpf(root, stdout, JSON_SORT_KEYS | JSON_INDENT(2)) != 0) {
            fprintf(stderr, "plan: error: writing JSON to stdout failed\n");
            return 1;
        }
        fputc('\n', stdout);
        json_decref(root);
    } else {
        bool billions = pc.total >= 1000000000;
        printf("# plan: %s (%.4g %s parameters, %lld layers) on %d x %s (%d per node%s)\n",
               model.name, (double)pc.total / (billions ? 1e9 : 1e6), billions ? "B" : "M",
               (long long)model.n_layers, c.gpus, hw.name, hw.gpus_per_node,
               hw.torus ? ", torus" : "");
        printf("# framework: %s (%s)\n", fw.name, fw.path);
        if (res.batch_note[0])
            printf("# %s\n", res.batch_note);
        printf("# sequence %lld, global batch %lld sequences = %lld tokens; memory limit %.1f GB "
               "per GPU (%.1f HBM - %.1f reserve)\n",
               (long long)res.seq_len, (long long)res.global_batch,
               (long long)res.tokens_per_step, gb((double)res.mem_limit_bytes),
               gb((double)hw.hbm_bytes), gb((double)hw.mem_reserve_bytes));
        double analytic_s = res.elapsed_s - res.milp_s; /* the stage partitioner's below */
        print_precision(&hw, &c.opts);
        printf("# searched %lld configurations in %.1f ms (%.3g per second); %lld fit\n",
               (long long)res.n_evaluated, 1e3 * analytic_s,
               analytic_s > 0 ? (double)res.n_evaluated / analytic_s : 0.0,
               (long long)res.n_valid);
        if (res.milp_ran)
            printf("# stage partition: GLPK program (docs/partition.md) on %d candidates (top %d "
                   "+ %d closest misses): %d changed, %d made to fit, %d not proven optimal "
                   "(time limit or gap), %d failed, %d skipped (budget); %.1f ms\n",
                   res.milp_refined, res.milp_top, res.milp_misses, res.milp_changed,
                   res.milp_rescued, res.milp_not_proven, res.milp_failed, res.milp_skipped,
                   1e3 * res.milp_s);
        else
            printf("# stage partition: uniform (%s): no GLPK program\n",
                   fixed_uniform ? "every dimension fixed; --partition milp runs the program"
                                 : "--partition uniform");
        if (res.milp_note[0])
            printf("# stage partition, first failure (candidate kept as it was): %s\n",
                   res.milp_note);
        printf("# rejected:");
        for (int r = 0; r < PX_REJ_COUNT; r++)
            printf("%s %s %lld", r ? "," : "", px_reject_name((px_reject)r),
                   (long long)res.rejected[r]);
        printf("\n# units: mem = GB (1e9 bytes) per GPU, worst stage; step = seconds per "
               "optimizer step; m = micro-batches per step\n");
        print_header();
        for (int i = 0; i < res.n_top; i++) {
            char label[16];
            snprintf(label, sizeof label, "%d", i + 1);
            print_row(label, &res.top[i], i == 0);
        }
        char split[1024];
        split_label(&best->par, split, sizeof split);
        int cnt[PX_RECOMPUTE_COUNT];
        layer_counts(&best->par, model.n_layers, cnt);
        printf("# chosen: rank 1: TP %d, CP %d, EP %d, ETP %d, PP %d, VPP %d, DP %d, micro-batch "
               "%lld x %lld, ZeRO-%d, recompute %s, %s, %s, %.3f s a step, MFU %.1f %% "
               "(attention as executed: MFU_causal %.1f %%)\n",
               best->par.tp, best->par.cp, best->par.ep, best->par.etp, best->par.pp, best->par.vpp,
               best->par.dp, (long long)best->par.micro_batch, (long long)best->par.n_micro,
               best->par.zero, recompute_label(&best->par),
               px_schedule_name(best->par.schedule), px_precision_name(best->par.precision),
               best->pred.time.step_s, 100.0 * best->pred.mfu, 100.0 * best->pred.mfu_causal);
        printf("# chosen split: layers per chunk %s; layers recomputing: none %d, selective %d, "
               "full %d\n",
               split, cnt[PX_RECOMPUTE_NONE], cnt[PX_RECOMPUTE_SELECTIVE],
               cnt[PX_RECOMPUTE_FULL]);
        if (c.explain) {
            static px_cost_ctx ctx;
            if (px_cost_ctx_init(&ctx, &model, &hw, &err) != PX_OK)
                die_error(&err);
            explain(&ctx, best, &res, &hw);
            explain_stages(&model, &hw, best, &res);
            printf("\n# the lecture's rule of thumb (section 11) beside the searched best\n");
            if (res.has_rule) {
                printf("# rule steps: %s\n", res.rule_notes);
                print_header();
                print_row("best", best, true);
                print_row("rule", &res.rule, false);
                if (!res.rule_fits)
                    printf("# the rule-of-thumb plan does NOT fit in %.1f GB\n",
                           gb((double)res.mem_limit_bytes));
                printf("# scores: searched best %.4g tokens/s (MFU %.1f %%), rule of thumb %.4g "
                       "tokens/s (MFU %.1f %%)",
                       best->pred.tokens_per_s, 100.0 * best->pred.mfu,
                       res.rule.pred.tokens_per_s, 100.0 * res.rule.pred.mfu);
                /* a ratio only between plans of one global batch, and only
                 * against a rule plan that can run */
                if (res.rule_same_batch && res.rule_fits)
                    printf(": best / rule = %.3f\n",
                           best->pred.tokens_per_s / res.rule.pred.tokens_per_s);
                else
                    printf(": no ratio (the rule plan %s)\n",
                           !res.rule_fits ? "does not fit" : "runs a different global batch");
            } else {
                printf("# no rule-of-thumb plan is valid for this model and GPU count\n");
            }
        }
        print_goodput(&best->pred);
    }
    if (c.out) {
        errno = 0;
        if (px_plan_write(&plan, c.out, &err) != PX_OK) {
            int e = errno;
            char buf[2048];
            px_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "plan: error: %s%s%s\n", buf, e ? ": " : "", e ? strerror(e) : "");
            return 1;
        }
        if (!c.json)
            printf("# wrote %s\n", c.out);
    }
    return 0;
}
