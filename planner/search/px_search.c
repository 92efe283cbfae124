/* px_search.c — enumeration, ranking and rejection counts (px_search_run);
 * the candidates' order is in px_search_rank.c, what the options fix in
 * px_search_fixed.c, the partitioner over the best in px_search_refine.c,
 * the rule-of-thumb plan in px_search_rule.c; see px_search.h and
 * docs/cost-model.md ("Search"). */
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

#include "px_attn_eff.h"
#include "px_bound.h"
#include "px_checked.h"
#include "px_cost_offload.h"
#include "px_cost_precision.h"
#include "px_framework.h"
#include "px_partition_refine.h"
#include "px_split_megatron.h"
#include "px_plan_check.h"

void px_search_opts_init(px_search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->zero = o->recompute = o->schedule = o->sp = o->grad_fp32 = -1;
    o->dp_overlap = o->tp_overlap = o->moe_a2a_overlap = o->tp_comm_overlap = -1;
    o->precision = PX_PREC_BF16;
    o->cp_comm = PX_CPC_P2P;
    px_finetune_init(&o->finetune);
    px_offload_init(&o->offload);
    o->offload_auto = true;
    o->flash_attention = -1;
    o->top = PX_SEARCH_TOP_DEFAULT;
    /* TP beyond a node is allowed (and scored with the inter-node links), up
     * to the widest TP anyone runs; CP up to 64 (Nemotron's long-context
     * stage); interleaving up to 8 chunks a stage; micro-batches up to 16. */
    o->max_tp = 64;
    o->max_cp = 64;
    o->max_vpp = 8;
    o->max_micro_batch = 16;
    o->uneven = true;
    o->milp = true;
}

const char *px_reject_name(px_reject r)
{
    static const char *const names[PX_REJ_COUNT] = {
        "gpus not divisible",  "heads not divisible",   "sequence not divisible",
        "layers not divisible", "experts not divisible", "batch not divisible",
        "out of memory", "not run by the framework"};
    return (r >= 0 && r < PX_REJ_COUNT) ? names[r] : "?";
}


/* Divisors of n not above bound, ascending. */
static int divisors(int64_t n, int64_t bound, int *out, int cap)
{
    int k = 0;
    for (int64_t d = 1; d <= n && d <= bound && k < cap; d++)
        if (n % d == 0)
            out[k++] = (int)d;
    return k;
}





static void fmt_gb(char *buf, size_t n, double bytes)
{
    snprintf(buf, n, "%.1f GB", bytes / 1e9);
}

static void describe(const px_parallel *p, char *buf, size_t n)
{
    snprintf(buf, n,
             "tp %d cp %d ep %d etp %d pp %d vpp %d dp %d, micro-batch %lld x %lld, zero %d, "
             "recompute %s, schedule %s, sp %s",
             p->tp, p->cp, p->ep, p->etp, p->pp, p->vpp, p->dp, (long long)p->micro_batch,
             (long long)p->n_micro, p->zero, px_recompute_name(p->recompute),
             px_schedule_name(p->schedule), p->sp ? "on" : "off");
}

/* Keeps the PX_SEARCH_MILP_MISSES memory-rejected configurations that need
 * the least memory (the ones a better split may make fit). */
static void keep_miss(px_candidate *misses, int *n, const px_parallel *par, int64_t mem_total)
{
    int k = *n;
    if (k == PX_SEARCH_MILP_MISSES) {
        if (mem_total >= misses[k - 1].pred.mem.total)
            return;
        k--;
    }
    while (k > 0 && misses[k - 1].pred.mem.total > mem_total) {
        misses[k] = misses[k - 1];
        k--;
    }
    misses[k].par = *par;
    memset(&misses[k].pred, 0, sizeof misses[k].pred);
    misses[k].pred.mem.total = mem_total;
    if (*n < PX_SEARCH_MILP_MISSES)
        (*n)++;
}






















/* ---- the analytic pass ------------------------------------------------ */

/* What every piece of the enumeration reads: the request, resolved. */
typedef struct {
    const px_model *m;
    const px_hw *hw;
    const px_search_opts *o;
    int gpus;
    int64_t s, GB, L, mem_limit;
    bool moe;
    int keep; /* pool size */
    const px_caps *caps; /* the rules' capability set (px_plan_check.h) */
    px_bound_layers bound; /* the model's layer kinds, for the lower bound */
} search_spec;

/* One piece of the enumeration: a (tp, cp, pp) with the rest free.  The
 * pieces are listed in the order of the nested loops, and their tallies are
 * merged in that order, whichever thread scored them: the result does not
 * depend on the number of threads. */
typedef struct {
    int tp, cp, pp;
} search_item;

/* What a piece (or the whole pass) found: the best configurations (best
 * first), the memory misses closest to fitting, and the counts. */
