/* Stage partitioning + recomputation: the MILP against exhaustive search on
 * many small random instances (seed printed; PX_SEED=<n> reproduces a run),
 * hand-worked cases, the infeasible message, the time limit, validation and
 * the schedule's in-flight counts. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "px_partition.h"
#include "px_test.h"

static uint64_t rng_state;
static double urand(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}
static int irand(int lo, int hi) /* [lo, hi] */
{
    return lo + (int)(urand() * (hi - lo + 1));
}

static px_partition_opts exact_opts(void)
{
    px_partition_opts o;
    px_partition_opts_init(&o);
    o.mip_gap = 0.0;
    o.time_limit_s = 30.0; /* small programs take milliseconds; a loaded machine more */
    o.work_limit = 0.0;    /* to the proof: the comparisons need proven optima */
    return o;
}

/* Random layers shaped like real ones: recomputing costs time and saves
 * activation memory, full saves most; heterogeneous sizes (dense vs MoE). */
static void random_problem(px_partition_problem *pb, int max_layers)
{
    px_partition_problem_init(pb);
    pb->pp = irand(1, 3);
    pb->vpp = irand(1, 2);
    int chunks = pb->pp * pb->vpp;
    pb->n_layers = irand(chunks > 2 ? chunks : 2, max_layers);
    if (pb->n_layers < chunks)
        pb->n_layers = chunks;
    /* Half the cases: runs of identical layers (a dense prefix then MoE
     * layers, say), which the MILP counts instead of placing one by one. */
    bool runs = urand() < 0.5;
    for (int i = 0; i < pb->n_layers; i++) {
        if (runs && i > 0 && urand() < 0.75) {
            for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
                pb->layer_time_s[i][r] = pb->layer_time_s[i - 1][r];
                pb->layer_act_bytes[i][r] = pb->layer_act_bytes[i - 1][r];
            }
            pb->layer_static_bytes[i] = pb->layer_static_bytes[i - 1];
            continue;
        }
        double t0 = 1e-3 * (1.0 + 3.0 * urand());
        double a0 = 1e9 * (1.0 + 4.0 * urand());
        pb->layer_time_s[i][PX_RECOMPUTE_NONE] = t0;
        pb->layer_time_s[i][PX_RECOMPUTE_SELECTIVE] = t0 * (1.02 + 0.1 * urand());
        pb->layer_time_s[i][PX_RECOMPUTE_FULL] = t0 * (1.25 + 0.15 * urand());
        pb->layer_act_bytes[i][PX_RECOMPUTE_NONE] = (int64_t)a0;
        pb->layer_act_bytes[i][PX_RECOMPUTE_SELECTIVE] = (int64_t)(a0 * (0.5 + 0.3 * urand()));
        pb->layer_act_bytes[i][PX_RECOMPUTE_FULL] = (int64_t)(a0 * (0.05 + 0.15 * urand()));
        pb->layer_static_bytes[i] = (int64_t)(1e9 * (0.5 + 3.0 * urand()));
    }
    if (urand() < 0.2) /* sometimes only a subset of choices */
        pb->allowed_recompute = (unsigned)irand(1, 7);
    pb->embed_time_s = 1e-3 * urand();
    pb->head_time_s = 1e-3 * 4.0 * urand();
    pb->embed_static_bytes = (int64_t)(2e9 * urand());
    pb->head_static_bytes = (int64_t)(2e9 * urand());
    pb->embed_act_bytes = (int64_t)(0.3e9 * urand());
    pb->head_act_bytes = (int64_t)(2e9 * urand());
    pb->stage_base_bytes = (int64_t)(0.5e9 * urand());
    px_schedule sched = (px_schedule)irand(0, PX_SCHED_COUNT - 1);
    if (pb->vpp > 1)
        sched = PX_SCHED_INTERLEAVED;
    else if (sched == PX_SCHED_INTERLEAVED)
        sched = PX_SCHED_1F1B;
    int64_t m = irand(1, 8);
    for (int s = 0; s < pb->pp; s++)
        pb->in_flight[s] = px_partition_in_flight(sched, pb->pp, pb->vpp, m, s);
    pb->n_micro = urand() < 0.7 ? m : 0; /* with v > 1: the chunk-balance term or not */

    /* A limit between "only the leanest split fits" and "anything fits",
     * sometimes below both (infeasible). */
    px_partition_solution u;
    double most = 0, least = 1e30;
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
        pb->mem_limit_bytes = INT64_MAX / 4;
        if ((pb->allowed_recompute >> r & 1u) &&
            px_partition_uniform(pb, (px_recompute)r, &u, NULL) == PX_OK) {
            double mx = (double)u.stage_mem_bytes[u.fullest_stage];
            most = mx > most ? mx : most;
            least = mx < least ? mx : least;
        }
    }
    pb->mem_limit_bytes = (int64_t)(least * (0.8 + 0.5 * urand()) + (most - least) * 0.3 * urand());
}

