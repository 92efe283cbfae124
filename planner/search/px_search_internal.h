/* px_search_internal.h — what the search's files call of each other, each
 * only the files before it: px_search_rank.c, px_search_fixed.c,
 * px_search_refine.c, px_search_rule.c, then px_search.c.  Not part of the
 * planner's interface. */
#ifndef PX_SEARCH_INTERNAL_H
#define PX_SEARCH_INTERNAL_H

#include "px_search.h"

/* The analytic pass ranks into a pool larger than the result's list: with
 * the partition program on, --top K keeps K + (K + PX_SEARCH_MILP_EXTRA)
 * candidates (see px_search_run), and the program's rescued misses are
 * appended after them.  The pool belongs to the caller (search_tally). */
#define POOL_MAX (2 * PX_SEARCH_TOP_MAX + PX_SEARCH_MILP_EXTRA + PX_SEARCH_MILP_MISSES)

/* px_search_rank.c */
double now_s(void);
double score_pred(const px_prediction *p);
double score(const px_candidate *c);
bool better_pred(const px_prediction *a, const px_prediction *b);
bool better(const px_candidate *a, const px_candidate *b);
bool fits(px_cost_ctx *ctx, const px_parallel *par, int64_t limit, px_memory *mem);

/* px_search_fixed.c */
px_reject rule_reject(px_status st, px_reject structural);
const px_caps *search_caps(const px_search_opts *o, px_caps *storage);
px_status resolve_batch(const px_model *m, const px_search_opts *o, px_search_result *res,
                        px_error *err);
px_status check_fixed(const px_model *m, int gpus, int64_t s, const px_search_opts *o,
                      px_search_result *res, px_error *err);
bool has_factorisation(const px_model *m, int gpus, int64_t s, int64_t GB,
                       const px_search_opts *o);
void nearest_batch(int gpus, const px_search_opts *o, px_search_result *res);
/* The GPU counts nearest below and above gpus that factor (0: none), found
 * among the products of sizes that pass their own rules. */
void nearest_factoring(const px_model *m, int gpus, int64_t s, int64_t GB,
                       const px_search_opts *o, int *below, int *above);
bool megatron_uneven_split(int64_t L, int pp, int v, bool empty_ends, px_parallel *par);
void search_defaults(px_parallel *par, const px_search_opts *o);

/* px_search_refine.c */
px_status refine_top(const px_model *m, px_cost_ctx *ctx, const px_search_opts *o,
                     px_search_result *res, px_candidate *pool,
                     int n_pool, int keep, const px_candidate *misses, int n_miss,
                     px_error *err);

#endif
