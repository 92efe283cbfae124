/* px_partition.c — stage partitioning and per-layer recomputation as a MILP,
 * plus the exhaustive reference used to test it.  Formulation and scaling:
 * docs/partition.md. */
#include "px_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_cost.h"
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

/* Above this many integer variables the program is not worth handing to GLPK
 * inside a planner loop; the caller keeps the uniform split. */
#define MAX_INTEGERS 200000

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
    o->heuristics = true;
    o->minimise_memory = true;
    o->exact_dp = true;
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
    if (pb->n_micro < 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition: n_micro = %lld; must be >= 0 (0: minimise the slowest stage "
                       "only)",
                       (long long)pb->n_micro);
    return PX_OK;
}

double px_partition_in_flight(px_schedule sched, int pp, int vpp, int64_t n_micro, int stage)
{
    if (pp < 1 || vpp < 1 || n_micro < 1 || stage < 0 || stage >= pp || (int)sched < 0 ||
        sched >= PX_SCHED_COUNT)
        return -1.0;
    return px_cost_inflight(sched, pp, vpp, n_micro, stage); /* the one definition */
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

/* The embedding runs in chunk 0, the head in the last chunk. */
static double chunk_fixed_time(const px_partition_problem *pb, int c)
{
    double t = 0.0;
    if (c == 0)
        t += pb->embed_time_s;
    if (c == pb->pp * pb->vpp - 1)
        t += pb->head_time_s;
    return t;
}

/* Weights of T and Tc in the objective (see px_partition_problem.n_micro). */
static void objective_weights(const px_partition_problem *pb, double *wt, double *wc)
{
    bool chunks = pb->vpp > 1 && pb->n_micro > 0;
    *wt = chunks ? (double)pb->n_micro : 1.0;
    *wc = chunks ? (double)(pb->pp - 1) : 0.0;
}

static double objective_of(const px_partition_problem *pb, double t, double tc)
{
    double wt, wc;
    objective_weights(pb, &wt, &wc);
    return wt * t + wc * tc;
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
        for (int r = 0; r < R_COUNT; r++)
            sol->stage_recompute[s][r] = 0;
    }
    sol->recompute_time_s = 0.0;
    sol->max_chunk_time_s = 0.0;
    int i = 0;
    for (int c = 0; c < C; c++) {
        int s = c % pb->pp;
        double chunk_s = chunk_fixed_time(pb, c);
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
            sol->stage_recompute[s][r]++;
            sol->recompute_time_s += pb->layer_time_s[i][r] - fastest_time(pb, i);
            chunk_s += pb->layer_time_s[i][r];
        }
        if (chunk_s > sol->max_chunk_time_s)
            sol->max_chunk_time_s = chunk_s;
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
    sol->objective_s = objective_of(pb, sol->max_stage_time_s, sol->max_chunk_time_s);
    return PX_OK;
}

