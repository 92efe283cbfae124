/* px_search_caps.c — the dimensions a search request fixes, against the
 * framework's capability set (px_search_check_framework, px_search.h).
 *
 * No rule is written here: a probe configuration takes the fixed dimensions
 * one at a time, on top of settings the framework runs, and px_plan_check
 * (under the framework's set) judges each step.  The first step it refuses
 * by a capability names the option that asked for it.  A step refused by a
 * rule no capability lifts ends the probing: the request is illegal for any
 * consumer, and the search says so by its own counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_framework.h"
#include "px_hw.h"
#include "px_plan_check.h"
#include "px_search.h"

/* A fixed dimension, in the order the probe takes them: the sizes first
 * (take_size), since the options after them (take_option, from FIX_SP on)
 * only mean something at a size. */
typedef enum {
    FIX_TP,
    FIX_PP,
    FIX_VPP,
    FIX_SCHEDULE,
    FIX_CP,
    FIX_CP_COMM,
    FIX_EP,
    FIX_DP,
    FIX_SP,
    FIX_RECOMPUTE,
    FIX_ZERO,
    FIX_SHARD_GROUP,
    FIX_GRAD_DTYPE,
    FIX_PRECISION,
    FIX_FINETUNE,
    FIX_OFFLOAD,
    FIX_MOE_DISPATCHER,
    FIX_MOE_A2A_OVERLAP,
    FIX_TP_COMM_OVERLAP,
    FIX_RECOMPUTE_MODULES,
    FIX_UNFUSED_ATTENTION,
    FIX_COUNT
} fixed_dim;

/* The first index below n whose flag is set, else 0. */
static int first_allowed(const bool *allowed, int n)
{
    for (int i = 0; i < n; i++)
        if (allowed[i])
            return i;
    return 0;
}

/* The least pipeline size >= 2 that splits the layers evenly into v chunks
 * a stage (2 when none does), so that an uneven split is not what a probe
 * asks about. */
static int even_pp(const px_model *m, int v)
{
    for (int p = 2; (int64_t)p * v <= m->n_layers; p++)
        if (m->n_layers % ((int64_t)p * v) == 0)
            return p;
    return 2;
}

/* The least number >= 2 of virtual chunks that splits the layers evenly
 * over pp stages (2 when none does). */
static int even_vpp(const px_model *m, int pp)
{
    for (int v = 2; (int64_t)pp * v <= m->n_layers; v++)
        if (m->n_layers % ((int64_t)pp * v) == 0)
            return v;
    return 2;
}

/* One configuration on one GPU with the settings the framework runs: the
 * probe before any fixed dimension is taken. */
static void probe_base(const px_search_opts *o, const px_caps *c, px_parallel *p)
{
    px_parallel_init(p);
    p->seq_len = o->seq_len;
    p->zero = first_allowed(c->zero, 4);
    p->recompute = (px_recompute)first_allowed(c->recompute, PX_RECOMPUTE_COUNT);
    for (int q = 0; q < PX_PREC_COUNT; q++)
        if (c->precisions & PX_PREC_BIT(q)) {
            p->precision = (px_precision)q;
            break;
        }
    for (int f = 0; f < PX_CPC_COUNT; f++)
        if (c->cp_flavours & (1u << f)) {
            p->cp_comm = (px_cp_comm)f;
            break;
        }
}

/* A pipeline of p->pp (at least 2) stages under a schedule the framework
 * runs without virtual chunks, unless one is set already. */
static void probe_pipeline(const px_model *m, const px_caps *c, px_parallel *p)
{
    if (p->pp < 2) {
        p->pp = even_pp(m, p->vpp);
        p->n_micro = p->pp;
    }
    if (p->vpp == 1 && (!c->schedules[p->schedule] || p->schedule == PX_SCHED_INTERLEAVED)) {
        bool flat[PX_SCHED_COUNT];
        for (int s = 0; s < PX_SCHED_COUNT; s++)
            flat[s] = c->schedules[s] && s != PX_SCHED_INTERLEAVED;
        p->schedule = (px_schedule)first_allowed(flat, PX_SCHED_COUNT);
    }
}

