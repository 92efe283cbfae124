/* px_partition_bound.c — a lower bound on the step time and a feasible split
 * to start from (knapsack relaxation per stage, a DP over stage boundaries),
 * and the message when no split fits. */
#include "px_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_cost.h"
#include "px_milp.h"
#include "px_partition_internal.h"

/* ---- bounds and a starting split ---------------------------------------- */

/* Choosing the recompute options of one stage's layers is a multiple-choice
 * knapsack: least time with the activations under the stage's memory.  Its
 * LP relaxation is solved exactly by taking, cheapest first, the segments of
 * each layer's lower convex hull of (activation bytes, time); rounding the
 * last, fractional segment up gives a feasible choice.  The LP value bounds
 * the MILP from below, the rounded choice from above. */

typedef struct {
    int idx;          /* position in the stage's layer list */
    int to;           /* option reached */
    double dt, saved; /* time added, bytes saved (x in_flight) */
} hull_seg;

static int seg_cmp(const void *pa, const void *pb_)
{
    const hull_seg *a = pa, *b = pb_;
    double x = a->dt * b->saved, y = b->dt * a->saved; /* a->dt/a->saved vs b's */
    if (x != y)
        return x < y ? -1 : 1;
    if (a->idx != b->idx)
        return a->idx < b->idx ? -1 : 1;
    return a->dt < b->dt ? -1 : a->dt > b->dt ? 1 : 0; /* a layer's own order */
}


/* layers[0..n) on stage s (time of the layers only, not the stage's fixed
 * part).  Returns false when even the leanest choice does not fit. */
static bool stage_knapsack(const px_partition_problem *pb, int s, const int *layers, int n,
                           hull_seg *segs, double *lp_time, double *int_time,
                           unsigned char *choice)
{
    int64_t static_sum = 0, act_sum = 0;
    double t = 0.0;
    int ns = 0;
    double fl = pb->in_flight[s];
    for (int q = 0; q < n; q++) {
        int i = layers[q];
        int pts[R_COUNT];
        int np = px_part_layer_hull(pb, i, pts);
        choice[q] = (unsigned char)pts[0];
        t += pb->layer_time_s[i][pts[0]];
        static_sum += pb->layer_static_bytes[i];
        act_sum += pb->layer_act_bytes[i][pts[0]];
        for (int k = 1; k < np; k++) {
            segs[ns].idx = q;
            segs[ns].to = pts[k];
            segs[ns].dt = pb->layer_time_s[i][pts[k]] - pb->layer_time_s[i][pts[k - 1]];
            segs[ns].saved =
                fl * (double)(pb->layer_act_bytes[i][pts[k - 1]] - pb->layer_act_bytes[i][pts[k]]);
            ns++;
        }
    }
    double excess = px_part_stage_mem(pb, s, static_sum, act_sum) - (double)pb->mem_limit_bytes;
    double t_lp = t, t_int = t;
    if (excess > 0.0) {
        qsort(segs, (size_t)ns, sizeof *segs, seg_cmp);
        for (int k = 0; k < ns && excess > 0.0; k++) {
            if (segs[k].saved <= 0.0)
                continue;
            double part = segs[k].saved >= excess ? excess / segs[k].saved : 1.0;
            t_lp += segs[k].dt * part;
            t_int += segs[k].dt;
            excess -= segs[k].saved;
            choice[segs[k].idx] = (unsigned char)segs[k].to;
        }
        if (excess > 0.0)
            return false;
    }
    *lp_time = t_lp;
    *int_time = t_int;
    return true;
}

/* Gives every stage of sol's split the knapsack's rounded choice. */
static bool greedy_recompute(const px_partition_problem *pb, px_partition_solution *sol,
                             int *layers, hull_seg *segs, unsigned char *choice)
{
    for (int s = 0; s < pb->pp; s++) {
        int n = 0, first = 0;
        for (int c = 0; c < sol->n_chunks; c++) {
            if (c % pb->pp == s)
                for (int k = 0; k < sol->layers_per_chunk[c]; k++)
                    layers[n++] = first + k;
            first += sol->layers_per_chunk[c];
        }
        double lp, it;
        if (!stage_knapsack(pb, s, layers, n, segs, &lp, &it, choice))
            return false;
        for (int q = 0; q < n; q++)
            sol->layer_recompute[layers[q]] = choice[q];
    }
    return px_partition_evaluate(pb, sol, NULL) == PX_OK && sol->fits;
}