static void clear_solver_fields(px_partition_solution *sol)
{
    sol->proven_optimal = false;
    sol->time_limit_hit = false;
    sol->gap = -1.0;
    sol->solve_s = 0.0;
    sol->note[0] = '\0';
    sol->exact_dp = false;
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

void px_partition_format_stages(const px_partition_solution *sol, int64_t mem_limit_bytes,
                                char *buf, int buf_len)
{
    if (buf_len <= 0)
        return;
    int len = snprintf(buf, (size_t)buf_len,
                       "# stage  layers  chunks            time_ms  memory_GB  limit_%%  "
                       "none  selective  full\n");
    for (int s = 0; s < sol->pp && len < buf_len - 1; s++) {
        char chunks[64];
        int cl = 0;
        chunks[0] = '\0';
        for (int c = s; c < sol->n_chunks && cl < (int)sizeof chunks - 1; c += sol->pp)
            cl += snprintf(chunks + cl, sizeof chunks - (size_t)cl, "%s%d", cl ? "+" : "",
                           sol->layers_per_chunk[c]);
        len += snprintf(buf + len, (size_t)(buf_len - len),
                        "  %5d  %6d  %-16s %8.2f  %9.2f  %7.1f  %4d  %9d  %4d\n", s,
                        sol->stage_layers[s], chunks, 1e3 * sol->stage_time_s[s],
                        (double)sol->stage_mem_bytes[s] / 1e9,
                        mem_limit_bytes > 0
                            ? 100.0 * (double)sol->stage_mem_bytes[s] / (double)mem_limit_bytes
                            : 0.0,
                        sol->stage_recompute[s][PX_RECOMPUTE_NONE],
                        sol->stage_recompute[s][PX_RECOMPUTE_SELECTIVE],
                        sol->stage_recompute[s][PX_RECOMPUTE_FULL]);
    }
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

/* Formulation (docs/partition.md): consecutive identical layers form runs;
 * a chunk boundary is placed by choosing the run it falls in (binary u) and
 * its offset inside the run (integer off); each (run, chunk) pair gets an
 * integer count per recompute choice.  Counting instead of placing layer by
 * layer removes the symmetry between identical layers (which of nine equal
 * layers recomputes does not matter) that makes branch-and-bound hopeless on
 * a per-layer model of a 32- or 80-layer transformer.  With every run one
 * layer long it is the per-layer model. */

typedef enum { BUILD_TIME, BUILD_OVERFLOW } build_mode;

typedef struct {
    const px_partition_problem *pb;
    px_milp *mp;
    int L, C, p, K;
    int *run_first;   /* [K + 1]: G_k, first layer of run k; run_first[K] = L */
    int *u;           /* [c * K + k]: boundary c (1..C-1) falls in run k, or -1 */
    int *off;         /* [c * K + k]: its offset inside run k, or -1 (0) */
    int *n;           /* [(k * C + c) * R + r]: layers of run k in chunk c with choice r, or -1 */
    int t_col, e_col;
    int p_col;        /* peak memory share: every stage's memory / limit <= P <= 1 */
    int tc_col;       /* slowest chunk (objective with interleaving), or -1 */
    int j_row;        /* the objective wt T + wc Tc, bounded in the later passes */
    int rc_row;       /* recompute time <= (bound set for the third pass) */
    double wt, wc;    /* objective weights */
    double tscale, mscale;
    int *rc;          /* scratch for one row */
    double *rv;
    int rn, rcap;
    bool row_overflow;
} model;

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

static void model_free(model *m)
{
    px_milp_free(m->mp);
    free(m->run_first);
    free(m->u);
    free(m->off);
    free(m->n);
    free(m->rc);
    free(m->rv);
    memset(m, 0, sizeof *m);
}

static int run_len(const model *m, int k) { return m->run_first[k + 1] - m->run_first[k]; }

/* Chunk c can only hold layers c .. L - C + c (every chunk needs one). */
static bool run_meets_chunk(const model *m, int k, int c)
{
    return m->run_first[k] <= m->L - m->C + c && m->run_first[k + 1] - 1 >= c;
}

static void row_begin(model *m) { m->rn = 0; }

/* Adds a * col to the current row (each column once per row). */
static void row_add(model *m, int col, double v)
{
    if (col < 0 || v == 0.0)
        return;
    if (m->rn >= m->rcap) { /* sized for the longest row; a bug if reached */
        m->row_overflow = true;
        return;
    }
    m->rc[m->rn] = col;
    m->rv[m->rn] = v;
    m->rn++;
}

/* Adds a * D[k][c] (layers of run k before boundary c) to the row; a
 * constant part goes into *rhs (moved to the other side). */
static void row_add_d(model *m, int k, int c, double a, double *rhs)
{
    if (c == 0)
        return;
    if (c == m->C) {
        *rhs -= a * run_len(m, k);
        return;
    }
    for (int q = k + 1; q < m->K; q++)
        row_add(m, m->u[c * m->K + q], a * run_len(m, k));
    row_add(m, m->off[c * m->K + k], a);
}

/* Adds a * B[c] (the first layer of chunk c, sum_k D[k][c]). */
static void row_add_b(model *m, int c, double a, double *rhs)
{
    if (c == 0)
        return;
    if (c == m->C) {
        *rhs -= a * m->L;
        return;
    }
    for (int k = 0; k < m->K; k++) {
        row_add(m, m->u[c * m->K + k], a * m->run_first[k]);
        row_add(m, m->off[c * m->K + k], a);
    }
}

static px_status add_row(model *m, const char *fmt, int i, int j, double lo, double hi,
                         px_error *err)
{
    if (m->row_overflow)
        return PX_FAIL(err, PX_ERR_INTERNAL, "partition MILP: a row outgrew its buffer");
    char name[64];
    snprintf(name, sizeof name, fmt, i, j);
    return px_milp_add_row(m->mp, name, lo, hi, m->rn, m->rc, m->rv, NULL, err);
}

static px_status model_build(model *m, const px_partition_problem *pb, build_mode mode,
                             px_error *err)
{
    memset(m, 0, sizeof *m);
    m->pb = pb;
    m->L = pb->n_layers;
    m->C = pb->pp * pb->vpp;
    m->p = pb->pp;
    m->t_col = m->e_col = m->p_col = m->rc_row = m->tc_col = m->j_row = -1;
    objective_weights(pb, &m->wt, &m->wc);
    int L = m->L, C = m->C;

    m->run_first = malloc((size_t)(L + 1) * sizeof *m->run_first);
    if (!m->run_first)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition MILP: out of memory");
    m->K = 0;
    for (int i = 0; i < L; i++)
        if (i == 0 || !identical_layers(pb, i - 1, i))
            m->run_first[m->K++] = i;
    m->run_first[m->K] = L;
    int K = m->K;

    double n_int = (double)(C - 1) * K * 2 + (double)K * C * R_COUNT;
    if (n_int > MAX_INTEGERS) {
        model_free(m);
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition MILP for %d layers (%d distinct runs) on %d chunks needs "
                       "%.0f integer variables; at most %d (use fewer virtual stages)",
                       L, K, C, n_int, MAX_INTEGERS);
    }
    size_t nb = (size_t)C * K, nn = (size_t)K * C * R_COUNT;
    m->u = malloc(nb * sizeof *m->u);
    m->off = malloc(nb * sizeof *m->off);
    m->n = malloc(nn * sizeof *m->n);
    m->rcap = 3 * K + (int)((size_t)K * C * R_COUNT) + 8; /* the recompute row is the longest */
    m->rc = malloc((size_t)m->rcap * sizeof *m->rc);
    m->rv = malloc((size_t)m->rcap * sizeof *m->rv);
    if (!m->u || !m->off || !m->n || !m->rc || !m->rv) {
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
        st = px_milp_add_col(m->mp, "T", PX_MILP_CONTINUOUS, 0.0, INFINITY, m->wt, &m->t_col,
                             err);
        if (!st)
            st = px_milp_add_col(m->mp, "P", PX_MILP_CONTINUOUS, 0.0, 1.0, 0.0, &m->p_col, err);
        if (!st && m->wc > 0.0)
            st = px_milp_add_col(m->mp, "Tc", PX_MILP_CONTINUOUS, 0.0, INFINITY, m->wc,
                                 &m->tc_col, err);
    } else
        st = px_milp_add_col(m->mp, "E", PX_MILP_CONTINUOUS, 0.0, INFINITY, 1.0, &m->e_col, err);

    /* Boundary c (1..C-1) is the first layer of chunk c: it lies in
     * c .. L - C + c. */
    for (size_t q = 0; q < nb; q++)
        m->u[q] = m->off[q] = -1;
    for (int c = 1; c < C && !st; c++)
        for (int k = 0; k < K && !st; k++) {
            int lo = m->run_first[k], hi = m->run_first[k + 1] - 1;
            if (hi < c || lo > L - C + c)
                continue;
            snprintf(name, sizeof name, "u_%d_%d", c, k);
            st = px_milp_add_col(m->mp, name, PX_MILP_BINARY, 0, 1, 0, &m->u[c * K + k], err);
            if (!st && hi > lo) {
                snprintf(name, sizeof name, "off_%d_%d", c, k);
                st = px_milp_add_col(m->mp, name, PX_MILP_INTEGER, 0, hi - lo, 0,
                                     &m->off[c * K + k], err);
            }
        }
    for (size_t q = 0; q < nn; q++)
        m->n[q] = -1;
    for (int k = 0; k < K && !st; k++) {
        int i = m->run_first[k];
        for (int c = 0; c < C && !st; c++) {
            if (!run_meets_chunk(m, k, c))
                continue;
            for (int r = 0; r < R_COUNT && !st; r++) {
                if (!allowed(pb, r) || dominated(pb, i, r))
                    continue;
                snprintf(name, sizeof name, "n_%d_%d_%d", k, c, r);
                st = px_milp_add_col(m->mp, name, PX_MILP_INTEGER, 0, run_len(m, k), 0,
                                     &m->n[((size_t)k * C + c) * R_COUNT + r], err);
            }
        }
    }

    /* Each boundary in one run, at an offset inside it. */
    for (int c = 1; c < C && !st; c++) {
        row_begin(m);
        for (int k = 0; k < K; k++)
            row_add(m, m->u[c * K + k], 1.0);
        st = add_row(m, "one_%d%.0d", c, 0, 1.0, 1.0, err);
        for (int k = 0; k < K && !st; k++) {
            if (m->off[c * K + k] < 0)
                continue;
            row_begin(m);
            row_add(m, m->off[c * K + k], 1.0);
            row_add(m, m->u[c * K + k], -(double)(run_len(m, k) - 1));
            st = add_row(m, "offu_%d_%d", c, k, -INFINITY, 0.0, err);
        }
    }
    /* Boundaries in order, every chunk non-empty: B[c+1] - B[c] >= 1, with
     * B[c] = sum_k D[k][c]. */
    for (int c = 0; c < C && !st; c++) {
        double rhs = 1.0;
        row_begin(m);
        row_add_b(m, c + 1, 1.0, &rhs);
        row_add_b(m, c, -1.0, &rhs);
        if (m->rn > 0)
            st = add_row(m, "order_%d%.0d", c, 0, rhs, INFINITY, err);
    }
    /* Counts: the layers of run k in chunk c, D[k][c+1] - D[k][c], split
     * over the recompute choices. */
    for (int k = 0; k < K && !st; k++)
        for (int c = 0; c < C && !st; c++) {
            double rhs = 0.0;
            row_begin(m);
            for (int r = 0; r < R_COUNT; r++)
                row_add(m, m->n[((size_t)k * C + c) * R_COUNT + r], 1.0);
            row_add_d(m, k, c + 1, -1.0, &rhs);
            row_add_d(m, k, c, 1.0, &rhs);
            if (m->rn > 0)
                st = add_row(m, "count_%d_%d", k, c, rhs, rhs, err);
        }
    /* Per stage: time <= T, memory <= limit (or limit + E). */
    for (int s = 0; s < m->p && !st; s++) {
        if (mode == BUILD_TIME) {
            row_begin(m);
            for (int c = s; c < C; c += m->p)
                for (int k = 0; k < K; k++)
                    for (int r = 0; r < R_COUNT; r++)
                        row_add(m, m->n[((size_t)k * C + c) * R_COUNT + r],
                                pb->layer_time_s[m->run_first[k]][r] / m->tscale);
            row_add(m, m->t_col, -1.0);
            st = add_row(m, "time_%d%.0d", s, 0, -INFINITY, -stage_fixed_time(pb, s) / m->tscale,
                         err);
            if (st)
                break;
        }
        row_begin(m);
        double fl = pb->in_flight[s];
        for (int c = s; c < C; c += m->p)
            for (int k = 0; k < K; k++) {
                int i = m->run_first[k];
                for (int r = 0; r < R_COUNT; r++)
                    row_add(m, m->n[((size_t)k * C + c) * R_COUNT + r],
                            ((double)pb->layer_static_bytes[i] +
                             fl * (double)pb->layer_act_bytes[i][r]) /
                                m->mscale);
            }
        /* memory / limit <= P <= 1 (time mode), or memory <= limit + E */
        double cap = -stage_mem(pb, s, 0, 0);
        if (mode == BUILD_OVERFLOW) {
            row_add(m, m->e_col, -1.0);
            cap += (double)pb->mem_limit_bytes;
        } else {
            row_add(m, m->p_col, -1.0);
        }
        st = add_row(m, "mem_%d%.0d", s, 0, -INFINITY, cap / m->mscale, err);
    }
    /* With interleaving: every chunk's time <= Tc. */
    for (int c = 0; c < C && m->tc_col >= 0 && !st; c++) {
        row_begin(m);
        for (int k = 0; k < K; k++)
            for (int r = 0; r < R_COUNT; r++)
                row_add(m, m->n[((size_t)k * C + c) * R_COUNT + r],
                        pb->layer_time_s[m->run_first[k]][r] / m->tscale);
        row_add(m, m->tc_col, -1.0);
        st = add_row(m, "chunk_%d%.0d", c, 0, -INFINITY, -chunk_fixed_time(pb, c) / m->tscale,
                     err);
    }
    /* The objective as a row, bounded in the later passes. */
    if (mode == BUILD_TIME && !st) {
        row_begin(m);
        row_add(m, m->t_col, m->wt);
        row_add(m, m->tc_col, m->wc);
        st = px_milp_add_row(m->mp, "objective", -INFINITY, INFINITY, m->rn, m->rc, m->rv,
                             &m->j_row, err);
    }
    /* The time spent recomputing, bounded only in the third pass. */
    if (mode == BUILD_TIME && !st) {
        row_begin(m);
        for (int k = 0; k < K; k++) {
            int i = m->run_first[k];
            double fast = fastest_time(pb, i);
            for (int c = 0; c < C; c++)
                for (int r = 0; r < R_COUNT; r++)
                    row_add(m, m->n[((size_t)k * C + c) * R_COUNT + r],
                            (pb->layer_time_s[i][r] - fast) / m->tscale);
        }
        if (m->row_overflow)
            st = PX_FAIL(err, PX_ERR_INTERNAL, "partition MILP: a row outgrew its buffer");
        else if (m->rn > 0) {
            char rname[32];
            snprintf(rname, sizeof rname, "recompute");
            st = px_milp_add_row(m->mp, rname, -INFINITY, INFINITY, m->rn, m->rc, m->rv,
                                 &m->rc_row, err);
        }
    }
    if (st)
        model_free(m);
    return st;
}

static int int_value(const model *m, int col)
{
    return col < 0 ? 0 : (int)lround(px_milp_value(m->mp, col));
}

/* Reads the split out of the last solve into sol and evaluates it.  Within
 * a (run, chunk) the counts go to the layers in order, the most memory-saving
 * choice first (which identical layer gets it does not matter). */
static px_status model_decode(const model *m, px_partition_solution *sol, px_error *err)
{
    int C = m->C, K = m->K;
    int bound[PX_MAX_CHUNKS + 1];
    bound[0] = 0;
    bound[C] = m->L;
    for (int c = 1; c < C; c++) {
        bound[c] = 0;
        for (int k = 0; k < K; k++)
            if (int_value(m, m->u[c * K + k]) == 1)
                bound[c] += m->run_first[k] + int_value(m, m->off[c * K + k]);
    }
    sol->n_chunks = C;
    for (int c = 0; c < C; c++) {
        sol->layers_per_chunk[c] = bound[c + 1] - bound[c];
        if (sol->layers_per_chunk[c] < 1)
            return PX_FAIL(err, PX_ERR_INTERNAL,
                           "partition MILP: chunk %d gets %d layers in GLPK's solution", c,
                           sol->layers_per_chunk[c]);
    }
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c++) {
            int lo = m->run_first[k] > bound[c] ? m->run_first[k] : bound[c];
            int hi = m->run_first[k + 1] < bound[c + 1] ? m->run_first[k + 1] : bound[c + 1];
            int i = lo;
            for (int r = R_COUNT - 1; r >= 0; r--)
                for (int q = int_value(m, m->n[((size_t)k * C + c) * R_COUNT + r]); q > 0; q--)
                    if (i < hi)
                        sol->layer_recompute[i++] = (unsigned char)r;
                    else
                        i = hi + 1; /* more counted than placed: caught below */
            if (i != (hi > lo ? hi : lo))
                return PX_FAIL(err, PX_ERR_INTERNAL,
                               "partition MILP: run %d in chunk %d: counts do not match the "
                               "%d layers placed there",
                               k, c, hi > lo ? hi - lo : 0);
        }
    return px_partition_evaluate(m->pb, sol, err);
}

