/* px_partition.h — which layers go to which pipeline chunk, and which layers
 * recompute their activations, chosen by a mixed-integer program (GLPK,
 * through px_milp).  See docs/partition.md for the formulation.
 *
 * The problem is stated per layer and knows nothing of the cost model:
 * for layer i and recompute choice r (px_recompute: none, selective, full)
 * the forward + backward time of one micro-batch and the activation bytes one
 * micro-batch leaves behind, plus the layer's static bytes (weights, grads,
 * optimizer share).  Chunk c of the p*v chunks (model order) lives on stage
 * c mod p; each chunk gets a contiguous, non-empty range of layers.  The
 * embedding sits on chunk 0 (stage 0), the LM head and loss on chunk p*v-1
 * (stage p-1).  Stage s holds in_flight[s] micro-batches' worth of the
 * activations of all its chunks at its peak (the schedule decides:
 * px_partition_in_flight).  The program minimises the slowest stage's time
 * T per micro-batch (with interleaving and n_micro set: the step's length
 * m T + (p-1) Tc, Tc the slowest chunk) subject to every stage fitting in
 * mem_limit_bytes, then (second pass) the time added by recomputation at
 * that optimum, then (third pass) the largest stage memory at both.
 *
 * px_partition_refine (px_partition_refine.h) builds the problem from the
 * cost model for a planner candidate and writes the answer back into
 * px_parallel. */
#ifndef PX_PARTITION_H
#define PX_PARTITION_H

#include <stdbool.h>
#include <stdint.h>

#include "px_error.h"
#include "px_plan.h"

#define PX_PARTITION_MAX_STAGES PX_MAX_CHUNKS

typedef struct {
    int n_layers; /* L, 1..PX_MAX_LAYERS */
    int pp;       /* p stages */
    int vpp;      /* v chunks per stage; p*v <= L and <= PX_MAX_CHUNKS */

    /* Per layer and recompute choice: fwd+bwd(+recompute) seconds of one
     * micro-batch, and activation bytes one micro-batch keeps until its
     * backward. */
    double layer_time_s[PX_MAX_LAYERS][PX_RECOMPUTE_COUNT];
    int64_t layer_act_bytes[PX_MAX_LAYERS][PX_RECOMPUTE_COUNT];
    /* Per layer: weights + gradients + optimizer share on its GPU. */
    int64_t layer_static_bytes[PX_MAX_LAYERS];
    /* Bit (1u << r) set: choice r may be used.  Default: all three. */
    unsigned allowed_recompute;

    /* Embedding (stage 0) and LM head + final norm + loss (stage p-1):
     * time per micro-batch, static bytes, and activation bytes per
     * micro-batch (embedding output; logits and loss buffers), which count
     * in_flight times like a layer's. */
    double embed_time_s, head_time_s;
    int64_t embed_static_bytes, head_static_bytes;
    int64_t embed_act_bytes, head_act_bytes;

    /* Bytes every stage holds whatever its layers: p2p buffers, gradient
     * buckets, workspace. */
    int64_t stage_base_bytes;

    /* Micro-batches in flight at stage s's peak (fractional for interleaved
     * schedules: in units of all the stage's chunks). */
    double in_flight[PX_PARTITION_MAX_STAGES];

    /* HBM minus the reserve, per GPU. */
    int64_t mem_limit_bytes;

    /* Micro-batches per step, m.  With v > 1 and m > 0 the objective is the
     * step's length m T + (p - 1) Tc, Tc the slowest chunk (the interleaved
     * bubble is (p - 1) chunk times, which uneven chunks lengthen); otherwise
     * T alone ((m + p - 1) T for v = 1 has the same optimum). */
    int64_t n_micro;
} px_partition_problem;