typedef struct {
    px_candidate *list; /* [keep] slots, in no order */
    int *order;         /* [keep] slot indices, best first */
    int n_list, keep;
    px_candidate misses[PX_SEARCH_MILP_MISSES];
    int n_miss;
    bool has_closest_miss;
    px_candidate closest_miss;
    int64_t n_evaluated, n_valid, n_pruned, rejected[PX_REJ_COUNT];
    /* a score the whole pass's list already beats (its keep-th row when the
     * piece started; INFINITY: none yet): configurations proven worse are
     * not timed */
    double cutoff;
} search_tally;

static search_tally *tally_new(int keep)
{
    search_tally *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->list = malloc((size_t)keep * sizeof *t->list);
    t->order = malloc((size_t)keep * sizeof *t->order);
    if (!t->list || !t->order) {
        free(t->list);
        free(t->order);
        free(t);
        return NULL;
    }
    t->keep = keep;
    t->cutoff = INFINITY;
    return t;
}

/* The score a configuration must beat to enter t's list or the whole
 * pass's (INFINITY while both are short). */
static double tally_cutoff(const search_tally *t)
{
    double c = t->n_list == t->keep ? score(&t->list[t->order[t->keep - 1]]) : INFINITY;
    return c < t->cutoff ? c : t->cutoff;
}

static void tally_free(search_tally *t)
{
    if (t) {
        free(t->list);
        free(t->order);
    }
    free(t);
}

/* Inserts (par, pred) into t's list, best first, keeping at most t->keep
 * (ties go after the earlier ones).  Slot indices move, not candidates
 * (5 KB each): a candidate is copied once, into the slot of the one it
 * pushes out. */
static void tally_insert(search_tally *t, const px_parallel *par, const px_prediction *pred)
{
    int n = t->n_list, slot = n;
    if (n == t->keep) {
        if (!better_pred(pred, &t->list[t->order[n - 1]].pred))
            return;
        slot = t->order[--n];
    }
    int pos = n;
    while (pos > 0 && better_pred(pred, &t->list[t->order[pos - 1]].pred)) {
        t->order[pos] = t->order[pos - 1];
        pos--;
    }
    t->order[pos] = slot;
    t->list[slot].par = *par;
    t->list[slot].pred = *pred;
    t->n_list = n + 1;
}


/* Sequence parallelism when free: on with TP, unless the framework runs TP
 * only without it. */
static int sp_free(const px_search_opts *o)
{
    return o->caps && !o->caps->sp ? 0 : 1;
}

/* Whether par offloads a count of leading layers the search is to choose
 * (Megatron-Core's --cpu-offloading-num-layers, left open). */
static bool open_offload_count(const px_search_opts *o, const px_parallel *par)
{
    return par->offload.activations && par->offload.act_layers == 0 && o->caps &&
           o->caps->offload_activations == PX_ACT_OFFLOAD_LEADING;
}

/* The least count of offloaded leading layers with which par fits (fewer
 * copies, the same compute; memory falls with every layer offloaded), by
 * bisection over 1 .. layers - 1, into *q; the most when none fits.  Where
 * the framework offloads no count for par (a pipeline, recompute), any
 * count: the framework check refuses it. */
static void least_offload_count(const search_spec *sp, px_cost_ctx *ctx, const px_parallel *par,
                                px_parallel *q)
{
    int hi = (int)(sp->m->n_layers - 1), lo = 0; /* lo does not fit, hi does */
    *q = *par;
    q->offload.act_layers = hi > 1 ? hi : 1;
    if (hi < 1 || par->pp > 1 || par->recompute != PX_RECOMPUTE_NONE)
        return;
    px_memory mem;
    px_cost_memory(ctx, q, &mem, NULL);
    if (mem.total > sp->mem_limit)
        return;
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        q->offload.act_layers = mid;
        px_cost_memory(ctx, q, &mem, NULL);
        if (mem.total <= sp->mem_limit)
            hi = mid;
        else
            lo = mid;
    }
    q->offload.act_layers = hi;
}

/* Scores par (fully set) into t: its memory, and its time when `timed`
 * (otherwise it is proven unable to reach the list: only whether it fits
 * counts, and a miss's memory). */
static void score_config(const search_spec *sp, px_cost_ctx *ctx, const px_parallel *par,
                         bool timed, search_tally *t)
{
    const px_search_opts *o = sp->o;
    if (open_offload_count(o, par)) {
        px_parallel q; /* about 10 KB of per-layer tables, once a configuration */
        least_offload_count(sp, ctx, par, &q);
        score_config(sp, ctx, &q, timed, t);
        return;
    }
    if (o->caps && !px_caps_allow(o->caps, sp->m, par, NULL)) {
        t->rejected[PX_REJ_FRAMEWORK]++;
        return;
    }
    t->n_evaluated++;
    px_prediction pred;
    px_status fit;
    if (timed) {
        fit = px_cost_eval_if_fits(ctx, par, sp->mem_limit, o->train_tokens, o->gpu_mtbf_hours,
                                   &pred, NULL);
    } else {
        px_cost_memory(ctx, par, &pred.mem, NULL);
        fit = pred.mem.total > sp->mem_limit ? PX_ERR_INFEASIBLE : PX_OK;
    }
    if (fit != PX_OK) {
        t->rejected[PX_REJ_MEMORY]++;
        if (o->milp)
            keep_miss(t->misses, &t->n_miss, par, pred.mem.total);
        if (!t->has_closest_miss || pred.mem.total < t->closest_miss.pred.mem.total) {
            t->has_closest_miss = true;
            t->closest_miss.par = *par;
            memset(&t->closest_miss.pred, 0, sizeof t->closest_miss.pred);
            t->closest_miss.pred.mem = pred.mem;
        }
        return;
    }
    t->n_valid++;
    if (timed)
        tally_insert(t, par, &pred);
    else
        t->n_pruned++;
}