static void random_vs_brute(uint64_t seed, int n_cases)
{
    int n_ok = 0, n_infeasible = 0, n_recompute = 0, n_uneven = 0, n_chunky = 0;
    const char *only = getenv("PX_CASE"); /* PX_CASE=k reruns case k alone */
    for (int k = 0; k < n_cases; k++) {
        if (only && atoi(only) != k)
            continue;
        rng_state = seed + 0x9e3779b97f4a7c15ull * (uint64_t)k;
        static px_partition_problem pb;
        random_problem(&pb, 8);
        px_partition_opts o = exact_opts();
        o.minimise_recompute = urand() < 0.85;
        o.heuristics = k % 2 == 0; /* with and without the DP bound and start */
        static px_partition_solution got, want;
        px_error e1, e2;
        px_error_clear(&e1);
        px_error_clear(&e2);
        px_status s1 = px_partition_solve(&pb, &o, &got, &e1);
        px_status s2 = px_partition_brute_force(&pb, &o, &want, &e2);
        CHECK_MSG(s1 == s2, "case %d (PX_SEED=%llu): MILP %s (%s), brute force %s (%s)", k,
                  (unsigned long long)seed, px_status_name(s1), e1.msg, px_status_name(s2),
                  e2.msg);
        if (s1 != s2)
            continue;
        double T = want.max_stage_time_s, J = want.objective_s;
        if (s1 == PX_OK) {
            n_ok++;
            CHECK(got.fits && got.proven_optimal);
            CHECK_MSG(fabs(got.objective_s - J) <= 2e-6 * J,
                      "case %d (PX_SEED=%llu): objective MILP %.9g, brute force %.9g", k,
                      (unsigned long long)seed, got.objective_s, J);
            n_chunky += pb.vpp > 1 && pb.n_micro > 0;
            if (o.minimise_recompute)
                CHECK_MSG(fabs(got.recompute_time_s - want.recompute_time_s) <= 1e-5 * T,
                          "case %d (PX_SEED=%llu): recompute MILP %.9g s, brute force %.9g s",
                          k, (unsigned long long)seed, got.recompute_time_s,
                          want.recompute_time_s);
            n_recompute += want.recompute_time_s > 0;
            for (int c = 1; c < want.n_chunks; c++)
                if (want.layers_per_chunk[c] != want.layers_per_chunk[0]) {
                    n_uneven++;
                    break;
                }
        } else if (s1 == PX_ERR_INFEASIBLE) {
            n_infeasible++;
            /* the least overflow is the same, and the message says where */
            CHECK_MSG(llabs(got.max_over_bytes - want.max_over_bytes) <=
                          1 + pb.mem_limit_bytes / 1000000,
                      "case %d (PX_SEED=%llu): overflow MILP %lld, brute force %lld", k,
                      (unsigned long long)seed, (long long)got.max_over_bytes,
                      (long long)want.max_over_bytes);
            CHECK_MSG(strstr(e1.msg, "stage") && strstr(e1.msg, "GB over"), "%s", e1.msg);
        }
    }
    fprintf(stderr,
            "random_vs_brute: %d cases (PX_SEED=%llu): %d solved (%d with recomputation, %d "
            "uneven, %d with the chunk term), %d infeasible\n",
            n_cases, (unsigned long long)seed, n_ok, n_recompute, n_uneven, n_chunky,
            n_infeasible);
    /* the generator must exercise every path, or the comparison proves little */
    CHECK(only || (n_ok >= n_cases / 5 && n_infeasible >= 1 && n_recompute >= 1 && n_uneven >= 1));
}

