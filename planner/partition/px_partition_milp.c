/* px_partition_milp.c — the stage partition as a GLPK program: building it
 * from a problem, reading a split back, and its objectives.  Formulation:
 * docs/partition.md. */
#include "px_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_cost.h"
#include "px_milp.h"
#include "px_partition_internal.h"

/* ---- the MILP ------------------------------------------------------------ */


bool px_part_identical_layers(const px_partition_problem *pb, int i, int j)
{
    if (pb->layer_static_bytes[i] != pb->layer_static_bytes[j])
        return false;
    for (int r = 0; r < R_COUNT; r++)
        if (px_part_allowed(pb, r) && (pb->layer_time_s[i][r] != pb->layer_time_s[j][r] ||
                               pb->layer_act_bytes[i][r] != pb->layer_act_bytes[j][r]))
            return false;
    return true;
}

/* Is option r of layer i worth a variable?  Not when another allowed option
 * is no slower and needs no more memory: dropping it cannot change the
 * optimum of either pass (ties keep the lower index). */
bool px_part_dominated(const px_partition_problem *pb, int i, int r)
{
    for (int q = 0; q < R_COUNT; q++) {
        if (q == r || !px_part_allowed(pb, q))
            continue;
        double tq = pb->layer_time_s[i][q], tr = pb->layer_time_s[i][r];
        int64_t aq = pb->layer_act_bytes[i][q], ar = pb->layer_act_bytes[i][r];
        if (tq <= tr && aq <= ar && (tq < tr || aq < ar || q < r))
            return true;
    }
    return false;
}

void px_part_model_free(model *m)
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

/* The runs of identical layers, the program's arrays and its scales.  On
 * failure m holds nothing to free. */
static px_status model_alloc(model *m, const px_partition_problem *pb, px_error *err)
{
    memset(m, 0, sizeof *m);
    m->pb = pb;
    m->L = pb->n_layers;
    m->C = pb->pp * pb->vpp;
    m->p = pb->pp;
    m->t_col = m->e_col = m->p_col = m->rc_row = m->tc_col = m->j_row = -1;
    px_part_objective_weights(pb, &m->wt, &m->wc);
    int L = m->L, C = m->C;

    m->run_first = malloc((size_t)(L + 1) * sizeof *m->run_first);
    if (!m->run_first)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition MILP: out of memory");
    m->K = 0;
    for (int i = 0; i < L; i++)
        if (i == 0 || !px_part_identical_layers(pb, i - 1, i))
            m->run_first[m->K++] = i;
    m->run_first[m->K] = L;
    int K = m->K;

    double n_int = (double)(C - 1) * K * 2 + (double)K * C * R_COUNT;
    if (n_int > MAX_INTEGERS) {
        px_part_model_free(m);
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
        px_part_model_free(m);
        return PX_FAIL(err, PX_ERR_NOMEM, "partition MILP: out of memory");
    }
    px_status st = px_milp_new(&m->mp, err);
    if (st) {
        px_part_model_free(m);
        return st;
    }

    /* Scales: times in units of an ideal stage, bytes in units of the limit,
     * so that every coefficient GLPK sees is O(1). */
    double ideal = pb->embed_time_s + pb->head_time_s;
    for (int i = 0; i < L; i++)
        ideal += px_part_fastest_time(pb, i);
    ideal /= pb->pp;
    m->tscale = ideal > 0.0 ? ideal : 1.0;
    m->mscale = (double)pb->mem_limit_bytes;
    return PX_OK;
}

/* The objective's columns: T and P (and Tc with interleaving) when
 * minimising time, E (the overflow) otherwise. */
