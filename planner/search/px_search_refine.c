/* px_search_refine.c — the stage partitioner over the best candidates: each
 * uneven split refined, duplicates merged, and how far down the ranking
 * refinement is worth it (docs/cost-model.md, "Search"). */
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

/* One spelling per configuration: a recorded split equal to the one the
 * search itself would record (none when the layers divide evenly, else
 * px_cost_default_split's) is dropped or rewritten to it, and per-layer
 * recompute choices that are all the same become the uniform choice.  The
 * program reports "changed" on such spellings; without this the ranked list
 * shows the same configuration twice. */
static void canonical_split(const px_model *m, px_parallel *p)
{
    int chunks = p->pp * p->vpp;
    if (p->n_chunks == chunks && chunks > 0 && chunks <= PX_MAX_CHUNKS) {
        int def[PX_MAX_CHUNKS];
        px_cost_default_split(m->n_layers, chunks, def);
        bool same = true;
        for (int c = 0; c < chunks && same; c++)
            same = p->layers_per_chunk[c] == def[c];
        if (same) {
            p->n_chunks = 0;
            px_cost_record_split(m, p); /* re-records it when the layers do not divide */
        }
    }
    if (p->n_layer_recompute > 0 && p->n_layer_recompute == m->n_layers) {
        bool same = true;
        for (int i = 1; i < p->n_layer_recompute && same; i++)
            same = p->layer_recompute[i] == p->layer_recompute[0];
        if (same && p->layer_recompute[0] < PX_RECOMPUTE_COUNT) {
            p->recompute = (px_recompute)p->layer_recompute[0];
            p->n_layer_recompute = 0;
        } else if (!same) {
            /* mixed: the per-layer choices decide and the uniform field
             * is only a label; make it the most common choice, so that
             * candidates that reached the same choices from different
             * uniform starts compare equal */
            int cnt[PX_RECOMPUTE_COUNT] = {0}, best = 0;
            for (int i = 0; i < p->n_layer_recompute; i++)
                if (p->layer_recompute[i] < PX_RECOMPUTE_COUNT)
                    cnt[p->layer_recompute[i]]++;
            for (int r = 1; r < PX_RECOMPUTE_COUNT; r++)
                if (cnt[r] > cnt[best])
                    best = r;
            p->recompute = (px_recompute)best;
        }
    }
}

static bool same_config(const px_parallel *a, const px_parallel *b)
{
    if (a->tp != b->tp || a->cp != b->cp || a->pp != b->pp || a->vpp != b->vpp ||
        a->dp != b->dp || a->ep != b->ep || a->etp != b->etp || a->sp != b->sp ||
        a->zero != b->zero || a->grad_fp32 != b->grad_fp32 ||
        a->flash_attention != b->flash_attention || a->attn_kernel != b->attn_kernel ||
        a->dp_overlap != b->dp_overlap ||
        a->tp_overlap != b->tp_overlap || a->tp_comm_overlap != b->tp_comm_overlap ||
        a->moe_a2a_overlap != b->moe_a2a_overlap ||
        a->moe_dispatcher != b->moe_dispatcher || a->schedule != b->schedule ||
        a->recompute != b->recompute || a->micro_batch != b->micro_batch ||
        a->n_micro != b->n_micro || a->seq_len != b->seq_len || strcmp(a->order, b->order) ||
        a->n_chunks != b->n_chunks || a->n_layer_recompute != b->n_layer_recompute)
        return false;
    return memcmp(a->layers_per_chunk, b->layers_per_chunk,
                  (size_t)a->n_chunks * sizeof a->layers_per_chunk[0]) == 0 &&
           memcmp(a->layer_recompute, b->layer_recompute, (size_t)a->n_layer_recompute) == 0;
}

/* What refine_top works in: the originals of the refined candidates, the
 * ranking arrays and one candidate being rewritten (px_parallel carries
 * 5 KB of per-layer tables, so these stay off the stack). */