/* False when no ZeRO stage, recompute choice or schedule of sched[0..n)
 * can give par's sizes a score that enters t's list or the whole pass's:
 * its lower bound (px_bound.h) is above the cutoff by more than rounding. */
static bool may_rank(const search_spec *sp, px_cost_ctx *ctx, const px_parallel *par,
                     const px_schedule *sched, int n, const search_tally *t)
{
    double cut = tally_cutoff(t);
    if (sp->o->exhaustive || !(cut < INFINITY))
        return true;
    double tokens = (double)par->micro_batch * (double)par->n_micro * par->dp * (double)sp->s;
    double lb = px_bound_step_s(ctx, &sp->bound, par, sched, n) / tokens;
    return !(lb > cut * (1.0 + 1e-9));
}

/* ZeRO stages, recompute choices and schedules for par's sizes. */
static void score_states(const search_spec *sp, px_cost_ctx *ctx, px_parallel *par,
                         search_tally *t)
{
    const px_search_opts *o = sp->o;
    int v = par->vpp, pp = par->pp;
    /* ZeRO shards over the data-parallel replicas (dp·cp for the dense
     * weights, the expert-data group for the experts): with none, stages
     * 1-3 are ZeRO-0 under another name, so only 0 */
    int ddp = par->dp * par->cp;
    int edp = sp->moe ? par->tp * par->cp * par->dp / (par->ep * par->etp) : 1;
    if (o->shard_group > 0 && ddp % o->shard_group != 0) {
        t->rejected[PX_REJ_GPUS]++;
        return; /* the shard groups must tile dp·cp */
    }
    /* offload runs in a sharded optimizer even on one replica (ZeRO-Offload
     * on one GPU) */
    int z0 = 0, z1 = (ddp > 1 || edp > 1 || o->offload.kind != PX_OFFLOAD_NONE) ? 3 : 0;
    if (o->zero >= 0)
        z0 = z1 = o->zero;
    int r0 = 0, r1 = PX_RECOMPUTE_COUNT - 1;
    if (o->recompute >= 0)
        r0 = r1 = o->recompute;
    px_schedule scheds[PX_SCHED_COUNT];
    int n_s = 0;
    if (o->schedule >= 0)
        scheds[n_s++] = (px_schedule)o->schedule;
    else if (v > 1)
        scheds[n_s++] = PX_SCHED_INTERLEAVED;
    else if (pp == 1)
        scheds[n_s++] = PX_SCHED_1F1B;
    else {
        /* GPipe has 1F1B's bubble and holds all m micro-batches' activations
         * where 1F1B holds p (Narayanan et al. 2021, section 2.2.1):
         * searched only where the framework runs no 1F1B (--schedule gpipe
         * plans it anyway) */
        if (!sp->caps->schedules[PX_SCHED_1F1B])
            scheds[n_s++] = PX_SCHED_GPIPE;
        scheds[n_s++] = PX_SCHED_1F1B;
        scheds[n_s++] = PX_SCHED_ZB_H1;
        scheds[n_s++] = PX_SCHED_ZB_H2;
    }
    bool timed = may_rank(sp, ctx, par, scheds, n_s, t);
    /* the SP rule reads the sizes only: once for all the states */
    px_status sp_rule = px_rule_sp(sp->m, sp->s, par->tp, par->cp, par->sp, par->micro_batch,
                                   sp->caps, NULL);
    if (sp_rule == PX_OK)
        sp_rule = px_rule_mamba_cp(sp->m, par->tp, par->cp, NULL);
    for (int z = z0; z <= z1; z++)
        for (int r = r0; r <= r1; r++)
            for (int i_s = 0; i_s < n_s; i_s++) {
                par->zero = z;
                par->recompute = (px_recompute)r;
                par->schedule = scheds[i_s];
                if (v > 1 && par->schedule != PX_SCHED_INTERLEAVED)
                    continue; /* vpp only means something interleaved */
                px_status rst = sp->o->vpp > 0 ? px_rule_pipeline_end_slots(sp->m, pp, v,
                                                                            par->schedule,
                                                                            sp->caps, NULL)
                                               : px_rule_pipeline(sp->m, pp, v, par->schedule,
                                                                  sp->caps, NULL);
                if (rst != PX_OK) {
                    t->rejected[rule_reject(rst, PX_REJ_LAYERS)]++;
                    continue;
                }
                rst = sp_rule;
                if (rst == PX_OK)
                    rst = px_rule_batch(pp, v, par->schedule, par->micro_batch, par->n_micro,
                                        NULL);
                if (rst != PX_OK) {
                    t->rejected[rule_reject(rst, PX_REJ_BATCH)]++;
                    continue;
                }
                if (o->moe_a2a_overlap < 0) /* the framework's default, where it runs */
                    par->moe_a2a_overlap =
                        o->run && o->run->moe_a2a_overlap &&
                        px_rule_moe_a2a_overlap(sp->m, par->ep, pp, v,
                                                par->recompute == PX_RECOMPUTE_FULL, sp->caps,
                                                NULL) == PX_OK;
                score_config(sp, ctx, par, timed, t);
            }
}

