/* px_partition_chunks.c — all three passes exactly, without GLPK, for
 * interleaving (v > 1) with identical layers and recomputation.
 *
 * Why it is exact.  With every layer alike, a chunk is described by how many
 * layers it holds with each undominated choice (fastest f, middle m,
 * leanest s, ordered by time); which of its layers take which choice, and
 * which contiguous range it covers, change nothing.  A stage's time,
 * recomputation and memory depend only on its totals (N, J mids, S leanest),
 * its chunks only on their own counts.  For a chunk bound X (every chunk's
 * time <= X) the totals a stage can hold form the set
 *   R_s(X) = { (N, J, S) : J <= Jmax_s(N, S) },
 * an interval in J because turning a middle layer into a fast one keeps
 * every chunk within X; Jmax_s is the max-plus convolution over the stage's
 * v chunks of each chunk's own Jmax(n, s) (every (n, s) with a layer at
 * least, its leanest layers fitting under X, then as many middle ones as
 * fit): a DP over (layers, leanest layers) per chunk, exact.
 *
 * Given R_s(X), a stage with N layers under a memory cap and a time cap
 * recomputes least with, for each S, the fewest middle layers that fit in
 * memory (memory falls linearly with each), if that is <= Jmax_s(N, S).
 * Dropping a layer from a stage (from a chunk with two or more) keeps every
 * bound, so the counts a stage can hold under (X, T) are v..hi_s and
 *   1. J* = min over X of wt T*(X) + wc X, T*(X) the least stage-time
 *      value at which the hi_s add up to L.  The slowest chunk's time is
 *      one of the values F(c) + n t_f + j t_m' + s t_s' (t' the extra over
 *      t_f), so trying those X is exhaustive; an X is skipped when a valid
 *      lower bound on its objective (each stage at most the layers its
 *      chunks hold at the fastest choice, and at most what it holds without
 *      any chunk bound) is no better than the best so far.
 *   2. the least recomputation with J <= J* (1 + tie_rel): for every X that
 *      can reach it, a DP over (stage, layers so far) under T <= (J* (1 +
 *      tie_rel) - wc X) / wt;
 *   3. the least peak memory keeping both: per X, bisection over the peak
 *      P (to half a byte) on that DP with every stage under P.
 * A work limit (table cells) sends very large problems to GLPK instead; it
 * counts cells, not seconds, so the answer does not depend on the
 * machine's load. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "px_partition.h"
#include "px_partition_internal.h"

/* Table cells one problem may fill before it goes to GLPK instead. */
#define CHUNKS_MAX_WORK 40000000.0

typedef struct {
    const px_partition_problem *pb;
    int p, v, L, nmax;        /* nmax: most layers one stage can hold */
    int rf, rm, rs;           /* choices: fastest, middle (-1: none), leanest (-1: none) */
    double t, dm, ds;         /* fastest time; extra time of middle and leanest */
    int64_t w, af, am, as;    /* static bytes; activation bytes per choice */
    double wt, wc;            /* objective weights */
    int16_t *tab;             /* [((s v + k) (nmax+1) + N) (nmax+1) + S]: Jmax after chunk k, -1 none */
    double work;
} chq;

#define CELL(q, s, k, n, sl) \
    ((q)->tab[((((size_t)(s) * (q)->v + (k)) * ((q)->nmax + 1) + (n)) * ((q)->nmax + 1)) + (sl)])

/* One chunk with cap (seconds for its layers): most middle layers with n
 * layers of which sl leanest, or -1. */
static int chunk_jmax(const chq *q, double cap, int n, int sl)
{
    double left = cap * (1.0 + 1e-12) + 1e-15 - n * q->t - sl * q->ds;
    if (left < 0.0)
        return -1;
    if (q->rm < 0)
        return 0;
    double j = floor(left / q->dm);
    return j < n - sl ? (int)j : n - sl;
}

/* Stage s's tables for chunk bound x (INFINITY: no bound), states whose
 * fastest time already passes t_cap left out.  False past the work limit. */
