/* px_plan_options.c — the `plan` command line: its usage text, the option
 * table (px_args rows) and the readers of values that need more than a
 * number, and the cost context every number of the output comes from
 * (px_plan_cmd_internal.h). */
#include "px_plan_cmd_internal.h"

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
#include "px_sweep.h"
#include "px_validate.h"

/* PX_SEARCH_TOP_MAX as text for the usage string (it is a plain number) */
#define PX_STR_(x) #x
#define PX_STR(x) PX_STR_(x)
#define PX_TOP_MAX_STR PX_STR(PX_SEARCH_TOP_MAX)

const char usage_text[] =
    "usage: plan --model NAME|FILE|DIR --gpus G [options]\n"
    "       plan --recipe NAME|FILE [options]\n"
    "       plan --validate [FILE] [--json] [--check]   (as build/validate: docs/validation.md)\n"
    "       plan --list-models | --list-hw | --list-recipes | --version\n"
    "\n"
    "Searches every valid way to split the training of a model over G GPUs and\n"
    "ranks them by the predicted step time (docs/cost-model.md).  Every option\n"
    "takes its value as `--flag value` or `--flag=value`, once.\n"
    "\n"
    "  --model NAME|FILE|DIR  model preset (models/), a preset / Hugging Face config.json,\n"
    "                         or a Hugging Face model folder (reads DIR/config.json)\n"
    "  --recipe NAME|FILE     a published recipe's options (recipes/: llama3-70b-lora, ...):\n"
    "                         its model, GPUs, layout, batch and fine-tuning; the options\n"
    "                         given here win over the recipe's\n"
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
    "  --recompute-modules LIST\n"
    "                         what selective recompute reruns (Megatron-Core's\n"
    "                         --recompute-modules; implies --recompute selective):\n"
    "                         comma-separated core_attn (the default), moe_act, layernorm,\n"
    "                         mla_up_proj, mlp, moe, shared_experts\n"
    "  --schedule gpipe|1f1b|interleaved|zb-h1|zb-h2\n"
    "  --grad-dtype bf16|fp32 gradient dtype (default fp32 main gradients)\n"
    "  --precision P          number format of the layers' GEMMs: bf16 (default), fp16,\n"
    "                         fp8, fp8-cs, fp8-rowwise, fp8-block, mxfp8, nvfp4; refused\n"
    "                         when the profile has no tensor-core path for it\n"
    "  --cp-comm p2p|all-gather|a2a\n"
    "                         CP attention communication (default: the framework's own,\n"
    "                         the first of p2p, all-gather, a2a it runs)\n"
    "  --no-sp                sequence parallelism off (default on when TP > 1); --sp on|off\n"
    "  --overlap on|off       gradient reduction and backward TP collectives hidden under\n"
    "                         the backward (default: the framework's overlap traits; off\n"
    "                         for `execute` on CPUs, which runs them after the compute)\n"
    "  --attention-kernel K   the attention kernel the run trains with: native (the GPU's\n"
    "                         own: cuDNN's, FlashAttention-3 on Hopper), flash3, flash2,\n"
    "                         flash1, triton (FlashAttention's Triton port), or unfused\n"
    "                         (the s x s scores stored); default: the framework's\n"
    ;
