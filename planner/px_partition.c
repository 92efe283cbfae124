/* px_partition.c — stage partitioning and per-layer recomputation as a MILP,
 * plus the exhaustive reference used to test it.  Formulation and scaling:
 * docs/partition.md. */
#include "px_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_milp.h"

#define R_COUNT PX_RECOMPUTE_COUNT
#define ALL_RECOMPUTE ((1u << R_COUNT) - 1u)

/* A stage fits when its memory is within limit x (1 + MEM_TOL_REL).  GLPK
 * satisfies rows to about 1e-7 of the limit (px_milp rejects anything off by
 * more than 1e-6), so a split it returns must not be refused over a few
 * hundred bytes in 80 GB, which no memory model resolves anyway; the brute
 * force applies the same rule. */
#define MEM_TOL_REL 1e-6

static bool mem_fits(const px_partition_problem *pb, double mem)
{
    return mem <= (double)pb->mem_limit_bytes * (1.0 + MEM_TOL_REL);
}

/* Above this many binaries the program is not worth handing to GLPK inside a
 * planner loop; the caller keeps the uniform split. */
#define MAX_BINARIES 200000

void px_partition_problem_init(px_partition_problem *pb)
{
    memset(pb, 0, sizeof *pb);
    pb->n_layers = 1;
    pb->pp = 1;
    pb->vpp = 1;
    pb->allowed_recompute = ALL_RECOMPUTE;
    for (int s = 0; s < PX_PARTITION_MAX_STAGES; s++)
        pb->in_flight[s] = 1.0;
}

void px_partition_opts_init(px_partition_opts *o)
{
    o->time_limit_s = PX_PARTITION_DEFAULT_TIME_LIMIT_S;
    o->mip_gap = PX_MILP_DEFAULT_GAP;
    o->minimise_recompute = true;
    o->tie_rel = 1e-6;
    o->presolve = true;
}

static bool allowed(const px_partition_problem *pb, int r)
{
    return (pb->allowed_recompute >> r) & 1u;
}

px_status px_partition_validate(const px_partition_problem *pb, px_error *err)
{
    if (pb->n_layers < 1 || pb->n_layers > PX_MAX_LAYERS)
        return PX_FAIL(err, PX_ERR_INVALID, "partition: n_layers = %d; allowed 1..%d",
                       pb->n_layers, PX_MAX_LAYERS);
    if (pb->pp < 1 || pb->vpp < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "partition: pp = %d, vpp = %d; both must be >= 1",
                       pb->pp, pb->vpp);
    if ((int64_t)pb->pp * pb->vpp > PX_MAX_CHUNKS)
        return PX_FAIL(err, PX_ERR_INVALID, "partition: pp x vpp = %lld chunks; at most %d",
                       (long long)pb->pp * pb->vpp, PX_MAX_CHUNKS);
    if (pb->pp * pb->vpp > pb->n_layers)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition: pp x vpp = %d chunks for %d layers; every chunk needs at "
                       "least one layer (allowed pp x vpp <= n_layers)",
                       pb->pp * pb->vpp, pb->n_layers);
    if (pb->allowed_recompute == 0 || (pb->allowed_recompute & ~ALL_RECOMPUTE))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition: allowed_recompute = 0x%x; allowed: a non-empty set of bits "
                       "1 (none), 2 (selective), 4 (full)",
                       pb->allowed_recompute);
    for (int i = 0; i < pb->n_layers; i++) {
        if (pb->layer_static_bytes[i] < 0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "partition: layer_static_bytes[%d] = %lld; must be >= 0", i,
                           (long long)pb->layer_static_bytes[i]);
        for (int r = 0; r < R_COUNT; r++) {
            if (!allowed(pb, r))
                continue;
            double t = pb->layer_time_s[i][r];
            if (!isfinite(t) || t < 0.0)
                return PX_FAIL(err, PX_ERR_INVALID,
                               "partition: layer_time_s[%d][%s] = %g; must be finite and >= 0",
                               i, px_recompute_name((px_recompute)r), t);
            if (pb->layer_act_bytes[i][r] < 0)
                return PX_FAIL(err, PX_ERR_INVALID,
                               "partition: layer_act_bytes[%d][%s] = %lld; must be >= 0", i,
                               px_recompute_name((px_recompute)r),
                               (long long)pb->layer_act_bytes[i][r]);
        }
    }
    const double times[2] = {pb->embed_time_s, pb->head_time_s};
    const char *tnames[2] = {"embed_time_s", "head_time_s"};
    for (int k = 0; k < 2; k++)
        if (!isfinite(times[k]) || times[k] < 0.0)
            return PX_FAIL(err, PX_ERR_INVALID, "partition: %s = %g; must be finite and >= 0",
                           tnames[k], times[k]);
    const int64_t bytes[5] = {pb->embed_static_bytes, pb->head_static_bytes, pb->embed_act_bytes,
                              pb->head_act_bytes, pb->stage_base_bytes};
    const char *bnames[5] = {"embed_static_bytes", "head_static_bytes", "embed_act_bytes",
                             "head_act_bytes", "stage_base_bytes"};
    for (int k = 0; k < 5; k++)
        if (bytes[k] < 0)
            return PX_FAIL(err, PX_ERR_INVALID, "partition: %s = %lld; must be >= 0", bnames[k],
                           (long long)bytes[k]);
    for (int s = 0; s < pb->pp; s++)
        if (!isfinite(pb->in_flight[s]) || pb->in_flight[s] < 0.0)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "partition: in_flight[%d] = %g; must be finite and >= 0", s,
                           pb->in_flight[s]);
    if (pb->mem_limit_bytes <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition: mem_limit_bytes = %lld; must be > 0 (HBM minus reserve)",
                       (long long)pb->mem_limit_bytes);
    return PX_OK;
}