typedef struct {
    px_candidate orig[PX_SEARCH_TOP_MAX + PX_SEARCH_MILP_EXTRA];
    bool changed[POOL_MAX];
    const px_candidate *cand[POOL_MAX + PX_SEARCH_TOP_MAX + PX_SEARCH_MILP_EXTRA];
    const px_candidate *kept[PX_SEARCH_TOP_MAX];
    px_candidate miss;
    px_parallel next;
    px_parallel block, block_best; /* block recompute trials (refine_block) */
    px_partition_report rep;
    px_partition_memo *memo; /* the program's answers, for candidates that pose it again */
    double t0, budget_s;     /* the clock's budget: started at t0, seconds */
    double work;             /* GLPK's work spent so far (PX_SEARCH_MILP_WORK_BUDGET) */
} refine_ws;

/* The framework runs Megatron's block recompute (the first N layers of every
 * chunk in full, the rest none) but no other per-layer mix, and the user left
 * the recompute choice to the search. */
static bool block_only(const px_search_opts *o)
{
    return o->caps && !o->caps->per_layer_recompute && o->caps->block_recompute &&
           o->recompute < 0 && o->caps->recompute[PX_RECOMPUTE_NONE] &&
           o->caps->recompute[PX_RECOMPUTE_FULL];
}

/* q (a copy of the split to try) with block recompute n, costed into *pred:
 * true when the framework runs it and it fits. */
static bool block_fits(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                       int64_t limit, px_parallel *q, int n, px_prediction *pred)
{
    px_error e;
    px_parallel_set_block_recompute(q, m->n_layers, n);
    canonical_split(m, q);
    return (!o->caps || px_caps_allow(o->caps, m, q, NULL)) &&
           px_cost_eval(ctx, q, o->train_tokens, o->gpu_mtbf_hours, pred, NULL, &e) == PX_OK &&
           pred->mem.total <= limit;
}

/* The fastest block recompute on split's layers: more recomputed layers
 * take more time and less memory, so it is the least N that fits, found by
 * bisection over 0 .. the longest chunk.  *q gets it; false when none fits. */
static bool block_least_fit(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                            int64_t limit, const px_parallel *split, px_parallel *q,
                            px_prediction *pred)
{
    int chunks = split->pp * split->vpp, longest = 0;
    for (int c = 0; c < chunks; c++) {
        int len = px_parallel_chunk_layers(split, m->n_layers, c);
        longest = len > longest ? len : longest;
    }
    *q = *split;
    if (block_fits(m, ctx, o, limit, q, 0, pred))
        return true;
    *q = *split;
    if (!block_fits(m, ctx, o, limit, q, longest, pred))
        return false;
    int lo = 0, hi = longest; /* lo does not fit, hi does */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        *q = *split;
        if (block_fits(m, ctx, o, limit, q, mid, pred))
            hi = mid;
        else
            lo = mid;
    }
    *q = *split;
    return block_fits(m, ctx, o, limit, q, hi, pred);
}

/* Block recompute on the candidate's own split and on the program's (whose
 * per-layer choices the framework cannot run): c takes the faster when it
 * beats c (or, a miss, when it fits).  Returns true when c changed. */
static bool refine_block(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                         px_search_result *res, px_candidate *c, bool miss, refine_ws *ws)
{
    const px_parallel *splits[2] = {&c->par, ws->rep.changed ? &ws->next : NULL};
    px_prediction pred, best_pred;
    bool have = false;
    for (int k = 0; k < 2; k++) {
        if (!splits[k] ||
            !block_least_fit(m, ctx, o, res->mem_limit_bytes, splits[k], &ws->block, &pred))
            continue;
        if (!have || pred.time.step_s < best_pred.time.step_s) {
            ws->block_best = ws->block;
            best_pred = pred;
            have = true;
        }
    }
    if (!have || same_config(&ws->block_best, &c->par) ||
        (!miss && best_pred.time.step_s >= c->pred.time.step_s * (1.0 - 1e-12)))
        return false;
    c->par = ws->block_best;
    c->pred = best_pred;
    return true;
}

