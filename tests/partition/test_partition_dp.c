/* The exact DP passes of the stage partitioner against GLPK on random layer
 * costs: with px_partition_opts.exact_dp on (the default; the DP answers
 * where it is exact) and off (every pass through GLPK, gap 1e-9), the same
 * status, the same objective, the same recompute time and the same peak
 * memory, wherever the DP answers (the other cases need recomputation
 * under the memory bound and go to GLPK either way).  Four families: one chunk per stage with heterogeneous layers,
 * one chunk per stage with runs of identical layers, interleaving with
 * identical layers, and one chunk per stage with identical layers (answered
 * with recomputation too, px_partition_same).  Seed printed; PX_SEED=<n> reproduces a run. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "px_partition.h"
#include "px_test.h"

static uint64_t rng_state;

static double urand(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static int irand(int lo, int hi) { return lo + (int)(urand() * (hi - lo + 1)); }

/* One layer's costs at index i (times in seconds, bytes). */
static void random_layer(px_partition_problem *pb, int i)
{
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

static void copy_layer(px_partition_problem *pb, int to, int from)
{
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
        pb->layer_time_s[to][r] = pb->layer_time_s[from][r];
        pb->layer_act_bytes[to][r] = pb->layer_act_bytes[from][r];
    }
    pb->layer_static_bytes[to] = pb->layer_static_bytes[from];
}

/* family 0: v = 1, every layer its own; 1: v = 1, runs; 2: v > 1, all
 * identical; 3: v = 1, all identical (exact with recomputation too).  The limit ranges from "the uniform split without
 * recomputation fits easily" to "only with recomputation". */
static void random_problem(px_partition_problem *pb, int family)
{
    px_partition_problem_init(pb);
    pb->pp = family == 2 ? irand(2, 4) : irand(2, 6);
    pb->vpp = family == 2 ? irand(2, 3) : 1;
    int chunks = pb->pp * pb->vpp;
    pb->n_layers = irand(chunks, chunks + (family == 2 ? 10 : 20));
    for (int i = 0; i < pb->n_layers; i++) {
        bool same = family >= 2 ? i > 0 : family == 1 && i > 0 && urand() < 0.8;
        if (same)
            copy_layer(pb, i, i - 1);
        else
            random_layer(pb, i);
    }
    pb->embed_time_s = 1e-3 * urand();
    pb->head_time_s = 1e-3 * 4.0 * urand();
    pb->embed_static_bytes = (int64_t)(2e9 * urand());
    pb->head_static_bytes = (int64_t)(2e9 * urand());
    pb->embed_act_bytes = (int64_t)(0.3e9 * urand());
    pb->head_act_bytes = (int64_t)(2e9 * urand());
    pb->stage_base_bytes = (int64_t)(0.5e9 * urand());
    px_schedule sched = pb->vpp > 1 ? PX_SCHED_INTERLEAVED : (px_schedule)irand(0, 1);
    int64_t m = irand(pb->pp, 3 * pb->pp);
    for (int s = 0; s < pb->pp; s++)
        pb->in_flight[s] = px_partition_in_flight(sched, pb->pp, pb->vpp, m, s);
    pb->n_micro = m;
    px_partition_solution u;
    pb->mem_limit_bytes = INT64_MAX / 4;
    px_partition_uniform(pb, PX_RECOMPUTE_NONE, &u, NULL);
    double peak = (double)u.stage_mem_bytes[u.fullest_stage];
    pb->mem_limit_bytes = (int64_t)(peak * (0.85 + 0.6 * urand()));
}

static double peak_of(const px_partition_solution *s)
{
    return (double)s->stage_mem_bytes[s->fullest_stage];
}