/* Four identical layers on two stages, a heavy LM head: 3 + 1 beats 2 + 2. */
static void heavy_head(void)
{
    static px_partition_problem pb;
    px_partition_problem_init(&pb);
    pb.n_layers = 4;
    pb.pp = 2;
    for (int i = 0; i < 4; i++) {
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            pb.layer_time_s[i][r] = 1.0 + 0.3 * r;
            pb.layer_act_bytes[i][r] = 100 >> r;
        }
    }
    pb.head_time_s = 2.0;
    pb.mem_limit_bytes = 1000;
    static px_partition_solution sol, uni;
    px_error err;
    px_partition_opts o = exact_opts();
    CHECK(px_partition_solve(&pb, &o, &sol, &err) == PX_OK);
    CHECK(sol.layers_per_chunk[0] == 3 && sol.layers_per_chunk[1] == 1);
    CHECK_CLOSE(sol.max_stage_time_s, 3.0, 1e-12, 0);
    CHECK(sol.recompute_time_s == 0.0);
    CHECK(px_partition_uniform(&pb, PX_RECOMPUTE_NONE, &uni, &err) == PX_OK);
    CHECK_CLOSE(uni.max_stage_time_s, 4.0, 1e-12, 0);

    /* Memory now binds on stage 0 (1F1B: 2 in flight): 3 layers x 100 x 2
     * = 600 > 500, so stage 0 recomputes the least it can. */
    pb.in_flight[0] = 2;
    pb.in_flight[1] = 1;
    pb.mem_limit_bytes = 500;
    CHECK(px_partition_solve(&pb, &o, &sol, &err) == PX_OK);
    CHECK(sol.fits && sol.stage_mem_bytes[0] <= 500);
    /* 3 + 1 with one selective layer: 2*(100+100+50) = 500, T = 3.3 */
    CHECK(sol.layers_per_chunk[0] == 3);
    CHECK_CLOSE(sol.max_stage_time_s, 3.3, 1e-9, 0);
    int n_sel = 0;
    for (int i = 0; i < 4; i++)
        n_sel += sol.layer_recompute[i] == PX_RECOMPUTE_SELECTIVE;
    CHECK(n_sel == 1 && sol.layer_recompute[3] == PX_RECOMPUTE_NONE);
}

/* Third pass: 4 equal layers on 2 stages, the embedding worth a layer,
 * stage 0 holding 2 micro-batches (1F1B): 2+2 and 1+3 both give T = 3 with
 * no recomputation, but 1+3 peaks at 3 units of memory against 4.  The
 * starting split (uniform, as good as any in time) is 2+2, so without the
 * third pass that is the answer. */