double px_partition_in_flight(px_schedule sched, int pp, int vpp, int64_t n_micro, int stage)
{
    if (pp < 1 || vpp < 1 || n_micro < 1 || stage < 0 || stage >= pp)
        return -1.0;
    double m = (double)n_micro;
    double held;
    switch (sched) {
    case PX_SCHED_GPIPE:
        return m;
    case PX_SCHED_1F1B:
    case PX_SCHED_ZB_H1:
        held = (double)(pp - stage);
        return held < m ? held : m;
    case PX_SCHED_ZB_H2:
        held = 2.0 * (pp - stage) - 1.0;
        return held < m ? held : m;
    case PX_SCHED_INTERLEAVED: {
        /* chunk passes in flight: warm-up 2(p-s-1) + (v-1)p, plus one */
        double passes = 2.0 * (pp - stage - 1) + (double)(vpp - 1) * pp + 1.0;
        double cap = m * vpp;
        return (passes < cap ? passes : cap) / vpp;
    }
    default:
        return -1.0;
    }
}

/* Memory of stage s from the integer sums of its layers' static and
 * activation bytes.  Every evaluator goes through here, so the brute force,
 * the MILP's decoded answer and px_partition_evaluate agree to the bit. */
static double stage_mem(const px_partition_problem *pb, int s, int64_t static_sum,
                        int64_t act_sum)
{
    int64_t st = pb->stage_base_bytes + static_sum, act = act_sum;
    if (s == 0) {
        st += pb->embed_static_bytes;
        act += pb->embed_act_bytes;
    }
    if (s == pb->pp - 1) {
        st += pb->head_static_bytes;
        act += pb->head_act_bytes;
    }
    return (double)st + pb->in_flight[s] * (double)act;
}

static double stage_fixed_time(const px_partition_problem *pb, int s)
{
    double t = 0.0;
    if (s == 0)
        t += pb->embed_time_s;
    if (s == pb->pp - 1)
        t += pb->head_time_s;
    return t;
}

static double fastest_time(const px_partition_problem *pb, int i)
{
    double best = INFINITY;
    for (int r = 0; r < R_COUNT; r++)
        if (allowed(pb, r) && pb->layer_time_s[i][r] < best)
            best = pb->layer_time_s[i][r];
    return best;
}

px_status px_partition_evaluate(const px_partition_problem *pb, px_partition_solution *sol,
                                px_error *err)
{
    int C = pb->pp * pb->vpp;
    if (sol->n_chunks != C)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition split: %d chunks; must be pp x vpp = %d", sol->n_chunks, C);
    int total = 0;
    for (int c = 0; c < C; c++) {
        if (sol->layers_per_chunk[c] < 1)
            return PX_FAIL(err, PX_ERR_INVALID,
                           "partition split: chunk %d has %d layers; every chunk needs >= 1", c,
                           sol->layers_per_chunk[c]);
        total += sol->layers_per_chunk[c];
    }
    if (total != pb->n_layers)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition split: chunks hold %d layers; the model has %d", total,
                       pb->n_layers);
    int64_t st_sum[PX_PARTITION_MAX_STAGES] = {0}, act_sum[PX_PARTITION_MAX_STAGES] = {0};
    sol->pp = pb->pp;
    for (int s = 0; s < pb->pp; s++) {
        sol->stage_time_s[s] = 0.0;
        sol->stage_layers[s] = 0;
    }
    sol->recompute_time_s = 0.0;
    int i = 0;
    for (int c = 0; c < C; c++) {
        int s = c % pb->pp;
        for (int k = 0; k < sol->layers_per_chunk[c]; k++, i++) {
            int r = sol->layer_recompute[i];
            if (r >= R_COUNT || !allowed(pb, r))
                return PX_FAIL(err, PX_ERR_INVALID,
                               "partition split: layer %d recompute %d is not allowed "
                               "(allowed_recompute = 0x%x)",
                               i, r, pb->allowed_recompute);
            sol->stage_time_s[s] += pb->layer_time_s[i][r];
            st_sum[s] += pb->layer_static_bytes[i];
            act_sum[s] += pb->layer_act_bytes[i][r];
            sol->stage_layers[s]++;
            sol->recompute_time_s += pb->layer_time_s[i][r] - fastest_time(pb, i);
        }
    }
    sol->max_stage_time_s = -1.0;
    sol->fits = true;
    double worst_over = -INFINITY;
    for (int s = 0; s < pb->pp; s++) {
        sol->stage_time_s[s] += stage_fixed_time(pb, s);
        double mem = stage_mem(pb, s, st_sum[s], act_sum[s]);
        sol->stage_mem_bytes[s] = (int64_t)ceil(mem);
        if (sol->stage_time_s[s] > sol->max_stage_time_s) {
            sol->max_stage_time_s = sol->stage_time_s[s];
            sol->slowest_stage = s;
        }
        double over = mem - (double)pb->mem_limit_bytes;
        if (over > worst_over) {
            worst_over = over;
            sol->fullest_stage = s;
        }
        if (!mem_fits(pb, mem))
            sol->fits = false;
    }
    sol->max_over_bytes = (int64_t)ceil(worst_over);
    return PX_OK;
}