/* Expert sizes and micro-batches for par's tp, cp, pp, vpp, dp. */
static void score_experts_batches(const search_spec *sp, px_cost_ctx *ctx, px_parallel *par,
                                  search_tally *t)
{
    const px_search_opts *o = sp->o;
    const px_model *m = sp->m;
    enum { CAP = 256 };
    int eps[CAP], etps[CAP];
    int64_t bs[CAP];
    int tp = par->tp, cp = par->cp, dp = par->dp;
    int n_ep = 1, n_etp = 1;
    eps[0] = etps[0] = 1;
    if (sp->moe) {
        n_ep = o->ep > 0 ? (eps[0] = o->ep, 1) : divisors(m->n_experts, m->n_experts, eps, CAP);
        n_etp = o->etp > 0 ? (etps[0] = o->etp, 1) : divisors(tp, tp, etps, CAP);
    } else if (o->ep > 1 || o->etp > 1) {
        t->rejected[PX_REJ_EXPERTS]++;
        return;
    }
    int n_b = 0;
    if (o->micro_batch > 0)
        bs[n_b++] = o->micro_batch;
    else
        for (int64_t b = 1; b <= o->max_micro_batch && n_b < CAP; b *= 2)
            bs[n_b++] = b;
    for (int i_ep = 0; i_ep < n_ep; i_ep++)
        for (int i_etp = 0; i_etp < n_etp; i_etp++) {
            int ep = eps[i_ep], etp = etps[i_etp];
            px_status rst = sp->moe ? px_rule_experts(m, tp, cp, dp, ep, etp, sp->caps, NULL)
                                    : PX_OK;
            if (rst != PX_OK) {
                t->rejected[rule_reject(rst, PX_REJ_EXPERTS)]++;
                continue;
            }
            for (int i_b = 0; i_b < n_b; i_b++) {
                int64_t b = bs[i_b];
                if (sp->GB % (b * dp) != 0) {
                    t->rejected[PX_REJ_BATCH]++;
                    continue;
                }
                int64_t mm = sp->GB / (b * dp);
                if (o->n_micro > 0 && mm != o->n_micro) {
                    t->rejected[PX_REJ_BATCH]++;
                    continue;
                }
                par->ep = ep;
                par->etp = etp;
                par->micro_batch = b;
                par->n_micro = mm;
                score_states(sp, ctx, par, t);
            }
        }
}

/* Everything under one (tp, cp, pp): the virtual stages and what follows. */
static void score_item(const search_spec *sp, px_cost_ctx *ctx, px_parallel *par,
                       const search_item *it, search_tally *t)
{
    const px_search_opts *o = sp->o;
    int pp = it->pp, dp = sp->gpus / it->tp / it->cp / pp;
    /* virtual stages: 1, or 2..max with the interleaved schedule */
    int vps[256], n_v = 0;
    if (o->vpp > 0) {
        vps[n_v++] = o->vpp;
    } else {
        if (o->schedule < 0 || o->schedule != PX_SCHED_INTERLEAVED || pp == 1)
            vps[n_v++] = 1;
        if (pp > 1 && (o->schedule < 0 || o->schedule == PX_SCHED_INTERLEAVED))
            for (int v = 2; v <= o->max_vpp && n_v < 256; v++)
                vps[n_v++] = v;
    }
    for (int i_v = 0; i_v < n_v; i_v++) {
        int v = vps[i_v];
        bool uneven = sp->L % ((int64_t)pp * v) != 0;
        /* a fixed vpp that does not divide the layers: Megatron's split with
         * the embedding and loss as pipeline layers */
        bool mega = uneven && v > 1 && o->vpp > 0 &&
                    (!o->caps || o->caps->uneven_virtual_chunks) &&
                    megatron_uneven_split(sp->L, pp, v, sp->caps && sp->caps->empty_end_chunks,
                                          par);
        if (uneven && !mega && (v > 1 || !o->uneven || pp > sp->L || pp > PX_MAX_CHUNKS)) {
            t->rejected[PX_REJ_LAYERS]++;
            continue;
        }
        /* An uneven split (v = 1): floor(L/p) layers a stage, the remainder
         * to the middle stages (the first and last stages also carry the
         * embedding and the head), recorded so that the plan runs what was
         * costed. */
        if (!mega)
            par->n_chunks = 0;
        par->tp = it->tp;
        par->cp = it->cp;
        par->pp = pp;
        par->vpp = v;
        par->dp = dp;
        par->sp = it->tp > 1 && (o->sp < 0 ? sp_free(o) : o->sp) != 0;
        if (uneven && !mega)
            px_cost_record_split(sp->m, par); /* px_cost_default_split's rule */
        score_experts_batches(sp, ctx, par, t);
    }
}

