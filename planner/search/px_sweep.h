/* px_sweep.h — the search over a product of lists (plan --sweep KEY=LIST):
 * the best plan of each point, where a point sets some of the GPU count,
 * the sequence length, the global batch, the hardware profile, the
 * framework and the GEMM precision.  A number list is "A..B" (A, 2A, 4A,
 * ... up to B) or "V1,V2,..."; a word list is "W1,W2,...". */
#ifndef PX_SWEEP_H
#define PX_SWEEP_H

#include <stdbool.h>

#include "px_error.h"
#include "px_search.h"

#define PX_SWEEP_MAX 64         /* values in one list */
#define PX_SWEEP_MAX_POINTS 256 /* points in the product of the lists */
#define PX_SWEEP_WORD_LEN 256   /* a profile name or path */

typedef enum {
    PX_SWEEP_GPUS = 0,
    PX_SWEEP_SEQ,
    PX_SWEEP_GLOBAL_BATCH,
    PX_SWEEP_HW,
    PX_SWEEP_FRAMEWORK,
    PX_SWEEP_PRECISION,
    PX_SWEEP_N_KEYS
} px_sweep_key;

/* The key's name on the command line: gpus, seq, global-batch, hw,
 * framework, precision. */
const char *px_sweep_key_name(px_sweep_key k);
bool px_sweep_key_is_number(px_sweep_key k);

/* One swept key and its values (num for the number keys, word for the
 * others), in the order given. */
typedef struct {
    px_sweep_key key;
    int n;
    int64_t num[PX_SWEEP_MAX];
    char word[PX_SWEEP_MAX][PX_SWEEP_WORD_LEN];
} px_sweep_axis;

/* The swept keys in the order given; the first varies slowest. */
typedef struct {
    px_sweep_axis axis[PX_SWEEP_N_KEYS];
    int n_axes;
} px_sweep_spec;

/* Adds "KEY=LIST" (flag names the option in messages); refuses an unknown
 * key, a key given twice, a malformed list, and a product over
 * PX_SWEEP_MAX_POINTS. */
px_status px_sweep_add(px_sweep_spec *s, const char *flag, const char *key_eq_list,
                       px_error *err);
/* Adds the list of key k (--sweep-gpus LIST is px_sweep_add_list(GPUS)). */
px_status px_sweep_add_list(px_sweep_spec *s, const char *flag, px_sweep_key k,
                            const char *list, px_error *err);
const px_sweep_axis *px_sweep_find(const px_sweep_spec *s, px_sweep_key k);
int px_sweep_n_points(const px_sweep_spec *s);

/* One point's outcome: st PX_OK with best, or the search's error. */
typedef struct {
    int idx[PX_SWEEP_N_KEYS]; /* the value of each axis (by position in spec) */
    int gpus;
    int64_t seq_len, global_batch;      /* as the search resolved them (0: not reached) */
    char hw[64], framework[32];         /* the profiles' names */
    char precision[32];                 /* as the framework runs it */
    px_status st;
    char msg[512];
    px_candidate best;
    int64_t n_evaluated, n_valid;
    double elapsed_s, analytic_s, milp_s;
} px_sweep_row;

/* Called after each point's search with the point's row, the profile and
 * options it ran with (o->run the framework's traits) and the search's
 * result (its plans valid when r->st is PX_OK); plan --sweep --explain
 * prints each point's breakdown from them.  A failure stops the sweep. */
typedef px_status (*px_sweep_point_fn)(void *arg, const px_sweep_row *r,
                                       const px_hw *hw, const px_search_opts *o,
                                       const px_search_result *res, px_error *err);

/* What every point shares: the options of the command line and the names
 * of the profiles a point does not sweep. */
typedef struct {
    const px_model *model;
    const char *hw;                /* name or file */
    const char *framework;         /* NULL: the default */
    const char *framework_release; /* NULL: none */
    int gpus;                      /* when not swept */
    const px_search_opts *opts;
    bool partition_given;          /* px_search_for_plan's */
    px_sweep_point_fn on_point;    /* NULL: none */
    void *on_point_arg;
} px_sweep_base;

/* The point's value of axis a as text ("1024", "h200"). */
void px_sweep_value_text(const px_sweep_spec *s, const px_sweep_row *r, int a, char *buf,
                         size_t len);

/* Checks that every swept profile loads, then runs px_search_for_plan once
 * per point (the best is what `plan` with the point's options chooses);
 * rows has px_sweep_n_points entries, in the product's order.  Fails on a
 * profile that does not load and on PX_ERR_NOMEM; a point that cannot be
 * planned is a row with its error; base->on_point's failure stops it. */
px_status px_sweep_run(const px_sweep_base *base, const px_sweep_spec *spec,
                       px_sweep_row *rows, px_error *err);

#endif
