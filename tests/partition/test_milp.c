/* The GLPK wrapper: known optima, infeasible and unbounded programs, input
 * validation before GLPK sees anything, the error guard (a GLPK error becomes
 * a px_error, not an abort), and the time limit with and without an
 * incumbent. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "px_milp.h"
#include "px_test.h"

static int add_col(px_milp *mp, px_milp_kind kind, double lb, double ub, double obj)
{
    int col = -1;
    px_error err;
    px_status st = px_milp_add_col(mp, NULL, kind, lb, ub, obj, &col, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    return col;
}

static void add_row(px_milp *mp, double lo, double hi, int n, const int *cols,
                    const double *vals)
{
    px_error err;
    px_status st = px_milp_add_row(mp, NULL, lo, hi, n, cols, vals, NULL, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
}

static px_milp_opts exact(void)
{
    px_milp_opts o;
    px_milp_opts_init(&o);
    o.mip_gap = 0.0;
    return o;
}

/* max 5a + 4b + 3c  s.t.  2a + 3b + c <= 5: a = b = 1 (9), not a = c (8). */
static void knapsack(bool presolve)
{
    px_milp *mp;
    px_error err;
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    int a = add_col(mp, PX_MILP_BINARY, 0, 1, -5);
    int b = add_col(mp, PX_MILP_BINARY, 0, 1, -4);
    int c = add_col(mp, PX_MILP_BINARY, 0, 1, -3);
    add_row(mp, -INFINITY, 5, 3, (int[]){a, b, c}, (double[]){2, 3, 1});
    px_milp_opts o = exact();
    o.presolve = presolve;
    px_milp_result res;
    px_status st = px_milp_solve(mp, &o, &res, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    CHECK(res.outcome == PX_MILP_OPTIMAL);
    CHECK_CLOSE(res.objective, -9.0, 0, 1e-9);
    CHECK(px_milp_value(mp, a) == 1.0 && px_milp_value(mp, b) == 1.0 &&
          px_milp_value(mp, c) == 0.0);
    CHECK(!res.limit_hit);
    px_milp_free(mp);
}

/* min x + y, x integer, x >= 1.5 (row), y >= 0.25 continuous: 2.25. */
static void mixed(void)
{
    px_milp *mp;
    px_error err;
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    int x = add_col(mp, PX_MILP_INTEGER, 0, 10, 1);
    int y = add_col(mp, PX_MILP_CONTINUOUS, 0.25, INFINITY, 1);
    add_row(mp, 1.5, INFINITY, 1, (int[]){x}, (double[]){1});
    px_milp_opts o = exact();
    px_milp_result res;
    CHECK(px_milp_solve(mp, &o, &res, &err) == PX_OK);
    CHECK_CLOSE(px_milp_value(mp, x), 2.0, 0, 1e-12);
    CHECK_CLOSE(px_milp_value(mp, y), 0.25, 0, 1e-9);
    CHECK_CLOSE(res.objective, 2.25, 0, 1e-9);
    /* a second pass on the same program: change the objective and a bound */
    CHECK(px_milp_set_obj(mp, y, -1.0, &err) == PX_OK);
    CHECK(px_milp_set_col_bounds(mp, y, 0.25, 3.0, &err) == PX_OK);
    CHECK(px_milp_solve(mp, &o, &res, &err) == PX_OK);
    CHECK_CLOSE(px_milp_value(mp, y), 3.0, 0, 1e-9);
    CHECK_CLOSE(res.objective, -1.0, 0, 1e-9);
    px_milp_free(mp);
}

/* LP-feasible, integer-infeasible (0.2 <= x <= 0.8, x integer), and
 * LP-infeasible (binary x >= 2 through a row), both with and without
 * presolve. */
static void infeasible(bool presolve)
{
    px_milp_opts o = exact();
    o.presolve = presolve;
    px_milp_result res;
    px_error err;
    px_milp *mp;
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    int x = add_col(mp, PX_MILP_INTEGER, 0, 5, 1);
    int y = add_col(mp, PX_MILP_INTEGER, 0, 5, 1);
    add_row(mp, 0.2, 0.8, 2, (int[]){x, y}, (double[]){1, 1});
    px_status st = px_milp_solve(mp, &o, &res, &err);
    CHECK_MSG(st == PX_ERR_INFEASIBLE, "presolve %d: got %s: %s", presolve, px_status_name(st),
              err.msg);
    CHECK(res.outcome == PX_MILP_INFEASIBLE);
    CHECK(isnan(px_milp_value(mp, x)));
    px_milp_free(mp);

    CHECK(px_milp_new(&mp, &err) == PX_OK);
    x = add_col(mp, PX_MILP_BINARY, 0, 1, 1);
    add_row(mp, 2, INFINITY, 1, (int[]){x}, (double[]){1});
    st = px_milp_solve(mp, &o, &res, &err);
    CHECK_MSG(st == PX_ERR_INFEASIBLE, "presolve %d: got %s: %s", presolve, px_status_name(st),
              err.msg);
    px_milp_free(mp);
}

static void unbounded(void)
{
    px_milp *mp;
    px_error err;
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    int x = add_col(mp, PX_MILP_INTEGER, 0, INFINITY, -1);
    int y = add_col(mp, PX_MILP_CONTINUOUS, 0, INFINITY, 0);
    add_row(mp, 0, INFINITY, 2, (int[]){x, y}, (double[]){1, -1});
    px_milp_opts o = exact();
    px_milp_result res;
    px_status st = px_milp_solve(mp, &o, &res, &err);
    CHECK_MSG(st == PX_ERR_SOLVER && strstr(err.msg, "unbounded"), "got %s: %s",
              px_status_name(st), err.msg);
    px_milp_free(mp);
}

static void validation(void)
{
    px_milp *mp;
    px_error err;
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    int x = add_col(mp, PX_MILP_BINARY, 0, 1, 1);
    int col;
    CHECK(px_milp_add_col(mp, "b", PX_MILP_BINARY, 0, 2, 0, &col, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "binary") != NULL);
    CHECK(px_milp_add_col(mp, "i", PX_MILP_INTEGER, 0.5, 2, 0, &col, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "whole") != NULL);
    CHECK(px_milp_add_col(mp, "c", PX_MILP_CONTINUOUS, 3, 2, 0, &col, &err) == PX_ERR_INVALID);
    CHECK(px_milp_add_col(mp, "n", PX_MILP_CONTINUOUS, 0, 1, NAN, &col, &err) ==
          PX_ERR_INVALID);
    CHECK(px_milp_add_row(mp, "r", 0, 1, 1, (int[]){5}, (double[]){1}, NULL, &err) ==
          PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "column 5") && strstr(err.msg, "allowed 0..0"), "%s", err.msg);
    CHECK(px_milp_add_row(mp, "d", 0, 1, 2, (int[]){x, x}, (double[]){1, 1}, NULL, &err) ==
          PX_ERR_INVALID);
    CHECK(strstr(err.msg, "twice") != NULL);
    CHECK(px_milp_add_row(mp, "v", 0, 1, 1, (int[]){x}, (double[]){INFINITY}, NULL, &err) ==
          PX_ERR_INVALID);
    CHECK(px_milp_add_row(mp, "b", 2, 1, 1, (int[]){x}, (double[]){1}, NULL, &err) ==
          PX_ERR_INVALID);
    CHECK(px_milp_n_rows(mp) == 0 && px_milp_n_cols(mp) == 1);
    px_milp_opts o = exact();
    px_milp_result res;
    o.time_limit_s = 0;
    CHECK(px_milp_solve(mp, &o, &res, &err) == PX_ERR_INVALID);
    o = exact();
    o.work_limit = -1;
    CHECK(px_milp_solve(mp, &o, &res, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "work limit") != NULL, "%s", err.msg);
    o = exact();
    o.mip_gap = 1.5;
    CHECK(px_milp_solve(mp, &o, &res, &err) == PX_ERR_INVALID);
    px_milp_free(mp);
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    CHECK(px_milp_solve(mp, NULL, &res, &err) == PX_ERR_INVALID); /* no columns */
    px_milp_free(mp);
}

