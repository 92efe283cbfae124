/* px_search.c — enumeration, ranking, rejection counts and the rule-of-thumb
 * plan; see px_search.h and docs/cost-model.md ("Search"). */
#include "px_search.h"

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

void px_search_opts_init(px_search_opts *o)
{
    memset(o, 0, sizeof *o);
    o->zero = o->recompute = o->schedule = o->sp = o->grad_fp32 = -1;
    o->dp_overlap = o->tp_overlap = -1;
    o->precision = PX_PREC_BF16;
    o->cp_comm = PX_CPC_P2P;
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
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

/* Score used for ranking: seconds per token (= step time at a fixed global
 * batch; fair when a fixed micro-batch count makes the batch vary). */
static double score_pred(const px_prediction *p)
{
    double tokens = p->tokens_per_s * p->time.step_s;
    return tokens > 0 ? p->time.step_s / tokens : INFINITY;
}

static double score(const px_candidate *c) { return score_pred(&c->pred); }

/* a ranks before b: a lower score (beyond rounding), or the same with less
 * memory. */
static bool better_pred(const px_prediction *a, const px_prediction *b)
{
    double sa = score_pred(a), sb = score_pred(b);
    if (sa != sb)
        return sa < sb * (1.0 - 1e-12);
    return a->mem.total < b->mem.total;
}

static bool better(const px_candidate *a, const px_candidate *b)
{
    return better_pred(&a->pred, &b->pred);
}

/* The analytic pass ranks into a pool larger than the result's list: with
 * the partition program on, --top K keeps K + (K + PX_SEARCH_MILP_EXTRA)
 * candidates (see px_search_run), and the program's rescued misses are
 * appended after them.  The pool belongs to the caller (search_tally). */
#define POOL_MAX (2 * PX_SEARCH_TOP_MAX + PX_SEARCH_MILP_EXTRA + PX_SEARCH_MILP_MISSES)

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
        a->flash_attention != b->flash_attention || a->dp_overlap != b->dp_overlap ||
        a->tp_overlap != b->tp_overlap || a->schedule != b->schedule ||
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
    px_partition_report rep;
    px_partition_memo *memo; /* the program's answers, for candidates that pose it again */
} refine_ws;

/* The stage partitioner on one candidate: on success with a changed split,
 * c is re-scored with the search's own options; on failure (GLPK, nothing
 * fits) c stays as it was.  Returns true when c changed and fits. */