/* The (tp, cp, pp) pieces in loop order; the rejections on the way are
 * counted in t.  Returns how many (items NULL: count only). */
static int list_items(const search_spec *sp, search_item *items, search_tally *t)
{
    const px_search_opts *o = sp->o;
    const px_model *m = sp->m;
    int gpus = sp->gpus, n = 0;
    enum { CAP = 256 };
    int tps[CAP], cps[CAP], pps[CAP];
    int n_tp = o->tp > 0 ? (tps[0] = o->tp, 1) : divisors(gpus, o->max_tp, tps, CAP);
    for (int i_tp = 0; i_tp < n_tp; i_tp++) {
        int tp = tps[i_tp];
        if (gpus % tp != 0) {
            t->rejected[PX_REJ_GPUS]++;
            continue;
        }
        px_status rst = px_rule_tp(m, tp, sp->caps, NULL);
        if (rst != PX_OK) {
            t->rejected[rule_reject(rst, PX_REJ_HEADS)]++;
            continue;
        }
        int n_cp = o->cp > 0 ? (cps[0] = o->cp, 1) : divisors(gpus / tp, o->max_cp, cps, CAP);
        for (int i_cp = 0; i_cp < n_cp; i_cp++) {
            int cp = cps[i_cp];
            if ((gpus / tp) % cp != 0) {
                t->rejected[PX_REJ_GPUS]++;
                continue;
            }
            px_status cst = px_rule_cp(sp->s, cp, sp->caps, NULL);
            if (cst != PX_OK) {
                t->rejected[rule_reject(cst, PX_REJ_SEQ)]++;
                continue;
            }
            int rest = gpus / tp / cp;
            int n_pp = o->pp > 0 ? (pps[0] = o->pp, 1) : divisors(rest, sp->L, pps, CAP);
            for (int i_pp = 0; i_pp < n_pp; i_pp++) {
                int pp = pps[i_pp];
                if (rest % pp != 0 || (o->dp > 0 && rest / pp != o->dp)) {
                    t->rejected[PX_REJ_GPUS]++;
                    continue;
                }
                if (items)
                    items[n] = (search_item){tp, cp, pp};
                n++;
            }
        }
    }
    return n;
}

/* Adds piece t into the whole pass's tally in (merge order matters: ties
 * keep the earlier piece's configuration, as one loop would). */
static void tally_merge(search_tally *all, const search_tally *t)
{
    for (int i = 0; i < t->n_list; i++) {
        const px_candidate *c = &t->list[t->order[i]];
        tally_insert(all, &c->par, &c->pred);
    }
    for (int i = 0; i < t->n_miss; i++)
        keep_miss(all->misses, &all->n_miss, &t->misses[i].par, t->misses[i].pred.mem.total);
    if (t->has_closest_miss &&
        (!all->has_closest_miss ||
         t->closest_miss.pred.mem.total < all->closest_miss.pred.mem.total)) {
        all->has_closest_miss = true;
        all->closest_miss = t->closest_miss;
    }
    all->n_evaluated += t->n_evaluated;
    all->n_valid += t->n_valid;
    all->n_pruned += t->n_pruned;
    for (int r = 0; r < PX_REJ_COUNT; r++)
        all->rejected[r] += t->rejected[r];
}

/* The pieces shared by the threads: each takes the next unscored piece,
 * scores it into its own tally, and merges every finished piece whose
 * predecessors are merged. */
typedef struct {
    const search_spec *sp;
    const search_item *items;
    int n_items, next, merged;
    search_tally **done; /* [n_items]: finished, not yet merged */
    search_tally *all;
    pthread_mutex_t mu;
    px_status st;
    px_error err;
} search_work;

