/* px_partition_brute.c — the exhaustive reference the tests hold the
 * partitioner against. */
#include "px_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_cost.h"
#include "px_milp.h"
#include "px_partition_internal.h"

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
            added += pb->layer_time_s[i][r] - px_part_fastest_time(pb, i);
            if (left == b->sizes[c])
                chunk = px_part_chunk_fixed_time(pb, c);
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
            double ts = t[s] + px_part_stage_fixed_time(pb, s);
            if (ts > tmax)
                tmax = ts;
            double mem = px_part_stage_mem(pb, s, st_sum[s], act[s]);
            fits = fits && px_part_mem_fits(pb, mem);
            if (mem - (double)pb->mem_limit_bytes > over)
                over = mem - (double)pb->mem_limit_bytes;
        }
        double obj = px_part_objective_of(pb, tmax, tc);
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
    const px_partition_opts *o;
    px_status st = px_part_begin(pb, opts, &defaults, &o, err);
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
        if (px_part_allowed(pb, r))
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
    px_part_clear_solver_fields(sol);
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
