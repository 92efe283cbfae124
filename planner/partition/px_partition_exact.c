/* px_partition_exact.c — the passes solved exactly without GLPK: the
 * bottleneck DP of one chunk per stage and the interleaved split. */
#include "px_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_cost.h"
#include "px_milp.h"
#include "px_partition_internal.h"

/* ---- exact passes without GLPK ------------------------------------------ */

/* The third pass when it is a bottleneck path problem: one chunk per stage
 * and every layer at its fastest choice (no time spent recomputing, so the
 * second pass's bound leaves no layer another choice).  Then a stage's time
 * and memory depend only on its contiguous range [a, b), and the least peak
 * memory under "every stage's time <= t_cap" is a DP over (stage, last
 * layer): best[s][b] = min over a of max(best[s-1][a], mem(s, a, b)).  The
 * result is exact (no gap).  sol is replaced only by a split that fits, keeps
 * t_cap, and lowers the peak; returns false when the DP does not apply. */
bool px_part_exact_peak_dp(const px_partition_problem *pb, double t_cap,
                          px_partition_solution *sol)
{
    int L = pb->n_layers, p = pb->pp;
    if (pb->vpp != 1 || sol->recompute_time_s != 0.0 ||
        (double)p * (L + 1) * (L + 1) > DP_MAX_ARCS)
        return false;
    size_t n = (size_t)p * (size_t)(L + 1);
    double *best = malloc(n * sizeof *best), *t0 = malloc((size_t)(L + 1) * sizeof *t0);
    int *arg = malloc(n * sizeof *arg);
    int64_t *st = malloc((size_t)(L + 1) * sizeof *st), *a0 = malloc((size_t)(L + 1) * sizeof *a0);
    unsigned char *fast = malloc((size_t)L);
    px_partition_solution *cand = malloc(sizeof *cand);
    bool done = false;
    if (!best || !t0 || !arg || !st || !a0 || !fast || !cand)
        goto out;
    t0[0] = 0.0;
    st[0] = a0[0] = 0;
    for (int i = 0; i < L; i++) {
        int pts[R_COUNT];
        px_part_layer_hull(pb, i, pts); /* pts[0]: the fastest allowed, leanest among equals */
        fast[i] = (unsigned char)pts[0];
        t0[i + 1] = t0[i] + pb->layer_time_s[i][pts[0]];
        st[i + 1] = st[i] + pb->layer_static_bytes[i];
        a0[i + 1] = a0[i] + pb->layer_act_bytes[i][pts[0]];
    }
    for (int s = 0; s < p; s++) {
        double fixed = px_part_stage_fixed_time(pb, s);
        for (int b = 0; b <= L; b++) {
            double bv = INFINITY;
            int ba = -1;
            int a_lo = b - 1; /* ranges slower than t_cap are out (times >= 0) */
            while (a_lo > s && fixed + (t0[b] - t0[a_lo - 1]) <= t_cap)
                a_lo--;
            if (b >= s + 1 && b <= L - (p - 1 - s) && (s < p - 1 || b == L))
                for (int a = a_lo; a <= b - 1; a++) {
                    double prev = s ? best[(size_t)(s - 1) * (L + 1) + a] : (a ? INFINITY : 0.0);
                    if (prev >= bv || fixed + (t0[b] - t0[a]) > t_cap)
                        continue;
                    double mem = px_part_stage_mem(pb, s, st[b] - st[a], a0[b] - a0[a]);
                    if (!px_part_mem_fits(pb, mem))
                        continue;
                    double v = fmax(prev, mem);
                    if (v < bv) {
                        bv = v;
                        ba = a;
                    }
                }
            best[(size_t)s * (L + 1) + b] = bv;
            arg[(size_t)s * (L + 1) + b] = ba;
        }
    }
    done = true; /* the DP applied; whether it improves is below */
    if (best[(size_t)(p - 1) * (L + 1) + L] == INFINITY)
        goto out;
    *cand = *sol;
    cand->n_chunks = p;
    for (int s = p - 1, b = L; s >= 0; s--) {
        int a = arg[(size_t)s * (L + 1) + b];
        cand->layers_per_chunk[s] = b - a;
        b = a;
    }
    memcpy(cand->layer_recompute, fast, (size_t)L);
    if (px_partition_evaluate(pb, cand, NULL) == PX_OK && cand->fits &&
        cand->max_stage_time_s <= t_cap * (1.0 + 1e-12) &&
        cand->stage_mem_bytes[cand->fullest_stage] < sol->stage_mem_bytes[sol->fullest_stage]) {
        cand->proven_optimal = sol->proven_optimal;
        cand->limit_hit = sol->limit_hit;
        cand->gap = sol->gap;
        memcpy(cand->note, sol->note, sizeof cand->note);
        *sol = *cand;
    }
out:
    free(best);
    free(t0);
    free(arg);
    free(st);
    free(a0);
    free(fast);
    free(cand);
    return done;
}