static void error_guard(void)
{
    px_error err;
    px_error_clear(&err);
    px_status st = px_milp_check_error_guard(&err);
    CHECK_MSG(st == PX_ERR_SOLVER, "got %s: %s", px_status_name(st), err.msg);
    /* GLPK names the routine that rejected the call */
    CHECK_MSG(strstr(err.msg, "glp_set_obj_coef") != NULL, "%s", err.msg);
    /* and GLPK is usable afterwards */
    knapsack(true);
}

/* 48 items of weight 2 * w_i, capacity odd: the row sum_i 2 w_i x_i = odd is
 * infeasible, but the LP relaxation is not and branch-and-bound cannot see
 * the parity, so GLPK runs out of its limit before it finds anything. */
static px_milp *parity_program(void)
{
    px_milp *mp;
    px_error err;
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    enum { N = 48 };
    int cols[N];
    double vals[N], sum = 0;
    uint64_t s = 12345;
    for (int i = 0; i < N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double w = (double)(100000 + (s >> 33) % 900000);
        cols[i] = add_col(mp, PX_MILP_BINARY, 0, 1, 0);
        vals[i] = 2 * w;
        sum += 2 * w;
    }
    double target = 2 * floor(sum / 4) + 1; /* odd */
    add_row(mp, target, target, N, cols, vals);
    return mp;
}