static void *search_worker(void *arg)
{
    search_work *w = arg;
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    px_parallel *par = malloc(sizeof *par);
    px_error e;
    px_status st = ctx && par ? px_cost_ctx_init(ctx, w->sp->m, w->sp->hw, &e)
                              : PX_FAIL(&e, PX_ERR_NOMEM, "search: out of memory");
    if (st == PX_OK)
        ctx->run = w->sp->o->run; /* how the framework runs it (FSDP, ...) */
    if (st == PX_OK) {
        px_parallel_init(par);
        par->seq_len = w->sp->s;
        par->grad_fp32 = w->sp->o->grad_fp32 < 0 ? true : w->sp->o->grad_fp32 != 0;
        search_defaults(par, w->sp->o);
    }
    for (;;) {
        pthread_mutex_lock(&w->mu);
        int i = st == PX_OK && w->st == PX_OK && w->next < w->n_items ? w->next++ : -1;
        pthread_mutex_unlock(&w->mu);
        if (i < 0)
            break;
        search_tally *t = tally_new(w->sp->keep);
        if (!t) {
            st = PX_FAIL(&e, PX_ERR_NOMEM, "search: out of memory");
            break;
        }
        pthread_mutex_lock(&w->mu);
        t->cutoff = tally_cutoff(w->all); /* what the merged pieces' list beats */
        pthread_mutex_unlock(&w->mu);
        score_item(w->sp, ctx, par, &w->items[i], t);
        pthread_mutex_lock(&w->mu);
        w->done[i] = t;
        while (w->merged < w->n_items && w->done[w->merged]) {
            tally_merge(w->all, w->done[w->merged]);
            tally_free(w->done[w->merged]);
            w->done[w->merged++] = NULL;
        }
        pthread_mutex_unlock(&w->mu);
    }
    if (st != PX_OK) {
        pthread_mutex_lock(&w->mu);
        if (w->st == PX_OK) {
            w->st = st;
            w->err = e;
        }
        pthread_mutex_unlock(&w->mu);
    }
    free(ctx);
    free(par);
    return NULL;
}

/* Threads for the analytic pass: o->threads, or the online processors. */
static int search_threads(const px_search_opts *o, int n_items)
{
    long n = o->threads > 0 ? o->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > PX_SEARCH_THREADS_MAX)
        n = PX_SEARCH_THREADS_MAX;
    return n > n_items ? (n_items > 0 ? n_items : 1) : (int)n;
}

/* The exhaustive scoring of every configuration into all (spread over
 * threads; the same result for any number of them). */
static px_status analytic_pass(const search_spec *sp, search_tally *all, px_error *err)
{
    int n_items = list_items(sp, NULL, all);
    search_work w = {.sp = sp, .n_items = n_items, .all = all, .st = PX_OK};
    search_item *items = malloc((size_t)(n_items > 0 ? n_items : 1) * sizeof *items);
    w.done = calloc((size_t)(n_items > 0 ? n_items : 1), sizeof *w.done);
    if (!items || !w.done) {
        free(items);
        free(w.done);
        return PX_FAIL(err, PX_ERR_NOMEM, "search: out of memory");
    }
    search_tally scratch; /* the rejections were counted above already */
    memset(&scratch, 0, sizeof scratch);
    list_items(sp, items, &scratch);
    w.items = items;
    pthread_mutex_init(&w.mu, NULL);
    int n_threads = search_threads(sp->o, n_items);
    pthread_t th[PX_SEARCH_THREADS_MAX];
    int started = 0;
    for (int i = 1; i < n_threads; i++)
        if (pthread_create(&th[started], NULL, search_worker, &w) == 0)
            started++;
    search_worker(&w); /* this thread too */
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&w.mu);
    for (int i = 0; i < n_items; i++)
        tally_free(w.done[i]); /* left only after a failure */
    free(w.done);
    free(items);
    if (w.st != PX_OK) {
        *err = w.err;
        return w.st;
    }
    return PX_OK;
}

/* Nothing fits or nothing factors: the message says why (the closest miss
 * and the rejection counts, or the nearest GPU counts that factor). */