/* Takes size dimension k (tp, the pipeline, cp, ep) into the probe if o
 * fixes it: the option's name in *flag and what it asks for in what.
 * False: o leaves it free. */
static bool take_size(fixed_dim k, const px_model *m, const px_search_opts *o, const px_caps *c,
                      px_parallel *p, const char **flag, char *what, size_t n)
{
    switch (k) {
    case FIX_TP:
        if (o->tp <= 1)
            return false;
        p->tp = o->tp;
        p->sp = c->sp; /* as the search takes it when free */
        *flag = "--tp";
        snprintf(what, n, "tensor parallelism over %d GPUs", o->tp);
        return true;
    case FIX_PP:
        if (o->pp <= 1)
            return false;
        p->pp = o->pp;
        p->n_micro = o->pp;
        probe_pipeline(m, c, p);
        *flag = "--pp";
        snprintf(what, n, "pipeline parallelism of %d stages", o->pp);
        return true;
    case FIX_VPP:
        if (o->vpp <= 1)
            return false;
        p->vpp = o->vpp;
        p->schedule = o->schedule >= 0 ? (px_schedule)o->schedule : PX_SCHED_INTERLEAVED;
        probe_pipeline(m, c, p);
        *flag = "--vpp";
        snprintf(what, n, "interleaved virtual pipeline stages");
        return true;
    case FIX_SCHEDULE:
        /* --pp 1 fixes no pipeline: the schedule has nothing to run */
        if (o->schedule < 0 || o->pp == 1)
            return false;
        probe_pipeline(m, c, p);
        p->schedule = (px_schedule)o->schedule;
        if (p->schedule == PX_SCHED_INTERLEAVED && p->vpp < 2)
            p->vpp = even_vpp(m, p->pp);
        *flag = "--schedule";
        snprintf(what, n, "the %s schedule", px_schedule_name(p->schedule));
        return true;
    case FIX_CP:
        if (o->cp <= 1)
            return false;
        p->cp = o->cp;
        *flag = "--cp";
        snprintf(what, n, "context parallelism");
        return true;
    case FIX_CP_COMM:
        if (o->cp <= 1)
            return false;
        p->cp_comm = px_caps_cp_comm(c, o->cp_comm, o->cp_comm_given);
        *flag = o->cp_comm_given ? "--cp-comm" : "--cp";
        snprintf(what, n, "%s context parallelism", px_cp_comm_name(p->cp_comm));
        return true;
    case FIX_EP:
        if (o->ep <= 1)
            return false;
        p->ep = o->ep;
        p->dp = o->ep; /* a stage of tp·cp·ep GPUs holds ep·etp = ep ranks */
        *flag = "--ep";
        snprintf(what, n, "expert parallelism");
        return true;
    case FIX_DP:
        if (o->dp <= 1)
            return false;
        p->dp = o->dp;
        *flag = "--dp";
        snprintf(what, n, "data parallelism over %d replicas", o->dp);
        return true;
    default:
        return false;
    }
}

/* Expert parallelism over the least expert count > 1 that divides the
 * experts, where the request leaves ep free and the probe has none: what
 * the expert options need (check_fixed has judged a fixed ep). */
static void probe_expert_ranks(const px_model *m, const px_search_opts *o, px_parallel *p)
{
    if (o->ep > 0 || p->ep >= 2)
        return;
    for (int e = 2; e <= m->n_experts; e++)
        if (m->n_experts % e == 0) {
            p->ep = p->dp = e;
            return;
        }
}

/* Takes option k (sequence parallelism, recompute, ZeRO, sharding, number
 * formats, offload, the expert dispatcher and overlap) into the probe if o
 * fixes it, as take_size does. */
