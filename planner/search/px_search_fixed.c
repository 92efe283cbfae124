/* px_search_fixed.c — what the options fix before the search enumerates:
 * the defaults of every candidate, the batch, the dimensions fixed on the
 * command line (refused with the option and the rule), and the nearest
 * batch that has a factorisation (docs/cost-model.md, "Search"). */
#include "px_search_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <stdlib.h>

#include "px_bound.h"
#include "px_checked.h"
#include "px_cost_precision.h"
#include "px_framework.h"
#include "px_partition_refine.h"
#include "px_split_megatron.h"
#include "px_plan_check.h"

bool px_search_fully_fixed(const px_model *m, int gpus, const px_search_opts *o)
{
    /* tp, pp and dp fixed with tp·pp·dp = G leave cp no choice but 1 */
    bool cp_implied = o->tp > 0 && o->pp > 0 && o->dp > 0 &&
                      (int64_t)o->tp * o->pp * o->dp == gpus;
    if (o->tp <= 0 || (o->cp <= 0 && !cp_implied) || o->pp <= 0 || o->micro_batch <= 0 ||
        o->zero < 0 || o->recompute < 0)
        return false;
    if (m->n_experts > 0 && (o->ep <= 0 || o->etp <= 0))
        return false;
    if (o->schedule < 0 && o->pp > 1)
        return false;
    bool vpp_implied = o->pp == 1 || (o->schedule >= 0 && o->schedule != PX_SCHED_INTERLEAVED);
    return o->vpp > 0 || vpp_implied;
}

/* Where a broken rule is counted: under the framework when it is a
 * capability the consumer lacks (PX_ERR_UNSUPPORTED), else under the rule's
 * own reason. */
px_reject rule_reject(px_status st, px_reject structural)
{
    return st == PX_ERR_UNSUPPORTED ? PX_REJ_FRAMEWORK : structural;
}

/* The capability set a search works under (px_search_opts.caps). */
const px_caps *search_caps(const px_search_opts *o, px_caps *storage)
{
    if (o->caps)
        return o->caps;
    px_caps_parallax(storage);
    return storage;
}

int64_t px_search_default_tokens_per_step(const px_model *m)
{
    px_param_count pc;
    px_model_count_params(m, &pc);
    double scale = sqrt(fmin(1.0, (double)pc.total / PX_SEARCH_BATCH_FULL_PARAMS));
    /* the nearest power of two (in log2): a model a little under 70e9 keeps 2^24 */
    int e = (int)lround(log2((double)PX_SEARCH_TOKENS_PER_STEP_DEFAULT * scale));
    return (int64_t)1 << (e > 0 ? e : 0);
}

px_status resolve_batch(const px_model *m, const px_search_opts *o, px_search_result *res,
                        px_error *err)
{
    int64_t s = o->seq_len > 0 ? o->seq_len : m->seq_len;
    if (s < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "sequence length %lld: must be >= 1", (long long)s);
    /* learned positions (the GPT block) have a table of max_positions rows:
     * a longer sequence has no position to look up */
    if (m->block == PX_BLOCK_GPT && m->max_positions > 0 && s > m->max_positions)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "--seq %lld exceeds max_positions %lld of %s (learned position "
                       "embeddings): at most %lld",
                       (long long)s, (long long)m->max_positions, m->name,
                       (long long)m->max_positions);
    res->seq_len = s;
    if (o->tokens_per_step > PX_SEARCH_MAX_TOKENS_PER_STEP)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "tokens-per-step %lld is out of range (allowed: 1..%lld, 2^50)",
                       (long long)o->tokens_per_step, (long long)PX_SEARCH_MAX_TOKENS_PER_STEP);
    if (o->global_batch > 0) {
        res->global_batch = o->global_batch;
    } else if (o->tokens_per_step > 0) {
        if (o->tokens_per_step % s != 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "tokens-per-step %lld is not a multiple of the sequence length %lld",
                           (long long)o->tokens_per_step, (long long)s);
        res->global_batch = o->tokens_per_step / s;
    } else if (o->micro_batch > 0 && o->n_micro > 0 && o->dp > 0) {
        res->global_batch = px_mul_sat(px_mul_sat(o->micro_batch, o->n_micro), o->dp);
    } else {
        int64_t gb = px_search_default_tokens_per_step(m) / s;
        res->global_batch = gb > 0 ? gb : 1;
    }
    if (!px_mul_ok(res->global_batch, s, &res->tokens_per_step) ||
        res->tokens_per_step > PX_SEARCH_MAX_TOKENS_PER_STEP)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "global batch %lld sequences x sequence length %lld is more than %lld "
                       "(2^50) tokens a step", (long long)res->global_batch, (long long)s,
                       (long long)PX_SEARCH_MAX_TOKENS_PER_STEP);
    return PX_OK;
}

