/* px_partition_same.c — all three passes exactly, without GLPK, for one
 * chunk per stage and identical layers with recomputation.
 *
 * With every layer alike a stage is described by how many layers it holds
 * with each recompute choice; its time, recompute time and memory follow
 * from those counts alone.  For n layers under a memory cap P and a time
 * cap, the best counts (least time, hence least recomputation) are found by
 * trying every count of the leanest choice and taking the fewest layers of
 * the middle one that fit.  Each pass is then exact:
 *   1. T* is the least stage time value v such that the stages' largest
 *      layer counts with best time <= v add up to L (best time never falls
 *      when a layer is added: times and bytes are non-negative);
 *   2. the least total recomputation under T <= T* (1 + tie_rel) is a DP
 *      over (stage, layers so far);
 *   3. the least peak memory under that time cap and recomputation
 *      <= pass 2's + tie_rel T* is the least P for which pass 2's DP with
 *      the cap P stays within that recomputation (bisection over P, to half
 *      a byte). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_partition.h"
#include "px_partition_internal.h"

typedef struct {
    const px_partition_problem *pb;
    int p, L, k;
    int ch[R_COUNT]; /* the undominated choices, fastest first */
    double t[R_COUNT];
    int64_t a[R_COUNT], w;
    int *lo, *hi; /* per stage: the layer counts that can be in an answer */
} same;

/* Stage s's memory with n layers: cm of the middle choice, cs of the
 * leanest, the rest at the fastest. */
static double mem_at(const same *q, int s, int n, int cm, int cs)
{
    int mid = q->k == 3 ? 1 : 0, slow = q->k - 1;
    int64_t act = (int64_t)(n - cm - cs) * q->a[0] + (int64_t)cm * q->a[mid] +
                  (int64_t)cs * q->a[slow];
    if (q->k == 1)
        act = (int64_t)n * q->a[0];
    return px_part_stage_mem(q->pb, s, (int64_t)n * q->w, act);
}

static bool fits(const same *q, double mem, double cap)
{
    return px_part_mem_fits(q->pb, mem) && mem <= cap;
}

/* The fewest middle layers (of rest) that fit with cs leanest ones, or -1
 * (px_part_fewest_mid; k == 3). */
static int fewest_mid(const same *q, int s, int n, int rest, int cs, double cap)
{
    int64_t act0 = (int64_t)(n - cs) * q->a[0] + (int64_t)cs * q->a[2];
    return px_part_fewest_mid(q->pb, s, (int64_t)n * q->w, act0, q->a[1] - q->a[0], rest, cap);
}

/* Least recomputation for n layers on stage s with memory <= cap and time
 * <= t_cap; counts in cnt[k]; INFINITY when none fits.  Every count of the
 * leanest choice, with the fewest middle layers that fit (fewer is faster). */
static double best_counts(const same *q, int s, int n, double cap, double t_cap, int *cnt)
{
    double best = INFINITY, fixed = px_part_stage_fixed_time(q->pb, s);
    if (q->k == 1) {
        if (!fits(q, mem_at(q, s, n, 0, 0), cap) || fixed + n * q->t[0] > t_cap)
            return INFINITY;
        cnt[0] = n;
        return 0.0;
    }
    int slow = q->k - 1;
    for (int cs = 0; cs <= n; cs++) {
        int rest = n - cs, cm = 0;
        if (q->k == 3)
            cm = fewest_mid(q, s, n, rest, cs, cap);
        else if (!fits(q, mem_at(q, s, n, 0, cs), cap))
            cm = -1;
        if (cm < 0)
            continue;
        double tm = q->k == 3 ? q->t[1] : 0.0;
        double time = fixed + (rest - cm) * q->t[0] + cm * tm + cs * q->t[slow];
        double rc = cm * (tm - q->t[0]) + cs * (q->t[slow] - q->t[0]);
        if (q->k == 2)
            rc = cs * (q->t[slow] - q->t[0]);
        if (time <= t_cap && rc < best) {
            best = rc;
            cnt[0] = rest - cm;
            if (q->k == 3)
                cnt[1] = cm;
            cnt[slow] = cs;
        }
    }
    return best;
}

/* Pass 2's DP (and pass 3's check): least total recomputation with every
 * stage under cap and t_cap; the layer counts per stage in n_out. */
static double least_recompute(const same *q, double cap, double t_cap, double *g, double *d,
                              int *arg, int *n_out)
{
    int L = q->L, p = q->p, cnt[R_COUNT];
    for (int s = 0; s < p; s++)
        for (int n = 0; n <= L; n++)
            g[s * (L + 1) + n] = n >= q->lo[s] && n <= q->hi[s]
                                     ? best_counts(q, s, n, cap, t_cap, cnt)
                                     : INFINITY;
    return px_part_sum_dp(p, L, g, L + 1, q->lo, q->hi, d, arg, n_out);
}

/* The split of the counts n[] (each stage's best counts under cap, t_cap). */
static bool make_split(const same *q, const int *n, double cap, double t_cap,
                       px_partition_solution *sol)
{
    int i = 0;
    sol->n_chunks = q->p;
    for (int s = 0; s < q->p; s++) {
        int cnt[R_COUNT] = {0};
        if (best_counts(q, s, n[s], cap, t_cap, cnt) == INFINITY)
            return false;
        sol->layers_per_chunk[s] = n[s];
        for (int c = 0; c < q->k; c++)
            for (int j = 0; j < cnt[c]; j++)
                sol->layer_recompute[i++] = (unsigned char)q->ch[c];
    }
    return i == q->L && px_partition_evaluate(q->pb, sol, NULL) == PX_OK && sol->fits;
}

