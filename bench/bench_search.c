/* bench_search.c — how fast the planner plans: for every preset and G = 8,
 * 64, 512, 1024, 2048, 4096, 16384, 131072, the configurations scored, how many
 * fit, the whole search as `plan` runs it (analytic pass on all threads, the
 * stage-partition pass, the rule-of-thumb plan), how many of those that fit
 * were not timed because a proven lower bound kept them off the list
 * (px_bound.h), configurations per second
 * of the analytic pass, the share of each pass, and the process's peak RSS
 * so far (it stays flat when memory does not grow with G).  Medians of
 * REPEATS runs, wall and CPU time (on a shared machine the CPU time is the
 * steadier figure).  Prints a table; not a test.
 * Usage: bench_search [REPEATS] [MODEL...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "px_search.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { MAX_REPEATS = 51 };

/* One preset at one G: a table row. */
static void run_case(const px_model *m, const px_hw *hw, int gpus, int repeats,
                     px_search_result *res)
{
    double wall[MAX_REPEATS], cpu[MAX_REPEATS], ana[MAX_REPEATS], part[MAX_REPEATS],
        rule[MAX_REPEATS];
    px_search_opts o;
    px_search_opts_init(&o);
    px_status st = PX_OK;
    px_error err;
    for (int r = 0; r < repeats; r++) {
        double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        st = px_search_run(m, hw, gpus, &o, res, &err);
        wall[r] = clock_s(CLOCK_MONOTONIC) - w0;
        cpu[r] = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        ana[r] = res->analytic_s;
        part[r] = res->milp_s;
        rule[r] = res->rule_s;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (st != PX_OK) {
        printf("%-16s %7d  no plan (%.60s)\n", m->name, gpus, err.msg);
        return;
    }
    double w = median(wall, repeats), a = median(ana, repeats), p = median(part, repeats),
           q = median(rule, repeats);
    double parts = a + p + q > 0 ? a + p + q : 1.0;
    printf("%-16s %7d %10lld %9lld %9lld %9.1f %9.1f %11.3g %6.0f %6.0f %5.0f %5d %5d %5d %8.1f\n",
           m->name, gpus, (long long)res->n_evaluated, (long long)res->n_valid,
           (long long)res->n_pruned, 1e3 * w,
           1e3 * median(cpu, repeats), a > 0 ? (double)res->n_evaluated / a : 0.0,
           100.0 * a / parts, 100.0 * p / parts, 100.0 * q / parts, res->milp_refined,
           res->milp_by_dp, res->milp_pruned, (double)ru.ru_maxrss / 1024.0);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int repeats = argc > 1 ? atoi(argv[1]) : 5;
    if (repeats < 1)
        repeats = 1;
    if (repeats > MAX_REPEATS)
        repeats = MAX_REPEATS;
    static const char *const presets[] = {"llama3-8b",    "llama3-70b",  "seed-70b",
                                          "gpt3-175b",    "llama3-405b", "mixtral-8x7b",
                                          "deepseek-v3",  "qwen3-235b-a22b"};
    static const int gpus[] = {8, 64, 512, 1024, 2048, 4096, 16384, 131072};
    const char *const *models = argc > 2 ? (const char *const *)argv + 2 : presets;
    int n_models = argc > 2 ? argc - 2 : (int)(sizeof presets / sizeof presets[0]);
    px_search_result *res = malloc(sizeof *res);
    px_model *m = malloc(sizeof *m);
    px_hw *hw = malloc(sizeof *hw);
    px_error err;
    if (!res || !m || !hw || px_hw_load("h100-sxm", NULL, hw, &err) != PX_OK) {
        fprintf(stderr, "bench_search: setup failed\n");
        return 1;
    }
    printf("# plan search, median of %d runs on h100-sxm, as `plan` runs it (all threads,\n"
           "# the stage-partition pass on).  ms = wall, cpu = CPU time of all threads;\n"
           "# untimed = configurations that fit but a proven lower bound kept off the list\n"
           "# (not timed; varies with the threads' timing); configs/s = the analytic pass;\n"
           "# ana/part/rule = share of the passes in %%;\n"
           "# refined / dp / pruned = partition programs run, answered by the exact DP,\n"
           "# skipped by the lower bound; RSS = the process's peak so far, MiB\n",
           repeats);
    printf("%-16s %7s %10s %9s %9s %9s %9s %11s %6s %6s %5s %5s %5s %5s %8s\n", "model", "gpus",
           "evaluated", "fit", "untimed", "ms", "cpu[ms]", "configs/s", "ana%", "part%", "rule%",
           "refd", "dp", "prun", "RSS[MiB]");
    for (int i = 0; i < n_models; i++) {
        if (px_model_load(models[i], NULL, m, &err) != PX_OK) {
            printf("%-16s load failed: %s\n", models[i], err.msg);
            continue;
        }
        for (size_t g = 0; g < sizeof gpus / sizeof gpus[0]; g++)
            run_case(m, hw, gpus[g], repeats, res);
    }
    free(res);
    free(m);
    free(hw);
    return 0;
}