static bool build_stage(chq *q, int s, double x, double t_cap)
{
    int M = q->nmax, v = q->v;
    double room = t_cap * (1.0 + 1e-12) - px_part_stage_fixed_time(q->pb, s);
    if (isinf(x)) { /* no chunk bound: any counts with a layer per chunk */
        for (int k = 0; k < v; k++)
            for (int n = 0; n <= M; n++)
                for (int sl = 0; sl <= M; sl++)
                    CELL(q, s, k, n, sl) =
                        (int16_t)(n > k && sl <= n && (q->rs >= 0 || sl == 0)
                                      ? (q->rm >= 0 ? n - sl : 0)
                                      : -1);
        q->work += (double)v * (M + 1) * (M + 1);
        return q->work <= CHUNKS_MAX_WORK;
    }
    for (int k = 0; k < v; k++) {
        double cap = x - px_part_chunk_fixed_time(q->pb, s + k * q->p);
        int most = isinf(cap) ? M : (int)fmin(M, floor(cap * (1.0 + 1e-12) / q->t));
        for (int n = 0; n <= M; n++)
            for (int sl = 0; sl <= M; sl++)
                CELL(q, s, k, n, sl) = -1;
        if (most < 1)
            return true; /* no layer fits this chunk: nothing fits */
        for (int n = k + 1; n <= M; n++)
            for (int sl = 0; sl <= n; sl++) {
                if (n * q->t + sl * q->ds > room || (q->rs < 0 && sl > 0))
                    break;
                int best = -1;
                q->work += k ? most * (most + 1) / 2 : 1;
                if (k == 0) {
                    best = n <= most ? chunk_jmax(q, cap, n, sl) : -1;
                } else {
                    for (int a = 1; a <= most && a <= n - k; a++)
                        for (int b = 0; b <= a && b <= sl; b++) {
                            int prev = CELL(q, s, k - 1, n - a, sl - b);
                            if (prev < 0 || prev + a - b <= best)
                                continue;
                            int j = chunk_jmax(q, cap, a, b);
                            if (j >= 0 && prev + j > best)
                                best = prev + j;
                        }
                }
                CELL(q, s, k, n, sl) = (int16_t)best;
            }
        if (q->work > CHUNKS_MAX_WORK)
            return false;
    }
    return true;
}

static bool build_tables(chq *q, double x, double t_cap)
{
    for (int s = 0; s < q->p; s++)
        if (!build_stage(q, s, x, t_cap))
            return false;
    return true;
}

/* Fewest middle layers (<= jmax) with which n layers, sl leanest, fit
 * under cap on stage s, or -1 (px_part_fewest_mid). */
static int fewest_mid(const chq *q, int s, int n, int sl, int jmax, double cap)
{
    int64_t act0 = (int64_t)(n - sl) * q->af + (int64_t)sl * q->as;
    int64_t step = (q->rm >= 0 ? q->am : 0) - q->af;
    return px_part_fewest_mid(q->pb, s, (int64_t)n * q->w, act0, step, jmax, cap);
}

/* Least recomputation for n layers on stage s (tables built) under the
 * memory cap and the stage-time cap; *j_out, *s_out its counts; INFINITY
 * when none fits. */
static double stage_rc(const chq *q, int s, int n, double cap, double t_cap, int *j_out,
                       int *s_out)
{
    double best = INFINITY, fixed = px_part_stage_fixed_time(q->pb, s);
    for (int sl = 0; sl <= n; sl++) {
        int jmax = CELL(q, s, q->v - 1, n, sl);
        if (jmax < 0)
            continue;
        int j = fewest_mid(q, s, n, sl, jmax, cap);
        if (j < 0)
            continue;
        double rc = sl * q->ds + (q->rm >= 0 ? j * q->dm : 0.0);
        if (fixed + n * q->t + rc <= t_cap * (1.0 + 1e-12) && rc < best) {
            best = rc;
            *j_out = j;
            *s_out = sl;
        }
    }
    return best;
}

/* Least total recomputation with every stage under the caps (layer counts
 * per stage in n_out, may be NULL); INFINITY when nothing fits.  g, d:
 * scratch of p (nmax + 1) and p (L + 1) doubles, arg p (L + 1) ints. */
static double least_rc(const chq *q, double cap, double t_cap, double *g, double *d, int *arg,
                       int *n_out)
{
    int L = q->L, M = q->nmax, j, sl;
    for (int s = 0; s < q->p; s++)
        for (int n = 0; n <= M; n++)
            g[s * (M + 1) + n] = n >= q->v ? stage_rc(q, s, n, cap, t_cap, &j, &sl) : INFINITY;
    int lo[PX_PARTITION_MAX_STAGES], hi[PX_PARTITION_MAX_STAGES];
    for (int s = 0; s < q->p; s++) {
        lo[s] = q->v; /* a layer per chunk */
        hi[s] = M;
    }
    return px_part_sum_dp(q->p, L, g, M + 1, lo, hi, d, arg, n_out);
}