static void clear_solver_fields(px_partition_solution *sol)
{
    sol->proven_optimal = false;
    sol->time_limit_hit = false;
    sol->gap = -1.0;
    sol->solve_s = 0.0;
    sol->note[0] = '\0';
}

px_status px_partition_uniform(const px_partition_problem *pb, px_recompute rc,
                               px_partition_solution *sol, px_error *err)
{
    px_status st = px_partition_validate(pb, err);
    if (st)
        return st;
    if ((int)rc < 0 || rc >= PX_RECOMPUTE_COUNT || !allowed(pb, (int)rc))
        return PX_FAIL(err, PX_ERR_INVALID, "uniform split: recompute %d is not allowed",
                       (int)rc);
    int C = pb->pp * pb->vpp;
    int base = pb->n_layers / C, rem = pb->n_layers % C;
    int first = (C - rem) / 2; /* the extra layers go to the middle chunks */
    sol->n_chunks = C;
    for (int c = 0; c < C; c++)
        sol->layers_per_chunk[c] = base + (c >= first && c < first + rem ? 1 : 0);
    for (int i = 0; i < pb->n_layers; i++)
        sol->layer_recompute[i] = (unsigned char)rc;
    clear_solver_fields(sol);
    return px_partition_evaluate(pb, sol, err);
}

void px_partition_format_split(const px_partition_solution *sol, char *buf, int buf_len)
{
    if (buf_len <= 0)
        return;
    buf[0] = '\0';
    int len = 0;
    for (int c = 0; c < sol->n_chunks && len < buf_len - 1; c++)
        len += snprintf(buf + len, (size_t)(buf_len - len), "%s%d", c ? "," : "",
                        sol->layers_per_chunk[c]);
}

/* A summary of the recompute choices: "none 20, selective 4, full 8". */
static void format_recompute(const px_partition_problem *pb, const px_partition_solution *sol,
                             char *buf, int buf_len)
{
    int count[R_COUNT] = {0};
    for (int i = 0; i < pb->n_layers; i++)
        count[sol->layer_recompute[i] < R_COUNT ? sol->layer_recompute[i] : 0]++;
    int len = 0;
    buf[0] = '\0';
    for (int r = 0; r < R_COUNT; r++)
        if (count[r] && len < buf_len - 1)
            len += snprintf(buf + len, (size_t)(buf_len - len), "%s%s %d", len ? ", " : "",
                            px_recompute_name((px_recompute)r), count[r]);
}

static px_status check_opts(const px_partition_opts *o, px_error *err)
{
    if (!(o->time_limit_s > 0.0) || !isfinite(o->time_limit_s))
        return PX_FAIL(err, PX_ERR_INVALID, "partition: time_limit_s = %g; must be > 0",
                       o->time_limit_s);
    if (!(o->mip_gap >= 0.0 && o->mip_gap < 1.0))
        return PX_FAIL(err, PX_ERR_INVALID, "partition: mip_gap = %g; allowed 0 <= gap < 1",
                       o->mip_gap);
    if (!(o->tie_rel >= 0.0 && o->tie_rel < 1.0))
        return PX_FAIL(err, PX_ERR_INVALID, "partition: tie_rel = %g; allowed 0 <= tie_rel < 1",
                       o->tie_rel);
    return PX_OK;
}

/* ---- the MILP ------------------------------------------------------------ */

typedef enum { BUILD_TIME, BUILD_OVERFLOW } build_mode;

typedef struct {
    const px_partition_problem *pb;
    px_milp *mp;
    int L, C, p;
    int *w;     /* [(i*C + c)*R + r]: column of "layer i in chunk c with choice r", or -1 */
    int *z;     /* [i*C + c]: column of "layer i in a chunk <= c", or -1 when constant */
    signed char *zval; /* the constant (0/1) where z is -1 */
    int t_col, e_col;
    double tscale, mscale;
    /* scratch for one row */
    int *rc;
    double *rv;
    int rn;
} model;

static int cmin_of(const model *m, int i) { int v = m->C - (m->L - i); return v > 0 ? v : 0; }
static int cmax_of(const model *m, int i) { return i < m->C - 1 ? i : m->C - 1; }

static void model_free(model *m)
{
    px_milp_free(m->mp);
    free(m->w);
    free(m->z);
    free(m->zval);
    free(m->rc);
    free(m->rv);
    memset(m, 0, sizeof *m);
}

/* Is option r of layer i worth a variable?  Not when another allowed option
 * is no slower and needs no more memory: dropping it cannot change the
 * optimum of either pass (ties keep the lower index). */
static bool dominated(const px_partition_problem *pb, int i, int r)
{
    for (int q = 0; q < R_COUNT; q++) {
        if (q == r || !allowed(pb, q))
            continue;
        double tq = pb->layer_time_s[i][q], tr = pb->layer_time_s[i][r];
        int64_t aq = pb->layer_act_bytes[i][q], ar = pb->layer_act_bytes[i][r];
        if (tq <= tr && aq <= ar && (tq < tr || aq < ar || q < r))
            return true;
    }
    return false;
}

static bool identical_layers(const px_partition_problem *pb, int i, int j)
{
    if (pb->layer_static_bytes[i] != pb->layer_static_bytes[j])
        return false;
    for (int r = 0; r < R_COUNT; r++)
        if (allowed(pb, r) && (pb->layer_time_s[i][r] != pb->layer_time_s[j][r] ||
                               pb->layer_act_bytes[i][r] != pb->layer_act_bytes[j][r]))
            return false;
    return true;
}

