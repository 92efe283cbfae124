/* px_partition_solve.c — px_partition_solve: the passes (least time, least
 * recomputation, least peak memory) over the heuristic, the exact passes and
 * the GLPK program. */
#include "px_partition.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_cost.h"
#include "px_milp.h"
#include "px_partition_internal.h"
#include "px_partition_memo.h"

/* A tie-break pass the limits left nothing for: the split stands, but its
 * tie-break is unproven (a loaded machine must not pass as an optimum). */
static void mark_pass_cut_short(px_partition_solution *sol, bool by_clock, const char *what)
{
    sol->proven_optimal = false;
    sol->limit_hit = true;
    sol->clock_hit = sol->clock_hit || by_clock;
    snprintf(sol->note, sizeof sol->note,
             "%s limit reached before minimising %s: the split is time-optimal, its "
             "tie-break may not be",
             by_clock ? "time" : "work", what);
}

/* A solve the clock stopped, not the work limit: its answer can differ on
 * another machine or under another load. */
static bool clock_stopped(const px_milp_result *res)
{
    return res->limit_hit && !res->work_limit_hit;
}

/* An answer the exact passes gave: no GLPK work; the clock could only have
 * cut the bound's DP short. */
static void answered_without_glpk(px_partition_solution *sol, const heuristic *h,
                                  const struct timespec *t0)
{
    sol->work = 0.0;
    sol->clock_hit = h->clock_hit;
    sol->solve_s = px_part_elapsed_since(t0);
}

/* What a later pass may spend: at most share of each limit, and no more than
 * is left of it.  False when too little is left to start (*by_clock: of the
 * time limit). */
static bool pass_limits(const px_partition_opts *o, const px_partition_solution *sol,
                        const struct timespec *t0, double share, px_milp_opts *mo,
                        bool *by_clock)
{
    double left_s = o->time_limit_s - px_part_elapsed_since(t0);
    double left_work = o->work_limit - sol->work;
    *by_clock = left_s <= 0.01;
    if (*by_clock || (o->work_limit > 0.0 && left_work <= 0.01 * o->work_limit))
        return false;
    mo->time_limit_s = fmin(left_s, share * o->time_limit_s);
    mo->work_limit = o->work_limit > 0.0 ? fmin(left_work, share * o->work_limit) : 0.0;
    return true;
}

/* Second pass: at the optimal objective j1, the least time spent
 * recomputing.  start is scratch. */
static void recompute_pass(model *m, const px_partition_opts *o, double j1,
                           px_partition_solution *start, px_partition_solution *sol,
                           px_milp_opts *mo, const struct timespec *t0)
{
    px_error sub;
    px_status st;
    double j_cap = j1 / m->tscale * (1.0 + o->tie_rel);
    bool wanted = o->minimise_recompute && !sol->limit_hit && sol->recompute_time_s > 0.0;
    bool by_clock;
    /* refinements: half the limits at most, so that a hard one does not cost
     * a planner loop the whole of them */
    if (wanted && !pass_limits(o, sol, t0, 0.5, mo, &by_clock)) {
        mark_pass_cut_short(sol, by_clock, "recomputation");
    } else if (wanted) {
        px_milp_set_row_bounds(m->mp, m->j_row, -INFINITY, j_cap, NULL);
        px_part_model_set_objective(m, OBJ_RECOMPUTE);
        px_milp_result res2;
        px_error_clear(&sub);
        st = px_milp_solve(m->mp, mo, &res2, &sub);
        sol->work += res2.work;
        if (st == PX_OK) {
            *start = *sol;
            if (px_part_model_decode(m, start, &sub) == PX_OK && start->fits &&
                start->objective_s <= j1 * (1.0 + o->tie_rel + 1e-7) &&
                start->recompute_time_s <= sol->recompute_time_s) {
                start->proven_optimal = sol->proven_optimal && res2.outcome == PX_MILP_OPTIMAL;
                start->limit_hit = res2.limit_hit;
                *sol = *start;
            }
            /* cut short, the pass proves nothing, improved or not */
            if (res2.limit_hit) {
                sol->proven_optimal = false;
                sol->limit_hit = true;
                sol->clock_hit = sol->clock_hit || clock_stopped(&res2);
                snprintf(sol->note, sizeof sol->note,
                         "GLPK %s reached while minimising recomputation: the split is "
                         "time-optimal, its recompute choice may not be",
                         px_milp_limit_name(&res2));
            }
        } else {
            snprintf(sol->note, sizeof sol->note,
                     "recompute minimisation skipped: %.200s", sub.msg);
        }
    }
}

