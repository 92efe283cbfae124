/* px_partition_memo.c — answers of px_partition_solve kept for the same
 * problem asked again.  The planner refines candidates that differ only in
 * what the partition program does not see (the recompute choice it is free
 * to replace, the ZeRO stage behind equal per-layer bytes...), so one
 * planner run hands it the same program several times; an interleaved one
 * runs to its limit each time.  A problem equal in every field the
 * solver reads, under equal options, gets the answer the first solve gave:
 * the same split, the same flags (proven or not), with solve_s this call's.
 * The answers live in the caller's store (px_partition_opts.memo; the
 * planner keeps one per search), not in the process. */
#include "px_partition_memo.h"

#include <stdlib.h>
#include <string.h>

/* A planner run refines at most top + misses candidates; a few recent
 * problems cover the repeats, which come close together in its ranking. */
#define MEMO_SLOTS 8

typedef struct {
    px_partition_problem *pb; /* NULL: empty slot */
    px_partition_opts o;
    px_partition_solution sol;
} memo_slot;

struct px_partition_memo {
    memo_slot slots[MEMO_SLOTS];
    int next_slot;
    int hits;
};

px_partition_memo *px_partition_memo_new(void) { return calloc(1, sizeof(px_partition_memo)); }

void px_partition_memo_free(px_partition_memo *memo)
{
    if (!memo)
        return;
    for (int i = 0; i < MEMO_SLOTS; i++)
        free(memo->slots[i].pb);
    free(memo);
}

int px_partition_memo_hits(const px_partition_memo *memo) { return memo ? memo->hits : 0; }

/* Field by field (the structs have padding): the fields the solver reads,
 * the per-layer and per-stage tables over their used lengths. */
static bool same_problem(const px_partition_problem *a, const px_partition_problem *b)
{
    int L = a->n_layers, p = a->pp;
    return L == b->n_layers && p == b->pp && a->vpp == b->vpp &&
           a->allowed_recompute == b->allowed_recompute &&
           memcmp(a->layer_time_s, b->layer_time_s, (size_t)L * sizeof a->layer_time_s[0]) == 0 &&
           memcmp(a->layer_act_bytes, b->layer_act_bytes,
                  (size_t)L * sizeof a->layer_act_bytes[0]) == 0 &&
           memcmp(a->layer_static_bytes, b->layer_static_bytes,
                  (size_t)L * sizeof a->layer_static_bytes[0]) == 0 &&
           a->embed_time_s == b->embed_time_s && a->head_time_s == b->head_time_s &&
           a->embed_static_bytes == b->embed_static_bytes &&
           a->head_static_bytes == b->head_static_bytes &&
           a->embed_act_bytes == b->embed_act_bytes && a->head_act_bytes == b->head_act_bytes &&
           a->stage_base_bytes == b->stage_base_bytes &&
           memcmp(a->in_flight, b->in_flight, (size_t)p * sizeof a->in_flight[0]) == 0 &&
           a->mem_limit_bytes == b->mem_limit_bytes && a->n_micro == b->n_micro;
}

static bool same_opts(const px_partition_opts *a, const px_partition_opts *b)
{
    /* under a work limit the clock is only a backstop: an answer the work
     * decided stands whatever time was left when it was asked */
    bool same_limits = a->work_limit == b->work_limit &&
                       (a->work_limit > 0.0 || a->time_limit_s == b->time_limit_s);
    return same_limits && a->mip_gap == b->mip_gap &&
           a->minimise_recompute == b->minimise_recompute &&
           a->minimise_memory == b->minimise_memory && a->tie_rel == b->tie_rel &&
           a->presolve == b->presolve && a->heuristics == b->heuristics &&
           a->exact_dp == b->exact_dp;
}

bool px_part_memo_get(px_partition_memo *memo, const px_partition_problem *pb,
                      const px_partition_opts *o, px_partition_solution *sol)
{
    for (int i = 0; i < MEMO_SLOTS; i++) {
        const memo_slot *s = &memo->slots[i];
        if (s->pb && same_opts(&s->o, o) && same_problem(s->pb, pb)) {
            *sol = s->sol;
            memo->hits++;
            return true;
        }
    }
    return false;
}

void px_part_memo_put(px_partition_memo *memo, const px_partition_problem *pb,
                      const px_partition_opts *o, const px_partition_solution *sol)
{
    memo_slot *s = &memo->slots[memo->next_slot];
    if (!s->pb)
        s->pb = malloc(sizeof *s->pb);
    if (s->pb) {
        *s->pb = *pb;
        s->o = *o;
        s->sol = *sol;
        memo->next_slot = (memo->next_slot + 1) % MEMO_SLOTS;
    }
}