/* True when the third pass runs (px_partition_solve's rule). */
bool px_part_wants_peak_pass(const px_partition_problem *pb, const px_partition_opts *o)
{
    return o->minimise_memory && o->minimise_recompute && pb->pp > 1;
}

/* The whole answer without GLPK: the first pass proven by its bound (the
 * DP split meets the LP bound), no recomputation to minimise, and the third
 * pass exact by exact_peak_dp.  False (sol untouched) when a pass needs
 * GLPK. */
bool px_part_solve_exact(const px_partition_problem *pb, const px_partition_opts *o,
                        const px_partition_solution *start, px_partition_solution *sol)
{
    if (!o->exact_dp || pb->vpp != 1 || start->recompute_time_s != 0.0)
        return false;
    *sol = *start;
    sol->proven_optimal = true;
    sol->gap = 0.0;
    sol->limit_hit = false;
    sol->note[0] = '\0';
    if (px_part_wants_peak_pass(pb, o)) {
        double wt, wc;
        px_part_objective_weights(pb, &wt, &wc);
        double t_cap = sol->objective_s * (1.0 + o->tie_rel) / wt;
        if (!px_part_exact_peak_dp(pb, t_cap, sol)) {
            *sol = *start;
            return false;
        }
    }
    sol->exact_dp = true;
    return true;
}

/* Interleaving (v > 1) with identical layers, every layer at its fastest
 * choice: a stage's time and memory depend only on how many layers n_s it
 * holds, and a chunk's time only on its own count.  For a cap X on the
 * slowest chunk, stage s can hold at most cap_s(X) = sum over its chunks of
 * floor((X - fixed(chunk)) / t) layers; the least T then follows by
 * bisection over the values a stage's time can take (enough layers fit
 * under T iff sum_s min(cap_s, memory cap_s, layers under T) >= L).  J =
 * wt T + wc Tc is least at some X among the values a chunk's time can take,
 * so trying them all is exact.  The same enumeration with the memory caps
 * lifted gives the optimum of any split with any recompute choice (layers
 * at their fastest choice are never slower); when the two agree no
 * recomputation can help and the answer is proven. */
typedef struct {
    const px_partition_problem *pb;
    int p, v, C, L;
    double t;                          /* one layer, fastest choice */
    int64_t w, a;                      /* its static and activation bytes */
    int r;                             /* that choice */
    int nmem[PX_PARTITION_MAX_STAGES]; /* most layers within memory */
    double *xs, *ts;                   /* chunk- and stage-time values, ascending */
    int n_x, n_t;
} ilv;

static int dbl_cmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Layers n with fixed + n t <= bound, in [0, L]. */
static int ilv_count(const ilv *q, double fixed, double bound)
{
    double n = floor((bound - fixed) / q->t * (1.0 + 1e-12) + 1e-9);
    return n < 0.0 ? 0 : n > q->L ? q->L : (int)n;
}

/* Stage s's cap under chunk bound X (-1: a chunk cannot hold a layer). */
static int ilv_chunk_cap(const ilv *q, int s, double x)
{
    int cap = 0;
    for (int k = 0; k < q->v; k++) {
        int c = ilv_count(q, px_part_chunk_fixed_time(q->pb, s + k * q->p), x);
        if (c < 1)
            return -1;
        cap += c;
    }
    return cap;
}

/* u[s] = min(chunk cap under x, memory cap (unless relaxed), layers under
 * T); true when they hold L layers with >= v a stage. */
static bool ilv_caps(const ilv *q, double x, double tmax, bool relaxed, int *u)
{
    int64_t sum = 0;
    for (int s = 0; s < q->p; s++) {
        int c = ilv_chunk_cap(q, s, x);
        if (c < 0)
            return false;
        int m = relaxed ? q->L : q->nmem[s];
        int n = ilv_count(q, px_part_stage_fixed_time(q->pb, s), tmax);
        u[s] = c < m ? (c < n ? c : n) : (m < n ? m : n);
        if (u[s] < q->v)
            return false;
        sum += u[s];
    }
    return sum >= q->L;
}