/* Third pass: at that T (t1, objective j1) and recomputation, the lowest
 * peak memory (the headroom goes to the stage that needs it; ties in time
 * usually leave a layer free to move off the stage with the most in
 * flight).  start is scratch. */
static void peak_pass(model *m, const px_partition_opts *o, double t1, double j1,
                      px_partition_solution *start, px_partition_solution *sol,
                      px_milp_opts *mo, const struct timespec *t0)
{
    const px_partition_problem *pb = m->pb;
    px_error sub;
    double j_cap = j1 / m->tscale * (1.0 + o->tie_rel);
    bool wanted = px_part_wants_peak_pass(pb, o) && !sol->limit_hit;
    bool by_clock;
    if (wanted && o->exact_dp && px_part_exact_peak_dp(pb, j1 * (1.0 + o->tie_rel) / m->wt, sol)) {
        /* exact without GLPK */
    } else if (wanted && !pass_limits(o, sol, t0, 0.25, mo, &by_clock)) {
        mark_pass_cut_short(sol, by_clock, "peak memory");
    } else if (wanted) {
        double peak = (double)sol->stage_mem_bytes[sol->fullest_stage];
        double r2 = sol->recompute_time_s + o->tie_rel * t1;
        px_milp_set_row_bounds(m->mp, m->j_row, -INFINITY, j_cap, NULL);
        if (m->rc_row >= 0)
            px_milp_set_row_bounds(m->mp, m->rc_row, -INFINITY, r2 / m->tscale, NULL);
        px_part_model_set_objective(m, OBJ_PEAK);
        px_milp_result res3;
        px_error_clear(&sub);
        px_status st = px_milp_solve(m->mp, mo, &res3, &sub);
        sol->work += res3.work;
        if (st == PX_OK) {
            *start = *sol;
            if (px_part_model_decode(m, start, &sub) == PX_OK && start->fits &&
                start->objective_s <= j1 * (1.0 + o->tie_rel + 1e-7) &&
                start->recompute_time_s <= r2 + 1e-7 * t1 &&
                (double)start->stage_mem_bytes[start->fullest_stage] < peak) {
                start->proven_optimal = sol->proven_optimal;
                start->limit_hit = sol->limit_hit;
                *sol = *start;
            }
            /* a peak pass cut short leaves the peak unproven */
            if (res3.limit_hit) {
                sol->proven_optimal = false;
                sol->clock_hit = sol->clock_hit || clock_stopped(&res3);
            }
        }
    }
}

/* Pass 1 (least T) and pass 2 (least recomputation at that T) on one
 * program.  The heuristic split, when there is one, caps T from above and is
 * the answer whenever GLPK cannot better it in time; the DP's bound caps T
 * from below and proves the heuristic optimal when they meet.  Longer than
 * the rest: the first pass's outcomes (solved by the bound, by GLPK, the
 * heuristic split standing, no split fitting, GLPK failing) share the start
 * split, the program and the clock, and read best side by side; the later
 * passes are recompute_pass and peak_pass. */