/* The program's answer (ws->next) in place of c when it changed, fits by the
 * cost model, is no slower and is one the framework runs. */
static bool take_program_split(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                               px_search_result *res, px_candidate *c, bool miss,
                               refine_ws *ws)
{
    px_parallel *next = &ws->next;
    px_prediction pred;
    px_error perr;
    if (!ws->rep.changed)
        return false;
    if (px_cost_eval(ctx, next, o->train_tokens, o->gpu_mtbf_hours, &pred, NULL, &perr) !=
            PX_OK ||
        pred.mem.total > res->mem_limit_bytes)
        return false; /* the cost model disagrees: keep the uniform split */
    /* never slower than the split it had (the program's interleaved
     * objective charges the slowest chunk, the step's bubble does not) */
    if (!miss && pred.time.step_s > c->pred.time.step_s * (1.0 + 1e-12))
        return false;
    canonical_split(m, next);
    if (o->caps && !px_caps_allow(o->caps, m, next, NULL))
        return false; /* a split or recompute choice the framework cannot run */
    if (same_config(next, &c->par))
        return false; /* the program's split is the one the candidate had */
    c->par = *next;
    c->pred = pred;
    return true;
}

/* The stage partitioner on one candidate: on success with a changed split,
 * c is re-scored with the search's own options; on failure (GLPK, nothing
 * fits) c stays as it was.  Where the framework runs only block recompute,
 * that is tried when the program's answer cannot be taken.  Returns true
 * when c changed and fits. */
static bool refine_one(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                       px_search_result *res, px_candidate *c, bool miss, refine_ws *ws)
{
    double left_s = ws->budget_s - (now_s() - ws->t0);
    double left_work = PX_SEARCH_MILP_WORK_BUDGET - ws->work;
    bool by_clock = o->milp_time_limit_s > 0.0;
    if (left_s <= 0.0 || (!by_clock && left_work <= 0.0)) {
        res->milp_skipped++;
        res->milp_clock_hit += left_s <= 0.0;
        return false;
    }
    px_partition_opts popts;
    px_partition_opts_init(&popts);
    popts.time_limit_s = fmin(by_clock ? o->milp_time_limit_s : PX_SEARCH_MILP_TIME_LIMIT_S,
                              left_s);
    popts.work_limit = by_clock           ? 0.0
                       : c->par.vpp > 1 ? PX_SEARCH_MILP_WORK / 10.0
                                          : PX_SEARCH_MILP_WORK;
    if (!by_clock)
        popts.work_limit = fmin(popts.work_limit, left_work);
    popts.exact_dp = !o->milp_glpk_only;
    popts.memo = ws->memo;
    unsigned allowed = o->recompute >= 0 ? 1u << o->recompute : 0u;
    px_parallel *next = &ws->next;
    *next = c->par;
    px_prediction pred = c->pred;
    px_error perr;
    res->milp_refined++;
    /* the program costs with the search's context: its framework traits */
    px_status st = px_partition_refine(ctx, next, &pred, &popts, allowed, &ws->rep, &perr);
    ws->work += ws->rep.work;
    res->milp_clock_hit += ws->rep.clock_hit;
    if (st == PX_ERR_INFEASIBLE && miss)
        return false; /* a miss that no split makes fit: nothing to report */
    if (st != PX_OK) {
        res->milp_failed++;
        if (!res->milp_note[0])
            snprintf(res->milp_note, sizeof res->milp_note, "%s", perr.msg);
        return false;
    }
    if (!ws->rep.proven_optimal)
        res->milp_not_proven++;
    if (ws->rep.exact_dp)
        res->milp_by_dp++;
    if (take_program_split(m, ctx, o, res, c, miss, ws))
        return true;
    return block_only(o) && refine_block(m, ctx, o, res, c, miss, ws);
}

/* Sorts cand[0..n_cand) best first (stable insertion sort of pointers: the
 * pool's order on ties) and puts the first of each configuration, at most
 * keep, in kept.  Returns how many. */
