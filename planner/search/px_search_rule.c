/* px_search_rule.c — the rule-of-thumb plan (px_search_rule_of_thumb): the
 * textbook steps, each written down in the result's notes, for comparison
 * with the search's best (docs/cost-model.md, "Search"). */
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

/* ------------------------------------------------------------------ */
/* The lecture's rule-of-thumb decision procedure                      */

static void note(px_search_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends one step of the procedure to res->rule_notes ("; "-separated). */
static void note(px_search_result *res, const char *fmt, ...)
{
    size_t len = strlen(res->rule_notes);
    if (len + 3 >= sizeof res->rule_notes)
        return;
    if (len) {
        res->rule_notes[len++] = ';';
        res->rule_notes[len++] = ' ';
        res->rule_notes[len] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->rule_notes + len, sizeof res->rule_notes - len, fmt, ap);
    va_end(ap);
}

/* dp = the rest of the GPUs; micro-batch 1 and m = GB / dp, the most
 * micro-batches the global batch gives (the lecture's m >= 20 (p − 1) is
 * then met whenever the batch allows it).  False when dp does not divide
 * the global batch (m is then rounded down, and the batch differs). */
static bool rule_batch(px_parallel *par, int gpus, int64_t GB)
{
    par->dp = gpus / (par->tp * par->cp * par->pp);
    par->micro_batch = 1;
    par->n_micro = par->dp > 0 && GB >= par->dp ? GB / par->dp : 1;
    return par->dp > 0 && GB % par->dp == 0;
}

/* pp and the schedule: interleaved with two chunks a stage when the layers
 * split that way and m >= pp, else 1F1B; an uneven split is recorded as the
 * search records it. */
static void rule_pp(const px_model *m, px_parallel *par, int pp)
{
    par->pp = pp;
    par->n_chunks = 0;
    if (pp > 1 && m->n_layers % (pp * 2) == 0 &&
        px_rule_batch(pp, 2, PX_SCHED_INTERLEAVED, par->micro_batch, par->n_micro, NULL) ==
            PX_OK) {
        par->vpp = 2;
        par->schedule = PX_SCHED_INTERLEAVED;
    } else {
        par->vpp = 1;
        par->schedule = PX_SCHED_1F1B;
    }
    px_cost_record_split(m, par);
}

/* ep: the largest divisor of the experts not above want that also divides
 * the tp·cp·dp GPUs the experts are spread over. */
static int rule_ep(const px_model *m, const px_parallel *par, int want)
{
    px_caps caps;
    px_caps_parallax(&caps);
    int ep = want;
    while (ep > 1 && px_rule_experts(m, par->tp, par->cp, par->dp, ep, 1, &caps, NULL))
        ep--;
    return ep;
}

/* The general steps of the procedure (1: ZeRO-1, recompute, CP; 2: TP and EP
 * inside a node; 3: PP until it fits; 5: the micro-batch count) on par.
 * Returns whether the rest of the GPUs split the global batch. */
static bool rule_general_steps(const px_model *m, px_cost_ctx *ctx, px_parallel *par,
                               px_search_result *res, int gpus, int64_t GB, int64_t s,
                               int g, int64_t limit)
{
    px_caps caps; /* the rules of the planner's whole space */
    px_caps_parallax(&caps);
    px_memory mem;
    bool batch_ok = false;
    /* step 1: ZeRO-1 and FlashAttention always; selective recompute from 8K */
    par->zero = 1;
    par->recompute = s >= 8192 ? PX_RECOMPUTE_SELECTIVE : PX_RECOMPUTE_NONE;
    note(res, "ZeRO-1, FlashAttention, recompute %s", px_recompute_name(par->recompute));
    /* CP for s >= 32K: sequence chunks of 8K */
    int cp = 1;
    if (s >= 32768)
        while (gpus % (cp * 2) == 0 && s / (cp * 2) >= 8192 && s % (cp * 2) == 0)
            cp *= 2;
    par->cp = cp;
    if (cp > 1)
        note(res, "CP %d for s >= 32K (chunks of %lld tokens)", cp, (long long)(s / cp));
    /* TP (and EP) fill the node, innermost; CP goes outside them
     * (order TP, CP, EP, PP, DP) */
    int gc = g;
    while (gc > 1 && gpus % (gc * cp))
        gc /= 2;
    /* step 2: inside the node */
    int tp = 1;
    if (m->n_experts > 0) {
        int ep = (int)(m->n_experts < gc ? m->n_experts : gc);
        while (ep > 1 && (m->n_experts % ep || gc % ep))
            ep--;
        tp = gc / ep;
        while (tp > 1 && (px_rule_tp(m, tp, &caps, NULL) != PX_OK || gpus % (tp * cp)))
            tp /= 2;
        par->tp = tp;
        par->sp = tp > 1;
        batch_ok = rule_batch(par, gpus, GB);
        par->ep = rule_ep(m, par, ep);
        note(res, "MoE: EP = min(E, g) = %d, TP = g / EP = %d", par->ep, tp);
    } else {
        par->tp = 1;
        batch_ok = rule_batch(par, gpus, GB);
        while (!fits(ctx, par, limit, &mem) && tp * 2 <= gc &&
               px_rule_tp(m, tp * 2, &caps, NULL) == PX_OK && gpus % (tp * 2 * cp) == 0) {
            tp *= 2;
            par->tp = tp;
            par->sp = true;
            batch_ok = rule_batch(par, gpus, GB);
        }
        note(res, "dense: TP %d (2, 4, 8 until it fits; SP when > 1)", tp);
    }
    /* step 3: still out of memory (or the rest does not split the
     * batch: the lecture's "shrink DP"): double PP and interleave.
     * When doubling does not divide the GPUs left, the next pp that
     * does (an uneven split when it does not divide the layers). */
    int rest = gpus / (tp * cp);
    bool fit = fits(ctx, par, limit, &mem);
    while (!fit || !batch_ok) {
        int pp = par->pp * 2;
        if (pp > m->n_layers || rest % pp) {
            pp = par->pp + 1;
            while (pp <= m->n_layers && pp <= rest && rest % pp)
                pp++;
            if (pp > m->n_layers || pp > rest || pp > PX_MAX_CHUNKS) {
                note(res, "PP cannot grow past %d (%d GPUs left after TP·CP, %lld layers)",
                     par->pp, rest, (long long)m->n_layers);
                break;
            }
            note(res, "PP %d (doubling to %d does not divide the %d GPUs left)", pp,
                 par->pp * 2, rest);
        }
        par->pp = pp;
        batch_ok = rule_batch(par, gpus, GB);
        rule_pp(m, par, pp);
        if (m->n_experts > 0)
            par->ep = rule_ep(m, par, par->ep);
        fit = fits(ctx, par, limit, &mem);
    }
    if (par->pp > 1)
        note(res, "PP %d (%s), vpp %d, %s%s", par->pp,
             fit ? "doubled until it fits" : "the most the GPUs allow", par->vpp,
             px_schedule_name(par->schedule), par->n_chunks ? ", uneven layer split" : "");
    /* step 5: m >= max(needed, 20 (p − 1)) */
    if (par->pp > 1) {
        int64_t want = 20LL * (par->pp - 1);
        if (par->n_micro >= want)
            note(res, "m = %lld >= 20 (p - 1) = %lld", (long long)par->n_micro,
                 (long long)want);
        else
            note(res, "m = %lld < 20 (p - 1) = %lld: the global batch of %lld sequences "
                      "over DP %d allows no more (a larger bubble)",
                 (long long)par->n_micro, (long long)want, (long long)GB, par->dp);
    }
    return batch_ok;
}

/* The rule plan's workspace (px_parallel carries 5 KB of per-layer tables). */
typedef struct {
    px_cost_ctx ctx;
    px_parallel par, one;
} rule_ws;

static px_status rule_plan(const px_model *m, const px_hw *hw, int gpus,
                           const px_search_opts *o, px_search_result *res, rule_ws *ws,
                           px_error *err);

px_status px_search_rule_of_thumb(const px_model *m, const px_hw *hw, int gpus,
                                  const px_search_opts *o, px_search_result *res, px_error *err)
{
    res->has_rule = false;
    res->rule_fits = false;
    res->rule_same_batch = false;
    res->rule_notes[0] = '\0';
    rule_ws *ws = malloc(sizeof *ws);
    if (!ws)
        return PX_FAIL(err, PX_ERR_NOMEM, "rule of thumb: out of memory");
    px_status st = rule_plan(m, hw, gpus, o, res, ws, err);
    free(ws);
    return st;
}

/* px_search_rule_of_thumb's steps, in ws. */
static px_status rule_plan(const px_model *m, const px_hw *hw, int gpus,
                           const px_search_opts *o, px_search_result *res, rule_ws *ws,
                           px_error *err)
{
    px_cost_ctx *ctx = &ws->ctx;
    px_status st = px_cost_ctx_init(ctx, m, hw, err);
    if (st != PX_OK)
        return st;
    ctx->run = o->run; /* costed as the search's candidates are */
    int64_t s = res->seq_len > 0 ? res->seq_len : m->seq_len;
    int64_t GB = res->global_batch > 0 ? res->global_batch
                                       : px_search_default_tokens_per_step(m) / s;
    if (GB < 1)
        GB = 1;
    int64_t limit = px_hw_usable_bytes(hw);
    int g = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    if (g > gpus)
        g = gpus;
    px_parallel *par = &ws->par;
    px_parallel_init(par);
    par->seq_len = s;
    par->grad_fp32 = o->grad_fp32 < 0 ? true : o->grad_fp32 != 0;
    search_defaults(par, o); /* overlap, attention, precision as the search's */
    par->offload.activations = false; /* not a step of the textbook procedure */
    par->offload.act_layers = 0;
    par->moe_a2a_overlap = false; /* nor is the expert all-to-all's overlap */
    par->moe_dispatcher = PX_MOE_ALLTOALL; /* or its deduplicating dispatchers */
    par->schedule = PX_SCHED_1F1B;
    px_memory mem;
    bool batch_ok = false, done = false;

    /* step 0: model states + activations of one sequence within one node's
     * memory: FSDP / ZeRO-3 over everything and stop */
    px_parallel *one = &ws->one;
    *one = *par;
    one->zero = 0;
    one->micro_batch = one->n_micro = 1;
    px_memory one_mem;
    px_cost_memory(ctx, one, &one_mem, NULL);
    if ((double)one_mem.total <= (double)g * (double)limit) {
        par->zero = 3;
        batch_ok = rule_batch(par, gpus, GB);
        if (batch_ok && fits(ctx, par, limit, &mem)) {
            note(res, "model states + activations (%.1f GB) fit in one node: ZeRO-3 over all "
                      "%d GPUs",
                 (double)one_mem.total / 1e9, gpus);
            done = true;
        } else {
            note(res, "model states + activations (%.1f GB) fit in one node, but ZeRO-3 over "
                      "all %d GPUs %s: on to the general steps",
                 (double)one_mem.total / 1e9, gpus,
                 batch_ok ? "does not fit" : "cannot split the global batch");
            par->zero = 0;
        }
    }
    if (!done)
        batch_ok = rule_general_steps(m, ctx, par, res, gpus, GB, s, g, limit);
    note(res, "DP %d (the rest)", par->dp);
    if (!batch_ok)
        note(res, "the global batch of %lld sequences does not split over DP %d: the rule "
                  "plan runs %lld sequences a step instead",
             (long long)GB, par->dp, (long long)px_parallel_global_batch(par));
    px_error e2;
    if (px_cost_check(m, par, &e2) != PX_OK) {
        note(res, "invalid for this model: %s", e2.msg);
        return PX_FAIL(err, PX_ERR_INFEASIBLE, "rule-of-thumb plan invalid: %s", e2.msg);
    }
    res->rule.par = *par;
    px_cost_eval(ctx, par, o->train_tokens, o->gpu_mtbf_hours, &res->rule.pred, NULL, NULL);
    res->has_rule = true;
    res->rule_fits = res->rule.pred.mem.total <= limit;
    res->rule_same_batch = px_parallel_global_batch(par) == GB;
    if (!res->rule_fits)
        note(res, "does NOT fit: %.1f GB > %.1f GB usable, and the procedure has no step left",
             (double)res->rule.pred.mem.total / 1e9, (double)limit / 1e9);
    return PX_OK;
}