static px_status add_objective_cols(model *m, build_mode mode, px_error *err)
{
    px_status st;
    if (mode == BUILD_TIME) {
        st = px_milp_add_col(m->mp, "T", PX_MILP_CONTINUOUS, 0.0, INFINITY, m->wt, &m->t_col,
                             err);
        /* a stage fits within the limit's tolerance, as px_part_mem_fits
         * and the brute force judge it */
        if (!st)
            st = px_milp_add_col(m->mp, "P", PX_MILP_CONTINUOUS, 0.0, 1.0 + MEM_TOL_REL, 0.0,
                                 &m->p_col, err);
        if (!st && m->wc > 0.0)
            st = px_milp_add_col(m->mp, "Tc", PX_MILP_CONTINUOUS, 0.0, INFINITY, m->wc,
                                 &m->tc_col, err);
    } else
        st = px_milp_add_col(m->mp, "E", PX_MILP_CONTINUOUS, 0.0, INFINITY, 1.0, &m->e_col, err);
    return st;
}

/* Boundary c (1..C-1) is the first layer of chunk c: it lies in
 * c .. L - C + c.  Columns u (the run it falls in) and off (where in it). */
static px_status add_boundary_cols(model *m, px_error *err)
{
    int L = m->L, C = m->C, K = m->K;
    char name[64];
    px_status st = PX_OK;
    for (size_t q = 0; q < (size_t)C * K; q++)
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
    return st;
}

/* Columns n: the layers of run k in chunk c with recompute choice r, for
 * the choices allowed and not dominated. */
static px_status add_count_cols(model *m, px_error *err)
{
    const px_partition_problem *pb = m->pb;
    int C = m->C, K = m->K;
    char name[64];
    px_status st = PX_OK;
    for (size_t q = 0; q < (size_t)K * C * R_COUNT; q++)
        m->n[q] = -1;
    for (int k = 0; k < K && !st; k++) {
        int i = m->run_first[k];
        for (int c = 0; c < C && !st; c++) {
            if (!run_meets_chunk(m, k, c))
                continue;
            for (int r = 0; r < R_COUNT && !st; r++) {
                if (!px_part_allowed(pb, r) || px_part_dominated(pb, i, r))
                    continue;
                snprintf(name, sizeof name, "n_%d_%d_%d", k, c, r);
                st = px_milp_add_col(m->mp, name, PX_MILP_INTEGER, 0, run_len(m, k), 0,
                                     &m->n[((size_t)k * C + c) * R_COUNT + r], err);
            }
        }
    }
    return st;
}

/* Each boundary in one run, at an offset inside it; boundaries in order,
 * every chunk non-empty: B[c+1] - B[c] >= 1, with B[c] = sum_k D[k][c];
 * the layers of run k in chunk c, D[k][c+1] - D[k][c], split over the
 * recompute choices. */
static px_status add_split_rows(model *m, px_error *err)
{
    int C = m->C, K = m->K;
    px_status st = PX_OK;
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
    for (int c = 0; c < C && !st; c++) {
        double rhs = 1.0;
        row_begin(m);
        row_add_b(m, c + 1, 1.0, &rhs);
        row_add_b(m, c, -1.0, &rhs);
        if (m->rn > 0)
            st = add_row(m, "order_%d%.0d", c, 0, rhs, INFINITY, err);
    }
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
    return st;
}

/* Per stage: time <= T (time mode), memory <= limit (or limit + E); with
 * interleaving, every chunk's time <= Tc. */