/* The objective of the second pass: time spent recomputing. */
typedef enum { OBJ_TIME, OBJ_RECOMPUTE, OBJ_PEAK } objective;

/* The three passes' objectives: T; the time spent recomputing; the peak
 * memory share P. */
static void model_set_objective(model *m, objective which)
{
    px_milp_set_obj(m->mp, m->t_col, which == OBJ_TIME ? m->wt : 0.0, NULL);
    if (m->tc_col >= 0)
        px_milp_set_obj(m->mp, m->tc_col, which == OBJ_TIME ? m->wc : 0.0, NULL);
    px_milp_set_obj(m->mp, m->p_col, which == OBJ_PEAK ? 1.0 : 0.0, NULL);
    for (int k = 0; k < m->K; k++) {
        int i = m->run_first[k];
        double fast = fastest_time(m->pb, i);
        for (int c = 0; c < m->C; c++)
            for (int r = 0; r < R_COUNT; r++) {
                int col = m->n[((size_t)k * m->C + c) * R_COUNT + r];
                if (col >= 0)
                    px_milp_set_obj(m->mp, col,
                                    which == OBJ_RECOMPUTE
                                        ? (m->pb->layer_time_s[i][r] - fast) / m->tscale
                                        : 0.0,
                                    NULL);
            }
    }
}