/* The lower hull of layer i's options, fastest first (see stage_knapsack). */
int px_part_layer_hull(const px_partition_problem *pb, int i, int *pts)
{
    int np = 0;
    for (int r = 0; r < R_COUNT; r++)
        if (px_part_allowed(pb, r) && !px_part_dominated(pb, i, r))
            pts[np++] = r;
    for (int a = 1; a < np; a++)
        for (int b = a; b > 0 && pb->layer_time_s[i][pts[b]] < pb->layer_time_s[i][pts[b - 1]];
             b--) {
            int tmp = pts[b];
            pts[b] = pts[b - 1];
            pts[b - 1] = tmp;
        }
    if (np == 3) {
        double t0 = pb->layer_time_s[i][pts[0]], t1 = pb->layer_time_s[i][pts[1]],
               t2 = pb->layer_time_s[i][pts[2]];
        double a0 = (double)pb->layer_act_bytes[i][pts[0]],
               a1 = (double)pb->layer_act_bytes[i][pts[1]],
               a2 = (double)pb->layer_act_bytes[i][pts[2]];
        if ((t1 - t0) * (a1 - a2) > (t2 - t1) * (a0 - a1)) {
            pts[1] = pts[2];
            np = 2;
        }
    }
    return np;
}

/* The DP's arc costs: the knapsack of layers [a, b) on stage s, with every
 * layer's hull segments sorted once (their order does not depend on the
 * stage: in_flight scales all savings alike). */
typedef struct {
    const px_partition_problem *pb;
    double *t0;       /* prefix sums of the fastest choice's time, [L+1] */
    int64_t *st, *a0; /* prefix sums of static and fastest-choice activation bytes */
    hull_seg *segs;   /* idx = layer; saved = bytes (in_flight 1) */
    int n_segs;
} dp_arcs;

static bool arc_cost(const dp_arcs *d, int s, int a, int b, double *lp, double *it)
{
    const px_partition_problem *pb = d->pb;
    double t = d->t0[b] - d->t0[a];
    double excess = px_part_stage_mem(pb, s, d->st[b] - d->st[a], d->a0[b] - d->a0[a]) -
                    (double)pb->mem_limit_bytes;
    double t_lp = t, t_int = t, fl = pb->in_flight[s];
    if (excess > 0.0) {
        if (fl <= 0.0)
            return false;
        for (int k = 0; k < d->n_segs && excess > 0.0; k++) {
            const hull_seg *g = &d->segs[k];
            if (g->idx < a || g->idx >= b || g->saved <= 0.0)
                continue;
            double saved = fl * g->saved;
            t_lp += g->dt * (saved >= excess ? excess / saved : 1.0);
            t_int += g->dt;
            excess -= saved;
        }
        if (excess > 0.0)
            return false;
    }
    *lp = t_lp;
    *it = t_int;
    return true;
}

/* A feasible split to start from and a lower bound on T.  Always the
 * uniform split with greedy recomputation; with one chunk per stage (or
 * identical layers) a DP over (stage, last layer) finds the split whose
 * worst stage is least, once with the LP costs (a bound) and once with the
 * rounded ones (a split).  The DP gives up (no bound) past the deadline.
 * Longer than the rest: the DP's tables, the hull segments and the
 * deadline are one computation; its arc costs are arc_cost. */