static int rank_unique(const px_candidate **cand, int n_cand, int keep,
                       const px_candidate **kept)
{
    for (int i = 1; i < n_cand; i++) {
        const px_candidate *c = cand[i];
        int j = i;
        while (j > 0 && better(c, cand[j - 1])) {
            cand[j] = cand[j - 1];
            j--;
        }
        cand[j] = c;
    }
    int n = 0;
    for (int i = 0; i < n_cand && n < keep; i++) {
        bool dup = false;
        for (int j = 0; j < n && !dup; j++)
            dup = same_config(&cand[i]->par, &kept[j]->par);
        if (!dup)
            kept[n++] = cand[i];
    }
    return n;
}

/* A lower bound on the score (seconds per token) any split and recompute
 * choice can give candidate c, or -1 when none is known.  The cost model's
 * step (docs/cost-model.md, "Step time") is m (1 + bubble) x the slowest
 * stage's micro-batch + the pipeline sends + the exposed DP traffic + the
 * optimizer; the sends depend on the sizes only, the last two are >= 0, and
 * the slowest stage is at least the average of all the work at each
 * layer's fastest choice (px_partition_refine_bound). */
static double score_lower_bound(px_cost_ctx *ctx, const px_search_opts *o,
                                const px_candidate *c)
{
    double stage_lb;
    px_error e;
    if (px_partition_refine_bound(ctx, &c->par, &stage_lb, &e) != PX_OK)
        return -1.0;
    px_prediction pred = c->pred;
    if (pred.time.step_s <= 0.0 && /* a memory miss: time it as it is */
        px_cost_eval(ctx, &c->par, o->train_tokens, o->gpu_mtbf_hours, &pred, NULL, &e) != PX_OK)
        return -1.0;
    double tokens = pred.tokens_per_s * pred.time.step_s;
    if (!(tokens > 0.0))
        return -1.0;
    const px_parallel *p = &c->par;
    double bx = px_cost_bubble_over_ideal(p->schedule, p->pp, p->vpp, p->n_micro);
    double step = (double)p->n_micro * (1.0 + bx) * stage_lb + pred.time.pp_comm_s;
    return step / tokens * (1.0 - 1e-9); /* rounding of the sums */
}

/* The score the keep-th distinct candidate of the list would have if it
 * were cut now: the refined versions of pool[0..k) and the analytic ones of
 * pool[k..n_pool).  A candidate whose lower bound is not below it cannot
 * enter the list.  INFINITY while the list is short. */
static double list_threshold(const px_candidate *pool, int n_pool, int keep, refine_ws *ws)
{
    int n_cand = 0;
    for (int i = 0; i < n_pool; i++)
        ws->cand[n_cand++] = &pool[i];
    int n = rank_unique(ws->cand, n_cand, keep, ws->kept);
    return n < keep ? INFINITY : score(ws->kept[keep - 1]);
}

/* True when c (pool[k] or a miss) may still enter the list: its lower bound
 * is below the threshold (or unknown).  Otherwise counted as pruned. */
static bool worth_refining(px_cost_ctx *ctx, const px_search_opts *o, px_search_result *res,
                           const px_candidate *c, const px_candidate *pool, int n_pool,
                           int keep, refine_ws *ws)
{
    if (o->milp_no_prune)
        return true;
    double lb = score_lower_bound(ctx, o, c);
    if (lb < 0.0 || lb < list_threshold(pool, n_pool, keep, ws))
        return true;
    res->milp_pruned++;
    return false;
}