static int dcmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Pass 1: the least T (INFINITY when nothing fits); f holds each stage's
 * best time per layer count. */
static double least_time(const same *q, double *f, double *vals)
{
    int L = q->L, p = q->p, nv = 0, cnt[R_COUNT];
    for (int s = 0; s < p; s++)
        for (int n = 1; n <= L; n++) {
            double rc = best_counts(q, s, n, INFINITY, INFINITY, cnt);
            double t = rc == INFINITY ? INFINITY
                                      : px_part_stage_fixed_time(q->pb, s) + n * q->t[0] + rc;
            f[s * (L + 1) + n] = t;
            if (t < INFINITY)
                vals[nv++] = t;
        }
    qsort(vals, (size_t)nv, sizeof *vals, dcmp);
    int lo = 0, hi = nv; /* the first value that holds L layers */
    while (lo < hi) {
        int mid = (lo + hi) / 2, total = 0;
        bool ok = true;
        for (int s = 0; s < p && ok; s++) {
            int most = 0;
            for (int n = 1; n <= L && f[s * (L + 1) + n] <= vals[mid]; n++)
                most = n;
            ok = most >= 1;
            total += most;
        }
        if (ok && total >= L)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < nv ? vals[lo] : INFINITY;
}

bool px_part_solve_same_layers(const px_partition_problem *pb, const px_partition_opts *o,
                               px_partition_solution *sol)
{
    int L = pb->n_layers, p = pb->pp;
    if (!o->exact_dp || pb->vpp != 1 || p > L || (double)p * (L + 1) * (L + 1) > DP_MAX_ARCS)
        return false;
    for (int i = 1; i < L; i++)
        if (!px_part_identical_layers(pb, 0, i))
            return false;
    same q = {.pb = pb, .p = p, .L = L, .w = pb->layer_static_bytes[0]};
    for (int r = 0; r < R_COUNT; r++)
        if (px_part_allowed(pb, r) && !px_part_dominated(pb, 0, r))
            q.ch[q.k++] = r;
    for (int a = 1; a < q.k; a++) /* fastest first (then the most memory) */
        for (int b = a; b > 0 && pb->layer_time_s[0][q.ch[b]] < pb->layer_time_s[0][q.ch[b - 1]];
             b--) {
            int tmp = q.ch[b];
            q.ch[b] = q.ch[b - 1];
            q.ch[b - 1] = tmp;
        }
    for (int c = 0; c < q.k; c++) {
        q.t[c] = pb->layer_time_s[0][q.ch[c]];
        q.a[c] = pb->layer_act_bytes[0][q.ch[c]];
    }
    if (q.k < 1)
        return false;
    size_t n = (size_t)p * (size_t)(L + 1);
    double *f = malloc(n * sizeof *f), *d = malloc(n * sizeof *d), *vals = malloc(n * sizeof *vals);
    int *arg = malloc(n * sizeof *arg), *cnt = malloc((size_t)p * sizeof *cnt);
    q.lo = malloc((size_t)p * sizeof *q.lo);
    q.hi = malloc((size_t)p * sizeof *q.hi);
    px_partition_solution *cand = malloc(sizeof *cand), *lean = malloc(sizeof *lean);
    bool ok = false;
    if (!f || !d || !vals || !arg || !cnt || !cand || !lean || !q.lo || !q.hi)
        goto out;
    for (int s = 0; s < p; s++) {
        q.lo[s] = 1;
        q.hi[s] = L;
    }
    double t1 = least_time(&q, f, vals);
    if (t1 == INFINITY)
        goto out; /* nothing fits: GLPK's path explains it */
    double t_cap = t1 * (1.0 + o->tie_rel + 1e-12); /* sums in another order */
    /* under t_cap a stage holds at most hi[s] layers (its best time grows
     * with its count), so at least L minus what the others can hold */
    int64_t most = 0;
    for (int s = 0; s < p; s++) {
        int h = 0;
        for (int k = 1; k <= L && f[s * (L + 1) + k] <= t_cap; k++)
            h = k;
        q.hi[s] = h;
        most += h;
    }
    for (int s = 0; s < p; s++) {
        int64_t l = L - (most - q.hi[s]);
        q.lo[s] = l > 1 ? (int)l : 1;
    }
    double rc2 = least_recompute(&q, INFINITY, t_cap, f, d, arg, cnt);
    *cand = *sol;
    px_part_clear_solver_fields(cand);
    if (rc2 == INFINITY || !make_split(&q, cnt, INFINITY, t_cap, cand))
        goto out;
    if (px_part_wants_peak_pass(pb, o)) {
        double r2 = rc2 + o->tie_rel * t1;
        double hi = (double)cand->stage_mem_bytes[cand->fullest_stage], lo = 0.0;
        for (int it = 0; it < 200 && hi - lo > 0.5; it++) {
            double mid = 0.5 * (lo + hi);
            if (least_recompute(&q, mid, t_cap, f, d, arg, NULL) <= r2)
                hi = mid;
            else
                lo = mid;
        }
        *lean = *cand;
        if (least_recompute(&q, hi, t_cap, f, d, arg, cnt) <= r2 &&
            make_split(&q, cnt, hi, t_cap, lean) &&
            lean->stage_mem_bytes[lean->fullest_stage] < cand->stage_mem_bytes[cand->fullest_stage])
            *cand = *lean;
    }
    cand->proven_optimal = true;
    cand->gap = 0.0;
    cand->exact_dp = true;
    *sol = *cand;
    ok = true;
out:
    free(q.lo);
    free(q.hi);
    free(f);
    free(d);
    free(vals);
    free(arg);
    free(cnt);
    free(cand);
    free(lean);
    return ok;
}