static bool take_option(fixed_dim k, const px_model *m, const px_search_opts *o,
                        const px_caps *c, px_parallel *p, const char **flag, char *what,
                        size_t n)
{
    switch (k) {
    case FIX_SP:
        if (o->sp < 0 || p->tp < 2)
            return false;
        p->sp = o->sp == 1;
        *flag = p->sp ? "--sp on" : "--sp off";
        snprintf(what, n, "%s", p->sp ? "sequence parallelism"
                                      : "tensor parallelism without sequence parallelism");
        return true;
    case FIX_RECOMPUTE:
        if (o->recompute < 0)
            return false;
        p->recompute = (px_recompute)o->recompute;
        *flag = "--recompute";
        snprintf(what, n, "recompute %s", px_recompute_name(p->recompute));
        return true;
    case FIX_ZERO:
        if (o->zero < 0 || o->zero > 3)
            return false;
        p->zero = o->zero;
        *flag = "--zero";
        snprintf(what, n, "ZeRO stage %d", o->zero);
        return true;
    case FIX_SHARD_GROUP:
        if (o->shard_group <= 0)
            return false;
        p->shard_group = o->shard_group;
        if (o->zero < 0)
            p->zero = 3; /* hybrid sharding is a way of running ZeRO-3 */
        *flag = "--shard-group";
        snprintf(what, n, "hybrid sharding");
        return true;
    case FIX_GRAD_DTYPE:
        if (o->grad_fp32 != 0)
            return false;
        p->grad_fp32 = false;
        *flag = "--grad-dtype bf16";
        snprintf(what, n, "bf16 gradients");
        return true;
    case FIX_PRECISION:
        p->precision = o->precision;
        *flag = "--precision";
        snprintf(what, n, "%s GEMMs", px_precision_name(o->precision));
        return true;
    case FIX_FINETUNE:
        if (o->finetune.mode == PX_FT_NONE)
            return false;
        p->finetune = o->finetune;
        *flag = "--finetune";
        snprintf(what, n, "fine-tuning %s", px_finetune_mode_name(o->finetune.mode));
        return true;
    case FIX_OFFLOAD:
        if (!px_offload_any(&o->offload))
            return false;
        p->offload = o->offload;
        if (o->offload.kind != PX_OFFLOAD_NONE && o->zero < 0 && p->zero < 1)
            p->zero = 1; /* offload runs in a sharded optimizer */
        if (o->offload.kind == PX_OFFLOAD_PARAMS) { /* over ZeRO-3's shards */
            if (o->zero < 0)
                p->zero = 3;
            if (o->dp == 0 && p->dp * p->cp < 2)
                p->dp = 2;
        }
        if (o->offload.activations && o->caps) {
            /* the form the framework runs, where the user left it open */
            int mode = o->caps->offload_activations;
            if (mode == PX_ACT_OFFLOAD_LEADING && p->offload.act_layers == 0)
                p->offload.act_layers = 1;
            if (mode == PX_ACT_OFFLOAD_CHECKPOINTS && o->recompute < 0)
                p->recompute = PX_RECOMPUTE_FULL;
        }
        *flag = "--offload";
        snprintf(what, n, "%s%s%s",
                 o->offload.kind == PX_OFFLOAD_NONE     ? ""
                 : o->offload.kind == PX_OFFLOAD_PARAMS ? "parameter offload"
                 : o->offload.fraction < 1.0            ? "optimizer offload of a fraction"
                                                        : "optimizer offload",
                 o->offload.kind != PX_OFFLOAD_NONE && o->offload.activations ? " and " : "",
                 o->offload.activations ? "activation offload" : "");
        return true;
    case FIX_MOE_DISPATCHER:
        if (o->moe_dispatcher == PX_MOE_ALLTOALL)
            return false;
        p->moe_dispatcher = o->moe_dispatcher;
        probe_expert_ranks(m, o, p);
        *flag = o->moe_dispatcher == PX_MOE_DEEPEP ? "--moe-dispatcher deepep"
                                                   : "--moe-dispatcher hybridep";
        snprintf(what, n, "the %s token dispatcher", px_moe_dispatch_name(o->moe_dispatcher));
        return true;
    case FIX_MOE_A2A_OVERLAP:
        if (o->moe_a2a_overlap <= 0)
            return false;
        p->moe_a2a_overlap = true;
        probe_expert_ranks(m, o, p);
        /* virtual chunks under a pipeline, where the request leaves them free
         * (check_fixed has judged the fixed ones) */
        if (p->pp > 1 && p->vpp < 2 && o->vpp <= 0 && c->schedules[PX_SCHED_INTERLEAVED]) {
            p->vpp = even_vpp(m, p->pp);
            p->schedule = PX_SCHED_INTERLEAVED;
        }
        *flag = "--moe-a2a-overlap on";
        snprintf(what, n, "the expert all-to-all under another micro-batch's compute");
        return true;
    case FIX_TP_COMM_OVERLAP:
        if (o->tp_comm_overlap <= 0)
            return false;
        p->tp_comm_overlap = true;
        if (p->tp > 1) /* it runs on the sequence-parallel collectives */
            p->sp = true;
        *flag = "--tp-comm-overlap on";
        snprintf(what, n, "the forward's TP collectives under their GEMMs");
        return true;
    case FIX_RECOMPUTE_MODULES: {
        if (o->recompute_modules == 0 || o->recompute_modules == PX_RCM_DEFAULT)
            return false;
        char list[128];
        px_rc_modules_format(o->recompute_modules, list, sizeof list);
        p->recompute = PX_RECOMPUTE_SELECTIVE;
        p->recompute_modules = o->recompute_modules;
        if (o->recompute_modules & ((1u << PX_RCM_MOE_ACT) | (1u << PX_RCM_MOE) |
                                    (1u << PX_RCM_SHARED_EXPERTS)))
            probe_expert_ranks(m, o, p);
        *flag = "--recompute-modules";
        snprintf(what, n, "selective recompute of %s", list);
        return true;
    }
    case FIX_UNFUSED_ATTENTION:
        if (o->flash_attention != 0)
            return false;
        p->flash_attention = false;
        p->attn_kernel = PX_AK_FRAMEWORK;
        *flag = "--attention-kernel unfused";
        snprintf(what, n, "attention that stores the s x s scores");
        return true;
    default:
        return false;
    }
}