static void row_begin(model *m) { m->rn = 0; }
static void row_add(model *m, int col, double v)
{
    if (v != 0.0) {
        m->rc[m->rn] = col;
        m->rv[m->rn] = v;
        m->rn++;
    }
}

/* Adds z[i][c] (coef a) to the current row, folding a constant into *rhs. */
static void row_add_z(model *m, int i, int c, double a, double *rhs)
{
    int k = i * m->C + c;
    if (m->z[k] >= 0)
        row_add(m, m->z[k], a);
    else
        *rhs -= a * m->zval[k];
}

static px_status model_build(model *m, const px_partition_problem *pb, build_mode mode,
                             px_error *err)
{
    memset(m, 0, sizeof *m);
    m->pb = pb;
    m->L = pb->n_layers;
    m->C = pb->pp * pb->vpp;
    m->p = pb->pp;
    m->t_col = m->e_col = -1;
    int L = m->L, C = m->C;

    /* Count the binaries before allocating anything large. */
    double n_bin = 0;
    for (int i = 0; i < L; i++) {
        int kept = 0;
        for (int r = 0; r < R_COUNT; r++)
            kept += allowed(pb, r) && !dominated(pb, i, r);
        n_bin += (double)(cmax_of(m, i) - cmin_of(m, i) + 1) * (kept + 1);
    }
    if (n_bin > MAX_BINARIES)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition MILP for %d layers on %d chunks needs %.0f binary variables; "
                       "at most %d (use fewer virtual stages)",
                       L, C, n_bin, MAX_BINARIES);

    size_t nw = (size_t)L * C * R_COUNT, nz = (size_t)L * C;
    m->w = malloc(nw * sizeof *m->w);
    m->z = malloc(nz * sizeof *m->z);
    m->zval = malloc(nz);
    /* a row holds at most every w of one stage plus a few more */
    size_t row_cap = (size_t)L * (size_t)pb->vpp * R_COUNT + (size_t)L * R_COUNT + 8;
    m->rc = malloc(row_cap * sizeof *m->rc);
    m->rv = malloc(row_cap * sizeof *m->rv);
    if (!m->w || !m->z || !m->zval || !m->rc || !m->rv) {
        model_free(m);
        return PX_FAIL(err, PX_ERR_NOMEM, "partition MILP: out of memory");
    }
    px_status st = px_milp_new(&m->mp, err);
    if (st) {
        model_free(m);
        return st;
    }

    /* Scales: times in units of an ideal stage, bytes in units of the limit,
     * so that every coefficient GLPK sees is O(1). */
    double ideal = pb->embed_time_s + pb->head_time_s;
    for (int i = 0; i < L; i++)
        ideal += fastest_time(pb, i);
    ideal /= pb->pp;
    m->tscale = ideal > 0.0 ? ideal : 1.0;
    m->mscale = (double)pb->mem_limit_bytes;

    char name[64];
    if (mode == BUILD_TIME) {
        st = px_milp_add_col(m->mp, "T", PX_MILP_CONTINUOUS, 0.0, INFINITY, 1.0, &m->t_col, err);
    } else {
        st = px_milp_add_col(m->mp, "E", PX_MILP_CONTINUOUS, 0.0, INFINITY, 1.0, &m->e_col, err);
    }
    for (size_t k = 0; k < nw; k++)
        m->w[k] = -1;
    for (int i = 0; i < L && !st; i++)
        for (int c = cmin_of(m, i); c <= cmax_of(m, i) && !st; c++)
            for (int r = 0; r < R_COUNT && !st; r++) {
                if (!allowed(pb, r) || dominated(pb, i, r))
                    continue;
                snprintf(name, sizeof name, "w_%d_%d_%d", i, c, r);
                st = px_milp_add_col(m->mp, name, PX_MILP_BINARY, 0.0, 1.0, 0.0,
                                     &m->w[((size_t)i * C + c) * R_COUNT + r], err);
            }
    /* z[i][c] = [chunk(i) <= c]: binary so that GLPK can branch on where a
     * boundary falls, which splits the search far better than branching on a
     * single layer's placement. */
    for (int i = 0; i < L && !st; i++)
        for (int c = 0; c < C && !st; c++) {
            int k = i * C + c;
            m->z[k] = -1;
            if (c < cmin_of(m, i)) {
                m->zval[k] = 0;
            } else if (c >= cmax_of(m, i)) {
                m->zval[k] = 1;
            } else {
                m->zval[k] = -1;
                snprintf(name, sizeof name, "z_%d_%d", i, c);
                st = px_milp_add_col(m->mp, name, PX_MILP_BINARY, 0.0, 1.0, 0.0, &m->z[k], err);
            }
        }

    /* Each layer in exactly one (chunk, choice). */
    for (int i = 0; i < L && !st; i++) {
        row_begin(m);
        for (int c = cmin_of(m, i); c <= cmax_of(m, i); c++)
            for (int r = 0; r < R_COUNT; r++)
                if (m->w[((size_t)i * C + c) * R_COUNT + r] >= 0)
                    row_add(m, m->w[((size_t)i * C + c) * R_COUNT + r], 1.0);
        snprintf(name, sizeof name, "one_%d", i);
        st = px_milp_add_row(m->mp, name, 1.0, 1.0, m->rn, m->rc, m->rv, NULL, err);
    }
    /* z as the running sum of the placements. */
    for (int i = 0; i < L && !st; i++)
        for (int c = cmin_of(m, i); c < cmax_of(m, i) && !st; c++) {
            row_begin(m);
            row_add(m, m->z[i * C + c], 1.0);
            for (int q = cmin_of(m, i); q <= c; q++)
                for (int r = 0; r < R_COUNT; r++)
                    if (m->w[((size_t)i * C + q) * R_COUNT + r] >= 0)
                        row_add(m, m->w[((size_t)i * C + q) * R_COUNT + r], -1.0);
            snprintf(name, sizeof name, "zdef_%d_%d", i, c);
            st = px_milp_add_row(m->mp, name, 0.0, 0.0, m->rn, m->rc, m->rv, NULL, err);
        }
    /* Contiguity: chunk(i) <= chunk(i+1) <= chunk(i) + 1. */
    for (int i = 0; i + 1 < L && !st; i++)
        for (int c = 0; c + 1 < C && !st; c++) {
            double rhs = 0.0;
            row_begin(m); /* z[i+1][c] - z[i][c] <= 0 */
            row_add_z(m, i + 1, c, 1.0, &rhs);
            row_add_z(m, i, c, -1.0, &rhs);
            if (m->rn > 0) {
                snprintf(name, sizeof name, "mono_%d_%d", i, c);
                st = px_milp_add_row(m->mp, name, -INFINITY, rhs, m->rn, m->rc, m->rv, NULL,
                                     err);
            }
            rhs = 0.0;
            row_begin(m); /* z[i][c] - z[i+1][c+1] <= 0 */
            row_add_z(m, i, c, 1.0, &rhs);
            row_add_z(m, i + 1, c + 1, -1.0, &rhs);
            if (m->rn > 0 && !st) {
                snprintf(name, sizeof name, "step_%d_%d", i, c);
                st = px_milp_add_row(m->mp, name, -INFINITY, rhs, m->rn, m->rc, m->rv, NULL,
                                     err);
            }
        }
    /* Symmetry: when layers i and i+1 are identical and share a chunk, which
     * of them recomputes makes no difference, and branch-and-bound would
     * visit every permutation.  Order them: within a chunk the earlier layer
     * takes the choice with the higher index.  The sum of z[i][c] -
     * z[i+1][c] over c is 1 exactly when a chunk ends at layer i, which
     * lifts the row (choice indices differ by at most 2). */
    for (int i = 0; i + 1 < L && !st; i++) {
        if (!identical_layers(pb, i, i + 1))
            continue;
        double rhs = 0.0;
        row_begin(m);
        for (int k = 0; k < 2; k++) {
            int l = i + k;
            double sign = k == 0 ? 1.0 : -1.0;
            for (int c = cmin_of(m, l); c <= cmax_of(m, l); c++)
                for (int r = 1; r < R_COUNT; r++)
                    if (m->w[((size_t)l * C + c) * R_COUNT + r] >= 0)
                        row_add(m, m->w[((size_t)l * C + c) * R_COUNT + r], sign * r);
        }
        for (int c = 0; c + 1 < C; c++) {
            row_add_z(m, i, c, 2.0, &rhs);
            row_add_z(m, i + 1, c, -2.0, &rhs);
        }
        /* row_add_z may list a z twice across i and i+1: they are distinct
         * columns, so no duplicates arise */
        if (m->rn > 0) {
            snprintf(name, sizeof name, "sym_%d", i);
            st = px_milp_add_row(m->mp, name, rhs, INFINITY, m->rn, m->rc, m->rv, NULL, err);
        }
    }
    /* Every chunk holds a layer. */
    for (int c = 0; c < C && !st; c++) {
        row_begin(m);
        for (int i = 0; i < L; i++)
            for (int r = 0; r < R_COUNT; r++)
                if (c >= cmin_of(m, i) && c <= cmax_of(m, i) &&
                    m->w[((size_t)i * C + c) * R_COUNT + r] >= 0)
                    row_add(m, m->w[((size_t)i * C + c) * R_COUNT + r], 1.0);
        snprintf(name, sizeof name, "nonempty_%d", c);
        st = px_milp_add_row(m->mp, name, 1.0, INFINITY, m->rn, m->rc, m->rv, NULL, err);
    }
    /* Per stage: time <= T, memory <= limit (or limit + E). */
    for (int s = 0; s < m->p && !st; s++) {
        if (mode == BUILD_TIME) {
            row_begin(m);
            for (int c = s; c < C; c += m->p)
                for (int i = 0; i < L; i++)
                    for (int r = 0; r < R_COUNT; r++) {
                        int col = (c >= cmin_of(m, i) && c <= cmax_of(m, i))
                                      ? m->w[((size_t)i * C + c) * R_COUNT + r]
                                      : -1;
                        if (col >= 0)
                            row_add(m, col, pb->layer_time_s[i][r] / m->tscale);
                    }
            row_add(m, m->t_col, -1.0);
            snprintf(name, sizeof name, "time_%d", s);
            st = px_milp_add_row(m->mp, name, -INFINITY, -stage_fixed_time(pb, s) / m->tscale,
                                 m->rn, m->rc, m->rv, NULL, err);
            if (st)
                break;
        }
        row_begin(m);
        double fl = pb->in_flight[s];
        for (int c = s; c < C; c += m->p)
            for (int i = 0; i < L; i++)
                for (int r = 0; r < R_COUNT; r++) {
                    int col = (c >= cmin_of(m, i) && c <= cmax_of(m, i))
                                  ? m->w[((size_t)i * C + c) * R_COUNT + r]
                                  : -1;
                    if (col >= 0)
                        row_add(m, col,
                                ((double)pb->layer_static_bytes[i] +
                                 fl * (double)pb->layer_act_bytes[i][r]) /
                                    m->mscale);
                }
        double cap = (double)pb->mem_limit_bytes;
        if (mode == BUILD_OVERFLOW)
            row_add(m, m->e_col, -1.0);
        cap -= stage_mem(pb, s, 0, 0);
        snprintf(name, sizeof name, "mem_%d", s);
        st = px_milp_add_row(m->mp, name, -INFINITY, cap / m->mscale, m->rn, m->rc, m->rv, NULL,
                             err);
    }
    if (st)
        model_free(m);
    return st;
}