/* (three strings: C11 compilers need to take only 4095 characters in one) */
const char usage_text_2[] =
    "  --tp-comm-overlap on|off\n"
    "                         the forward's sequence-parallel TP all-gather and\n"
    "                         reduce-scatter in chunks under their GEMMs (Megatron-Core's\n"
    "                         --tp-comm-overlap, torchtitan's async TP; default off)\n"
    "  --moe-dispatcher alltoall|deepep|hybridep\n"
    "                         MoE token dispatcher (default alltoall: every routed copy\n"
    "                         through NCCL's all-to-all); deepep, hybridep: Megatron-Core's\n"
    "                         flex dispatcher, which sends a token once to each other node\n"
    "                         holding its experts and forwards its copies over NVLink\n"
    "  --moe-a2a-overlap on|off\n"
    "                         MoE: each micro-batch's expert all-to-all under another\n"
    "                         micro-batch's compute (Megatron-Core's\n"
    "                         --overlap-moe-expert-parallel-comm; needs ep > 1, virtual\n"
    "                         pipeline chunks when pp > 1, no full recompute; default: the\n"
    "                         framework's trait, off for megatron)\n"
    "  --finetune none|full|lora\n"
    "                         what is trained (default none: pre-training): full = SFT, the\n"
    "                         costs of pre-training; lora = adapters on a frozen base\n"
    "  --lora-rank R          LoRA rank (default 32, Megatron-Bridge's and NeMo's)\n"
    "  --lora-alpha A         LoRA scale numerator (default 32; no cost, recorded in the plan)\n"
    "  --lora-targets LIST    adapted linears: comma-separated qkv, proj, fc1, fc2, or all\n"
    "                         (default all, as Megatron-Bridge and NeMo)\n"
    "  --offload auto|none|LIST\n"
    "                         what lives on the host, LIST of optimizer (its state and Adam\n"
    "                         step: DeepSpeed's ZeRO-Offload, Megatron's\n"
    "                         --optimizer-cpu-offload) or params (ZeRO-3's parameter and\n"
    "                         gradient shards too: ZeRO-Infinity, FSDP2's CPU offload), and\n"
    "                         activations (the layers' saved activations, as the framework\n"
    "                         offloads them); auto (the default) offloads only when nothing\n"
    "                         fits without it\n"
    "  --offload-fraction F   the share of the optimizer state offloaded, (0, 1] (default 1;\n"
    "                         below 1 only where the framework splits it: Megatron)\n"
    "  --offload-layers N     the leading layers whose activations are offloaded, where the\n"
    "                         framework takes a count (Megatron); default: the fewest that fit\n"
    "  --framework-release R  the framework as its release R ran (the profile's \"releases\":\n"
    "                         megatron 2020, 2021, 2022, nemo-24.03, nemo-25.09, ...; a year\n"
    "                         or nemo-YY.MM not listed: the documented state nearest in time;\n"
    "                         none = as it runs today, the default); docs/validation.md\n"
    "  --partition milp|uniform|glpk\n"
    "                         stage split and per-layer recompute of the top candidates:\n"
    "                         chosen by the GLPK program (default; docs/partition.md) or\n"
    "                         uniform layers per stage; --no-milp = --partition uniform;\n"
    "                         glpk: the program with every pass in GLPK (no exact DP)\n"
    "  --milp-time-limit S    GLPK stops by the clock, S seconds per candidate, instead of\n"
    "                         by its work (the default: the same plan on any machine)\n"
    "  --milp-budget S        the clock's backstop on all candidates' programs together,\n"
    "                         seconds (default 4); the candidates left when it or the work\n"
    "                         budget is spent keep their uniform split\n"
    "  --top K                rows in the table (default 10, at most " PX_TOP_MAX_STR "); with\n"
    "                         the GLPK program on, K rows whenever K configurations fit\n"
    ;
const char usage_text_3[] =
    "  --tokens D             time to train D tokens, with goodput (suffixes K M B T)\n"
    "  --gpu-mtbf-hours H     per-GPU mean time between failures (default: the profile's)\n"
    "  --price-per-gpu-hour P US dollars per GPU-hour for the --tokens cost (default: the\n"
    "                         profile's price_per_gpu_hour, docs/hw-schema.md)\n"
    "  --explain              memory and time breakdown, rule-of-thumb plan beside the best\n"
    "                         (with --sweep: each point's, after the table)\n"
    "  --html FILE            write a self-contained HTML report: the chosen plan's pipeline\n"
    "                         timeline, per-stage memory, time breakdown, the top plans\n"
    "  --json                 print JSON instead of the table\n"
    "  --csv                  print the ranked plans (or the sweep) as CSV instead of the\n"
    "                         table: a header row, then one row per plan\n"
    "  --threads N            threads of the search (default: the processors; the result\n"
    "                         is the same for any N)\n"
    "  --sweep KEY=LIST       the best plan of each point of a product of lists, one\n"
    "                         --sweep per key: gpus, seq, global-batch (A..B = A, 2A, 4A,\n"
    "                         ... up to B, or V1,V2,...), hw, framework, precision\n"
    "                         (W1,W2,...); at most " PX_STR(PX_SWEEP_MAX_POINTS) " points; a table, --json, --csv,\n"
    "                         --html (charts against the first key); a swept key's own\n"
    "                         option is refused beside it\n"
    "  --sweep-gpus LIST      --sweep gpus=LIST\n"
    "  -o FILE                write the chosen plan (docs/plan-schema.md); alias --output\n"
    "  --write-top DIR        write every ranked plan too, as DIR/plan-<N>.json (N: its position)\n"
    "  --list-models          the model presets and their aliases\n"
    "  --list-hw              the hardware profiles\n"
    "  --list-recipes         the recipes (recipes/) and what each one is\n"
    "  --version              the Parallax version\n"
    "  --help                 this text\n";


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