static void time_limit_without_solution(void)
{
    px_error err;
    px_milp *mp = parity_program();
    px_milp_opts o = exact();
    o.time_limit_s = 0.3;
    px_milp_result res;
    px_status st = px_milp_solve(mp, &o, &res, &err);
    CHECK_MSG(st == PX_ERR_SOLVER && strstr(err.msg, "time limit"), "got %s: %s",
              px_status_name(st), err.msg);
    CHECK(res.outcome == PX_MILP_NO_SOLUTION && res.limit_hit);
    CHECK(res.solve_s < 5.0);
    px_milp_free(mp);
}

/* A strongly correlated knapsack (value = weight + constant): feasible
 * points everywhere, optimality very hard to prove.  vals gets the weights,
 * *cap the capacity. */
enum { KNAP_N = 100 }; /* 60 items: GLPK proves it in 30 ms; 100: not in 5 s */
static px_milp *hard_knapsack(int *cols, double *vals, double *cap)
{
    px_milp *mp;
    px_error err;
    CHECK(px_milp_new(&mp, &err) == PX_OK);
    double sum = 0;
    uint64_t s = 777;
    for (int i = 0; i < KNAP_N; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double w = (double)(100000 + (s >> 33) % 900000);
        cols[i] = add_col(mp, PX_MILP_BINARY, 0, 1, -(w + 100000));
        vals[i] = w;
        sum += w;
    }
    *cap = floor(sum / 2) + 0.5;
    add_row(mp, -INFINITY, *cap, KNAP_N, cols, vals);
    return mp;
}

/* The time limit stops the hard knapsack with an incumbent: usable, flagged
 * as not proven. */
static void time_limit_with_incumbent(void)
{
    enum { N = KNAP_N };
    int cols[N];
    double vals[N], cap;
    px_error err;
    px_milp *mp = hard_knapsack(cols, vals, &cap);
    px_milp_opts o = exact();
    o.time_limit_s = 0.3;
    px_milp_result res;
    px_status st = px_milp_solve(mp, &o, &res, &err);
    CHECK_MSG(st == PX_OK, "got %s: %s", px_status_name(st), err.msg);
    CHECK_MSG(res.outcome == PX_MILP_FEASIBLE && res.limit_hit && !res.work_limit_hit,
              "outcome %d", (int)res.outcome);
    double used = 0;
    for (int i = 0; i < N; i++)
        used += vals[i] * px_milp_value(mp, cols[i]);
    CHECK(used <= cap);
    CHECK(res.objective < 0);
    px_milp_free(mp);
}

/* The work limit stops the hard knapsack where the clock does not reach:
 * the same incumbent under a time limit of one minute and of two, so the
 * answer does not depend on the machine's speed or load.  Without any
 * incumbent (the parity program) the error names the work limit. */
static void work_limit(void)
{
    enum { N = KNAP_N };
    int cols[N];
    double vals[N], cap, x[N];
    px_error err;
    px_milp *mp = hard_knapsack(cols, vals, &cap);
    px_milp_opts o = exact();
    o.work_limit = 2e5; /* about a hundred nodes: tens of milliseconds */
    double objective = 0.0;
    for (int run = 0; run < 2; run++) {
        o.time_limit_s = run ? 120.0 : 60.0;
        px_milp_result res;
        px_status st = px_milp_solve(mp, &o, &res, &err);
        CHECK_MSG(st == PX_OK, "got %s: %s", px_status_name(st), err.msg);
        CHECK_MSG(res.outcome == PX_MILP_FEASIBLE && res.limit_hit && res.work_limit_hit,
                  "outcome %d, limit %d, work %d", (int)res.outcome, res.limit_hit,
                  res.work_limit_hit);
        CHECK_MSG(res.work > o.work_limit, "work %g", res.work);
        CHECK(strcmp(px_milp_limit_name(&res), "work limit") == 0);
        for (int i = 0; i < N; i++) {
            double v = px_milp_value(mp, cols[i]);
            if (run == 0)
                x[i] = v;
            CHECK_MSG(v == x[i], "item %d: %g then %g", i, x[i], v);
        }
        if (run == 0)
            objective = res.objective;
        CHECK(res.objective == objective);
    }
    px_milp_free(mp);

    mp = parity_program();
    o = exact();
    o.time_limit_s = 60.0;
    o.work_limit = 2e5;
    px_milp_result res;
    px_status st = px_milp_solve(mp, &o, &res, &err);
    CHECK_MSG(st == PX_ERR_SOLVER && strstr(err.msg, "work limit"), "got %s: %s",
              px_status_name(st), err.msg);
    CHECK(res.outcome == PX_MILP_NO_SOLUTION && res.work_limit_hit);
    px_milp_free(mp);
}

int main(void)
{
    knapsack(true);
    knapsack(false);
    mixed();
    infeasible(true);
    infeasible(false);
    unbounded();
    validation();
    error_guard();
    time_limit_without_solution();
    time_limit_with_incumbent();
    work_limit();
    return px_test_result("milp");
}
