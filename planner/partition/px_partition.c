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
#include "px_partition_internal.h"


bool px_part_mem_fits(const px_partition_problem *pb, double mem)
{
    return mem <= (double)pb->mem_limit_bytes * (1.0 + MEM_TOL_REL);
}


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
    o->work_limit = PX_PARTITION_DEFAULT_WORK_LIMIT;
    o->mip_gap = PX_MILP_DEFAULT_GAP;
    o->minimise_recompute = true;
    o->tie_rel = 1e-6;
    o->presolve = true;
    o->heuristics = true;
    o->minimise_memory = true;
    o->exact_dp = true;
    o->memo = NULL;
}

bool px_part_allowed(const px_partition_problem *pb, int r)
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
            if (!px_part_allowed(pb, r))
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
                       "partition: mem_limit_bytes = %lld; must be > 0 (memory the device reports minus reserve)",
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
double px_part_stage_mem(const px_partition_problem *pb, int s, int64_t static_sum,
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

/* True when a stage's memory is within cap and the program's limit. */
static bool fits_under(const px_partition_problem *pb, double mem, double cap)
{
    return px_part_mem_fits(pb, mem) && mem <= cap;
}

/* Stage s's memory with j layers at the middle choice (px_part_fewest_mid). */
static double mid_mem(const px_partition_problem *pb, int s, int64_t static_sum, int64_t act0,
                      int64_t act_step, int j)
{
    return px_part_stage_mem(pb, s, static_sum, act0 + (int64_t)j * act_step);
}

int px_part_fewest_mid(const px_partition_problem *pb, int s, int64_t static_sum, int64_t act0,
                       int64_t act_step, int jmax, double cap)
{
    double m0 = px_part_stage_mem(pb, s, static_sum, act0);
    if (fits_under(pb, m0, cap))
        return 0;
    if (jmax <= 0 || !fits_under(pb, mid_mem(pb, s, static_sum, act0, act_step, jmax), cap))
        return -1;
    double drop = m0 - mid_mem(pb, s, static_sum, act0, act_step, 1);
    double lim = fmin(cap, (double)pb->mem_limit_bytes * (1.0 + MEM_TOL_REL));
    int j = drop > 0.0 ? (int)fmax(0.0, fmin((double)jmax, ceil((m0 - lim) / drop))) : jmax;
    while (j < jmax && !fits_under(pb, mid_mem(pb, s, static_sum, act0, act_step, j), cap))
        j++;
    while (j > 0 && fits_under(pb, mid_mem(pb, s, static_sum, act0, act_step, j - 1), cap))
        j--;
    return j;
}

double px_part_sum_dp(int p, int L, const double *g, int g_stride, const int *lo, const int *hi,
                      double *d, int *arg, int *n_out)
{
    for (int s = 0; s < p; s++)
        for (int b = 0; b <= L; b++) {
            double bv = INFINITY;
            int ba = -1;
            for (int n = lo[s]; n <= b && n <= hi[s]; n++) {
                double prev = s ? d[(s - 1) * (L + 1) + b - n] : (b == n ? 0.0 : INFINITY);
                double v = prev + g[s * g_stride + n];
                if (v < bv) {
                    bv = v;
                    ba = n;
                }
            }
            d[s * (L + 1) + b] = bv;
            arg[s * (L + 1) + b] = ba;
        }
    double r = d[(p - 1) * (L + 1) + L];
    if (r < INFINITY && n_out)
        for (int s = p - 1, b = L; s >= 0; s--) {
            n_out[s] = arg[s * (L + 1) + b];
            b -= n_out[s];
        }
    return r;
}

double px_part_stage_fixed_time(const px_partition_problem *pb, int s)
{
    double t = 0.0;
    if (s == 0)
        t += pb->embed_time_s;
    if (s == pb->pp - 1)
        t += pb->head_time_s;
    return t;
}

/* The embedding runs in chunk 0, the head in the last chunk. */
double px_part_chunk_fixed_time(const px_partition_problem *pb, int c)
{
    double t = 0.0;
    if (c == 0)
        t += pb->embed_time_s;
    if (c == pb->pp * pb->vpp - 1)
        t += pb->head_time_s;
    return t;
}

/* Weights of T and Tc in the objective (see px_partition_problem.n_micro). */
void px_part_objective_weights(const px_partition_problem *pb, double *wt, double *wc)
{
    bool chunks = pb->vpp > 1 && pb->n_micro > 0;
    *wt = chunks ? (double)pb->n_micro : 1.0;
    *wc = chunks ? (double)(pb->pp - 1) : 0.0;
}

double px_part_objective_of(const px_partition_problem *pb, double t, double tc)
{
    double wt, wc;
    px_part_objective_weights(pb, &wt, &wc);
    return wt * t + wc * tc;
}

double px_part_fastest_time(const px_partition_problem *pb, int i)
{
    double best = INFINITY;
    for (int r = 0; r < R_COUNT; r++)
        if (px_part_allowed(pb, r) && pb->layer_time_s[i][r] < best)
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
        double chunk_s = px_part_chunk_fixed_time(pb, c);
        for (int k = 0; k < sol->layers_per_chunk[c]; k++, i++) {
            int r = sol->layer_recompute[i];
            if (r >= R_COUNT || !px_part_allowed(pb, r))
                return PX_FAIL(err, PX_ERR_INVALID,
                               "partition split: layer %d recompute %d is not allowed "
                               "(allowed_recompute = 0x%x)",
                               i, r, pb->allowed_recompute);
            sol->stage_time_s[s] += pb->layer_time_s[i][r];
            st_sum[s] += pb->layer_static_bytes[i];
            act_sum[s] += pb->layer_act_bytes[i][r];
            sol->stage_layers[s]++;
            sol->stage_recompute[s][r]++;
            sol->recompute_time_s += pb->layer_time_s[i][r] - px_part_fastest_time(pb, i);
            chunk_s += pb->layer_time_s[i][r];
        }
        if (chunk_s > sol->max_chunk_time_s)
            sol->max_chunk_time_s = chunk_s;
    }
    sol->max_stage_time_s = -1.0;
    sol->fits = true;
    double worst_over = -INFINITY;
    for (int s = 0; s < pb->pp; s++) {
        sol->stage_time_s[s] += px_part_stage_fixed_time(pb, s);
        double mem = px_part_stage_mem(pb, s, st_sum[s], act_sum[s]);
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
        if (!px_part_mem_fits(pb, mem))
            sol->fits = false;
    }
    sol->max_over_bytes = (int64_t)ceil(worst_over);
    sol->objective_s = px_part_objective_of(pb, sol->max_stage_time_s, sol->max_chunk_time_s);
    return PX_OK;
}