/* Least objective over every chunk bound; *x_out, *t_out its X and T. */
static double ilv_best(const ilv *q, bool relaxed, double *x_out, double *t_out, int *u)
{
    double wt, wc, best = INFINITY;
    px_part_objective_weights(q->pb, &wt, &wc);
    for (int i = 0; i < q->n_x; i++) {
        double x = q->xs[i];
        if (!ilv_caps(q, x, INFINITY, relaxed, u))
            continue;
        int lo = 0, hi = q->n_t - 1; /* the least T value that holds L */
        if (!ilv_caps(q, x, q->ts[hi], relaxed, u))
            continue;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (ilv_caps(q, x, q->ts[mid], relaxed, u))
                hi = mid;
            else
                lo = mid + 1;
        }
        double j = wt * q->ts[lo] + wc * x;
        if (j < best * (1.0 - 1e-12)) {
            best = j;
            *x_out = x;
            *t_out = q->ts[lo];
        }
    }
    return best;
}

/* Stage s's memory with n layers. */
static double ilv_mem(const ilv *q, int s, int n)
{
    return px_part_stage_mem(q->pb, s, (int64_t)n * q->w, (int64_t)n * q->a);
}

/* Caps u lowered to peak memory `peak`; true when they still hold L. */
static bool ilv_under_peak(const ilv *q, const int *u, double peak, int *n)
{
    int64_t sum = 0;
    for (int s = 0; s < q->p; s++) {
        int k = u[s];
        while (k >= q->v && ilv_mem(q, s, k) > peak)
            k--;
        if (k < q->v)
            return false;
        n[s] = k;
        sum += k;
    }
    return sum >= q->L;
}

/* Counts n (sum >= L) cut to L from the last stage back, dealt over each
 * stage's chunks round-robin under the chunk bound x; evaluated. */
static bool ilv_split(const ilv *q, int *n, double x, px_partition_solution *sol)
{
    int64_t over = -q->L;
    for (int s = 0; s < q->p; s++)
        over += n[s];
    for (int s = q->p - 1; s >= 0 && over > 0; s--) {
        int cut = n[s] - q->v < over ? n[s] - q->v : (int)over;
        n[s] -= cut;
        over -= cut;
    }
    sol->n_chunks = q->C;
    for (int s = 0; s < q->p; s++) {
        int left = n[s] - q->v;
        for (int k = 0; k < q->v; k++)
            sol->layers_per_chunk[s + k * q->p] = 1;
        for (bool grew = true; left > 0 && grew;) {
            grew = false;
            for (int k = 0; k < q->v && left > 0; k++) {
                int c = s + k * q->p;
                double fixed = px_part_chunk_fixed_time(q->pb, c);
                if (sol->layers_per_chunk[c] < ilv_count(q, fixed, x)) {
                    sol->layers_per_chunk[c]++;
                    left--;
                    grew = true;
                }
            }
        }
        if (left > 0)
            return false;
    }
    memset(sol->layer_recompute, q->r, (size_t)q->L);
    return px_partition_evaluate(q->pb, sol, NULL) == PX_OK && sol->fits;
}

/* Third pass: the least peak memory over every chunk bound with J <= jcap. */
static bool ilv_peak(const ilv *q, double jcap, px_partition_solution *sol)
{
    double wt, wc;
    px_part_objective_weights(q->pb, &wt, &wc);
    int u[PX_PARTITION_MAX_STAGES], n[PX_PARTITION_MAX_STAGES];
    double best = INFINITY, best_x = 0.0;
    for (int i = 0; i < q->n_x; i++) {
        double x = q->xs[i];
        double tmax = (jcap - wc * x) / wt;
        if (tmax <= 0.0 || !ilv_caps(q, x, tmax, false, u))
            continue;
        /* bisection over the peak: the stage memories at the caps bound it */
        double hi = 0.0, lo = INFINITY;
        for (int s = 0; s < q->p; s++) {
            hi = fmax(hi, ilv_mem(q, s, u[s]));
            lo = fmin(lo, ilv_mem(q, s, q->v));
        }
        if (hi >= best)
            hi = best; /* only a lower peak matters */
        if (!ilv_under_peak(q, u, hi, n))
            continue;
        for (int it = 0; it < 200 && hi - lo > 0.5; it++) {
            double mid = 0.5 * (lo + hi);
            if (ilv_under_peak(q, u, mid, n))
                hi = mid;
            else
                lo = mid;
        }
        if (hi < best) {
            best = hi;
            best_x = x;
        }
    }
    if (best == INFINITY)
        return false;
    double tmax = (jcap - wc * best_x) / wt;
    return ilv_caps(q, best_x, tmax, false, u) && ilv_under_peak(q, u, best, n) &&
           ilv_split(q, n, best_x, sol);
}

