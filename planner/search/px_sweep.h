/* px_sweep.h — the search over a list of GPU counts: the best plan of each
 * (plan --sweep-gpus).  A list is "A..B" (A, 2A, 4A, ... up to B) or
 * "G1,G2,...". */
#ifndef PX_SWEEP_H
#define PX_SWEEP_H

#include "px_error.h"
#include "px_search.h"

#define PX_SWEEP_MAX 64

typedef struct {
    int gpus[PX_SWEEP_MAX];
    int n;
} px_sweep_list;

/* Parses spec into list; the message names the flag, the value and the
 * allowed forms.  Counts are 1..2^24, ascending as given. */
px_status px_sweep_parse(const char *spec, px_sweep_list *list, px_error *err);

/* One GPU count's outcome: st PX_OK with best, or the search's error. */
typedef struct {
    int gpus;
    px_status st;
    char msg[512];
    px_candidate best;
    int64_t n_evaluated, n_valid;
    double elapsed_s, analytic_s, milp_s;
    int64_t seq_len;
} px_sweep_row;

/* Runs px_search_run once per count (the best is what `plan --gpus G`
 * with the same options chooses); rows[i] for
 * list->gpus[i].  Returns PX_ERR_NOMEM only; a count that cannot be planned
 * is a row with its error. */
px_status px_sweep_run(const px_model *m, const px_hw *hw, const px_sweep_list *list,
                       const px_search_opts *o, px_sweep_row *rows, px_error *err);

#endif