static px_status explain_empty(const search_spec *sp, const px_search_result *res,
                               px_error *err)
{
    const px_model *m = sp->m;
    const px_hw *hw = sp->hw;
    const px_search_opts *o = sp->o;
    int gpus = sp->gpus;
    char rej[512];
    int off = 0;
    rej[0] = '\0';
    for (int r = 0; r < PX_REJ_COUNT; r++)
        if (res->rejected[r] > 0 && off < (int)sizeof rej)
            off += snprintf(rej + off, sizeof rej - (size_t)off, "%s%s %lld", off ? ", " : "",
                            px_reject_name((px_reject)r), (long long)res->rejected[r]);
    if (res->has_closest_miss) {
        char d[256], lim[32], got[32], over[32];
        describe(&res->closest_miss.par, d, sizeof d);
        fmt_gb(lim, sizeof lim, (double)res->mem_limit_bytes);
        fmt_gb(got, sizeof got, (double)res->closest_miss.pred.mem.total);
        fmt_gb(over, sizeof over,
               (double)(res->closest_miss.pred.mem.total - res->mem_limit_bytes));
        const px_memory *mm = &res->closest_miss.pred.mem;
        if (mm->total <= res->mem_limit_bytes) { /* what offload keeps on the host */
            char host[32], host_lim[32];
            fmt_gb(host, sizeof host, (double)mm->host);
            fmt_gb(host_lim, sizeof host_lim, (double)hw->host_mem_bytes);
            return PX_FAIL(err, PX_ERR_INFEASIBLE,
                           "no configuration of %s on %d GPUs fits: the closest, %s, fits in "
                           "%s of device memory but needs %s of host memory per GPU, more than "
                           "%s's %s (host_mem_bytes); rejected: %s",
                           m->name, gpus, d, got, host, hw->name, host_lim, rej);
        }
        return PX_FAIL(err, PX_ERR_INFEASIBLE,
                       "no configuration of %s on %d GPUs fits in %s per GPU (%s device memory as "
                       "reported, minus %.1f GB reserve); closest miss: %s needs %s "
                       "with the runtime's %.1f GB, %s over; rejected: %s",
                       m->name, gpus, lim, hw->name, (double)hw->mem_reserve_bytes / 1e9, d, got,
                       (double)(res->closest_miss.pred.mem.total -
                                res->closest_miss.pred.mem.allocated) / 1e9,
                       over, rej);
    }
    /* nothing reached the memory check: say what the sizes must divide and
     * the nearest GPU counts that factor (the closest miss of a count) */
    int below = 0, above = 0;
    nearest_factoring(m, gpus, sp->s, sp->GB, o, &below, &above);
    char near[128] = "", group[96] = "";
    if (o->shard_group > 0)
        snprintf(group, sizeof group, " with --shard-group %d (dp·cp a multiple of it)",
                 o->shard_group);
    if (below && above)
        snprintf(near, sizeof near, "; the nearest GPU counts that factor: %d and %d", below,
                 above);
    else if (below || above)
        snprintf(near, sizeof near, "; the nearest GPU count that factors: %d",
                 below ? below : above);
    return PX_FAIL(err, PX_ERR_INFEASIBLE,
                   "--gpus %d%s: no tp·cp·pp·dp factorisation of %s with tp <= %d "
                   "dividing the %lld heads, %lld kv heads and ffn %lld, cp <= %d dividing the "
                   "sequence %lld, pp <= %lld layers%s and micro-batch·dp dividing the global "
                   "batch of %lld sequences%s (rejected: %s)%s",
                   gpus, group, m->name, o->max_tp, (long long)m->n_heads,
                   (long long)m->n_kv_heads,
                   (long long)m->ffn, o->max_cp, (long long)sp->s, (long long)sp->L,
                   m->n_experts > 0 ? ", ep dividing the experts" : "", (long long)sp->GB,
                   o->n_micro > 0 ? " into the fixed --micro-batches" : "",
                   off ? rej : "nothing to try", near);
}

/* The result's fields before a search: everything but the candidates. */
static void result_reset(px_search_result *res)
{
    memset(res, 0, offsetof(px_search_result, top));
    res->n_top = 0;
    res->n_evaluated = res->n_valid = res->n_pruned = 0;
    memset(res->rejected, 0, sizeof res->rejected);
    res->has_closest_miss = res->has_rule = res->rule_fits = false;
    res->rule_notes[0] = '\0';
    res->batch_note[0] = '\0';
}

/* The analytic pass, then the partition pass (or the pool as it is) into
 * res->top. */
static px_status rank_into(const search_spec *sp, px_cost_ctx *ctx, int keep_out,
                           px_search_result *res, px_error *err)
{
    search_tally *all = tally_new(sp->keep);
    px_candidate *pool = malloc(POOL_MAX * sizeof *pool); /* the ranked list, then rescues */
    if (!all || !pool) {
        tally_free(all);
        free(pool);
        return PX_FAIL(err, PX_ERR_NOMEM, "search: out of memory");
    }
    double t0 = now_s();
    px_status st = analytic_pass(sp, all, err);
    res->analytic_s = now_s() - t0;
    if (st == PX_OK) {
        res->n_evaluated = all->n_evaluated;
        res->n_valid = all->n_valid;
        res->n_pruned = all->n_pruned;
        memcpy(res->rejected, all->rejected, sizeof res->rejected);
        res->has_closest_miss = all->has_closest_miss;
        if (all->has_closest_miss)
            res->closest_miss = all->closest_miss;
        for (int i = 0; i < all->n_list; i++)
            pool[i] = all->list[all->order[i]];
        if (sp->o->milp) {
            st = refine_top(sp->m, ctx, sp->o, res, pool, all->n_list, keep_out,
                            all->misses, all->n_miss, err);
        } else {
            for (int i = 0; i < all->n_list; i++)
                res->top[i] = pool[i];
            res->n_top = all->n_list;
        }
    }
    tally_free(all);
    free(pool);
    return st;
}

/* A plan that offloads needs the host in the profile. */
static px_status check_offload_hw(const px_hw *hw, const px_search_opts *o, px_error *err)
{
    if (!px_offload_any(&o->offload) || px_cost_offload_hw_known(hw))
        return PX_OK;
    return PX_FAIL(err, PX_ERR_UNSUPPORTED,
                   "--offload %s: profile %s does not describe the host (host_link_bw, "
                   "host_mem_bytes and host_mem_bw must be set; docs/hw-schema.md)",
                   o->offload.kind != PX_OFFLOAD_NONE ? px_offload_kind_name(o->offload.kind)
                                                      : "activations",
                   hw->name);
}

static px_status search_once(const px_model *m, const px_hw *hw, int gpus,
                             const px_search_opts *o, px_search_result *res, px_error *err);