static px_status add_stage_rows(model *m, build_mode mode, px_error *err)
{
    const px_partition_problem *pb = m->pb;
    int C = m->C, K = m->K;
    px_status st = PX_OK;
    for (int s = 0; s < m->p && !st; s++) {
        if (mode == BUILD_TIME) {
            row_begin(m);
            for (int c = s; c < C; c += m->p)
                for (int k = 0; k < K; k++)
                    for (int r = 0; r < R_COUNT; r++)
                        row_add(m, m->n[((size_t)k * C + c) * R_COUNT + r],
                                pb->layer_time_s[m->run_first[k]][r] / m->tscale);
            row_add(m, m->t_col, -1.0);
            st = add_row(m, "time_%d%.0d", s, 0, -INFINITY,
                         -px_part_stage_fixed_time(pb, s) / m->tscale, err);
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
        double cap = -px_part_stage_mem(pb, s, 0, 0);
        if (mode == BUILD_OVERFLOW) {
            row_add(m, m->e_col, -1.0);
            cap += (double)pb->mem_limit_bytes;
        } else {
            row_add(m, m->p_col, -1.0);
        }
        st = add_row(m, "mem_%d%.0d", s, 0, -INFINITY, cap / m->mscale, err);
    }
    for (int c = 0; c < C && m->tc_col >= 0 && !st; c++) {
        row_begin(m);
        for (int k = 0; k < K; k++)
            for (int r = 0; r < R_COUNT; r++)
                row_add(m, m->n[((size_t)k * C + c) * R_COUNT + r],
                        pb->layer_time_s[m->run_first[k]][r] / m->tscale);
        row_add(m, m->tc_col, -1.0);
        st = add_row(m, "chunk_%d%.0d", c, 0, -INFINITY,
                     -px_part_chunk_fixed_time(pb, c) / m->tscale, err);
    }
    return st;
}

/* The objective as a row, and the time spent recomputing: free rows that
 * the later passes bound. */
static px_status add_pass_rows(model *m, px_error *err)
{
    const px_partition_problem *pb = m->pb;
    row_begin(m);
    row_add(m, m->t_col, m->wt);
    row_add(m, m->tc_col, m->wc);
    px_status st = px_milp_add_row(m->mp, "objective", -INFINITY, INFINITY, m->rn, m->rc,
                                   m->rv, &m->j_row, err);
    if (st)
        return st;
    row_begin(m);
    for (int k = 0; k < m->K; k++) {
        int i = m->run_first[k];
        double fast = px_part_fastest_time(pb, i);
        for (int c = 0; c < m->C; c++)
            for (int r = 0; r < R_COUNT; r++)
                row_add(m, m->n[((size_t)k * m->C + c) * R_COUNT + r],
                        (pb->layer_time_s[i][r] - fast) / m->tscale);
    }
    if (m->row_overflow)
        return PX_FAIL(err, PX_ERR_INTERNAL, "partition MILP: a row outgrew its buffer");
    if (m->rn > 0) {
        char rname[32];
        snprintf(rname, sizeof rname, "recompute");
        st = px_milp_add_row(m->mp, rname, -INFINITY, INFINITY, m->rn, m->rc, m->rv,
                             &m->rc_row, err);
    }
    return st;
}

px_status px_part_model_build(model *m, const px_partition_problem *pb, build_mode mode,
                              px_error *err)
{
    px_status st = model_alloc(m, pb, err);
    if (st)
        return st;
    st = add_objective_cols(m, mode, err);
    if (!st)
        st = add_boundary_cols(m, err);
    if (!st)
        st = add_count_cols(m, err);
    if (!st)
        st = add_split_rows(m, err);
    if (!st)
        st = add_stage_rows(m, mode, err);
    if (!st && mode == BUILD_TIME)
        st = add_pass_rows(m, err);
    if (st)
        px_part_model_free(m);
    return st;
}

static int int_value(const model *m, int col)
{
    return col < 0 ? 0 : (int)lround(px_milp_value(m->mp, col));
}

/* Reads the split out of the last solve into sol and evaluates it.  Within
 * a (run, chunk) the counts go to the layers in order, the most memory-saving
 * choice first (which identical layer gets it does not matter). */
px_status px_part_model_decode(const model *m, px_partition_solution *sol, px_error *err)
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


/* The three passes' objectives: T; the time spent recomputing; the peak
 * memory share P. */
void px_part_model_set_objective(model *m, objective which)
{
    px_milp_set_obj(m->mp, m->t_col, which == OBJ_TIME ? m->wt : 0.0, NULL);
    if (m->tc_col >= 0)
        px_milp_set_obj(m->mp, m->tc_col, which == OBJ_TIME ? m->wc : 0.0, NULL);
    px_milp_set_obj(m->mp, m->p_col, which == OBJ_PEAK ? 1.0 : 0.0, NULL);
    for (int k = 0; k < m->K; k++) {
        int i = m->run_first[k];
        double fast = px_part_fastest_time(m->pb, i);
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

double px_part_elapsed_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + 1e-9 * (double)(t.tv_nsec - t0->tv_nsec);
}