/* Reads the placement out of the last solve into sol and evaluates it. */
static px_status model_decode(const model *m, px_partition_solution *sol, px_error *err)
{
    const px_partition_problem *pb = m->pb;
    sol->n_chunks = m->C;
    for (int c = 0; c < m->C; c++)
        sol->layers_per_chunk[c] = 0;
    for (int i = 0; i < m->L; i++) {
        int found = 0;
        for (int c = cmin_of(m, i); c <= cmax_of(m, i); c++)
            for (int r = 0; r < R_COUNT; r++) {
                int col = m->w[((size_t)i * m->C + c) * R_COUNT + r];
                if (col >= 0 && px_milp_value(m->mp, col) > 0.5) {
                    sol->layers_per_chunk[c]++;
                    sol->layer_recompute[i] = (unsigned char)r;
                    found++;
                }
            }
        if (found != 1)
            return PX_FAIL(err, PX_ERR_INTERNAL,
                           "partition MILP: layer %d placed %d times in GLPK's solution", i,
                           found);
    }
    return px_partition_evaluate(pb, sol, err);
}

static double elapsed_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

#define GB(x) ((double)(x) / 1e9)

/* No split fits: find the one that overflows least and say where and by how
 * much (a planner message the user can act on). */
static px_status explain_infeasible(const px_partition_problem *pb, const px_partition_opts *o,
                                    double time_left_s, px_partition_solution *sol,
                                    px_error *err)
{
    model m;
    px_error sub;
    px_error_clear(&sub);
    px_status st = model_build(&m, pb, BUILD_OVERFLOW, &sub);
    bool have = false;
    if (!st) {
        px_milp_opts mo;
        px_milp_opts_init(&mo);
        mo.time_limit_s = time_left_s;
        mo.mip_gap = o->mip_gap;
        mo.presolve = o->presolve;
        px_milp_result res;
        st = px_milp_solve(m.mp, &mo, &res, &sub);
        if (!st && !model_decode(&m, sol, &sub)) {
            have = true;
            sol->proven_optimal = res.outcome == PX_MILP_OPTIMAL;
            sol->time_limit_hit = res.time_limit_hit;
        }
        model_free(&m);
    }
    if (!have) {
        /* fall back on a split anyone can picture: uniform, least memory */
        px_recompute rc = allowed(pb, PX_RECOMPUTE_FULL)        ? PX_RECOMPUTE_FULL
                          : allowed(pb, PX_RECOMPUTE_SELECTIVE) ? PX_RECOMPUTE_SELECTIVE
                                                                : PX_RECOMPUTE_NONE;
        st = px_partition_uniform(pb, rc, sol, &sub);
        if (st)
            return PX_FAIL(err, PX_ERR_INFEASIBLE,
                           "no split of %d layers over %d stages x %d chunks fits in %.3f GB",
                           pb->n_layers, pb->pp, pb->vpp, GB(pb->mem_limit_bytes));
    }
    char split[512], rcs[128];
    px_partition_format_split(sol, split, sizeof split);
    format_recompute(pb, sol, rcs, sizeof rcs);
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
                   "the %.3f GB limit (HBM minus reserve)%s%s",
                   pb->n_layers, pb->pp, pb->pp > 1 ? "s" : "", pb->vpp,
                   pb->vpp > 1 ? "s" : "",
                   have ? (sol->proven_optimal ? "best attempt" : "best attempt found in time")
                        : "uniform split",
                   split, rcs, GB(sol->stage_mem_bytes[s]), s,
                   GB(sol->stage_mem_bytes[s] - pb->mem_limit_bytes), GB(pb->mem_limit_bytes),
                   n_over ? "; also over: stage " : "", others);
}