/* --gpu-mtbf-hours, --price-per-gpu-hour: the profile field's bounds. */
static px_status read_mtbf(void *s, const char *flag, const char *v, px_error *err)
{
    double *x = &((plan_cli *)s)->opts.gpu_mtbf_hours;
    PX_TRY(px_args_read_amount(flag, v, x, err));
    return px_hw_check_field(flag, "gpu_mtbf_hours", *x, err);
}

static px_status read_price(void *s, const char *flag, const char *v, px_error *err)
{
    double *x = &((plan_cli *)s)->price_per_gpu_hour;
    PX_TRY(px_args_read_amount(flag, v, x, err));
    return px_hw_check_field(flag, "price_per_gpu_hour", *x, err);
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

static px_status read_recompute_modules(void *s, const char *flag, const char *v,
                                        px_error *err)
{
    px_error e;
    if (px_rc_modules_parse(v, &((plan_cli *)s)->opts.recompute_modules, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: %s", flag, e.msg);
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
    ((plan_cli *)s)->precision_given = true;
    if (px_precision_parse(v, &((plan_cli *)s)->opts.precision, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: %s", flag, e.msg);
    return PX_OK;
}

static px_status read_cp_comm(void *s, const char *flag, const char *v, px_error *err)
{
    px_error e;
    ((plan_cli *)s)->opts.cp_comm_given = true;
    if (px_cp_comm_parse(v, &((plan_cli *)s)->opts.cp_comm, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: %s", flag, e.msg);
    return PX_OK;
}

static px_status read_finetune(void *s, const char *flag, const char *v, px_error *err)
{
    px_error e;
    if (px_finetune_mode_parse(v, &((plan_cli *)s)->opts.finetune.mode, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": allowed values are none, full, lora", flag,
                       v);
    return PX_OK;
}

/* --offload auto|none|LIST (optimizer, activations): auto keeps none and
 * lets the search fall back to offload when nothing fits */
static px_status read_offload(void *s, const char *flag, const char *v, px_error *err)
{
    px_search_opts *o = &((plan_cli *)s)->opts;
    px_error e;
    o->offload_auto = strcmp(v, "auto") == 0;
    if (o->offload_auto) {
        o->offload.kind = PX_OFFLOAD_NONE;
        o->offload.activations = false;
        return PX_OK;
    }
    if (px_offload_parse_list(v, &o->offload, &e) != PX_OK)
        return PX_FAIL(err, e.code == PX_ERR_UNSUPPORTED ? PX_ERR_UNSUPPORTED : PX_ERR_USAGE,
                       "%s \"%s\": %s%s", flag, v, e.msg,
                       e.code == PX_ERR_UNSUPPORTED
                           ? ""
                           : "; allowed values are auto, none, or a comma-separated list of "
                             "optimizer or params, and activations");
    return PX_OK;
}

/* --offload-layers N: Megatron-Core's count of offloaded leading layers */
static px_status read_offload_layers(void *s, const char *flag, const char *v, px_error *err)
{
    plan_cli *c = s;
    long long n;
    PX_TRY(px_args_read_int(flag, v, 1, PX_MAX_LAYERS, &n, err));
    c->opts.offload.act_layers = (int)n;
    c->offload_layers_given = true;
    return PX_OK;
}

static px_status read_offload_fraction(void *s, const char *flag, const char *v, px_error *err)
{
    plan_cli *c = s;
    double f;
    PX_TRY(px_args_read_amount(flag, v, &f, err));
    if (!(f > 0.0 && f <= 1.0))
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": a share in (0, 1]", flag, v);
    c->opts.offload.fraction = f;
    c->offload_fraction_given = true;
    return PX_OK;
}

/* --lora-rank, --lora-alpha, --lora-targets: the setting after "--lora-" */
static px_status read_lora(void *s, const char *flag, const char *v, px_error *err)
{
    plan_cli *c = s;
    px_error e;
    c->lora_given = true;
    if (px_lora_set(&c->opts.finetune, flag + strlen("--lora-"), v, &e) != PX_OK)
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

static px_status read_attention_kernel(void *s, const char *flag, const char *v,
                                       px_error *err)
{
    px_search_opts *o = &((plan_cli *)s)->opts;
    bool unfused;
    px_error e;
    if (px_attn_kernel_parse(v, &o->attn_kernel, &unfused, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: %s", flag, e.msg);
    /* a kernel named is fused; "framework" leaves it to the framework too */
    o->flash_attention = unfused ? 0 : o->attn_kernel == PX_AK_FRAMEWORK ? -1 : 1;
    return PX_OK;
}

static px_status read_moe_dispatcher(void *s, const char *flag, const char *v, px_error *err)
{
    px_error e;
    if (px_moe_dispatch_parse(v, &((plan_cli *)s)->opts.moe_dispatcher, &e) != PX_OK)
        return PX_FAIL(err, PX_ERR_USAGE, "%s: %s", flag, e.msg);
    return PX_OK;
}

static px_status read_tp_comm_overlap(void *s, const char *flag, const char *v, px_error *err)
{
    return px_args_read_on_off(flag, v, &((plan_cli *)s)->opts.tp_comm_overlap, err);
}

static px_status read_moe_a2a_overlap(void *s, const char *flag, const char *v, px_error *err)
{
    return px_args_read_on_off(flag, v, &((plan_cli *)s)->opts.moe_a2a_overlap, err);
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

/* --sweep KEY=LIST (repeatable), --sweep-gpus LIST: the lists of the
 * product, on the heap (parse_args's caller frees them). */
static px_status sweep_spec(plan_cli *c, px_error *err)
{
    if (!c->sweep && !(c->sweep = calloc(1, sizeof *c->sweep)))
        return PX_FAIL(err, PX_ERR_NOMEM, "--sweep: out of memory");
    return PX_OK;
}

static px_status read_sweep(void *s, const char *flag, const char *v, px_error *err)
{
    PX_TRY(sweep_spec(s, err));
    return px_sweep_add(((plan_cli *)s)->sweep, flag, v, err);
}

static px_status read_sweep_gpus(void *s, const char *flag, const char *v, px_error *err)
{
    PX_TRY(sweep_spec(s, err));
    return px_sweep_add_list(((plan_cli *)s)->sweep, flag, PX_SWEEP_GPUS, v, err);
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
    PX_ARG_STR("--recipe", plan_cli, recipe),
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
    PX_ARG_CUSTOM("--recompute-modules", read_recompute_modules),
    PX_ARG_CUSTOM("--schedule", read_schedule),
    PX_ARG_CUSTOM("--grad-dtype", read_grad_dtype),
    PX_ARG_CUSTOM("--precision", read_precision),
    PX_ARG_CUSTOM("--cp-comm", read_cp_comm),
    PX_ARG_CUSTOM("--overlap", read_overlap),
    PX_ARG_CUSTOM("--attention-kernel", read_attention_kernel),
    PX_ARG_CUSTOM("--moe-a2a-overlap", read_moe_a2a_overlap),
    PX_ARG_CUSTOM("--tp-comm-overlap", read_tp_comm_overlap),
    PX_ARG_CUSTOM("--moe-dispatcher", read_moe_dispatcher),
    PX_ARG_CUSTOM("--finetune", read_finetune),
    PX_ARG_CUSTOM("--lora-rank", read_lora),
    PX_ARG_CUSTOM("--lora-alpha", read_lora),
    PX_ARG_CUSTOM("--lora-targets", read_lora),
    PX_ARG_CUSTOM("--offload", read_offload),
    PX_ARG_CUSTOM("--offload-fraction", read_offload_fraction),
    PX_ARG_CUSTOM("--offload-layers", read_offload_layers),
    PX_ARG_CUSTOM("--sp", read_sp),
    PX_ARG_MEANS("--no-sp", "--sp", "off"),
    PX_ARG_CUSTOM("--partition", read_partition),
    PX_ARG_MEANS("--no-milp", "--partition", "uniform"),
    PX_ARG_CUSTOM("--milp-time-limit", read_milp_time_limit),
    PX_ARG_CUSTOM("--milp-budget", read_milp_budget),
    PX_ARG_INT("--top", plan_cli, opts.top, 1, PX_SEARCH_TOP_MAX),
    PX_ARG_AMOUNT("--tokens", plan_cli, opts.train_tokens),
    PX_ARG_CUSTOM("--gpu-mtbf-hours", read_mtbf),
    PX_ARG_CUSTOM("--price-per-gpu-hour", read_price),
    PX_ARG_STR("--html", plan_cli, html),
    PX_ARG_SWITCH("--explain", plan_cli, explain),
    PX_ARG_SWITCH("--json", plan_cli, json),
    PX_ARG_SWITCH("--csv", plan_cli, csv),
    PX_ARG_INT("--threads", plan_cli, opts.threads, 1, PX_SEARCH_THREADS_MAX),
    PX_ARG_CUSTOM_REPEAT("--sweep", read_sweep),
    PX_ARG_CUSTOM("--sweep-gpus", read_sweep_gpus),
    PX_ARG_STR("--write-top", plan_cli, top_dir),
    PX_ARG_SWITCH("--list-models", plan_cli, list_models),
    PX_ARG_SWITCH("--list-hw", plan_cli, list_hw),
    PX_ARG_SWITCH("--list-recipes", plan_cli, list_recipes),
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

px_status plan_options_check(int argc, char **argv, px_error *err)
{
    plan_cli scratch;
    memset(&scratch, 0, sizeof scratch);
    px_search_opts_init(&scratch.opts);
    px_args_result res;
    px_status st = px_args_parse(plan_rows, N_PLAN_ROWS, argc, argv, &scratch, 0, &res, err);
    if (st == PX_OK)
        px_args_free(&res);
    free(scratch.sweep);
    return st;
}

const char *plan_option_canonical(const char *name)
{
    return px_args_canonical(plan_rows, N_PLAN_ROWS, name);
}

/* What a sweep cannot run beside: a swept key's own option, the options
 * that write one plan, and --json with --explain. */
static px_status check_sweep(const plan_cli *c, bool hw_given, px_error *err)
{
    const px_search_opts *o = &c->opts;
    const struct {
        px_sweep_key key;
        bool given;
        const char *flag;
    } own[] = {
        {PX_SWEEP_GPUS, c->gpus > 0, "--gpus"},
        {PX_SWEEP_SEQ, o->seq_len > 0, "--seq"},
        {PX_SWEEP_GLOBAL_BATCH, o->global_batch > 0, "--global-batch"},
        {PX_SWEEP_GLOBAL_BATCH, o->tokens_per_step > 0, "--tokens-per-step"},
        {PX_SWEEP_HW, hw_given, "--hw"},
        {PX_SWEEP_FRAMEWORK, c->framework != NULL, "--framework"},
        {PX_SWEEP_PRECISION, c->precision_given, "--precision"},
    };
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (own[i].given && px_sweep_find(c->sweep, own[i].key))
            return PX_FAIL(err, PX_ERR_USAGE, "--sweep %s and %s both set it: give one of them",
                           px_sweep_key_name(own[i].key), own[i].flag);
    const char *one = c->out ? "-o" : c->top_dir ? "--write-top" : NULL;
    if (one)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s writes one plan; --sweep makes one a point: leave %s out (or plan "
                       "the point you want with its own options)",
                       one, one);
    if (c->json && c->explain) /* the sweep's JSON has no breakdown to add */
        return PX_FAIL(err, PX_ERR_USAGE, "--sweep with --json and --explain: --explain "
                                          "prints each point's breakdown as text; give one "
                                          "of them");
    return PX_OK;
}

/* Reads argv into c; *action says whether to run, or print help/version. */
px_status parse_args(int argc, char **argv, bool model_given, plan_cli *c,
                     px_args_action *action, px_error *err)
{
    memset(c, 0, sizeof *c);
    px_search_opts_init(&c->opts);
    px_args_result res;
    px_status st = px_args_parse(plan_rows, N_PLAN_ROWS, argc, argv, c, 0, &res, err);
    if (st != PX_OK)
        return st;
    bool hw_given = c->hw != NULL;
    if (!hw_given)
        c->hw = PX_HW_DEFAULT;
    *action = res.action;
    px_args_free(&res);
    if (*action != PX_ARGS_RUN || c->list_models || c->list_hw || c->list_recipes)
        return PX_OK;
    if (model_given && c->model)
        return PX_FAIL(err, PX_ERR_USAGE, "--model \"%s\" given beside a model object: give "
                                          "one of them", c->model);
    if (!c->model && !model_given)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "--model is required (a preset name such as 70b, or a config.json)");
    if (c->csv && (c->json || c->explain))
        return PX_FAIL(err, PX_ERR_USAGE, "--csv and %s both choose the output: give one of them",
                       c->json ? "--json" : "--explain");
    if (c->sweep)
        PX_TRY(check_sweep(c, hw_given, err));
    if (c->gpus < 1 && !(c->sweep && px_sweep_find(c->sweep, PX_SWEEP_GPUS)))
        return PX_FAIL(err, PX_ERR_USAGE, "--gpus is required (a positive integer)");
    if (c->lora_given && !px_finetune_is_lora(&c->opts.finetune))
        return PX_FAIL(err, PX_ERR_USAGE, "--lora-rank, --lora-alpha and --lora-targets need "
                                          "--finetune lora");
    if (c->offload_fraction_given && c->opts.offload.kind != PX_OFFLOAD_OPTIMIZER)
        return PX_FAIL(err, PX_ERR_USAGE, "--offload-fraction needs --offload optimizer");
    if (c->offload_layers_given && !c->opts.offload.activations)
        return PX_FAIL(err, PX_ERR_USAGE, "--offload-layers needs --offload activations");
    if (c->opts.recompute_modules != 0) {
        /* the list is what selective recompute reruns, as Megatron's flags */
        if (c->opts.recompute >= 0 && c->opts.recompute != PX_RECOMPUTE_SELECTIVE)
            return PX_FAIL(err, PX_ERR_USAGE,
                           "--recompute-modules with --recompute %s: the modules say what "
                           "selective recompute reruns; allowed: --recompute selective, or "
                           "no --recompute",
                           px_recompute_name((px_recompute)c->opts.recompute));
        c->opts.recompute = PX_RECOMPUTE_SELECTIVE;
    }
    if (c->opts.global_batch > 0 && c->opts.tokens_per_step > 0)
        return PX_FAIL(err, PX_ERR_USAGE, "--global-batch and --tokens-per-step both set the "
                                          "global batch: give one of them");
    return PX_OK;
}

/* ------------------------------------------------------------------ */
/* people's output                                                     */

/* The cost context every number of plan's output comes from (--json's
 * breakdown, --explain): the search's, under how the framework runs the plan
 * (run, the search options' run), so that a breakdown adds up to its row.
 * *out is the caller's to free. */
px_status plan_cost_ctx(const struct px_fw_runtime *run, const px_model *model,
                        const px_hw *hw, px_cost_ctx **out, px_error *err)
{
    px_cost_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the cost model");
    px_status st = px_cost_ctx_init(ctx, model, hw, err);
    if (st != PX_OK) {
        free(ctx);
        return st;
    }
    ctx->run = run; /* as the search and the plan file cost it */
    *out = ctx;
    return PX_OK;
}