int main(void)
{
    const char *env = getenv("PX_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : 20261201;
    fprintf(stderr, "test_partition_dp: PX_SEED=%" PRIu64 "\n", seed);
    px_partition_problem *pb = malloc(sizeof *pb);
    px_partition_solution *dp = malloc(sizeof *dp), *glpk = malloc(sizeof *glpk);
    int n_cases = 120, by_dp[4] = {0}, n[4] = {0}, unproven = 0, n_recompute = 0;
    for (int k = 0; k < n_cases; k++) {
        int family = k % 4;
        rng_state = seed + 0x9e3779b97f4a7c15ull * (uint64_t)k;
        random_problem(pb, family);
        px_partition_opts o;
        px_partition_opts_init(&o);
        o.time_limit_s = 5.0;
        o.mip_gap = 1e-9;
        px_error e1, e2;
        px_status s1 = px_partition_solve(pb, &o, dp, &e1);
        n[family]++;
        if (s1 == PX_OK && !dp->exact_dp)
            continue; /* recomputation needed: GLPK in both runs, nothing to compare */
        o.exact_dp = false;
        px_status s2 = px_partition_solve(pb, &o, glpk, &e2);
        if (getenv("PX_VERBOSE"))
            fprintf(stderr, "case %d family %d: L %d p %d v %d: DP path %.1f ms (exact %d), "
                            "GLPK %.1f ms\n",
                    k, family, pb->n_layers, pb->pp, pb->vpp, 1e3 * dp->solve_s, dp->exact_dp,
                    1e3 * glpk->solve_s);
        CHECK_MSG(s1 == s2, "case %d family %d: DP path %d (%s), GLPK %d (%s)", k, family, s1,
                  s1 ? e1.msg : "", s2, s2 ? e2.msg : "");
        if (s1 != PX_OK || s2 != PX_OK)
            continue;
        by_dp[family]++;
        n_recompute += family == 3 && dp->recompute_time_s > 0.0;
        CHECK(!glpk->exact_dp);
        CHECK_MSG(dp->objective_s <= glpk->objective_s * (1.0 + 2e-6),
                  "case %d family %d: objective %.9g, worse than GLPK's %.9g", k, family,
                  dp->objective_s, glpk->objective_s);
        if (!glpk->proven_optimal) {
            unproven++; /* GLPK's time limit (a loaded machine): only "never worse" */
            continue;
        }
        double t = dp->max_stage_time_s;
        CHECK_MSG(fabs(dp->objective_s - glpk->objective_s) <= 2e-6 * glpk->objective_s,
                  "case %d family %d (exact DP %d): objective %.9g vs GLPK %.9g", k, family,
                  dp->exact_dp, dp->objective_s, glpk->objective_s);
        CHECK_MSG(fabs(dp->recompute_time_s - glpk->recompute_time_s) <= 2e-6 * t,
                  "case %d family %d: recompute %.9g vs GLPK %.9g", k, family,
                  dp->recompute_time_s, glpk->recompute_time_s);
        CHECK_MSG(fabs(peak_of(dp) - peak_of(glpk)) <= 1e-6 * peak_of(glpk) + 2.0,
                  "case %d family %d (exact DP %d): peak %.0f vs GLPK %.0f bytes", k, family,
                  dp->exact_dp, peak_of(dp), peak_of(glpk));
        CHECK(dp->fits && glpk->fits);
    }
    fprintf(stderr, "%d of the compared cases hit GLPK's time limit\n", unproven);
    CHECK(unproven * 4 <= by_dp[0] + by_dp[1] + by_dp[2] + by_dp[3]);
    /* the comparison means something only if the DP answered most cases
     * of each family (the rest need recomputation: GLPK in both runs) */
    for (int f = 0; f < 4; f++) {
        fprintf(stderr, "family %d: %d of %d cases answered by the exact DP\n", f, by_dp[f],
                n[f]);
        CHECK_MSG(by_dp[f] >= n[f] / 3, "family %d: only %d of %d by the DP", f, by_dp[f], n[f]);
    }
    /* family 3 is there for the cases that recompute */
    fprintf(stderr, "family 3: %d answers with recomputation\n", n_recompute);
    CHECK(n_recompute >= n[3] / 4);
    free(pb);
    free(dp);
    free(glpk);
    return px_test_result("test_partition_dp");
}