px_status px_partition_solve(const px_partition_problem *pb, const px_partition_opts *opts,
                             px_partition_solution *sol, px_error *err)
{
    px_partition_opts defaults;
    px_partition_opts_init(&defaults);
    const px_partition_opts *o = opts ? opts : &defaults;
    px_status st = check_opts(o, err);
    if (st)
        return st;
    st = px_partition_validate(pb, err);
    if (st)
        return st;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clear_solver_fields(sol);

    model m;
    st = model_build(&m, pb, BUILD_TIME, err);
    if (st)
        return st;
    px_milp_opts mo;
    px_milp_opts_init(&mo);
    mo.time_limit_s = o->time_limit_s;
    mo.mip_gap = o->mip_gap;
    mo.presolve = o->presolve;
    px_milp_result res;
    px_error sub;
    px_error_clear(&sub);
    if (getenv("PX_DEBUG_LP")) px_milp_write_lp(m.mp, getenv("PX_DEBUG_LP"), NULL); /*DEBUG*/
    st = px_milp_solve(m.mp, &mo, &res, &sub);
    if (st == PX_ERR_INFEASIBLE) {
        model_free(&m);
        double left = o->time_limit_s - elapsed_since(&t0);
        if (left < 0.1 * o->time_limit_s)
            left = 0.1 * o->time_limit_s;
        st = explain_infeasible(pb, o, left, sol, err);
        sol->solve_s = elapsed_since(&t0);
        return st;
    }
    if (st) {
        model_free(&m);
        if (res.outcome == PX_MILP_NO_SOLUTION)
            return PX_FAIL(err, PX_ERR_SOLVER,
                           "partition of %d layers over %d stages x %d chunks: GLPK time limit "
                           "of %.3g s reached before any split that fits in memory was found; "
                           "raise the time limit or keep the uniform split",
                           pb->n_layers, pb->pp, pb->vpp, o->time_limit_s);
        return PX_FAIL(err, st, "partition of %d layers over %d stages x %d chunks: %s",
                       pb->n_layers, pb->pp, pb->vpp, sub.msg);
    }
    st = model_decode(&m, sol, err);
    if (st) {
        model_free(&m);
        return st;
    }
    if (!sol->fits) {
        model_free(&m);
        return PX_FAIL(err, PX_ERR_SOLVER,
                       "partition MILP: GLPK's split overflows stage %d by %lld bytes (numerical "
                       "trouble)",
                       sol->fullest_stage, (long long)sol->max_over_bytes);
    }
    sol->proven_optimal = res.outcome == PX_MILP_OPTIMAL;
    sol->time_limit_hit = res.time_limit_hit;
    sol->gap = res.gap;
    if (res.time_limit_hit)
        snprintf(sol->note, sizeof sol->note,
                 "GLPK time limit of %.3g s reached: best split found so far, not proven "
                 "optimal (gap %s%.2f%%)",
                 o->time_limit_s, res.gap < 0 ? "unknown, last " : "",
                 res.gap < 0 ? 0.0 : 100.0 * res.gap);

    /* Second pass: at the optimal T, the least time spent recomputing. */
    double left = o->time_limit_s - elapsed_since(&t0);
    if (o->minimise_recompute && !res.time_limit_hit && sol->recompute_time_s > 0.0 &&
        left > 0.01) {
        double t1 = sol->max_stage_time_s;
        px_milp_set_obj(m.mp, m.t_col, 0.0, NULL);
        px_milp_set_col_bounds(m.mp, m.t_col, 0.0, t1 / m.tscale * (1.0 + o->tie_rel), NULL);
        for (int i = 0; i < m.L; i++) {
            double fast = fastest_time(pb, i);
            for (int c = cmin_of(&m, i); c <= cmax_of(&m, i); c++)
                for (int r = 0; r < R_COUNT; r++) {
                    int col = m.w[((size_t)i * m.C + c) * R_COUNT + r];
                    if (col >= 0)
                        px_milp_set_obj(m.mp, col, (pb->layer_time_s[i][r] - fast) / m.tscale,
                                        NULL);
                }
        }
        mo.time_limit_s = left;
        px_milp_result res2;
        px_error_clear(&sub);
        if (px_milp_solve(m.mp, &mo, &res2, &sub) == PX_OK) {
            px_partition_solution second = *sol;
            if (model_decode(&m, &second, &sub) == PX_OK && second.fits &&
                second.max_stage_time_s <= t1 * (1.0 + o->tie_rel + 1e-7) &&
                second.recompute_time_s <= sol->recompute_time_s) {
                second.proven_optimal = sol->proven_optimal && res2.outcome == PX_MILP_OPTIMAL;
                second.time_limit_hit = res2.time_limit_hit;
                if (res2.time_limit_hit)
                    snprintf(second.note, sizeof second.note,
                             "GLPK time limit reached while minimising recomputation: the "
                             "split is time-optimal, its recompute choice may not be");
                *sol = second;
            }
        } else {
            snprintf(sol->note, sizeof sol->note,
                     "recompute minimisation skipped: %.200s", sub.msg);
        }
    }
    model_free(&m);
    sol->solve_s = elapsed_since(&t0);
    return PX_OK;
}

