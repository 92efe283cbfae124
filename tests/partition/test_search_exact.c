/* The fast search (the analytic pass timing only what a proven lower bound
 * lets reach the list, exact DP where it applies, candidates pruned by a
 * proven lower bound) finds the plan the reference finds: every
 * configuration that fits timed, every partition program through GLPK with
 * a generous time limit and every top candidate refined.  (The analytic
 * pass alone is compared with the exhaustive one on the large MoE presets
 * in tests/cost/test_search_bound.c: the reference's GLPK programs there
 * take minutes.)
 * Across presets and GPU counts: the same best score (seconds per token)
 * wherever the reference's programs were all proven, and never a worse one
 * anywhere.  Also the analytic pass on 1 and 3 threads: the same ranking. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_search.h"
#include "px_test.h"

static double score(const px_candidate *c)
{
    return c->pred.time.step_s / (c->pred.tokens_per_s * c->pred.time.step_s);
}

static void compare(const char *model, int gpus, px_search_result *fast, px_search_result *ref)
{
    px_model *m = malloc(sizeof *m);
    px_hw *hw = malloc(sizeof *hw);
    px_error err;
    CHECK_MSG(px_model_load(model, NULL, m, &err) == PX_OK, "%s", err.msg);
    CHECK_MSG(px_hw_load("h100-sxm", NULL, hw, &err) == PX_OK, "%s", err.msg);
    px_search_opts o;
    px_search_opts_init(&o);
    /* the same GLPK limits for both: the method is under test, not the
     * budget (which a loaded machine can spend before the last program) */
    o.milp_time_limit_s = 20.0;
    o.milp_budget_s = 600.0;
    px_status s1 = px_search_run(m, hw, gpus, &o, fast, &err);
    o.milp_glpk_only = o.milp_no_prune = o.exhaustive = true;
    px_status s2 = px_search_run(m, hw, gpus, &o, ref, &err);
    CHECK_MSG(s1 == s2, "%s on %d: fast %d, reference %d", model, gpus, s1, s2);
    if (s1 == PX_OK && s2 == PX_OK) {
        double a = score(&fast->top[0]), b = score(&ref->top[0]);
        bool proven = ref->milp_not_proven == 0 && ref->milp_skipped == 0;
        fprintf(stderr,
                "%-16s %6d: fast %.9g s/token (%d programs, %d by DP, %d pruned), reference "
                "%.9g (%d programs, %d not proven)\n",
                model, gpus, a, fast->milp_refined, fast->milp_by_dp, fast->milp_pruned, b,
                ref->milp_refined, ref->milp_not_proven);
        CHECK_MSG(a <= b * (1.0 + 1e-9), "%s on %d: fast %.12g worse than reference %.12g",
                  model, gpus, a, b);
        if (proven)
            CHECK_MSG(a >= b * (1.0 - 1e-6), "%s on %d: fast %.12g, reference %.12g", model,
                      gpus, a, b);
        CHECK(ref->milp_by_dp == 0 && ref->milp_pruned == 0 && ref->n_pruned == 0);
        /* the analytic pass's counts (before the program's rescues) */
        CHECK(fast->n_evaluated == ref->n_evaluated &&
              fast->n_valid - fast->milp_rescued == ref->n_valid - ref->milp_rescued);
    }
    free(m);
    free(hw);
}

int main(void)
{
    px_search_result *fast = malloc(sizeof *fast), *ref = malloc(sizeof *ref);
    const struct {
        const char *model;
        int gpus;
    } cases[] = {
        {"tiny-llama", 8},  {"tiny-moe", 8},     {"tiny-gpt", 16},
        {"llama3-8b", 8},   {"llama3-8b", 64},   {"llama3-8b", 512},
        {"mixtral-8x7b", 64}, {"llama3-70b", 64},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        compare(cases[i].model, cases[i].gpus, fast, ref);
    free(fast);
    free(ref);
    return px_test_result("test_search_exact");
}