void px_part_find_heuristic(const px_partition_problem *pb, px_partition_solution *split,
                           heuristic *h, const struct timespec *t0, double deadline_s)
{
    memset(h, 0, sizeof *h);
    int L = pb->n_layers, p = pb->pp, C = p * pb->vpp;
    int *layers = malloc((size_t)L * sizeof *layers);
    hull_seg *segs = malloc((size_t)L * R_COUNT * sizeof *segs);
    unsigned char *choice = malloc((size_t)L);
    dp_arcs d = {pb, NULL, NULL, NULL, NULL, 0};
    double *lb = NULL, *ub = NULL;
    int *arg = NULL;
    if (!layers || !segs || !choice)
        goto done;
    px_part_clear_solver_fields(split);

    /* always: the uniform split with greedy recomputation (cheap) */
    int base = L / C, rem = L % C, first = (C - rem) / 2;
    split->n_chunks = C;
    for (int c = 0; c < C; c++)
        split->layers_per_chunk[c] = base + (c >= first && c < first + rem ? 1 : 0);
    h->have_split = greedy_recompute(pb, split, layers, segs, choice);

    /* With interleaving (v > 1) a stage's chunks are not contiguous, but
     * when all layers are identical only how many a stage holds matters
     * (any count >= v can be dealt over its v chunks): the same DP over
     * counts is then exact too. */
    int v = pb->vpp;
    bool all_same = true;
    for (int i = 1; i < L && all_same; i++)
        all_same = px_part_identical_layers(pb, 0, i);
    double arcs = (double)p * (L + 1) * (L + 1);
    if ((v == 1 || all_same) && arcs <= DP_MAX_ARCS) {
        size_t n = (size_t)p * (size_t)(L + 1);
        lb = malloc(n * sizeof *lb);
        ub = malloc(n * sizeof *ub);
        arg = malloc(n * sizeof *arg);
        d.t0 = malloc((size_t)(L + 1) * sizeof *d.t0);
        d.st = malloc((size_t)(L + 1) * sizeof *d.st);
        d.a0 = malloc((size_t)(L + 1) * sizeof *d.a0);
        d.segs = malloc((size_t)L * R_COUNT * sizeof *d.segs);
        if (!lb || !ub || !arg || !d.t0 || !d.st || !d.a0 || !d.segs)
            goto done;
        d.t0[0] = 0.0;
        d.st[0] = d.a0[0] = 0;
        for (int i = 0; i < L; i++) {
            int pts[R_COUNT];
            int np = px_part_layer_hull(pb, i, pts);
            d.t0[i + 1] = d.t0[i] + pb->layer_time_s[i][pts[0]];
            d.st[i + 1] = d.st[i] + pb->layer_static_bytes[i];
            d.a0[i + 1] = d.a0[i] + pb->layer_act_bytes[i][pts[0]];
            for (int k = 1; k < np; k++) {
                hull_seg *g = &d.segs[d.n_segs++];
                g->idx = i;
                g->to = pts[k];
                g->dt = pb->layer_time_s[i][pts[k]] - pb->layer_time_s[i][pts[k - 1]];
                g->saved = (double)(pb->layer_act_bytes[i][pts[k - 1]] -
                                    pb->layer_act_bytes[i][pts[k]]);
            }
        }
        qsort(d.segs, (size_t)d.n_segs, sizeof *d.segs, seg_cmp);
        double cap = h->have_split ? split->max_stage_time_s * (1.0 + 1e-9) : INFINITY;
        /* lb/ub[s * (L+1) + b]: best worst-stage time with stages 0..s
         * holding layers 0..b-1 */
        for (int s = 0; s < p; s++) {
            if (px_part_elapsed_since(t0) > deadline_s) {
                h->clock_hit = true;
                goto done;
            }
            double fixed = px_part_stage_fixed_time(pb, s);
            for (int b = 0; b <= L; b++) {
                double best_lb = INFINITY, best_ub = INFINITY;
                int best_a = -1;
                /* arcs slower than the starting split's T cannot be on a
                 * better path (layer times are >= 0: scan down to the first) */
                int a_lo = s * v;
                if (cap < INFINITY)
                    for (a_lo = b - v; a_lo > s * v && fixed + d.t0[b] - d.t0[a_lo - 1] <= cap;
                         a_lo--)
                        ;
                if (b >= (s + 1) * v && b <= L - (p - 1 - s) * v && (s < p - 1 || b == L))
                    for (int a = a_lo; a <= b - v; a++) {
                        double prev_lb = s ? lb[(size_t)(s - 1) * (L + 1) + a] : (a ? INFINITY : 0);
                        double prev_ub = s ? ub[(size_t)(s - 1) * (L + 1) + a] : (a ? INFINITY : 0);
                        if (prev_lb == INFINITY || (prev_lb >= best_lb && prev_ub >= best_ub))
                            continue;
                        double lp, it;
                        if (!arc_cost(&d, s, a, b, &lp, &it))
                            continue;
                        double cl = fmax(prev_lb, lp + fixed), cu = fmax(prev_ub, it + fixed);
                        if (cl < best_lb)
                            best_lb = cl;
                        if (cu < best_ub) {
                            best_ub = cu;
                            best_a = a;
                        }
                    }
                lb[(size_t)s * (L + 1) + b] = best_lb;
                ub[(size_t)s * (L + 1) + b] = best_ub;
                arg[(size_t)s * (L + 1) + b] = best_a;
            }
        }
        h->lower_s = lb[(size_t)(p - 1) * (L + 1) + L];
        if (h->lower_s == INFINITY)
            h->lower_s = 0; /* nothing fits even fractionally: the MILP will say so */
        if (ub[(size_t)(p - 1) * (L + 1) + L] < INFINITY) {
            px_partition_solution *dp = malloc(sizeof *dp);
            if (!dp)
                goto done;
            *dp = *split;
            int b = L;
            for (int s = p - 1; s >= 0; s--) {
                int a = arg[(size_t)s * (L + 1) + b], n = b - a;
                for (int j = 0; j < v; j++) /* n layers dealt over the stage's v chunks */
                    dp->layers_per_chunk[s + j * p] = n / v + (j < n % v ? 1 : 0);
                b = a;
            }
            if (greedy_recompute(pb, dp, layers, segs, choice) &&
                (!h->have_split || dp->objective_s < split->objective_s)) {
                *split = *dp;
                h->have_split = true;
            }
            free(dp);
        }
    }
done:
    free(lb);
    free(ub);
    free(arg);
    free(d.t0);
    free(d.st);
    free(d.a0);
    free(d.segs);
    free(layers);
    free(segs);
    free(choice);
}