static double elapsed_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}

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

static int layer_hull(const px_partition_problem *pb, int i, int *pts);

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
        int np = layer_hull(pb, i, pts);
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
    double excess = stage_mem(pb, s, static_sum, act_sum) - (double)pb->mem_limit_bytes;
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

/* Largest p * (L+1)^2 for which the one-chunk-per-stage DP runs. */
#define DP_MAX_ARCS 1500000

typedef struct {
    bool have_split;     /* split holds a feasible split (with recompute) */
    double lower_s;      /* valid lower bound on T (0 when unknown) */
} heuristic;

/* The lower hull of layer i's options, fastest first (see stage_knapsack). */
static int layer_hull(const px_partition_problem *pb, int i, int *pts)
{
    int np = 0;
    for (int r = 0; r < R_COUNT; r++)
        if (allowed(pb, r) && !dominated(pb, i, r))
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
    double excess = stage_mem(pb, s, d->st[b] - d->st[a], d->a0[b] - d->a0[a]) -
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
 * rounded ones (a split).  The DP gives up (no bound) past the deadline. */
static void find_heuristic(const px_partition_problem *pb, px_partition_solution *split,
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
    clear_solver_fields(split);

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
        all_same = identical_layers(pb, 0, i);
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
            int np = layer_hull(pb, i, pts);
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
            if (elapsed_since(t0) > deadline_s)
                goto done;
            double fixed = stage_fixed_time(pb, s);
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
    find_heuristic(pb, split, &h, &t0, INFINITY);
    *t_lower = h.lower_s;
    free(split);
    return PX_OK;
}

/* ---- exact passes without GLPK ------------------------------------------ */

/* The third pass when it is a bottleneck path problem: one chunk per stage
 * and every layer at its fastest choice (no time spent recomputing, so the
 * second pass's bound leaves no layer another choice).  Then a stage's time
 * and memory depend only on its contiguous range [a, b), and the least peak
 * memory under "every stage's time <= t_cap" is a DP over (stage, last
 * layer): best[s][b] = min over a of max(best[s-1][a], mem(s, a, b)).  The
 * result is exact (no gap).  sol is replaced only by a split that fits, keeps
 * t_cap, and lowers the peak; returns false when the DP does not apply. */
static bool exact_peak_dp(const px_partition_problem *pb, double t_cap,
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
        layer_hull(pb, i, pts); /* pts[0]: the fastest allowed, leanest among equals */
        fast[i] = (unsigned char)pts[0];
        t0[i + 1] = t0[i] + pb->layer_time_s[i][pts[0]];
        st[i + 1] = st[i] + pb->layer_static_bytes[i];
        a0[i + 1] = a0[i] + pb->layer_act_bytes[i][pts[0]];
    }
    for (int s = 0; s < p; s++) {
        double fixed = stage_fixed_time(pb, s);
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
                    double mem = stage_mem(pb, s, st[b] - st[a], a0[b] - a0[a]);
                    if (!mem_fits(pb, mem))
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
        cand->time_limit_hit = sol->time_limit_hit;
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
static bool wants_peak_pass(const px_partition_problem *pb, const px_partition_opts *o)
{
    return o->minimise_memory && o->minimise_recompute && pb->pp > 1;
}

/* The whole answer without GLPK: the first pass proven by its bound (the
 * DP split meets the LP bound), no recomputation to minimise, and the third
 * pass exact by exact_peak_dp.  False (sol untouched) when a pass needs
 * GLPK. */
static bool solve_exact(const px_partition_problem *pb, const px_partition_opts *o,
                        const px_partition_solution *start, px_partition_solution *sol)
{
    if (!o->exact_dp || pb->vpp != 1 || start->recompute_time_s != 0.0)
        return false;
    *sol = *start;
    sol->proven_optimal = true;
    sol->gap = 0.0;
    sol->time_limit_hit = false;
    sol->note[0] = '\0';
    if (wants_peak_pass(pb, o)) {
        double wt, wc;
        objective_weights(pb, &wt, &wc);
        double t_cap = sol->objective_s * (1.0 + o->tie_rel) / wt;
        if (!exact_peak_dp(pb, t_cap, sol)) {
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
        int c = ilv_count(q, chunk_fixed_time(q->pb, s + k * q->p), x);
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
        int n = ilv_count(q, stage_fixed_time(q->pb, s), tmax);
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
    objective_weights(q->pb, &wt, &wc);
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
    return stage_mem(q->pb, s, (int64_t)n * q->w, (int64_t)n * q->a);
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
                if (sol->layers_per_chunk[c] < ilv_count(q, chunk_fixed_time(q->pb, c), x)) {
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
    objective_weights(q->pb, &wt, &wc);
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
static bool solve_interleaved_exact(const px_partition_problem *pb, const px_partition_opts *o,
                                    px_partition_solution *sol)
{
    int L = pb->n_layers;
    if (!o->exact_dp || pb->vpp < 2)
        return false;
    for (int i = 1; i < L; i++)
        if (!identical_layers(pb, 0, i))
            return false;
    ilv q = {.pb = pb, .p = pb->pp, .v = pb->vpp, .C = pb->pp * pb->vpp, .L = L};
    int pts[R_COUNT];
    layer_hull(pb, 0, pts);
    q.r = pts[0];
    q.t = pb->layer_time_s[0][q.r];
    q.w = pb->layer_static_bytes[0];
    q.a = pb->layer_act_bytes[0][q.r];
    if (!(q.t > 0.0))
        return false;
    for (int s = 0; s < q.p; s++) {
        int n = L;
        while (n > 0 && !mem_fits(pb, ilv_mem(&q, s, n)))
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
    double fx[3] = {0.0, chunk_fixed_time(pb, 0), chunk_fixed_time(pb, q.C - 1)};
    double ft[3] = {0.0, stage_fixed_time(pb, 0), stage_fixed_time(pb, q.p - 1)};
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
    clear_solver_fields(cand);
    if (!ilv_caps(&q, x, t, false, u))
        goto out;
    memcpy(n, u, (size_t)q.p * sizeof *n);
    if (!ilv_split(&q, n, x, cand) || cand->objective_s > j * (1.0 + 1e-9))
        goto out;
    if (wants_peak_pass(pb, o)) {
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

/* Pass 1 (least T) and pass 2 (least recomputation at that T) on one
 * program.  The heuristic split, when there is one, caps T from above and is
 * the answer whenever GLPK cannot better it in time; the DP's bound caps T
 * from below and proves the heuristic optimal when they meet. */
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

    px_partition_solution *start = malloc(sizeof *start);
    if (!start)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
    heuristic h = {false, 0.0};
    if (o->heuristics)
        find_heuristic(pb, start, &h, &t0, 0.5 * o->time_limit_s);
    if (solve_interleaved_exact(pb, o, sol)) {
        free(start);
        sol->solve_s = elapsed_since(&t0);
        return PX_OK;
    }
    double wt, wc;
    objective_weights(pb, &wt, &wc);
    if (h.have_split &&
        start->objective_s <= (wt + wc / pb->vpp) * h.lower_s * (1.0 + o->mip_gap) + 1e-15 &&
        solve_exact(pb, o, start, sol)) {
        free(start);
        sol->solve_s = elapsed_since(&t0);
        return PX_OK;
    }

    model m;
    st = model_build(&m, pb, BUILD_TIME, err);
    if (st) {
        free(start);
        return st;
    }
    px_milp_opts mo;
    px_milp_opts_init(&mo);
    mo.time_limit_s = o->time_limit_s;
    mo.mip_gap = o->mip_gap;
    mo.presolve = o->presolve;
    px_milp_result res;
    memset(&res, 0, sizeof res);
    px_error sub;
    px_error_clear(&sub);

    /* the bound on T bounds the objective: the slowest stage's v chunks
     * add up to T, so Tc >= T / v */
    double j_lower = (m.wt + m.wc / pb->vpp) * h.lower_s;
    bool solved_by_bound = h.have_split &&
                           start->objective_s <= j_lower * (1.0 + o->mip_gap) + 1e-15;
    if (solved_by_bound) {
        *sol = *start;
        sol->proven_optimal = true;
        sol->gap = 0.0;
    } else {
        double lo = j_lower / m.tscale * (1.0 - 1e-9);
        double hi = h.have_split ? start->objective_s / m.tscale * (1.0 + 1e-9) : INFINITY;
        px_milp_set_row_bounds(m.mp, m.j_row, lo, hi, NULL);
        st = px_milp_solve(m.mp, &mo, &res, &sub);
        if (st == PX_OK)
            st = model_decode(&m, sol, &sub);
        if (st == PX_OK && !sol->fits)
            st = PX_FAIL(&sub, PX_ERR_SOLVER,
                         "GLPK's split overflows stage %d by %lld bytes (numerical trouble)",
                         sol->fullest_stage, (long long)sol->max_over_bytes);
        if (st == PX_OK && h.have_split && start->objective_s < sol->objective_s)
            *sol = *start; /* GLPK stopped early with something worse */
        if (st == PX_OK) {
            sol->proven_optimal = res.outcome == PX_MILP_OPTIMAL;
            sol->time_limit_hit = res.time_limit_hit;
            sol->gap = res.gap;
        } else if (h.have_split && st != PX_ERR_INVALID && st != PX_ERR_NOMEM) {
            /* time limit without a better split, or GLPK trouble: the
             * heuristic split stands, unproven */
            *sol = *start;
            sol->time_limit_hit = res.time_limit_hit;
            st = PX_OK;
        } else if (st == PX_ERR_INFEASIBLE) {
            model_free(&m);
            free(start);
            double left = o->time_limit_s - elapsed_since(&t0);
            if (left < 0.1 * o->time_limit_s)
                left = 0.1 * o->time_limit_s;
            st = explain_infeasible(pb, o, left, sol, err);
            sol->solve_s = elapsed_since(&t0);
            return st;
        } else {
            model_free(&m);
            free(start);
            if (res.outcome == PX_MILP_NO_SOLUTION)
                return PX_FAIL(err, PX_ERR_SOLVER,
                               "partition of %d layers over %d stages x %d chunks: GLPK time "
                               "limit of %.3g s reached before any split that fits in memory "
                               "was found; raise the time limit or keep the uniform split",
                               pb->n_layers, pb->pp, pb->vpp, o->time_limit_s);
            return PX_FAIL(err, st, "partition of %d layers over %d stages x %d chunks: %s",
                           pb->n_layers, pb->pp, pb->vpp, sub.msg);
        }
        if (!sol->proven_optimal)
            snprintf(sol->note, sizeof sol->note,
                     "%s: best split found so far, not proven optimal (gap %s%.2f%%)",
                     res.time_limit_hit ? "GLPK time limit reached" : "GLPK stopped early",
                     sol->gap < 0 ? "unknown; bound " : "",
                     sol->gap >= 0     ? 100.0 * sol->gap
                     : j_lower > 0.0 ? 100.0 * (sol->objective_s / j_lower - 1.0)
                                       : 100.0);
    }

    /* Second pass: at the optimal objective, the least time spent
     * recomputing. */
    double left = o->time_limit_s - elapsed_since(&t0);
    double t1 = sol->max_stage_time_s, j1 = sol->objective_s;
    double j_cap = j1 / m.tscale * (1.0 + o->tie_rel);
    if (o->minimise_recompute && !sol->time_limit_hit && sol->recompute_time_s > 0.0 &&
        left > 0.01) {
        px_milp_set_row_bounds(m.mp, m.j_row, -INFINITY, j_cap, NULL);
        model_set_objective(&m, OBJ_RECOMPUTE);
        /* refinements: half the budget at most, so that a hard one does not
         * cost a planner loop the whole limit */
        mo.time_limit_s = fmin(left, 0.5 * o->time_limit_s);
        px_milp_result res2;
        px_error_clear(&sub);
        if (px_milp_solve(m.mp, &mo, &res2, &sub) == PX_OK) {
            *start = *sol;
            if (model_decode(&m, start, &sub) == PX_OK && start->fits &&
                start->objective_s <= j1 * (1.0 + o->tie_rel + 1e-7) &&
                start->recompute_time_s <= sol->recompute_time_s) {
                start->proven_optimal = sol->proven_optimal && res2.outcome == PX_MILP_OPTIMAL;
                start->time_limit_hit = res2.time_limit_hit;
                if (res2.time_limit_hit)
                    snprintf(start->note, sizeof start->note,
                             "GLPK time limit reached while minimising recomputation: the "
                             "split is time-optimal, its recompute choice may not be");
                *sol = *start;
            }
        } else {
            snprintf(sol->note, sizeof sol->note,
                     "recompute minimisation skipped: %.200s", sub.msg);
        }
    }

    /* Third pass: at that T and recomputation, the lowest peak memory (the
     * headroom goes to the stage that needs it; ties in time usually leave
     * a layer free to move off the stage with the most in flight). */
    left = o->time_limit_s - elapsed_since(&t0);
    if (wants_peak_pass(pb, o) && o->exact_dp && !sol->time_limit_hit &&
        exact_peak_dp(pb, j1 * (1.0 + o->tie_rel) / m.wt, sol)) {
        /* exact without GLPK */
    } else if (wants_peak_pass(pb, o) && !sol->time_limit_hit && left > 0.01) {
        double peak = (double)sol->stage_mem_bytes[sol->fullest_stage];
        double r2 = sol->recompute_time_s + o->tie_rel * t1;
        px_milp_set_row_bounds(m.mp, m.j_row, -INFINITY, j_cap, NULL);
        if (m.rc_row >= 0)
            px_milp_set_row_bounds(m.mp, m.rc_row, -INFINITY, r2 / m.tscale, NULL);
        model_set_objective(&m, OBJ_PEAK);
        mo.time_limit_s = fmin(left, 0.25 * o->time_limit_s);
        px_milp_result res3;
        px_error_clear(&sub);
        if (px_milp_solve(m.mp, &mo, &res3, &sub) == PX_OK) {
            *start = *sol;
            if (model_decode(&m, start, &sub) == PX_OK && start->fits &&
                start->objective_s <= j1 * (1.0 + o->tie_rel + 1e-7) &&
                start->recompute_time_s <= r2 + 1e-7 * t1 &&
                (double)start->stage_mem_bytes[start->fullest_stage] < peak) {
                start->proven_optimal = sol->proven_optimal;
                start->time_limit_hit = sol->time_limit_hit;
                *sol = *start;
            }
        }
    }
    model_free(&m);
    free(start);
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
    double best_t, best_added;  /* best_t: the objective */
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
        double added = 0.0, tc = 0.0, chunk = 0.0;
        for (int i = 0, c = 0, left = b->sizes[0]; i < b->L; i++) {
            int r = b->choices[b->pick[i]], s = b->stage_of[i];
            t[s] += pb->layer_time_s[i][r];
            act[s] += pb->layer_act_bytes[i][r];
            added += pb->layer_time_s[i][r] - fastest_time(pb, i);
            if (left == b->sizes[c])
                chunk = chunk_fixed_time(pb, c);
            chunk += pb->layer_time_s[i][r];
            if (--left == 0) {
                tc = chunk > tc ? chunk : tc;
                if (++c < b->C)
                    left = b->sizes[c];
            }
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
        double obj = objective_of(pb, tmax, tc);
        if (b->pass == 0) {
            if (over < b->best_over) {
                b->best_over = over;
                brute_record(b, b->over_sizes, b->over_rc);
            }
            if (fits && obj < b->best_t) {
                b->best_t = obj;
                b->feasible = true;
                brute_record(b, b->best_sizes, b->best_rc);
            }
        } else if (fits && obj <= b->best_t * (1.0 + b->o->tie_rel) &&
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