static void least_peak_memory(void)
{
    static px_partition_problem pb;
    px_partition_problem_init(&pb);
    pb.n_layers = 4;
    pb.pp = 2;
    for (int i = 0; i < 4; i++)
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            pb.layer_time_s[i][r] = 1.0 + 0.5 * r;
            pb.layer_act_bytes[i][r] = 1000 >> (2 * r);
        }
    pb.embed_time_s = 1.0;
    pb.in_flight[0] = 2;
    pb.in_flight[1] = 1;
    pb.mem_limit_bytes = 10000;
    static px_partition_solution sol;
    px_error err;
    px_partition_opts o = exact_opts();
    for (int heur = 0; heur < 2; heur++) {
        o.heuristics = heur;
        CHECK(px_partition_solve(&pb, &o, &sol, &err) == PX_OK);
        CHECK_CLOSE(sol.max_stage_time_s, 3.0, 1e-12, 0);
        CHECK(sol.recompute_time_s == 0.0);
        CHECK(sol.layers_per_chunk[0] == 1 && sol.stage_mem_bytes[0] == 2000 &&
              sol.stage_mem_bytes[1] == 3000);
    }
    o.minimise_memory = false;
    CHECK(px_partition_solve(&pb, &o, &sol, &err) == PX_OK);
    CHECK(sol.layers_per_chunk[0] == 2 && sol.stage_mem_bytes[0] == 4000);
}

/* Nothing fits: two layers of 10 GB static on one stage, 15 GB limit. */
static void infeasible_message(void)
{
    static px_partition_problem pb;
    px_partition_problem_init(&pb);
    pb.n_layers = 2;
    for (int i = 0; i < 2; i++) {
        pb.layer_static_bytes[i] = 10000000000;
        for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
            pb.layer_time_s[i][r] = 1.0 + r;
            pb.layer_act_bytes[i][r] = r == PX_RECOMPUTE_FULL ? 0 : 1000000000;
        }
    }
    pb.mem_limit_bytes = 15000000000;
    static px_partition_solution sol;
    px_error err;
    px_partition_opts o = exact_opts();
    px_status st = px_partition_solve(&pb, &o, &sol, &err);
    CHECK(st == PX_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "stage 0") && strstr(err.msg, "5.000 GB over the 15.000 GB limit") &&
                  strstr(err.msg, "full 2"),
              "%s", err.msg);
    CHECK(!sol.fits && sol.max_over_bytes == 5000000000);

    /* Two stages: stage 1 carries the head's 6 GB, both over. */
    pb.pp = 2;
    pb.head_static_bytes = 6000000000;
    pb.mem_limit_bytes = 12000000000;
    st = px_partition_solve(&pb, &o, &sol, &err);
    CHECK(st == PX_ERR_INFEASIBLE);
    CHECK_MSG(strstr(err.msg, "on stage 1") && strstr(err.msg, "4.000 GB over"), "%s", err.msg);
}

/* 120 heterogeneous layers on 16 stages: far too big to prove in 20 ms. */
static void big_problem(px_partition_problem *pb)
{
    px_partition_problem_init(pb);
    rng_state = 4242;
    pb->n_layers = 120;
    pb->pp = 16;
    for (int i = 0; i < pb->n_layers; i++) {
        double t0 = 1e-3 * (1.0 + urand());
        pb->layer_time_s[i][0] = t0;
        pb->layer_time_s[i][1] = t0 * 1.05;
        pb->layer_time_s[i][2] = t0 * 1.33;
        pb->layer_act_bytes[i][0] = (int64_t)(1e9 * (1 + urand()));
        pb->layer_act_bytes[i][1] = pb->layer_act_bytes[i][0] / 2;
        pb->layer_act_bytes[i][2] = pb->layer_act_bytes[i][0] / 10;
        pb->layer_static_bytes[i] = 1000000000;
    }
    for (int s = 0; s < pb->pp; s++)
        pb->in_flight[s] = px_partition_in_flight(PX_SCHED_1F1B, pb->pp, 1, 64, s);
    pb->mem_limit_bytes = 60000000000;
}