static px_status solve_once(const px_partition_problem *pb, const px_partition_opts *opts,
                            px_partition_solution *sol, px_error *err)
{
    px_partition_opts defaults;
    const px_partition_opts *o;
    px_status st = px_part_begin(pb, opts, &defaults, &o, err);
    if (st)
        return st;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    px_part_clear_solver_fields(sol);

    px_partition_solution *start = malloc(sizeof *start);
    if (!start)
        return PX_FAIL(err, PX_ERR_NOMEM, "partition: out of memory");
    heuristic h = {false, 0.0, false};
    if (o->heuristics)
        px_part_find_heuristic(pb, start, &h, &t0, 0.5 * o->time_limit_s);
    if (px_part_solve_interleaved_exact(pb, o, sol)) {
        free(start);
        answered_without_glpk(sol, &h, &t0);
        return PX_OK;
    }
    double wt, wc;
    px_part_objective_weights(pb, &wt, &wc);
    if (h.have_split &&
        start->objective_s <= (wt + wc / pb->vpp) * h.lower_s * (1.0 + o->mip_gap) + 1e-15 &&
        px_part_solve_exact(pb, o, start, sol)) {
        free(start);
        answered_without_glpk(sol, &h, &t0);
        return PX_OK;
    }

    bool none_fits = false;
    if (px_part_solve_same_layers(pb, o, sol) ||
        px_part_solve_chunks_exact(pb, o, h.have_split ? start : NULL, sol, &none_fits)) {
        free(start);
        answered_without_glpk(sol, &h, &t0);
        return PX_OK;
    }
    if (none_fits) { /* proven; sol overflows least */
        free(start);
        answered_without_glpk(sol, &h, &t0);
        return px_part_infeasible_error(pb, sol, "best attempt", err);
    }
    model m;
    st = px_part_model_build(&m, pb, BUILD_TIME, err);
    if (st) {
        free(start);
        return st;
    }
    px_milp_opts mo;
    px_milp_opts_init(&mo);
    mo.time_limit_s = o->time_limit_s;
    mo.work_limit = o->work_limit;
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
            st = px_part_model_decode(&m, sol, &sub);
        if (st == PX_OK && !sol->fits)
            st = PX_FAIL(&sub, PX_ERR_SOLVER,
                         "GLPK's split overflows stage %d by %lld bytes (numerical trouble)",
                         sol->fullest_stage, (long long)sol->max_over_bytes);
        if (st == PX_OK && h.have_split && start->objective_s < sol->objective_s)
            *sol = *start; /* GLPK stopped early with something worse */
        if (st == PX_OK) {
            sol->proven_optimal = res.outcome == PX_MILP_OPTIMAL;
            sol->limit_hit = res.limit_hit;
            sol->clock_hit = clock_stopped(&res);
            sol->gap = res.gap;
        } else if (h.have_split && st != PX_ERR_INVALID && st != PX_ERR_NOMEM) {
            /* a limit without a better split, or GLPK trouble: the
             * heuristic split stands, unproven */
            *sol = *start;
            sol->limit_hit = res.limit_hit;
            sol->clock_hit = clock_stopped(&res);
            st = PX_OK;
        } else if (st == PX_ERR_INFEASIBLE) {
            px_part_model_free(&m);
            free(start);
            double left = o->time_limit_s - px_part_elapsed_since(&t0);
            if (left < 0.1 * o->time_limit_s)
                left = 0.1 * o->time_limit_s;
            st = px_part_explain_infeasible(pb, o, left, sol, err);
            sol->work = res.work; /* the first pass's; the explanation's own is not counted */
            sol->solve_s = px_part_elapsed_since(&t0);
            return st;
        } else {
            px_part_model_free(&m);
            free(start);
            sol->work = res.work;
            if (res.outcome == PX_MILP_NO_SOLUTION)
                return PX_FAIL(err, PX_ERR_SOLVER,
                               "partition of %d layers over %d stages x %d chunks: GLPK %s "
                               "reached before any split that fits in memory was found; raise "
                               "the limit or keep the uniform split",
                               pb->n_layers, pb->pp, pb->vpp, px_milp_limit_name(&res));
            return PX_FAIL(err, st, "partition of %d layers over %d stages x %d chunks: %s",
                           pb->n_layers, pb->pp, pb->vpp, sub.msg);
        }
        if (!sol->proven_optimal)
            snprintf(sol->note, sizeof sol->note,
                     "GLPK %s: best split found so far, not proven optimal (gap %s%.2f%%)",
                     !res.limit_hit          ? "stopped early"
                     : res.work_limit_hit ? "work limit reached"
                                          : "time limit reached",
                     sol->gap < 0 ? "unknown; bound " : "",
                     sol->gap >= 0     ? 100.0 * sol->gap
                     : j_lower > 0.0 ? 100.0 * (sol->objective_s / j_lower - 1.0)
                                       : 100.0);
    }

    sol->work = res.work;
    sol->clock_hit = sol->clock_hit || h.clock_hit;
    /* the passes after the first keep its objective within tie_rel */
    double t1 = sol->max_stage_time_s, j1 = sol->objective_s;
    recompute_pass(&m, o, j1, start, sol, &mo, &t0);
    peak_pass(&m, o, t1, j1, start, sol, &mo, &t0);
    px_part_model_free(&m);
    free(start);
    sol->solve_s = px_part_elapsed_since(&t0);
    return PX_OK;
}

/* The same problem under the same options asked again (the planner's
 * candidates often differ only where the program does not look) gets the
 * first answer from the caller's memo (o->memo) instead of another GLPK
 * run. */
px_status px_partition_solve(const px_partition_problem *pb, const px_partition_opts *opts,
                             px_partition_solution *sol, px_error *err)
{
    px_partition_opts defaults;
    px_partition_opts_init(&defaults);
    const px_partition_opts *o = opts ? opts : &defaults;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sol->work = 0.0; /* what this call spends: none on a memo hit or bad input */
    if (o->memo && px_part_memo_get(o->memo, pb, o, sol)) {
        sol->work = 0.0;
        sol->solve_s = px_part_elapsed_since(&t0);
        return PX_OK;
    }
    px_status st = solve_once(pb, o, sol, err);
    if (st == PX_OK && o->memo)
        px_part_memo_put(o->memo, pb, o, sol);
    return st;
}