void px_part_clear_solver_fields(px_partition_solution *sol)
{
    sol->proven_optimal = false;
    sol->limit_hit = false;
    sol->clock_hit = false;
    sol->work = 0.0;
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
    if ((int)rc < 0 || rc >= PX_RECOMPUTE_COUNT || !px_part_allowed(pb, (int)rc))
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
    px_part_clear_solver_fields(sol);
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
void px_part_format_recompute(const px_partition_problem *pb, const px_partition_solution *sol,
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

/* The options' ranges only. */
static px_status check_opts(const px_partition_opts *o, px_error *err)
{
    if (!(o->time_limit_s > 0.0) || !isfinite(o->time_limit_s))
        return PX_FAIL(err, PX_ERR_INVALID, "partition: time_limit_s = %g; must be > 0",
                       o->time_limit_s);
    if (!(o->work_limit >= 0.0) || !isfinite(o->work_limit))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "partition: work_limit = %g; must be >= 0 (0: none) and finite",
                       o->work_limit);
    if (!(o->mip_gap >= 0.0 && o->mip_gap < 1.0))
        return PX_FAIL(err, PX_ERR_INVALID, "partition: mip_gap = %g; allowed 0 <= gap < 1",
                       o->mip_gap);
    if (!(o->tie_rel >= 0.0 && o->tie_rel < 1.0))
        return PX_FAIL(err, PX_ERR_INVALID, "partition: tie_rel = %g; allowed 0 <= tie_rel < 1",
                       o->tie_rel);
    return PX_OK;
}

px_status px_part_begin(const px_partition_problem *pb, const px_partition_opts *opts,
                        px_partition_opts *defaults, const px_partition_opts **o,
                        px_error *err)
{
    px_partition_opts_init(defaults);
    *o = opts ? opts : defaults;
    PX_TRY(check_opts(*o, err));
    return px_partition_validate(pb, err);
}