static void time_limit(void)
{
    static px_partition_problem pb;
    big_problem(&pb);
    static px_partition_solution sol;
    px_error err;
    px_partition_opts o = exact_opts();
    o.time_limit_s = 0.02;
    o.work_limit = 0.0; /* the clock alone */
    o.heuristics = false; /* GLPK alone: no starting split to fall back on */
    px_status st = px_partition_solve(&pb, &o, &sol, &err);
    if (st == PX_OK) {
        CHECK(!sol.proven_optimal && sol.limit_hit && sol.clock_hit);
        CHECK_MSG(strstr(sol.note, "time limit") && strstr(sol.note, "not proven"), "%s",
                  sol.note);
        CHECK(sol.fits);
    } else {
        CHECK_MSG(st == PX_ERR_SOLVER && strstr(err.msg, "time limit"), "got %s: %s",
                  px_status_name(st), err.msg);
    }
    CHECK(sol.solve_s < 2.0);

    /* With the heuristics a split always comes back, never worse than the
     * uniform one with the same greedy recomputation. */
    o.heuristics = true;
    o.time_limit_s = 0.05;
    st = px_partition_solve(&pb, &o, &sol, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    CHECK(sol.fits);
    static px_partition_solution uni;
    CHECK(px_partition_uniform(&pb, PX_RECOMPUTE_FULL, &uni, &err) == PX_OK);
    CHECK(uni.fits && sol.max_stage_time_s <= uni.max_stage_time_s);
}

/* The same big problem under the work limit: the clock (a minute, then
 * two) never binds, so the split is the same whatever the machine's speed
 * or load; flagged as not proven, not as stopped by the clock. */
static void work_limit(void)
{
    static px_partition_problem pb;
    static px_partition_solution sol, first;
    big_problem(&pb);
    px_error err;
    px_partition_opts o = exact_opts();
    o.work_limit = 2e5;
    for (int run = 0; run < 2; run++) {
        o.time_limit_s = run ? 120.0 : 60.0;
        px_status st = px_partition_solve(&pb, &o, &sol, &err);
        CHECK_MSG(st == PX_OK, "%s", err.msg);
        CHECK(sol.fits && !sol.proven_optimal && sol.limit_hit && !sol.clock_hit);
        CHECK_MSG(strstr(sol.note, "work limit") && strstr(sol.note, "not proven"), "%s",
                  sol.note);
        CHECK_MSG(sol.work > o.work_limit, "work %g", sol.work);
        if (run == 0)
            first = sol;
        CHECK(sol.objective_s == first.objective_s && sol.n_chunks == first.n_chunks);
        CHECK(memcmp(sol.layers_per_chunk, first.layers_per_chunk,
                     (size_t)sol.n_chunks * sizeof sol.layers_per_chunk[0]) == 0);
        CHECK(memcmp(sol.layer_recompute, first.layer_recompute, (size_t)pb.n_layers) == 0);
    }
    o.work_limit = NAN;
    CHECK(px_partition_solve(&pb, &o, &sol, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "work_limit") != NULL, "%s", err.msg);
}

static void validation(void)
{
    static px_partition_problem pb;
    static px_partition_solution sol;
    px_error err;
    px_partition_problem_init(&pb);
    pb.n_layers = 3;
    pb.pp = 2;
    pb.vpp = 2;
    pb.mem_limit_bytes = 1;
    CHECK(px_partition_solve(&pb, NULL, &sol, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "pp x vpp") != NULL, "%s", err.msg);
    pb.vpp = 1;
    pb.layer_act_bytes[1][PX_RECOMPUTE_FULL] = -5;
    CHECK(px_partition_solve(&pb, NULL, &sol, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "layer_act_bytes[1][full]") != NULL, "%s", err.msg);
    pb.layer_act_bytes[1][PX_RECOMPUTE_FULL] = 0;
    pb.layer_time_s[2][PX_RECOMPUTE_NONE] = NAN;
    CHECK(px_partition_solve(&pb, NULL, &sol, &err) == PX_ERR_INVALID);
    pb.layer_time_s[2][PX_RECOMPUTE_NONE] = 0;
    pb.in_flight[1] = -1;
    CHECK(px_partition_solve(&pb, NULL, &sol, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "in_flight[1]") != NULL, "%s", err.msg);
    pb.in_flight[1] = 1;
    pb.allowed_recompute = 8;
    CHECK(px_partition_solve(&pb, NULL, &sol, &err) == PX_ERR_INVALID);
    pb.allowed_recompute = 7;
    pb.mem_limit_bytes = 0;
    CHECK(px_partition_solve(&pb, NULL, &sol, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "mem_limit_bytes") != NULL, "%s", err.msg);
    pb.mem_limit_bytes = 100;
    px_partition_opts o = exact_opts();
    o.time_limit_s = -1;
    CHECK(px_partition_solve(&pb, &o, &sol, &err) == PX_ERR_INVALID);
    /* evaluate rejects empty chunks and wrong totals */
    sol.n_chunks = 2;
    sol.layers_per_chunk[0] = 3;
    sol.layers_per_chunk[1] = 0;
    memset(sol.layer_recompute, 0, sizeof sol.layer_recompute);
    CHECK(px_partition_evaluate(&pb, &sol, &err) == PX_ERR_INVALID);
    sol.layers_per_chunk[0] = 1;
    sol.layers_per_chunk[1] = 1;
    CHECK(px_partition_evaluate(&pb, &sol, &err) == PX_ERR_INVALID);
    sol.layers_per_chunk[1] = 2;
    CHECK(px_partition_evaluate(&pb, &sol, &err) == PX_OK);
    /* brute force refuses what it cannot enumerate */
    pb.n_layers = 40;
    CHECK(px_partition_brute_force(&pb, NULL, &sol, &err) == PX_ERR_INVALID);
}

static void in_flight_and_uniform(void)
{
    /* 1F1B: stage s holds p - s; GPipe: m; capped by m. */
    CHECK(px_partition_in_flight(PX_SCHED_1F1B, 4, 1, 64, 0) == 4.0);
    CHECK(px_partition_in_flight(PX_SCHED_1F1B, 4, 1, 64, 3) == 1.0);
    CHECK(px_partition_in_flight(PX_SCHED_1F1B, 4, 1, 2, 0) == 2.0);
    CHECK(px_partition_in_flight(PX_SCHED_GPIPE, 4, 1, 64, 2) == 64.0);
    /* Interleaved stage 0 over its L/p layers: L (1 + (p-1)/(p v)) in all */
    int p = 4, v = 2, L = 80;
    double held = px_partition_in_flight(PX_SCHED_INTERLEAVED, p, v, 64, 0) * L / p;
    CHECK_CLOSE(held, L * (1.0 + (p - 1.0) / (p * v)), 1e-12, 0);
    CHECK(px_partition_in_flight(PX_SCHED_1F1B, 4, 1, 64, 4) < 0);

    static px_partition_problem pb;
    static px_partition_solution sol;
    px_partition_problem_init(&pb);
    pb.n_layers = 10;
    pb.pp = 2;
    pb.vpp = 2;
    pb.mem_limit_bytes = 1;
    px_error err;
    CHECK(px_partition_uniform(&pb, PX_RECOMPUTE_NONE, &sol, &err) == PX_OK);
    char buf[64];
    px_partition_format_split(&sol, buf, sizeof buf);
    CHECK_MSG(strcmp(buf, "2,3,3,2") == 0, "%s", buf);
    CHECK(sol.stage_layers[0] == 5 && sol.stage_layers[1] == 5);
}

int main(void)
{
    const char *env = getenv("PX_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    fprintf(stderr, "test_partition: PX_SEED=%llu\n", (unsigned long long)seed);
    in_flight_and_uniform();
    validation();
    heavy_head();
    least_peak_memory();
    infeasible_message();
    time_limit();
    work_limit();
    random_vs_brute(seed, 200);
    return px_test_result("partition");
}