/* ---- brute force --------------------------------------------------------- */

typedef struct {
    const px_partition_problem *pb;
    const px_partition_opts *o;
    int L, C, p;
    int pass;          /* 0: min T and min overflow; 1: min recompute time at T* */
    int sizes[PX_MAX_CHUNKS];
    int stage_of[PX_MAX_LAYERS];
    int choices[R_COUNT], n_choices;
    int pick[PX_MAX_LAYERS]; /* index into choices */
    double best_t, best_added;
    double best_over;        /* least worst-stage overflow, bytes */
    bool feasible;
    int best_sizes[PX_MAX_CHUNKS];
    unsigned char best_rc[PX_MAX_LAYERS];
    int over_sizes[PX_MAX_CHUNKS];
    unsigned char over_rc[PX_MAX_LAYERS];
} brute;

static void brute_record(brute *b, int *sizes_out, unsigned char *rc_out)
{
    memcpy(sizes_out, b->sizes, (size_t)b->C * sizeof *b->sizes);
    for (int i = 0; i < b->L; i++)
        rc_out[i] = (unsigned char)b->choices[b->pick[i]];
}

static void brute_leaf(brute *b)
{
    const px_partition_problem *pb = b->pb;
    int64_t st_sum[PX_PARTITION_MAX_STAGES];
    for (int s = 0; s < b->p; s++)
        st_sum[s] = 0;
    for (int i = 0; i < b->L; i++)
        st_sum[b->stage_of[i]] += pb->layer_static_bytes[i];
    for (int i = 0; i < b->L; i++)
        b->pick[i] = 0;
    for (;;) {
        double t[PX_PARTITION_MAX_STAGES];
        int64_t act[PX_PARTITION_MAX_STAGES];
        for (int s = 0; s < b->p; s++) {
            t[s] = 0.0;
            act[s] = 0;
        }
        double added = 0.0;
        for (int i = 0; i < b->L; i++) {
            int r = b->choices[b->pick[i]], s = b->stage_of[i];
            t[s] += pb->layer_time_s[i][r];
            act[s] += pb->layer_act_bytes[i][r];
            added += pb->layer_time_s[i][r] - fastest_time(pb, i);
        }
        double tmax = 0.0, over = -INFINITY;
        bool fits = true;
        for (int s = 0; s < b->p; s++) {
            double ts = t[s] + stage_fixed_time(pb, s);
            if (ts > tmax)
                tmax = ts;
            double mem = stage_mem(pb, s, st_sum[s], act[s]);
            fits = fits && mem_fits(pb, mem);
            if (mem - (double)pb->mem_limit_bytes > over)
                over = mem - (double)pb->mem_limit_bytes;
        }
        if (b->pass == 0) {
            if (over < b->best_over) {
                b->best_over = over;
                brute_record(b, b->over_sizes, b->over_rc);
            }
            if (fits && tmax < b->best_t) {
                b->best_t = tmax;
                b->feasible = true;
                brute_record(b, b->best_sizes, b->best_rc);
            }
        } else if (fits && tmax <= b->best_t * (1.0 + b->o->tie_rel) &&
                   added < b->best_added) {
            b->best_added = added;
            brute_record(b, b->best_sizes, b->best_rc);
        }
        /* next recompute vector (odometer) */
        int i = 0;
        while (i < b->L && ++b->pick[i] == b->n_choices)
            b->pick[i++] = 0;
        if (i == b->L)
            break;
    }
}