/* The fixed sizes checked before the enumeration, so that the message
 * names the flag and the model size it fails against instead of only
 * counting rejections. */
/* A fixed size that cannot work: counted under its reason, and the request
 * is infeasible (as when the enumeration rejects everything). */
static px_status reject_fixed(px_search_result *res, px_reject r, px_error *err,
                              const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static px_status reject_fixed(px_search_result *res, px_reject r, px_error *err,
                              const char *fmt, ...)
{
    res->rejected[r]++;
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return PX_FAIL(err, PX_ERR_INFEASIBLE, "%s", msg);
}

/* A fixed size against one rule (px_plan_check.h): the message names the flag. */
static px_status fixed_rule(px_search_result *res, px_reject r, px_status rule, const char *flag,
                            int val, const px_error *e, px_error *err)
{
    if (rule == PX_OK)
        return PX_OK;
    return reject_fixed(res, r, err, "--%s %d: %s", flag, val, e->msg);
}

/* A size the user gave, else 1 where the other three fixed sizes already
 * make up --gpus, else 0 (free). */
static int given_or_implied(int given, int a, int b, int c, int64_t gpus)
{
    if (given > 0)
        return given;
    return a > 0 && b > 0 && c > 0 && (int64_t)a * b * c == gpus ? 1 : 0;
}

/* The schedule a fixed --pp is checked under: --schedule, interleaved with
 * --vpp, else the first schedule without virtual chunks the framework runs
 * (a pipeline rule, not a schedule the user never asked for, is blamed). */
static px_schedule fixed_pp_schedule(const px_search_opts *o, const px_caps *caps)
{
    if (o->schedule >= 0)
        return (px_schedule)o->schedule;
    if (o->vpp > 1)
        return PX_SCHED_INTERLEAVED;
    for (int s = 0; s < PX_SCHED_COUNT; s++)
        if (caps->schedules[s] && s != PX_SCHED_INTERLEAVED)
            return (px_schedule)s;
    return PX_SCHED_1F1B;
}

px_status check_fixed(const px_model *m, int gpus, int64_t s, const px_search_opts *o,
                      px_search_result *res, px_error *err)
{
    px_caps cs;
    const px_caps *caps = search_caps(o, &cs);
    px_error e;
    px_status st = PX_OK;
    if (m->n_experts <= 0 && (o->ep > 1 || o->etp > 1))
        st = fixed_rule(res, PX_REJ_EXPERTS, px_rule_experts(m, 1, 1, 1, o->ep > 1 ? o->ep : 1,
                                                             o->etp > 1 ? o->etp : 1, caps, &e),
                        o->ep > 1 ? "ep" : "etp", o->ep > 1 ? o->ep : o->etp, &e, err);
    if (st == PX_OK && o->tp > 0)
        st = fixed_rule(res, PX_REJ_HEADS, px_rule_tp(m, o->tp, caps, &e), "tp", o->tp, &e, err);
    if (st == PX_OK && o->cp > 0)
        st = fixed_rule(res, PX_REJ_SEQ, px_rule_cp(s, o->cp, caps, &e), "cp", o->cp, &e, err);
    /* with --vpp, the end chunks may hold the embedding or the loss alone
     * where the framework runs that, as the vpp check below */
    if (st == PX_OK && o->pp > 0 &&
        (o->vpp > 1 ? px_rule_pipeline_end_slots(m, o->pp, o->vpp, fixed_pp_schedule(o, caps),
                                                 caps, &e)
                    : px_rule_pipeline(m, o->pp, 1, fixed_pp_schedule(o, caps), caps, &e)))
        st = o->vpp > 1 ? reject_fixed(res, PX_REJ_LAYERS, err, "--pp %d --vpp %d: %s", o->pp,
                                       o->vpp, e.msg)
                        : fixed_rule(res, PX_REJ_LAYERS, PX_ERR_INVALID, "pp", o->pp, &e, err);
    /* vpp > 1: with pp fixed (or implied by the other fixed sizes), else
     * with the least pp that interleaves */
    int pp_implied = given_or_implied(o->pp, o->tp, o->cp, o->dp, gpus);
    if (st == PX_OK && o->vpp > 1) { /* pp free: the least pp that interleaves */
        px_schedule sc = o->schedule >= 0 ? (px_schedule)o->schedule : PX_SCHED_INTERLEAVED;
        st = fixed_rule(res, PX_REJ_LAYERS,
                        px_rule_pipeline_end_slots(m, pp_implied > 0 ? pp_implied : 2, o->vpp,
                                                   sc, caps, &e),
                        "vpp", o->vpp, &e, err);
    }
    /* ep and etp alone: the stage's GPUs are not fixed yet, so they are
     * checked against a stage of tp·ep·etp GPUs, which they divide */
    if (st == PX_OK && m->n_experts > 0 && (o->ep > 0 || o->etp > 0)) {
        int ep = o->ep > 0 ? o->ep : 1, etp = o->etp > 0 ? o->etp : 1;
        int tp = o->tp > 0 ? o->tp : (caps->etp ? 1 : etp);
        if (px_rule_experts(m, tp, 1, ep * etp, ep, etp, caps, &e) != PX_OK)
            st = o->ep > 0 && o->etp > 0 /* both given: the message names both */
                     ? reject_fixed(res, PX_REJ_EXPERTS, err, "--ep %d --etp %d: %s", o->ep,
                                    o->etp, e.msg)
                     : fixed_rule(res, PX_REJ_EXPERTS, PX_ERR_INVALID, o->ep > 0 ? "ep" : "etp",
                                  o->ep > 0 ? o->ep : o->etp, &e, err);
    }
    /* tp, cp, dp and ep all fixed (cp given, or 1 where --tp·--pp·--dp
     * make up --gpus), etp given or 1 at tp 1: the expert grid against the
     * stage's tp·cp·dp GPUs, so the message names the sizes, not a count */
    int cp_fixed = given_or_implied(o->cp, o->tp, o->pp, o->dp, gpus);
    int etp_fixed = o->etp > 0 ? o->etp : o->tp == 1 ? 1 : 0;
    if (st == PX_OK && m->n_experts > 0 && o->ep > 0 && o->tp > 0 && o->dp > 0 && cp_fixed > 0 &&
        etp_fixed > 0 &&
        px_rule_experts(m, o->tp, cp_fixed, o->dp, o->ep, etp_fixed, caps, &e) != PX_OK)
        st = reject_fixed(res, PX_REJ_EXPERTS, err, "tp %d, cp %d, dp %d, ep %d, etp %d: %s",
                          o->tp, cp_fixed, o->dp, o->ep, etp_fixed, e.msg);
    /* --moe-dispatcher deepep|hybridep against the model and a fixed ep, etp;
     * whether the framework runs it is the capability probe's to say */
    if (st == PX_OK && o->moe_dispatcher != PX_MOE_ALLTOALL) {
        px_caps runs = *caps;
        runs.moe_deepep = runs.moe_hybridep = true;
        int ep = o->ep > 0 ? o->ep : 2, etp = o->etp > 0 ? o->etp : 1;
        if (o->ep == 1 && o->etp <= 0 && caps->etp)
            etp = 2; /* a free expert TP may make the ranks alone */
        if (px_rule_moe_dispatcher(m, o->moe_dispatcher, ep, etp, &runs, &e) != PX_OK)
            st = reject_fixed(res, PX_REJ_EXPERTS, err, "--moe-dispatcher %s: %s",
                              px_moe_dispatch_name(o->moe_dispatcher), e.msg);
    }
    /* --recompute-modules against the model and the precision; whether the
     * framework runs the list is the capability probe's to say */
    if (st == PX_OK && o->recompute_modules != 0) {
        px_caps runs = *caps;
        runs.recompute_modules = runs.recompute_modules_quantized = true;
        if (px_rule_recompute_modules(m, o->recompute_modules, true, o->precision, &runs, &e) !=
            PX_OK)
            st = reject_fixed(res, PX_REJ_FRAMEWORK, err, "--recompute-modules: %s", e.msg);
    }
    /* --moe-a2a-overlap on against what is fixed with it, the free sizes as
     * the rule wants them (ep 2, virtual chunks); whether the framework runs
     * it at all is the capability probe's to say (px_search_caps.c) */
    if (st == PX_OK && o->moe_a2a_overlap > 0) {
        px_caps runs = *caps;
        runs.moe_a2a_overlap = true;
        int pp = given_or_implied(o->pp, o->tp, o->cp, o->dp, gpus);
        bool flat = o->schedule >= 0 && o->schedule != PX_SCHED_INTERLEAVED;
        int vpp = o->vpp > 0 ? o->vpp : flat ? 1 : 2;
        if (px_rule_moe_a2a_overlap(m, o->ep > 0 ? o->ep : 2, pp > 0 ? pp : 1, vpp,
                                    o->recompute == PX_RECOMPUTE_FULL, &runs, &e) != PX_OK)
            st = reject_fixed(res, PX_REJ_EXPERTS, err, "--moe-a2a-overlap on: %s", e.msg);
    }
    /* --tp-comm-overlap on splits the sequence-parallel collectives; whether
     * the framework runs it is the capability probe's to say */
    if (st == PX_OK && o->tp_comm_overlap > 0 && o->sp == 0 && o->tp > 1)
        st = reject_fixed(res, PX_REJ_FRAMEWORK, err,
                          "--tp-comm-overlap on with --sp off: the overlap splits the "
                          "sequence-parallel all-gather and reduce-scatter; allowed: --sp on");
    if (st != PX_OK)
        return st;
    /* the product of the fixed sizes against --gpus */
    const char *names[4] = {"tp", "cp", "pp", "dp"};
    int vals[4] = {o->tp, o->cp, o->pp, o->dp};
    char lhs[64] = "", rhs[96] = "";
    int64_t prod = 1;
    int n_fixed = 0;
    for (int i = 0; i < 4; i++) {
        if (vals[i] <= 0)
            continue;
        size_t a = strlen(lhs), b = strlen(rhs);
        snprintf(lhs + a, sizeof lhs - a, "%s%s", n_fixed ? "·" : "", names[i]);
        snprintf(rhs + b, sizeof rhs - b, "%s%d", n_fixed ? "·" : "", vals[i]);
        prod *= vals[i];
        n_fixed++;
    }
    if (n_fixed == 4 && prod != gpus)
        return reject_fixed(res, PX_REJ_GPUS, err, "%s = %s = %lld ≠ --gpus %d", lhs, rhs,
                            (long long)prod, gpus);
    if (n_fixed > 0 && gpus % prod)
        return reject_fixed(res, PX_REJ_GPUS, err,
                            "%s = %s = %lld does not divide --gpus %d (G = tp·cp·pp·dp)", lhs, rhs,
                            (long long)prod, gpus);
    return PX_OK;
}

/* True when some tp·cp·pp·dp = gpus passes every check but memory: tp
 * dividing the heads, kv heads and ffn, cp the sequence, pp at most the
 * layers, a micro-batch · dp dividing the global batch, the experts split. */
bool has_factorisation(const px_model *m, int gpus, int64_t s, int64_t GB,
                       const px_search_opts *o)
{
    px_caps cs;
    const px_caps *caps = search_caps(o, &cs);
    for (int tp = 1; tp <= gpus && tp <= o->max_tp; tp++) {
        if (gpus % tp || (o->tp > 0 && tp != o->tp) || px_rule_tp(m, tp, caps, NULL))
            continue;
        for (int cp = 1; cp <= gpus / tp && cp <= o->max_cp; cp++) {
            if ((gpus / tp) % cp || (o->cp > 0 && cp != o->cp) || px_rule_cp(s, cp, caps, NULL))
                continue;
            int rest = gpus / tp / cp;
            for (int pp = 1; pp <= rest && pp <= m->n_layers; pp++) {
                if (rest % pp || (o->pp > 0 && pp != o->pp))
                    continue;
                int dp = rest / pp;
                if (o->dp > 0 && dp != o->dp)
                    continue;
                if (o->shard_group > 0 && ((int64_t)dp * cp) % o->shard_group)
                    continue; /* the shard groups tile dp·cp */
                if (!o->uneven && m->n_layers % pp)
                    continue;
                int ep = o->ep > 0 ? o->ep : 1, etp = o->etp > 0 ? o->etp : 1;
                if (m->n_experts > 0 && !caps->etp && o->etp <= 0)
                    etp = tp;
                if (m->n_experts > 0 && px_rule_experts(m, tp, cp, dp, ep, etp, caps, NULL))
                    continue;
                for (int64_t b = o->micro_batch > 0 ? o->micro_batch : 1;
                     b <= (o->micro_batch > 0 ? o->micro_batch : o->max_micro_batch); b *= 2)
                    if (GB % (b * dp) == 0 &&
                        (o->n_micro <= 0 || GB / (b * dp) == o->n_micro))
                        return true;
            }
        }
    }
    return false;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The GPU counts nearest below and above gpus that factor (0: none).  Only
 * products tp·cp·pp·dp of sizes that pass their own rules are tried (dp
 * dividing the global batch), nearest first: a walk over every count
 * would take seconds at 2^24 GPUs. */
void nearest_factoring(const px_model *m, int gpus, int64_t s, int64_t GB,
                              const px_search_opts *o, int *below, int *above)
{
    px_caps cs;
    const px_caps *caps = search_caps(o, &cs);
    *below = *above = 0;
    int tps[64], cps[64], n_tp = 0, n_cp = 0;
    for (int tp = 1; tp <= o->max_tp && n_tp < 64; tp++)
        if ((o->tp <= 0 || tp == o->tp) && !px_rule_tp(m, tp, caps, NULL))
            tps[n_tp++] = tp;
    for (int cp = 1; cp <= o->max_cp && n_cp < 64; cp++)
        if ((o->cp <= 0 || cp == o->cp) && !px_rule_cp(s, cp, caps, NULL))
            cps[n_cp++] = cp;
    int64_t limit = 2 * (int64_t)gpus; /* a count above it is never nearer than 1 */
    size_t cap = 1 << 16, n = 0;
    int *cand = malloc(cap * sizeof *cand);
    if (!cand)
        return;
    for (int i = 0; i < n_tp; i++)
        for (int j = 0; j < n_cp; j++)
            for (int64_t pp = 1; pp <= m->n_layers; pp++) {
                int64_t tcp = (int64_t)tps[i] * cps[j] * pp;
                if (tcp > limit)
                    break;
                for (int64_t dp = 1; dp <= GB && tcp * dp <= limit; dp++) {
                    if (GB % dp)
                        continue;
                    if (n == cap) {
                        int *more = realloc(cand, 2 * cap * sizeof *cand);
                        if (!more)
                            goto search;
                        cand = more;
                        cap *= 2;
                    }
                    cand[n++] = (int)(tcp * dp);
                }
            }
search:
    qsort(cand, n, sizeof *cand, cmp_int);
    size_t at = 0; /* first candidate >= gpus */
    while (at < n && cand[at] < gpus)
        at++;
    for (size_t k = at; k-- > 0 && !*below;)
        if ((k + 1 == at || cand[k] != cand[k + 1]) && has_factorisation(m, cand[k], s, GB, o))
            *below = cand[k];
    for (size_t k = at; k < n && !*above; k++)
        if (cand[k] != gpus && (k == at || cand[k] != cand[k - 1]) &&
            has_factorisation(m, cand[k], s, GB, o))
            *above = cand[k];
    free(cand);
}

/* The global batch was not given (the default tokens per step) but the
 * layout is fixed: the nearest batch that dp (x a fixed micro-batch, x a
 * fixed micro-batch count, x pp under fixed virtual stages, whose schedule
 * runs the micro-batches in groups of pp: px_rule_batch) divides, rather
 * than no plan at all (TP 8 PP 5 DP 25 on 1000 GPUs runs 2050 sequences,
 * not 2048; PP 3 with virtual stages and DP 2, 2046, not 2048). */
void nearest_batch(int gpus, const px_search_opts *o, px_search_result *res)
{
    if (o->global_batch > 0 || o->tokens_per_step > 0)
        return;
    int64_t dp = o->dp;
    if (dp <= 0 && o->tp > 0 && o->pp > 0 && o->cp > 0 &&
        gpus % ((int64_t)o->tp * o->pp * o->cp) == 0)
        dp = gpus / ((int64_t)o->tp * o->pp * o->cp);
    if (dp <= 0)
        return;
    bool groups = o->vpp > 1 && o->pp > 1 && o->n_micro <= 0;
    int64_t unit = px_mul_sat(px_mul_sat(dp, o->micro_batch > 0 ? o->micro_batch : 1),
                              px_mul_sat(o->n_micro > 0 ? o->n_micro : 1, groups ? o->pp : 1));
    int64_t gb = res->global_batch;
    if (gb % unit == 0)
        return;
    int64_t near = (gb + unit / 2) / unit * unit;
    if (near < unit)
        near = unit;
    snprintf(res->batch_note, sizeof res->batch_note,
             "global batch %lld sequences (the default) is not divisible by dp%s%s%s = %lld: "
             "the nearest the layout divides, %lld, is used",
             (long long)gb, o->micro_batch > 0 ? " x micro-batch" : "",
             o->n_micro > 0 ? " x micro-batches" : "",
             groups ? " x pp (the virtual stages' micro-batch groups)" : "", (long long)unit,
             (long long)near);
    res->global_batch = near;
    res->tokens_per_step = near * res->seq_len;
}

/* Megatron's split of L layers over pp x v chunks with the embedding and
 * the loss counted as pipeline layers (px_split_megatron.h), else its custom
 * layout spread evenly (px_split_layout_balanced), recorded in par; the end
 * chunks may hold the embedding or the loss alone where the
 * framework runs that (empty_ends); false when it does not apply. */
bool megatron_uneven_split(int64_t L, int pp, int v, bool empty_ends, px_parallel *par)
{
    if ((int64_t)pp * v > PX_MAX_CHUNKS)
        return false;
    px_megatron_split how = {0, 0, true, true, empty_ends};
    if (!px_split_megatron(L, pp, v, &how, par->layers_per_chunk) &&
        !px_split_layout_balanced(L, pp, v, empty_ends, par->layers_per_chunk))
        return false;
    par->n_chunks = pp * v;
    return true;
}

/* The settings a configuration takes from the command line or, when not
 * given, from how the framework runs (px_framework.h): gradient reduction and
 * TP collectives overlapped, fused attention. */
void search_defaults(px_parallel *par, const px_search_opts *o)
{
    par->dp_overlap = o->dp_overlap < 0 ? (!o->run || o->run->dp_overlap) : o->dp_overlap != 0;
    par->tp_overlap = o->tp_overlap < 0 ? (!o->run || o->run->tp_overlap) : o->tp_overlap != 0;
    par->tp_comm_overlap = o->tp_comm_overlap > 0;
    par->moe_a2a_overlap = o->moe_a2a_overlap > 0; /* the default: per plan (score_states) */
    par->moe_dispatcher = o->moe_dispatcher;
    par->recompute_modules = o->recompute_modules ? o->recompute_modules : PX_RCM_DEFAULT;
    par->flash_attention = o->flash_attention < 0 ? (!o->run || o->run->fused_attention)
                                                  : o->flash_attention != 0;
    par->attn_kernel = par->flash_attention ? o->attn_kernel : PX_AK_FRAMEWORK;
    par->shard_group = o->shard_group;
    par->precision = o->precision;
    par->cp_comm = px_caps_cp_comm(o->caps, o->cp_comm, o->cp_comm_given);
    par->finetune = o->finetune;
    par->offload = o->offload;
    par->quantized_params = !o->run || o->run->quantized_params;
}