/* The shipped framework profiles (frameworks/) that run probe, as a list
 * for a refusal's hint ("" when none does or none loads), leaving out
 * `self` (the refusing framework: where its profile as it runs today runs
 * probe, an older release refused, and *self_runs says so). */
static void frameworks_that_run(const px_model *m, const px_parallel *probe, const char *self,
                                bool *self_runs, char *out, size_t n)
{
    *self_runs = false;
    out[0] = '\0';
    char names[1024];
    px_hw_list_profiles(px_framework_dir_default(), names, sizeof names);
    px_framework *fw = malloc(sizeof *fw);
    if (!fw)
        return;
    char *save = NULL;
    px_parallel *q = malloc(sizeof *q);
    for (char *name = strtok_r(names, ", ", &save); q && name; name = strtok_r(NULL, ", ", &save)) {
        px_error e;
        if (px_framework_load(name, NULL, fw, &e) != PX_OK)
            continue;
        *q = *probe;
        /* a count of offloaded layers is the search's to choose */
        if (q->offload.activations && q->offload.act_layers == 0 &&
            fw->caps.offload_activations == PX_ACT_OFFLOAD_LEADING)
            q->offload.act_layers = 1;
        if (px_plan_check_cap(m, q, &fw->caps, NULL, NULL) != PX_OK)
            continue;
        if (!strcmp(name, self)) {
            *self_runs = true;
            continue;
        }
        size_t used = strlen(out);
        snprintf(out + used, n - used, "%s%s", used ? ", " : "", name);
    }
    free(q);
    free(fw);
}

/* A dimension fixed on the command line that the framework cannot run is
 * an error naming the capability (the enumeration would only count it) and
 * the shipped frameworks that run it. */
static px_status framework_refuses(const px_model *m, const px_parallel *probe,
                                   const px_caps *c, px_error *err, const char *flag,
                                   const char *cap, const char *what)
{
    char src[300], others[256];
    if (c->source[0])
        snprintf(src, sizeof src, "%s", c->source);
    else
        snprintf(src, sizeof src, "frameworks/%s.json", c->name);
    bool self_runs;
    frameworks_that_run(m, probe, c->name, &self_runs, others, sizeof others);
    return PX_FAIL(err, PX_ERR_INFEASIBLE,
                   "%s: framework %s cannot run %s (capability %s of %s)%s%s%s%s%s%s", flag,
                   c->name, what, cap, src, self_runs ? "; its current release can (" : "",
                   self_runs ? c->name : "", self_runs ? " without --framework-release)" : "",
                   others[0] ? "; --framework " : "", others, others[0] ? " can" : "");
}