/* Places chunk c starting at layer `first`, then recurses. */
static void brute_split(brute *b, int c, int first)
{
    int left_chunks = b->C - c - 1;
    if (c == b->C - 1) {
        b->sizes[c] = b->L - first;
        for (int i = first; i < b->L; i++)
            b->stage_of[i] = c % b->p;
        brute_leaf(b);
        return;
    }
    for (int n = 1; first + n + left_chunks <= b->L; n++) {
        b->sizes[c] = n;
        for (int i = first; i < first + n; i++)
            b->stage_of[i] = c % b->p;
        brute_split(b, c + 1, first + n);
    }
}

px_status px_partition_brute_force(const px_partition_problem *pb,
                                   const px_partition_opts *opts,
                                   px_partition_solution *sol, px_error *err)
{
    px_partition_opts defaults;
    px_partition_opts_init(&defaults);
    const px_partition_opts *o = opts ? opts : &defaults;
    px_status st = check_opts(o, err);
    if (st)
        return st;
    st = px_partition_validate(pb, err);
    if (st)
        return st;
    brute *b = calloc(1, sizeof *b);
    if (!b)
        return PX_FAIL(err, PX_ERR_NOMEM, "brute force: out of memory");
    b->pb = pb;
    b->o = o;
    b->L = pb->n_layers;
    b->C = pb->pp * pb->vpp;
    b->p = pb->pp;
    for (int r = 0; r < R_COUNT; r++)
        if (allowed(pb, r))
            b->choices[b->n_choices++] = r;
    /* combinations: C(L-1, C-1) splits x choices^L */
    double splits = 1.0;
    for (int k = 1; k <= b->C - 1; k++)
        splits = splits * (double)(b->L - b->C + k) / (double)k;
    double total = splits * pow((double)b->n_choices, (double)b->L);
    if (total > PX_PARTITION_BRUTE_MAX) {
        free(b);
        return PX_FAIL(err, PX_ERR_INVALID,
                       "brute force: %.3g combinations for %d layers on %d chunks; at most %.3g",
                       total, pb->n_layers, pb->pp * pb->vpp, PX_PARTITION_BRUTE_MAX);
    }
    clear_solver_fields(sol);
    b->best_t = INFINITY;
    b->best_over = INFINITY;
    b->pass = 0;
    brute_split(b, 0, 0);
    if (b->feasible && o->minimise_recompute) {
        b->pass = 1;
        b->best_added = INFINITY;
        brute_split(b, 0, 0);
    }
    sol->n_chunks = b->C;
    const int *sizes = b->feasible ? b->best_sizes : b->over_sizes;
    const unsigned char *rc = b->feasible ? b->best_rc : b->over_rc;
    memcpy(sol->layers_per_chunk, sizes, (size_t)b->C * sizeof *sizes);
    memcpy(sol->layer_recompute, rc, (size_t)b->L);
    bool feasible = b->feasible;
    free(b);
    st = px_partition_evaluate(pb, sol, err);
    if (st)
        return st;
    sol->proven_optimal = true;
    if (!feasible) {
        char split[512];
        px_partition_format_split(sol, split, sizeof split);
        return PX_FAIL(err, PX_ERR_INFEASIBLE,
                       "no split fits: the best attempt (layers per chunk %s) needs %.3f GB on "
                       "stage %d, %.3f GB over the %.3f GB limit",
                       split, GB(sol->stage_mem_bytes[sol->fullest_stage]), sol->fullest_stage,
                       GB(sol->stage_mem_bytes[sol->fullest_stage] - pb->mem_limit_bytes),
                       GB(pb->mem_limit_bytes));
    }
    return PX_OK;
}