/* The search as asked; when nothing fits on the devices and the request
 * leaves offload open, once more with what the framework offloads, in this
 * order: the optimizer (as DeepSpeed's ZeRO-Offload and Megatron's
 * --optimizer-cpu-offload fit a model on too few GPUs), the activations,
 * both, the parameters (ZeRO-Infinity, FSDP2's CPU offload), the
 * parameters and the activations.  The first search's refusal stands when
 * none fits either. */
px_status px_search_run(const px_model *m, const px_hw *hw, int gpus, const px_search_opts *o,
                        px_search_result *res, px_error *err)
{
    px_status st = search_once(m, hw, gpus, o, res, err);
    px_caps storage;
    const px_caps *caps = search_caps(o, &storage);
    if (st == PX_OK || res->n_top > 0 || !o->offload_auto || px_offload_any(&o->offload) ||
        res->rejected[PX_REJ_MEMORY] == 0 || !px_cost_offload_hw_known(hw))
        return st;
    bool opt = caps->offload_optimizer, act = caps->offload_activations != PX_ACT_OFFLOAD_NONE,
         params = caps->offload_params;
    const struct {
        bool run;
        px_offload_kind kind;
        bool activations;
    } tries[] = {{opt, PX_OFFLOAD_OPTIMIZER, false},
                 {act, PX_OFFLOAD_NONE, true},
                 {opt && act, PX_OFFLOAD_OPTIMIZER, true},
                 {params, PX_OFFLOAD_PARAMS, false},
                 {params && act, PX_OFFLOAD_PARAMS, true}};
    px_search_result *alt = malloc(sizeof *alt);
    if (!alt)
        return st;
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        if (!tries[i].run)
            continue;
        px_search_opts again = *o;
        again.offload.kind = tries[i].kind;
        again.offload.fraction = 1.0;
        again.offload.activations = tries[i].activations;
        again.offload_auto = false;
        px_error alt_err;
        if (search_once(m, hw, gpus, &again, alt, &alt_err) == PX_OK && alt->n_top > 0) {
            memcpy(res, alt, sizeof *res);
            res->offload_auto_used = true;
            st = PX_OK;
            break;
        }
    }
    free(alt);
    return st;
}

static px_status search_once(const px_model *m, const px_hw *hw, int gpus,
                             const px_search_opts *o, px_search_result *res, px_error *err)
{
    result_reset(res);
    double t0 = now_s();
    if (gpus < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "gpus = %d: must be >= 1", gpus);
    /* a plain fp8 request under a framework without delayed scaling runs as
     * its own per-tensor recipe (px_caps_precision), whoever calls */
    px_search_opts resolved = *o;
    resolved.precision = px_caps_precision(o->caps, o->precision);
    o = &resolved;
    res->gpus = gpus;
    px_status st = px_prec_check_hw(hw, o->precision, err);
    if (st == PX_OK)
        st = px_attn_kernel_check_hw(hw, o->attn_kernel, err);
    if (st == PX_OK)
        st = check_offload_hw(hw, o, err);
    if (st != PX_OK)
        return st;
    st = resolve_batch(m, o, res, err);
    if (st != PX_OK)
        return st;
    nearest_batch(gpus, o, res);
    st = check_fixed(m, gpus, res->seq_len, o, res, err);
    if (st != PX_OK)
        return st;
    st = px_search_check_framework(m, o, err);
    if (st != PX_OK)
        return st;
    int keep = o->top > 0 ? (o->top < PX_SEARCH_TOP_MAX ? o->top : PX_SEARCH_TOP_MAX)
                          : PX_SEARCH_TOP_DEFAULT;
    res->mem_limit_bytes = px_hw_usable_bytes(hw);
    /* with the partition program, the analytic pass keeps keep + n_refine
     * (n_refine = keep + PX_SEARCH_MILP_EXTRA, the candidates the program
     * sees): some collapse into one after it, and the list is cut back to
     * `keep` (refine_top says why that leaves `keep` rows) */
    search_spec sp = {m,           hw,
                      o,           gpus,
                      res->seq_len, res->global_batch,
                      m->n_layers, res->mem_limit_bytes,
                      m->n_experts > 0, o->milp ? 2 * keep + PX_SEARCH_MILP_EXTRA : keep,
                      NULL,        {{0}}};
    px_caps caps_storage;
    sp.caps = search_caps(o, &caps_storage);
    px_bound_init(m, &sp.bound);
    px_cost_ctx *ctx = malloc(sizeof *ctx);
    if (!ctx)
        return PX_FAIL(err, PX_ERR_NOMEM, "search: out of memory");
    st = px_cost_ctx_init(ctx, m, hw, err);
    ctx->run = o->run;
    if (st == PX_OK)
        st = rank_into(&sp, ctx, keep, res, err);
    free(ctx);
    if (st != PX_OK)
        return st;
    double t1 = now_s();
    px_error rerr;
    px_search_rule_of_thumb(m, hw, gpus, o, res, &rerr);
    res->rule_s = now_s() - t1;
    res->elapsed_s = now_s() - t0;
    return res->n_top > 0 ? PX_OK : explain_empty(&sp, res, err);
}