static int dcmp(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Layers stage s holds with time <= t (g: its least time per count, a
 * prefix from v up), 0 when not even v. */
static int hold_under(const chq *q, const double *g, int s, double t)
{
    int n = q->v - 1;
    while (n < q->nmax && g[s * (q->nmax + 1) + n + 1] <= t)
        n++;
    return n >= q->v ? n : 0;
}

/* Least T at which the stages (least time per count in g; each at most
 * lim[s] layers, NULL: no limit) hold L layers; INFINITY if none.  vals:
 * scratch of p (nmax + 1). */
static double least_t(const chq *q, const double *g, const int *lim, double *vals)
{
    int nv = 0, M = q->nmax;
    for (int i = 0; i < q->p * (M + 1); i++)
        if (g[i] < INFINITY)
            vals[nv++] = g[i];
    qsort(vals, (size_t)nv, sizeof *vals, dcmp);
    int lo = 0, hi = nv;
    while (lo < hi) {
        int mid = (lo + hi) / 2, total = 0;
        bool ok = true;
        for (int s = 0; s < q->p && ok; s++) {
            int h = hold_under(q, g, s, vals[mid]);
            if (lim && lim[s] < h)
                h = lim[s];
            ok = h >= q->v;
            total += h;
        }
        if (ok && total >= q->L)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo < nv ? vals[lo] : INFINITY;
}

/* Least time per layer count of every stage (tables built), under the
 * memory limit and t_cap (INFINITY beyond). */
static void stage_times(const chq *q, double t_cap, double *g)
{
    int j, sl;
    for (int s = 0; s < q->p; s++) {
        double fixed = px_part_stage_fixed_time(q->pb, s);
        for (int n = 0; n <= q->nmax; n++) {
            double rc = n >= q->v ? stage_rc(q, s, n, INFINITY, t_cap, &j, &sl) : INFINITY;
            g[s * (q->nmax + 1) + n] = fixed + n * q->t + rc;
        }
    }
}

/* Chunk bounds worth trying, with a lower bound on each one's objective;
 * sorted by that bound. */
typedef struct {
    double x, lb;
} xcand;

static int xcmp(const void *x, const void *y)
{
    const xcand *a = x, *b = y;
    if (a->lb != b->lb)
        return a->lb < b->lb ? -1 : 1;
    return a->x < b->x ? -1 : a->x > b->x;
}

/* Lower bound on the objective with chunk bound x: each stage holds at most
 * what its chunks take at the fastest choice and at most what it holds
 * without a chunk bound (ginf) under T. */
static double x_lower_bound(const chq *q, double x, const double *ginf, double *vals)
{
    int lim[PX_PARTITION_MAX_STAGES];
    for (int s = 0; s < q->p; s++) {
        lim[s] = 0;
        for (int k = 0; k < q->v; k++) {
            double cap = x - px_part_chunk_fixed_time(q->pb, s + k * q->p);
            int n = (int)floor(cap * (1.0 + 1e-12) / q->t);
            if (n < 1)
                return INFINITY;
            lim[s] += n;
        }
    }
    double t = least_t(q, ginf, lim, vals);
    return q->wt * t + q->wc * x;
}

/* Every chunk time value F(c) + n t + j dm + s ds in [x_lo, x_hi], with its
 * bound; NULL past max (then GLPK decides). */
static xcand *x_candidates(const chq *q, double x_lo, double x_hi, const double *ginf,
                           double *vals, int *n_out)
{
    int cap = 4096, n = 0, max = 20000;
    xcand *xs = malloc((size_t)cap * sizeof *xs);
    double fs[3] = {0.0, px_part_chunk_fixed_time(q->pb, 0),
                    px_part_chunk_fixed_time(q->pb, q->p * q->v - 1)};
    for (int f = 0; f < 3 && xs; f++) {
        if ((f == 1 && fs[1] == fs[0]) || (f == 2 && (fs[2] == fs[0] || fs[2] == fs[1])))
            continue;
        for (int c = 1; c <= q->nmax && fs[f] + c * q->t <= x_hi; c++)
            for (int sl = 0; sl <= (q->rs >= 0 ? c : 0); sl++)
                for (int j = 0; j <= (q->rm >= 0 ? c - sl : 0); j++) {
                    double x = fs[f] + c * q->t + sl * q->ds + (q->rm >= 0 ? j * q->dm : 0.0);
                    if (x > x_hi)
                        break;
                    if (x < x_lo)
                        continue;
                    double lb = x_lower_bound(q, x, ginf, vals);
                    if (lb == INFINITY)
                        continue;
                    if (n == max) {
                        free(xs);
                        return NULL;
                    }
                    if (n == cap) {
                        xcand *grown = realloc(xs, (size_t)(cap *= 2) * sizeof *xs);
                        if (!grown) {
                            free(xs);
                            return NULL;
                        }
                        xs = grown;
                    }
                    xs[n++] = (xcand){x, lb};
                }
    }
    if (xs)
        qsort(xs, (size_t)n, sizeof *xs, xcmp);
    *n_out = n;
    return xs;
}

/* Stage s's n layers (tables built for x) dealt to its chunks: counts per
 * chunk in per[c][3] (layers, middle, leanest).  False when they cannot be. */
static bool deal_stage(const chq *q, int s, int n, double x, double cap, double t_cap,
                       int (*per)[3])
{
    int jn, sn;
    if (stage_rc(q, s, n, cap, t_cap, &jn, &sn) == INFINITY)
        return false;
    for (int k = q->v - 1; k >= 0; k--) {
        int c = s + k * q->p;
        double ccap = x - px_part_chunk_fixed_time(q->pb, c);
        int a = n, b = sn, j = jn;
        if (k > 0) {
            bool found = false;
            for (a = 1; a <= n - k && !found; a++)
                for (b = 0; b <= a && b <= sn && !found; b++) {
                    int prev = CELL(q, s, k - 1, n - a, sn - b), jc = chunk_jmax(q, ccap, a, b);
                    found = prev >= 0 && jc >= 0 && prev + jc >= jn;
                    if (found)
                        j = jn - prev > 0 ? jn - prev : 0;
                }
            if (!found)
                return false;
            a--, b--;
        } else if (chunk_jmax(q, ccap, a, b) < j || a < 1) {
            return false;
        }
        per[c][0] = a;
        per[c][1] = j;
        per[c][2] = b;
        n -= a;
        sn -= b;
        jn -= j;
    }
    return true;
}

/* The split of per-stage counts n (tables built for x, t_cap), every stage
 * under cap; evaluated.  Inside a chunk the leanest layers come first. */
static bool make_split(const chq *q, const int *n, double x, double cap, double t_cap,
                       px_partition_solution *sol)
{
    int (*per)[3] = malloc((size_t)q->p * q->v * sizeof *per);
    bool ok = per != NULL;
    for (int s = 0; s < q->p && ok; s++)
        ok = deal_stage(q, s, n[s], x, cap, t_cap, per);
    if (ok) {
        int i = 0;
        sol->n_chunks = q->p * q->v;
        for (int c = 0; c < sol->n_chunks; c++) {
            sol->layers_per_chunk[c] = per[c][0];
            int fast = per[c][0] - per[c][1] - per[c][2];
            for (int k = 0; k < per[c][2]; k++)
                sol->layer_recompute[i++] = (unsigned char)q->rs;
            for (int k = 0; k < per[c][1]; k++)
                sol->layer_recompute[i++] = (unsigned char)q->rm;
            for (int k = 0; k < fast; k++)
                sol->layer_recompute[i++] = (unsigned char)q->rf;
        }
        ok = i == q->L && px_partition_evaluate(q->pb, sol, NULL) == PX_OK && sol->fits;
    }
    free(per);
    return ok;
}

/* The problem's constants, or false when the pass does not apply: v > 1,
 * identical layers, choices strictly ordered (faster uses more memory). */
static bool setup(chq *q, const px_partition_problem *pb)
{
    int L = pb->n_layers, ch[R_COUNT], k = 0;
    if (pb->vpp < 2 || pb->pp * pb->vpp > L)
        return false;
    for (int i = 1; i < L; i++)
        if (!px_part_identical_layers(pb, 0, i))
            return false;
    for (int r = 0; r < R_COUNT; r++)
        if (px_part_allowed(pb, r) && !px_part_dominated(pb, 0, r))
            ch[k++] = r;
    for (int a = 1; a < k; a++) /* fastest first */
        for (int b = a; b > 0 && pb->layer_time_s[0][ch[b]] < pb->layer_time_s[0][ch[b - 1]]; b--) {
            int tmp = ch[b];
            ch[b] = ch[b - 1];
            ch[b - 1] = tmp;
        }
    *q = (chq){.pb = pb, .p = pb->pp, .v = pb->vpp, .L = L, .rm = -1, .rs = -1};
    q->nmax = L - (q->p - 1) * q->v;
    if (k < 1 || q->nmax > 2000)
        return false;
    q->rf = ch[0];
    if (k >= 2)
        q->rs = ch[k - 1];
    if (k == 3)
        q->rm = ch[1];
    q->t = pb->layer_time_s[0][q->rf];
    q->w = pb->layer_static_bytes[0];
    q->af = pb->layer_act_bytes[0][q->rf];
    if (q->rs >= 0) {
        q->ds = pb->layer_time_s[0][q->rs] - q->t;
        q->as = pb->layer_act_bytes[0][q->rs];
    }
    if (q->rm >= 0) {
        q->dm = pb->layer_time_s[0][q->rm] - q->t;
        q->am = pb->layer_act_bytes[0][q->rm];
    }
    if (!(q->t > 0.0) || (q->rs >= 0 && !(q->ds > 0.0)) ||
        (q->rm >= 0 && !(q->dm > 0.0 && q->dm < q->ds)))
        return false;
    px_part_objective_weights(pb, &q->wt, &q->wc);
    return (double)q->p * q->v * (q->nmax + 1) * (q->nmax + 1) <= 2e7;
}

typedef struct {
    double *g, *ginf, *d, *vals;
    int *arg;
    xcand *xs;
    int n_x;
} scratch;

/* Pass 1: the least objective over the chunk bounds; *x1, *t1 where it is
 * met.  incumbent: a split's objective known to be reachable (or INFINITY). */
static double pass_time(chq *q, scratch *w, double incumbent, double *x1, double *t1)
{
    double best = INFINITY;
    if (q->wc == 0.0) { /* the chunks do not count: no bound */
        *x1 = INFINITY;
        *t1 = least_t(q, w->ginf, NULL, w->vals);
        return *t1 < INFINITY ? q->wt * *t1 : INFINITY;
    }
    for (int i = 0; i < w->n_x; i++) {
        double cut = fmin(best, incumbent) * (1.0 + 1e-9);
        double x = w->xs[i].x;
        if (w->xs[i].lb > cut)
            break;
        if (!build_tables(q, x, (cut - q->wc * x) / q->wt))
            return NAN;
        stage_times(q, (cut - q->wc * x) / q->wt, w->g);
        double t = least_t(q, w->g, NULL, w->vals);
        double j = q->wt * t + q->wc * x;
        if (j < best * (1.0 - 1e-12)) {
            best = j;
            *x1 = x;
            *t1 = t;
        }
    }
    return best;
}

/* The cap on a stage's time that the objective cap j_cap leaves at chunk
 * bound x. */
static double time_cap(const chq *q, double x, double j_cap)
{
    return (j_cap - q->wc * (isinf(x) ? 0.0 : x)) / q->wt;
}

/* The i-th chunk bound passes 2 and 3 try (a single unbounded one when the
 * objective does not weigh chunk time), its time cap and the tables built
 * for them: 1; 0 past the last bound whose lower bound is within j_cap; -1
 * when the tables cannot be built. */
static int try_bound(chq *q, const scratch *w, int i, double j_cap, double *xi, double *t_cap)
{
    if (i >= (q->wc == 0.0 ? 1 : w->n_x) || (q->wc != 0.0 && w->xs[i].lb > j_cap * (1.0 + 1e-9)))
        return 0;
    *xi = q->wc == 0.0 ? INFINITY : w->xs[i].x;
    *t_cap = time_cap(q, *xi, j_cap);
    return build_tables(q, *xi, *t_cap) ? 1 : -1;
}

/* Pass 2 (peak = INFINITY) or 3: the least recomputation (pass 2) or peak
 * memory (pass 3, recomputation <= r_cap) over the chunk bounds with
 * objective <= j_cap; counts per stage in n, the bound in *x. */
static double pass_rc(chq *q, scratch *w, double j_cap, double *x, int *n)
{
    double best = INFINITY;
    double xi, t_cap;
    for (int i = 0, k; (k = try_bound(q, w, i, j_cap, &xi, &t_cap)) != 0; i++) {
        if (k < 0)
            return NAN;
        int cnt[PX_PARTITION_MAX_STAGES];
        double r = least_rc(q, INFINITY, t_cap, w->g, w->d, w->arg, cnt);
        if (r < best) {
            best = r;
            *x = xi;
            memcpy(n, cnt, (size_t)q->p * sizeof *n);
        }
    }
    return best;
}

static double pass_peak(chq *q, scratch *w, double j_cap, double r_cap, double hi0, double *x,
                        int *n)
{
    double best = hi0;
    bool found = false;
    double xi, t_cap;
    for (int i = 0, k; (k = try_bound(q, w, i, j_cap, &xi, &t_cap)) != 0; i++) {
        if (k < 0)
            return NAN;
        double lo = 0.0, hi = best;
        if (least_rc(q, hi, t_cap, w->g, w->d, w->arg, NULL) > r_cap)
            continue;
        for (int it = 0; it < 200 && hi - lo > 0.5; it++) {
            double mid = 0.5 * (lo + hi);
            if (least_rc(q, mid, t_cap, w->g, w->d, w->arg, NULL) <= r_cap)
                hi = mid;
            else
                lo = mid;
        }
        if (hi < best || !found) {
            found = true;
            best = hi;
            *x = xi;
            least_rc(q, hi, t_cap, w->g, w->d, w->arg, n);
        }
    }
    return found ? best : INFINITY;
}

/* The split of counts n at chunk bound x under the objective cap j_cap and
 * memory cap (tables rebuilt for them). */
static bool split_at(chq *q, const int *n, double x, double j_cap, double cap,
                     px_partition_solution *sol)
{
    double t_cap = time_cap(q, x, j_cap);
    return build_tables(q, x, t_cap) && make_split(q, n, x, cap, t_cap, sol) &&
           sol->objective_s <= j_cap * (1.0 + 1e-9);
}

/* Passes 1-3 on the prepared problem; cand and lean are scratch, the answer
 * in cand. */
static bool solve_passes(chq *q, scratch *w, const px_partition_opts *o, double incumbent,
                         px_partition_solution *cand, px_partition_solution *lean)
{
    double x1 = INFINITY, t1 = INFINITY, x2 = INFINITY, x3 = INFINITY;
    int n2[PX_PARTITION_MAX_STAGES], n3[PX_PARTITION_MAX_STAGES];
    double j1 = pass_time(q, w, incumbent, &x1, &t1);
    if (!(j1 < INFINITY))
        return false;
    /* pass 2, or without it any split at J*: the least recomputation there */
    double j_cap = j1 * (1.0 + (o->minimise_recompute ? o->tie_rel : 0.0) + 1e-12);
    double r2 = pass_rc(q, w, j_cap, &x2, n2);
    if (!(r2 < INFINITY) || !split_at(q, n2, x2, j_cap, INFINITY, cand))
        return false;
    if (!px_part_wants_peak_pass(q->pb, o))
        return true;
    double r_cap = cand->recompute_time_s + o->tie_rel * t1;
    double peak0 = (double)cand->stage_mem_bytes[cand->fullest_stage];
    double peak = pass_peak(q, w, j_cap, r_cap, peak0, &x3, n3);
    if (isnan(peak))
        return false;
    *lean = *cand;
    if (peak < peak0 && split_at(q, n3, x3, j_cap, peak, lean) &&
        lean->recompute_time_s <= r_cap + 1e-9 * t1 &&
        lean->stage_mem_bytes[lean->fullest_stage] < cand->stage_mem_bytes[cand->fullest_stage])
        *cand = *lean;
    return true;
}

/* No split fits: the one whose fullest stage overflows least.  Every layer
 * at the leanest choice (least memory for any count), a minimax DP over
 * (stage, layers so far) for the counts, dealt evenly over each stage's
 * chunks (memory does not depend on how).  d, arg: p (L + 1) scratch. */
static bool least_overflow(const chq *q, double *d, int *arg, px_partition_solution *sol)
{
    int L = q->L, r = q->rs >= 0 ? q->rs : q->rf;
    int64_t act = q->rs >= 0 ? q->as : q->af;
    for (int s = 0; s < q->p; s++)
        for (int b = 0; b <= L; b++) {
            double bv = INFINITY;
            int ba = -1;
            for (int n = q->v; n <= b && n <= q->nmax; n++) {
                double prev = s ? d[(s - 1) * (L + 1) + b - n] : (b == n ? -INFINITY : INFINITY);
                double val = fmax(prev, px_part_stage_mem(q->pb, s, (int64_t)n * q->w,
                                                          (int64_t)n * act));
                if (prev < INFINITY && val < bv) {
                    bv = val;
                    ba = n;
                }
            }
            d[s * (L + 1) + b] = bv;
            arg[s * (L + 1) + b] = ba;
        }
    if (d[(q->p - 1) * (L + 1) + L] == INFINITY)
        return false;
    sol->n_chunks = q->p * q->v;
    for (int s = q->p - 1, b = L; s >= 0; s--) {
        int n = arg[s * (L + 1) + b];
        for (int k = 0; k < q->v; k++)
            sol->layers_per_chunk[s + k * q->p] = n / q->v + (k < n % q->v);
        b -= n;
    }
    memset(sol->layer_recompute, r, (size_t)L);
    return px_partition_evaluate(q->pb, sol, NULL) == PX_OK;
}

bool px_part_solve_chunks_exact(const px_partition_problem *pb, const px_partition_opts *o,
                                const px_partition_solution *start, px_partition_solution *sol,
                                bool *none_fits)
{
    chq q;
    *none_fits = false;
    if (!o->exact_dp || !setup(&q, pb))
        return false;
    size_t M1 = (size_t)q.nmax + 1, L1 = (size_t)q.L + 1, P = (size_t)q.p;
    scratch w = {0};
    q.tab = malloc(P * (size_t)q.v * M1 * M1 * sizeof *q.tab);
    w.g = malloc(P * M1 * sizeof *w.g);
    w.ginf = malloc(P * M1 * sizeof *w.ginf);
    w.vals = malloc(P * M1 * sizeof *w.vals);
    w.d = malloc(P * L1 * sizeof *w.d);
    w.arg = malloc(P * L1 * sizeof *w.arg);
    px_partition_solution *cand = malloc(sizeof *cand), *lean = malloc(sizeof *lean);
    bool ok = false;
    if (!q.tab || !w.g || !w.ginf || !w.vals || !w.d || !w.arg || !cand || !lean ||
        !build_tables(&q, INFINITY, INFINITY))
        goto out;
    stage_times(&q, INFINITY, w.ginf);
    double tinf = least_t(&q, w.ginf, NULL, w.vals); /* no chunk bound: a bound on T */
    if (tinf == INFINITY) { /* nothing fits, for any chunk bound */
        *cand = *sol;
        px_part_clear_solver_fields(cand);
        if (least_overflow(&q, w.d, w.arg, cand)) {
            cand->proven_optimal = true;
            cand->exact_dp = true;
            *sol = *cand;
            *none_fits = true;
        }
        goto out;
    }
    double inc = start && start->fits ? start->objective_s : INFINITY;
    if (q.wc != 0.0) {
        /* the slowest chunk holds at least a v-th of the slowest stage */
        double x_lo = tinf / q.v * (1.0 - 1e-9);
        double x_hi = inc < INFINITY ? (inc * (1.0 + 1e-9) - q.wt * tinf) / q.wc
                                     : pb->embed_time_s + pb->head_time_s +
                                           q.nmax * (q.t + fmax(q.ds, 0.0));
        w.xs = x_candidates(&q, x_lo, x_hi, w.ginf, w.vals, &w.n_x);
        if (!w.xs)
            goto out;
    }
    *cand = *sol;
    px_part_clear_solver_fields(cand);
    if (!solve_passes(&q, &w, o, inc, cand, lean))
        goto out;
    cand->proven_optimal = true;
    cand->gap = 0.0;
    cand->exact_dp = true;
    *sol = *cand;
    ok = true;
out:
    free(q.tab);
    free(w.g);
    free(w.ginf);
    free(w.vals);
    free(w.d);
    free(w.arg);
    free(w.xs);
    free(cand);
    free(lean);
    return ok;
}