typedef struct {
    double time_limit_s;     /* all GLPK passes together; default PX_PARTITION_DEFAULT_TIME_LIMIT_S */
    /* All GLPK passes together, in simplex iterations x nonzeros (px_milp.h):
     * a search stopped by it returns the same split on every machine.  0:
     * none, the time limit alone.  Default PX_PARTITION_DEFAULT_WORK_LIMIT. */
    double work_limit;
    double mip_gap;          /* relative; default PX_MILP_DEFAULT_GAP (px_milp.h) */
    bool minimise_recompute; /* second pass; default true */
    bool minimise_memory;    /* third pass, after the second: least peak memory; default true */
    double tie_rel;          /* later passes keep the objective <= J* (1 + tie_rel); default 1e-6 */
    bool presolve;           /* GLPK's MIP presolver; default true */
    bool heuristics;         /* DP bound and greedy starting split; default true */
    /* Answer without GLPK where a dynamic program is exact (docs/partition.md,
     * "Exact passes without GLPK"): one chunk per stage, and the first pass's
     * DP bound met by its split with every layer at its fastest choice.
     * Default true; false sends every pass GLPK's way (the reference). */
    bool exact_dp;
    /* Answers kept for problems asked again (px_partition_memo_new): the
     * same problem under the same options gets the first answer without
     * solving again.  Owned by the caller, who keeps one for as long as its
     * problems repeat (the planner: one search); one thread at a time.
     * Default NULL: every call solves. */
    struct px_partition_memo *memo;
} px_partition_opts;

/* A caller's store of answers (px_partition_opts.memo). */
typedef struct px_partition_memo px_partition_memo;
/* NULL when out of memory. */
px_partition_memo *px_partition_memo_new(void);
void px_partition_memo_free(px_partition_memo *memo);
/* Calls answered from the store so far. */
int px_partition_memo_hits(const px_partition_memo *memo);

/* The planner refines its top candidates one after another: a couple of
 * seconds each is enough for v = 1 (milliseconds in practice); beyond it the
 * best split found so far is returned, flagged. */
#define PX_PARTITION_DEFAULT_TIME_LIMIT_S 2.0
/* Half a second of GLPK at the median rate of the programs GLPK does not
 * prove (4.9 to 23 million a second, median 9, on one core of the
 * reference machine: docs/partition.md, "Work limit"), so the 2 s time limit
 * stays a backstop. */
#define PX_PARTITION_DEFAULT_WORK_LIMIT 5e6

/* A split and its evaluation. */
typedef struct {
    int n_chunks;                                  /* p*v */
    int layers_per_chunk[PX_MAX_CHUNKS];           /* model order */
    unsigned char layer_recompute[PX_MAX_LAYERS];  /* px_recompute per layer */

    /* Filled by px_partition_evaluate (and every solver). */
    int pp;
    double stage_time_s[PX_PARTITION_MAX_STAGES];  /* per micro-batch */
    int64_t stage_mem_bytes[PX_PARTITION_MAX_STAGES];
    int stage_layers[PX_PARTITION_MAX_STAGES];
    int stage_recompute[PX_PARTITION_MAX_STAGES][PX_RECOMPUTE_COUNT]; /* layers per choice */
    double max_stage_time_s;   /* T */
    double max_chunk_time_s;   /* Tc: slowest chunk, embedding on chunk 0, head on the last */
    double objective_s;        /* m T + (p-1) Tc (v > 1, m > 0), else T: what is minimised */
    double recompute_time_s;   /* added over each layer's fastest allowed choice, all stages */
    int slowest_stage;
    int fullest_stage;         /* largest stage_mem_bytes - nothing else */
    int64_t max_over_bytes;    /* max over stages of mem - limit (<= 0 when it fits) */
    bool fits;                 /* every stage within limit x (1 + 1e-6): GLPK's rows hold
                                * to ~1e-7 and no memory model resolves bytes in 80 GB */

    /* Filled by the solvers. */
    bool proven_optimal;       /* false after a work or time limit */
    bool limit_hit;            /* a pass stopped at the work or the time limit */
    bool clock_hit;            /* the clock stopped a pass or the bound's DP: the split
                                * can differ on another machine or under another load */
    double work;               /* GLPK's work over every pass (px_milp.h's unit) */
    double gap;                /* relative MILP gap of the first pass (0 proven; -1 unknown) */
    double solve_s;
    char note[256];            /* "" or why the answer is not proven optimal */
    bool exact_dp;             /* every pass answered by a dynamic program, no GLPK */
} px_partition_solution;