/* A probe refused for ZeRO-0 beside another dimension where the user did
 * not ask for ZeRO-0 (or 1): the search would take a sharded stage there, so
 * the probe does until --zero is taken (true when the framework runs one). */
static bool shard_instead(const px_search_opts *o, const px_caps *c, const char *cap,
                          px_parallel *p)
{
    if ((o->zero >= 0 && o->zero < 2) || strcmp(cap, "ddp_1d_only") != 0)
        return false;
    for (int z = 2; z < 4; z++)
        if (c->zero[z]) {
            p->zero = z;
            return true;
        }
    return false;
}

/* A capability about two dimensions together names the other one too. */
static void add_partner(const char *cap, const px_parallel *p, char *what, size_t n)
{
    size_t used = strlen(what);
    if (!strcmp(cap, "tp_with_pp"))
        snprintf(what + used, n - used, " together with tensor parallelism (tp %d, pp %d)",
                 p->tp, p->pp);
    else if (!strcmp(cap, "ddp_1d_only"))
        snprintf(what + used, n - used, " (ZeRO-0, DDP, with tp %d, pp %d, cp %d, ep %d)", p->tp,
                 p->pp, p->cp, p->ep);
}

/* What of the model a framework lacks, for its refusal: the model's name
 * and each missing feature; returns the capability that lacks them. */
static const char *model_refusal(const px_model *m, const px_caps *c, char *what, size_t n)
{
    unsigned missing = px_model_features(m) & ~c->model_features;
    if (!missing) {
        snprintf(what, n, "%s: experts in GPT blocks (its MoE runs in llama blocks only)",
                 m->name);
        return "moe_gpt_block";
    }
    snprintf(what, n, "%s", m->name);
    const char *sep = ": ";
    for (unsigned bit = 1; missing; bit <<= 1) {
        if (!(missing & bit))
            continue;
        size_t used = strlen(what);
        snprintf(what + used, n - used, "%s%s", sep, px_model_feature_name(bit));
        sep = ", ";
        missing &= ~bit;
    }
    return "model_features";
}

/* A refusal by model feature comes last in px_plan_check: every other rule
 * holds. */
static bool refused_by_feature(const char *cap)
{
    return cap && (!strcmp(cap, "model_features") || !strcmp(cap, "moe_gpt_block"));
}

px_status px_search_check_framework(const px_model *m, const px_search_opts *o, px_error *err)
{
    const px_caps *c = o->caps;
    if (!c)
        return PX_OK;
    px_parallel probe;
    probe_base(o, c, &probe);
    for (int k = 0; k < FIX_COUNT; k++) {
        const char *flag = NULL;
        char what[192];
        bool fixed = k < FIX_SP
                         ? take_size((fixed_dim)k, m, o, c, &probe, &flag, what, sizeof what)
                         : take_option((fixed_dim)k, m, o, c, &probe, &flag, what,
                                       sizeof what);
        if (!fixed)
            continue;
        const char *cap = NULL;
        if (px_plan_check_cap(m, &probe, c, &cap, NULL) == PX_OK || refused_by_feature(cap))
            continue;
        if (cap && shard_instead(o, c, cap, &probe) &&
            (px_plan_check_cap(m, &probe, c, &cap, NULL) == PX_OK || refused_by_feature(cap)))
            continue;
        if (!cap && (k == FIX_FINETUNE || k == FIX_OFFLOAD)) /* their own rules: say which */
            return px_plan_check(m, &probe, c, err);
        if (!cap)
            break; /* a rule no framework lifts: the search reports it */
        add_partner(cap, &probe, what, sizeof what);
        return framework_refuses(m, &probe, c, err, flag, cap, what);
    }
    if (px_rule_features(m, c, NULL) != PX_OK) {
        char what[512];
        const char *cap = model_refusal(m, c, what, sizeof what);
        return framework_refuses(m, &probe, c, err, "--model", cap, what);
    }
    return PX_OK;
}
