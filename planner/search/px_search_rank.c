/* px_search_rank.c — the order of the search's candidates: the score (step
 * seconds per token), which of two ranks first, and whether a plan fits the
 * memory limit.  The lowest of the search's files (px_search_internal.h). */
#include "px_search_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <pthread.h>
#include <stdlib.h>

#include "px_bound.h"
#include "px_checked.h"
#include "px_cost_precision.h"
#include "px_framework.h"
#include "px_partition_refine.h"
#include "px_split_megatron.h"
#include "px_plan_check.h"

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Score used for ranking: seconds per token (= step time at a fixed global
 * batch; fair when a fixed micro-batch count makes the batch vary). */
double score_pred(const px_prediction *p)
{
    double tokens = p->tokens_per_s * p->time.step_s;
    return tokens > 0 ? p->time.step_s / tokens : INFINITY;
}

double score(const px_candidate *c) { return score_pred(&c->pred); }

/* a ranks before b: a lower score (beyond rounding), or the same with less
 * memory. */
bool better_pred(const px_prediction *a, const px_prediction *b)
{
    double sa = score_pred(a), sb = score_pred(b);
    if (sa != sb)
        return sa < sb * (1.0 - 1e-12);
    return a->mem.total < b->mem.total;
}

bool better(const px_candidate *a, const px_candidate *b)
{
    return better_pred(&a->pred, &b->pred);
}

bool fits(px_cost_ctx *ctx, const px_parallel *par, int64_t limit, px_memory *mem)
{
    px_cost_memory(ctx, par, mem, NULL);
    return mem->total <= limit;
}