/* No split fits: find the one that overflows least and say where and by how
 * much (a planner message the user can act on). */
px_status px_part_explain_infeasible(const px_partition_problem *pb, const px_partition_opts *o,
                                    double time_left_s, px_partition_solution *sol,
                                    px_error *err)
{
    model m;
    px_error sub;
    px_error_clear(&sub);
    px_status st = px_part_model_build(&m, pb, BUILD_OVERFLOW, &sub);
    bool have = false;
    if (!st) {
        px_milp_opts mo;
        px_milp_opts_init(&mo);
        mo.time_limit_s = time_left_s;
        mo.work_limit = o->work_limit;
        mo.mip_gap = o->mip_gap;
        mo.presolve = o->presolve;
        px_milp_result res;
        st = px_milp_solve(m.mp, &mo, &res, &sub);
        if (!st && !px_part_model_decode(&m, sol, &sub)) {
            have = true;
            sol->proven_optimal = res.outcome == PX_MILP_OPTIMAL;
            sol->limit_hit = res.limit_hit;
        }
        px_part_model_free(&m);
    }
    if (!have) {
        /* fall back on a split anyone can picture: uniform, least memory */
        px_recompute rc = px_part_allowed(pb, PX_RECOMPUTE_FULL)        ? PX_RECOMPUTE_FULL
                          : px_part_allowed(pb, PX_RECOMPUTE_SELECTIVE) ? PX_RECOMPUTE_SELECTIVE
                                                                : PX_RECOMPUTE_NONE;
        st = px_partition_uniform(pb, rc, sol, &sub);
        if (st)
            return PX_FAIL(err, PX_ERR_INFEASIBLE,
                           "no split of %d layers over %d stages x %d chunks fits in %.3f GB",
                           pb->n_layers, pb->pp, pb->vpp, GB(pb->mem_limit_bytes));
    }
    return px_part_infeasible_error(pb, sol,
                                    have ? (sol->proven_optimal ? "best attempt"
                                                                : "best attempt found in time")
                                         : "uniform split",
                                    err);
}

px_status px_part_infeasible_error(const px_partition_problem *pb,
                                   const px_partition_solution *sol, const char *what,
                                   px_error *err)
{
    char split[512], rcs[128];
    px_partition_format_split(sol, split, sizeof split);
    px_part_format_recompute(pb, sol, rcs, sizeof rcs);
    int s = sol->fullest_stage;
    int n_over = 0, len = 0;
    char others[256] = "";
    for (int q = 0; q < pb->pp; q++)
        if (sol->stage_mem_bytes[q] > pb->mem_limit_bytes && q != s) {
            n_over++;
            if (len < (int)sizeof others - 16)
                len += snprintf(others + len, sizeof others - (size_t)len, "%s%d",
                                len ? ", " : "", q);
        }
    return PX_FAIL(err, PX_ERR_INFEASIBLE,
                   "no split of %d layers over %d stage%s x %d chunk%s fits in memory: the %s "
                   "(layers per chunk %s; recompute %s) needs %.3f GB on stage %d, %.3f GB over "
                   "the %.3f GB limit (memory the device reports minus reserve)%s%s",
                   pb->n_layers, pb->pp, pb->pp > 1 ? "s" : "", pb->vpp,
                   pb->vpp > 1 ? "s" : "",
                   what,
                   split, rcs, GB(sol->stage_mem_bytes[s]), s,
                   GB(sol->stage_mem_bytes[s] - pb->mem_limit_bytes), GB(pb->mem_limit_bytes),
                   n_over ? "; also over: stage " : "", others);
}

px_status px_partition_lower_bound(const px_partition_problem *pb, double *t_lower,
                                   px_error *err)
{
    *t_lower = 0.0;
    px_status st = px_partition_validate(pb, err);
    if (st)
        return st;
    px_partition_solution *split = malloc(sizeof *split);
    if (!split)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    heuristic h;
    px_part_find_heuristic(pb, split, &h, &t0, INFINITY);
    *t_lower = h.lower_s;
    free(split);
    return PX_OK;
}