/* The whole answer for interleaving with identical layers (see ilv), or
 * false (sol untouched) when recomputation could help or the DP does not
 * apply. */
bool px_part_solve_interleaved_exact(const px_partition_problem *pb, const px_partition_opts *o,
                                    px_partition_solution *sol)
{
    int L = pb->n_layers;
    if (!o->exact_dp || pb->vpp < 2)
        return false;
    for (int i = 1; i < L; i++)
        if (!px_part_identical_layers(pb, 0, i))
            return false;
    ilv q = {.pb = pb, .p = pb->pp, .v = pb->vpp, .C = pb->pp * pb->vpp, .L = L};
    int pts[R_COUNT];
    px_part_layer_hull(pb, 0, pts);
    q.r = pts[0];
    q.t = pb->layer_time_s[0][q.r];
    q.w = pb->layer_static_bytes[0];
    q.a = pb->layer_act_bytes[0][q.r];
    if (!(q.t > 0.0))
        return false;
    for (int s = 0; s < q.p; s++) {
        int n = L;
        while (n > 0 && !px_part_mem_fits(pb, ilv_mem(&q, s, n)))
            n--;
        q.nmem[s] = n;
    }
    q.xs = malloc((size_t)3 * L * sizeof *q.xs);
    q.ts = malloc((size_t)3 * L * sizeof *q.ts);
    int *u = malloc((size_t)q.p * sizeof *u);
    px_partition_solution *cand = malloc(sizeof *cand);
    bool ok = false;
    if (!q.xs || !q.ts || !u || !cand)
        goto out;
    double fx[3] = {0.0, px_part_chunk_fixed_time(pb, 0), px_part_chunk_fixed_time(pb, q.C - 1)};
    double ft[3] = {0.0, px_part_stage_fixed_time(pb, 0), px_part_stage_fixed_time(pb, q.p - 1)};
    for (int k = 0; k < 3; k++)
        for (int c = 1; c <= L; c++) {
            q.xs[q.n_x++] = fx[k] + c * q.t;
            q.ts[q.n_t++] = ft[k] + c * q.t;
        }
    qsort(q.xs, (size_t)q.n_x, sizeof *q.xs, dbl_cmp);
    qsort(q.ts, (size_t)q.n_t, sizeof *q.ts, dbl_cmp);
    double x, t, xr, tr;
    double j = ilv_best(&q, false, &x, &t, u);
    double jr = ilv_best(&q, true, &xr, &tr, u);
    if (j == INFINITY || j > jr * (1.0 + 1e-12))
        goto out; /* memory binds: a recompute choice may do better */
    int n[PX_PARTITION_MAX_STAGES];
    *cand = *sol;
    px_part_clear_solver_fields(cand);
    if (!ilv_caps(&q, x, t, false, u))
        goto out;
    memcpy(n, u, (size_t)q.p * sizeof *n);
    if (!ilv_split(&q, n, x, cand) || cand->objective_s > j * (1.0 + 1e-9))
        goto out;
    if (px_part_wants_peak_pass(pb, o)) {
        px_partition_solution *lean = malloc(sizeof *lean);
        if (!lean)
            goto out;
        *lean = *cand;
        double jcap = cand->objective_s * (1.0 + o->tie_rel);
        if (ilv_peak(&q, jcap, lean) && lean->objective_s <= jcap * (1.0 + 1e-12) &&
            lean->stage_mem_bytes[lean->fullest_stage] <
                cand->stage_mem_bytes[cand->fullest_stage])
            *cand = *lean;
        free(lean);
    }
    cand->proven_optimal = true;
    cand->gap = 0.0;
    cand->exact_dp = true;
    *sol = *cand;
    ok = true;
out:
    free(q.xs);
    free(q.ts);
    free(u);
    free(cand);
    return ok;
}