void px_partition_problem_init(px_partition_problem *pb);
void px_partition_opts_init(px_partition_opts *o);

/* Checks sizes and values (each message names the field and the allowed
 * range). */
px_status px_partition_validate(const px_partition_problem *pb, px_error *err);

/* Micro-batches in flight at stage `stage`'s peak, in units of the stage's
 * whole per-micro-batch activation (all its chunks): px_cost_inflight (GPipe
 * m; 1F1B and ZB-H1 min(p - s, m); interleaved Megatron's warm-up count
 * (2(p-s-1) + (v-1)p + 1, <= m v) / v, so that stage 0 holds L x (1 +
 * (p-1)/(p v)) layers' worth as in the cost-model spec; ZB-H2 min(2p - 1, m)
 * on every stage), after checking the arguments.  Returns -1 for invalid
 * arguments. */
double px_partition_in_flight(px_schedule sched, int pp, int vpp, int64_t n_micro, int stage);

/* Fills the evaluation fields of sol from its layers_per_chunk and
 * layer_recompute (n_chunks must be p*v). */
px_status px_partition_evaluate(const px_partition_problem *pb, px_partition_solution *sol,
                                px_error *err);

/* The uniform split (L/(p v) layers per chunk; the remainder goes to the
 * middle chunks, away from the embedding and the head) with one recompute
 * choice for every layer, evaluated.  Fits or not. */
px_status px_partition_uniform(const px_partition_problem *pb, px_recompute rc,
                               px_partition_solution *sol, px_error *err);

/* The MILP (with, unless opts->heuristics is off, a DP bound and a greedy
 * starting split that GLPK must beat).  PX_OK: sol holds the split (check
 * proven_optimal: false when the work or time limit stopped the search; note
 * says so, and the split is the best found, at worst the starting one).
 * PX_ERR_INFEASIBLE: no split fits; sol holds the split that overflows least
 * and err names the stage and by how much.  PX_ERR_SOLVER: a limit without
 * any split, or GLPK failure.  opts may be NULL. */
px_status px_partition_solve(const px_partition_problem *pb, const px_partition_opts *opts,
                             px_partition_solution *sol, px_error *err);

/* A lower bound on T, the slowest stage's time per micro-batch, over every
 * split and recompute choice that fits: the DP over the knapsacks' LP costs
 * (docs/partition.md, "Bounds and a starting split") where it runs (one
 * chunk per stage, or identical layers), else 0.  Cheap: no GLPK. */
px_status px_partition_lower_bound(const px_partition_problem *pb, double *t_lower,
                                   px_error *err);

/* Exhaustive reference for small instances (every boundary placement times
 * every recompute vector); same objective, tie rule and return codes as
 * px_partition_solve.  PX_ERR_INVALID when there are more than
 * PX_PARTITION_BRUTE_MAX combinations. */
#define PX_PARTITION_BRUTE_MAX 50000000.0
px_status px_partition_brute_force(const px_partition_problem *pb,
                                   const px_partition_opts *opts,
                                   px_partition_solution *sol, px_error *err);

/* "9,9,8,6" (layers per chunk) into buf. */
void px_partition_format_split(const px_partition_solution *sol, char *buf, int buf_len);

/* The per-stage table for --explain: a '#' header with units, then one
 * fixed-column line per stage (layers, layers per chunk, time per
 * micro-batch, memory, share of the limit, layers per recompute choice). */
void px_partition_format_stages(const px_partition_solution *sol, int64_t mem_limit_bytes,
                                char *buf, int buf_len);

#endif