/* After the analytic pass: the first keep + PX_SEARCH_MILP_EXTRA candidates
 * of the pool and the closest misses through the partition program, then the
 * pool re-ranked, merged candidates removed and the best `keep` copied into
 * res->top.  A candidate whose proven lower bound (score_lower_bound) cannot
 * reach the list as it stands is not refined: whatever split it got, it
 * would rank below the keep-th row.
 *
 * Why --top K still gets K rows: the analytic candidates are distinct
 * configurations, but two of them can meet once the program has rewritten
 * one (selective recompute, which FlashAttention makes no leaner than none,
 * becomes none with the other's split).  Each meeting involves at least one
 * candidate the program changed, so
 *   1. the pool holds K + n_refine candidates, so even if every changed one
 *      were lost in a meeting, K distinct ones remain;
 *   2. when the pool was not full (fewer feasible configurations than that)
 *      and the list still comes out short, a changed candidate that met
 *      another is listed in its analytic version too: a distinct feasible
 *      configuration, scored by the same model.  Only then, so that a list
 *      that is long enough is exactly the refined ranking.
 * Together they give K rows whenever the analytic pass found K feasible
 * configurations. */
px_status refine_top(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                     px_search_result *res, px_candidate *pool,
                     int n_pool, int keep, const px_candidate *misses, int n_miss,
                     px_error *err)
{
    double t0 = now_s();
    refine_ws *ws = malloc(sizeof *ws);
    px_partition_memo *memo = px_partition_memo_new();
    if (!ws || !memo) {
        free(ws);
        px_partition_memo_free(memo);
        return PX_FAIL(err, PX_ERR_NOMEM, "search: out of memory for the partition pass");
    }
    ws->memo = memo;
    ws->t0 = t0;
    ws->budget_s = o->milp_budget_s > 0.0 ? o->milp_budget_s : PX_SEARCH_MILP_BUDGET_S;
    ws->work = 0.0;
    res->milp_ran = true;
    /* the program sees the first keep + PX_SEARCH_MILP_EXTRA; the rest stay
     * as the analytic pass scored them */
    int n_refine = n_pool < keep + PX_SEARCH_MILP_EXTRA ? n_pool : keep + PX_SEARCH_MILP_EXTRA;
    res->milp_top = n_refine;
    res->milp_misses = n_miss;
    memset(ws->changed, 0, sizeof ws->changed);
    for (int k = 0; k < n_refine; k++) {
        ws->orig[k] = pool[k];
        if (!worth_refining(ctx, o, res, &pool[k], pool, n_pool, keep, ws))
            continue;
        if (refine_one(m, ctx, o, res, &pool[k], false, ws)) {
            res->milp_changed++;
            ws->changed[k] = true;
        }
    }
    for (int k = 0; k < n_miss && n_pool < POOL_MAX; k++) {
        ws->miss = misses[k];
        if (!worth_refining(ctx, o, res, &ws->miss, pool, n_pool, keep, ws))
            continue;
        if (refine_one(m, ctx, o, res, &ws->miss, true, ws)) {
            res->milp_changed++;
            res->milp_rescued++;
            res->n_valid++;
            pool[n_pool++] = ws->miss; /* no analytic version: it did not fit */
        }
    }
    /* every refined candidate, ranked, the first of each configuration */
    int n_cand = 0;
    for (int i = 0; i < n_pool; i++)
        ws->cand[n_cand++] = &pool[i];
    int n = rank_unique(ws->cand, n_cand, keep, ws->kept);
    if (n < keep) {
        /* short (the pool was not full): add the analytic version of each
         * changed candidate that met another (2. above) and rank again */
        for (int i = 0; i < n_refine; i++) {
            if (!ws->changed[i])
                continue;
            /* met: another candidate, or another's analytic version (which
             * may come back here); then each candidate keeps a distinct
             * representative -- itself, or its analytic version -- and the
             * list holds min(K, feasible) rows */
            bool meets = false;
            for (int j = 0; j < n_pool && !meets; j++)
                meets = j != i &&
                        (same_config(&pool[i].par, &pool[j].par) ||
                         (j < n_refine && same_config(&pool[i].par, &ws->orig[j].par)));
            if (meets)
                ws->cand[n_cand++] = &ws->orig[i];
        }
        n = rank_unique(ws->cand, n_cand, keep, ws->kept);
    }
    for (int i = 0; i < n; i++)
        res->top[i] = *ws->kept[i];
    res->n_top = n;
    res->milp_s = now_s() - t0;
    px_partition_memo_free(ws->memo);
    free(ws);
    return PX_OK;
}