static bool refine_one(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                       px_search_result *res, px_candidate *c, bool miss, double left_s,
                       refine_ws *ws)
{
    if (left_s <= 0.0) {
        res->milp_skipped++;
        return false;
    }
    px_partition_opts popts;
    px_partition_opts_init(&popts);
    double lim = o->milp_time_limit_s > 0.0 ? o->milp_time_limit_s : PX_SEARCH_MILP_TIME_LIMIT_S;
    popts.time_limit_s = c->par.vpp > 1 && o->milp_time_limit_s <= 0.0 ? lim / 10.0 : lim;
    if (popts.time_limit_s > left_s)
        popts.time_limit_s = left_s;
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
static px_status refine_top(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                            px_search_result *res, px_candidate *pool,
                            int n_pool, int keep, const px_candidate *misses, int n_miss,
                            px_error *err)
{
    double t0 = now_s();
    double budget = o->milp_budget_s > 0.0 ? o->milp_budget_s : PX_SEARCH_MILP_BUDGET_S;
    refine_ws *ws = malloc(sizeof *ws);
    px_partition_memo *memo = px_partition_memo_new();
    if (!ws || !memo) {
        free(ws);
        px_partition_memo_free(memo);
        return PX_FAIL(err, PX_ERR_NOMEM, "search: out of memory for the partition pass");
    }
    ws->memo = memo;
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
        if (refine_one(m, ctx, o, res, &pool[k], false, budget - (now_s() - t0), ws)) {
            res->milp_changed++;
            ws->changed[k] = true;
        }
    }
    for (int k = 0; k < n_miss && n_pool < POOL_MAX; k++) {
        ws->miss = misses[k];
        if (!worth_refining(ctx, o, res, &ws->miss, pool, n_pool, keep, ws))
            continue;
        if (refine_one(m, ctx, o, res, &ws->miss, true, budget - (now_s() - t0), ws)) {
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
static px_reject rule_reject(px_status st, px_reject structural)
{
    return st == PX_ERR_UNSUPPORTED ? PX_REJ_FRAMEWORK : structural;
}

/* The capability set a search works under (px_search_opts.caps). */
static const px_caps *search_caps(const px_search_opts *o, px_caps *storage)
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

static px_status resolve_batch(const px_model *m, const px_search_opts *o, px_search_result *res,
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

static px_status check_fixed(const px_model *m, int gpus, int64_t s, const px_search_opts *o,
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
    if (st == PX_OK && o->pp > 0)
        st = fixed_rule(res, PX_REJ_LAYERS,
                        px_rule_pipeline(m, o->pp, 1, PX_SCHED_1F1B, caps, &e), "pp", o->pp,
                        &e, err);
    /* vpp > 1: with pp fixed (or implied by the other fixed sizes), else
     * with the least pp that interleaves */
    int pp_implied = o->pp > 0 ? o->pp
                     : (o->tp > 0 && o->cp > 0 && o->dp > 0 &&
                        (int64_t)o->tp * o->cp * o->dp == gpus) ? 1 : 0;
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
        st = fixed_rule(res, PX_REJ_EXPERTS,
                        px_rule_experts(m, tp, 1, ep * etp, ep, etp, caps, &e),
                        o->ep > 0 ? "ep" : "etp", o->ep > 0 ? o->ep : o->etp, &e, err);
    }
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
static bool has_factorisation(const px_model *m, int gpus, int64_t s, int64_t GB,
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

/* The global batch was not given (the default tokens per step) but the
 * layout is fixed: the nearest batch that dp (x a fixed micro-batch, x a
 * fixed micro-batch count) divides, rather than no plan at all (TP 8 PP 5
 * DP 25 on 1000 GPUs runs 2050 sequences, not 2048). */
static void nearest_batch(int gpus, const px_search_opts *o, px_search_result *res)
{
    if (o->global_batch > 0 || o->tokens_per_step > 0)
        return;
    int64_t dp = o->dp;
    if (dp <= 0 && o->tp > 0 && o->pp > 0 && o->cp > 0 &&
        gpus % ((int64_t)o->tp * o->pp * o->cp) == 0)
        dp = gpus / ((int64_t)o->tp * o->pp * o->cp);
    if (dp <= 0)
        return;
    int64_t unit = dp * (o->micro_batch > 0 ? o->micro_batch : 1) *
                   (o->n_micro > 0 ? o->n_micro : 1);
    int64_t gb = res->global_batch;
    if (gb % unit == 0)
        return;
    int64_t near = (gb + unit / 2) / unit * unit;
    if (near < unit)
        near = unit;
    snprintf(res->batch_note, sizeof res->batch_note,
             "global batch %lld sequences (the default) is not divisible by dp%s%s = %lld: "
             "the nearest the layout divides, %lld, is used",
             (long long)gb, o->micro_batch > 0 ? " x micro-batch" : "",
             o->n_micro > 0 ? " x micro-batches" : "", (long long)unit, (long long)near);
    res->global_batch = near;
    res->tokens_per_step = near * res->seq_len;
}

/* Megatron's split of L layers over pp x v chunks with the embedding and
 * the loss counted as pipeline layers (px_split_megatron.h), else its custom
 * layout spread evenly (px_split_layout_balanced), recorded in par; the end
 * chunks may hold the embedding or the loss alone where the
 * framework runs that (empty_ends); false when it does not apply. */
static bool megatron_uneven_split(int64_t L, int pp, int v, bool empty_ends, px_parallel *par)
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

/* The settings a configuration takes from the command line or, when not
 * given, from how the framework runs (px_framework.h): gradient reduction and
 * TP collectives overlapped, fused attention. */
static void search_defaults(px_parallel *par, const px_search_opts *o)
{
    par->dp_overlap = o->dp_overlap < 0 ? (!o->run || o->run->dp_overlap) : o->dp_overlap != 0;
    par->tp_overlap = o->tp_overlap < 0 ? (!o->run || o->run->tp_overlap) : o->tp_overlap != 0;
    par->flash_attention = o->flash_attention < 0 ? (!o->run || o->run->fused_attention)
                                                  : o->flash_attention != 0;
    par->shard_group = o->shard_group;
    par->precision = o->precision;
    par->cp_comm = o->cp_comm;
    par->quantized_params = !o->run || o->run->quantized_params;
}

/* Sequence parallelism when free: on with TP, unless the framework runs TP
 * only without it. */
static int sp_free(const px_search_opts *o)
{
    return o->caps && !o->caps->sp ? 0 : 1;
}

/* Scores par (fully set) into t: its memory, and its time when `timed`
 * (otherwise it is proven unable to reach the list: only whether it fits
 * counts, and a miss's memory). */
static void score_config(const search_spec *sp, px_cost_ctx *ctx, const px_parallel *par,
                         bool timed, search_tally *t)
{
    const px_search_opts *o = sp->o;
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
    int z0 = 0, z1 = (ddp > 1 || edp > 1) ? 3 : 0;
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
        scheds[n_s++] = PX_SCHED_GPIPE;
        scheds[n_s++] = PX_SCHED_1F1B;
        scheds[n_s++] = PX_SCHED_ZB_H1;
        scheds[n_s++] = PX_SCHED_ZB_H2;
    }
    bool timed = may_rank(sp, ctx, par, scheds, n_s, t);
    /* the SP rule reads the sizes only: once for all the states */
    px_status sp_rule = px_rule_sp(sp->m, sp->s, par->tp, par->cp, par->sp, par->micro_batch,
                                   sp->caps, NULL);
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
        return PX_FAIL(err, PX_ERR_INFEASIBLE,
                       "no configuration of %s on %d GPUs fits in %s per GPU (%s HBM minus "
                       "%.1f GB reserve); closest miss: %s needs %s, %s over; rejected: %s",
                       m->name, gpus, lim, hw->name, (double)hw->mem_reserve_bytes / 1e9, d, got,
                       over, rej);
    }
    /* nothing reached the memory check: say what the sizes must divide and
     * the nearest GPU counts that factor (the closest miss of a count) */
    int below = 0, above = 0;
    for (int d = 1; d <= gpus && !(below && above); d++) {
        if (!below && gpus - d >= 1 && has_factorisation(m, gpus - d, sp->s, sp->GB, o))
            below = gpus - d;
        if (!above && has_factorisation(m, gpus + d, sp->s, sp->GB, o))
            above = gpus + d;
    }
    char near[128] = "";
    if (below && above)
        snprintf(near, sizeof near, "; the nearest GPU counts that factor: %d and %d", below,
                 above);
    else if (below || above)
        snprintf(near, sizeof near, "; the nearest GPU count that factors: %d",
                 below ? below : above);
    return PX_FAIL(err, PX_ERR_INFEASIBLE,
                   "--gpus %d: no tp·cp·pp·dp factorisation of %s with tp <= %d "
                   "dividing the %lld heads, %lld kv heads and ffn %lld, cp <= %d dividing the "
                   "sequence %lld, pp <= %lld layers%s and micro-batch·dp dividing the global "
                   "batch of %lld sequences%s (rejected: %s)%s",
                   gpus, m->name, o->max_tp, (long long)m->n_heads, (long long)m->n_kv_heads,
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

px_status px_search_run(const px_model *m, const px_hw *hw, int gpus, const px_search_opts *o,
                        px_search_result *res, px_error *err)
{
    result_reset(res);
    double t0 = now_s();
    if (gpus < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "gpus = %d: must be >= 1", gpus);
    res->gpus = gpus;
    px_status st = px_prec_check_hw(hw, o->precision, err);
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
    res->mem_limit_bytes = hw->hbm_bytes - hw->mem_reserve_bytes;
    /* with the partition program, the analytic pass keeps keep + n_refine
     * (n_refine = keep + PX_SEARCH_MILP_EXTRA, the candidates the program
     * sees): some collapse into one after it, and the list is cut back to
     * `keep` (refine_top says why that leaves `keep` rows) */
    search_spec sp = {m,           hw,
                      o,           gpus,
                      res->seq_len, res->global_batch,
                      m->n_layers, res->mem_limit_bytes,
                      m->n_experts > 0, o->milp ? 2 * keep + PX_SEARCH_MILP_EXTRA : keep,
                      NULL,        {-1, -1}};
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

static bool fits(px_cost_ctx *ctx, const px_parallel *par, int64_t limit, px_memory *mem)
{
    px_cost_memory(ctx, par, mem, NULL);
    return mem->total <= limit;
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
    int64_t limit = hw->hbm_bytes - hw->mem_reserve_bytes;
    int g = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    if (g > gpus)
        g = gpus;
    px_parallel *par = &ws->par;
    px_parallel_init(par);
    par->seq_len = s;
    par->grad_fp32 = o->grad_fp32 < 0 ? true : o->grad_fp32 != 0;
    search_defaults(par, o); /* overlap, attention, precision as the search's */
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
