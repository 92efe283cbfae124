/* bench_search.c — how fast the planner searches: configurations scored per
 * second and the wall time of whole searches.
 * Prints a table; not a test (no pass/fail).  Usage: bench_search [REPEATS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "px_search.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 5;
    if (repeats < 1)
        repeats = 1;
    const struct {
        const char *model, *hw;
        int gpus;
    } cases[] = {
        {"70b", "h100-sxm", 1024},          {"70b", "h100-sxm", 16384},
        {"seed-70b", "tpu-v5p", 1024},      {"llama3-405b", "h100-sxm", 16384},
        {"mixtral-8x7b", "h100-sxm", 2048}, {"deepseek-v3", "h100-sxm", 2048},
        {"qwen3-235b-a22b", "h100-sxm", 2048},
    };
    static px_search_result res;
    static px_model m;
    static px_hw hw;
    printf("# plan search speed, best of %d runs (wall time of px_search_run, one thread)\n"
           "# analytic = the exhaustive scoring pass alone (the goal: < 100 ms for 1024\n"
           "# GPUs, >= 1e6 configurations/s); +glpk = with the stage-partition programs on the\n"
           "# top candidates (docs/partition.md), as `plan` runs by default\n",
           repeats);
    printf("%-16s %-9s %6s %10s %9s %13s %12s %11s  %s\n", "model", "hw", "gpus", "evaluated",
           "fit", "analytic[ms]", "configs/s", "+glpk[ms]", "best (tp cp ep pp vpp dp mbs m zero)");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        px_error err;
        if (px_model_load(cases[i].model, NULL, &m, &err) != PX_OK ||
            px_hw_load(cases[i].hw, NULL, &hw, &err) != PX_OK) {
            printf("%-16s %-9s %6d  load failed: %s\n", cases[i].model, cases[i].hw,
                   cases[i].gpus, err.msg);
            continue;
        }
        px_search_opts o;
        px_search_opts_init(&o);
        double best = 1e30, best_glpk = 1e30;
        px_status st = PX_OK;
        for (int r = 0; r < repeats; r++) {
            o.milp = true;
            double t0 = now_s();
            st = px_search_run(&m, &hw, cases[i].gpus, &o, &res, &err);
            double dt = now_s() - t0;
            if (dt < best_glpk)
                best_glpk = dt;
        }
        for (int r = 0; r < repeats && st == PX_OK; r++) {
            o.milp = false; /* the analytic pass alone; its result is the one printed */
            double t0 = now_s();
            st = px_search_run(&m, &hw, cases[i].gpus, &o, &res, &err);
            double dt = now_s() - t0;
            if (dt < best)
                best = dt;
        }
        if (st != PX_OK) {
            printf("%-16s %-9s %6d  %s\n", cases[i].model, cases[i].hw, cases[i].gpus, err.msg);
            continue;
        }
        const px_parallel *p = &res.top[0].par;
        printf("%-16s %-9s %6d %10lld %9lld %13.1f %12.3g %11.1f  %d %d %d %d %d %d %lld %lld %d\n",
               cases[i].model, cases[i].hw, cases[i].gpus, (long long)res.n_evaluated,
               (long long)res.n_valid, 1e3 * best, (double)res.n_evaluated / best,
               1e3 * best_glpk, p->tp, p->cp,
               p->ep, p->pp, p->vpp, p->dp, (long long)p->micro_batch, (long long)p->n_micro,
               p->zero);
    }
    return 0;
}
