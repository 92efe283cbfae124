/* px_search.h — the exhaustive search over parallel configurations: every
 * valid combination of TP, CP, EP (and expert TP), PP, VPP, DP, micro-batch,
 * ZeRO stage, recomputation and schedule for G GPUs and a target global
 * batch, scored by px_cost and ranked by predicted step time (ties: less
 * memory).  Rejected combinations are counted by reason; any dimension can be
 * fixed.  Also the lecture's rule-of-thumb plan, scored by the
 * same model.  See docs/cost-model.md, "Search". */
#ifndef PX_SEARCH_H
#define PX_SEARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "px_caps.h"
#include "px_cost.h"
#include "px_error.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_plan.h"

/* The lecture's global batch: 2^24 tokens (Llama 3's 16 M), the default for
 * models of PX_SEARCH_BATCH_FULL_PARAMS parameters and more. */
#define PX_SEARCH_TOKENS_PER_STEP_DEFAULT 16777216LL
/* The largest batch a step may have: 2^50 tokens keeps every token and FLOP
 * count formed from it exact (checked in the batch resolution). */
#define PX_SEARCH_MAX_TOKENS_PER_STEP (1LL << 50)
/* The lecture's 70B example trains with the full 2^24 tokens a step. */
#define PX_SEARCH_BATCH_FULL_PARAMS 7e10

/* The default global batch in tokens when none is given: the lecture's 2^24
 * tokens scaled by sqrt(N / 70e9) for a model of N < 70e9 parameters (all
 * of them, experts included), rounded to the nearest power of two.  The square
 * root follows the published batch sizes: GPT-3 (Brown et al. 2020,
 * Table 2.1) 0.5M tokens at 125M parameters (the rule: 2^19) up to 3.2M at
 * 175B; Llama 2 4M at 7B-70B; Llama 3 16M at 405B; a critical batch that
 * grows slower than the model.  A 1M-parameter model gets 2^16 tokens. */
int64_t px_search_default_tokens_per_step(const px_model *m);
#define PX_SEARCH_TOP_DEFAULT 10
#define PX_SEARCH_TOP_MAX 100

/* Search options.  Sizes: 0 = free (searched); enums: -1 = free. */
typedef struct {
    int tp, cp, ep, etp, pp, vpp, dp;
    int64_t micro_batch, n_micro;
    int zero;                /* -1 or 0..3 */
    int recompute;           /* -1 or px_recompute */
    int schedule;            /* -1 or px_schedule */
    int sp;                  /* -1: on whenever tp > 1; 0 off; 1 on */
    int grad_fp32;           /* -1: default (fp32 main gradients); 0 bf16; 1 fp32 */
    int dp_overlap;          /* -1: default (on); 0: gradient reduction after the backward */
    int tp_overlap;          /* -1: default (on); 0: backward TP collectives not hidden */
    int tp_comm_overlap;     /* -1: default (off, as every framework runs); 1: the
                              * forward's TP collectives under their GEMMs in every plan
                              * with SP (px_parallel.tp_comm_overlap); 0 off */
    unsigned recompute_modules; /* bits of px_rc_module a selective layer reruns; 0: the
                                 * default (the attention core) */
    px_moe_dispatch moe_dispatcher; /* the routed tokens' dispatcher (default all-to-all) */
    int moe_a2a_overlap;     /* -1: the framework's trait, where its rule allows it
                              * (px_rule_moe_a2a_overlap); 0 off; 1 on in every plan */
    px_precision precision;  /* the linear GEMMs' number format (default bf16); a
                              * precision the profile lacks is refused */
    px_cp_comm cp_comm;      /* CP attention communication, where cp_comm_given */
    bool cp_comm_given;      /* false: the framework's own flavour (px_caps_cp_comm) */
    px_finetune finetune;    /* what is trained (default pre-training; px_finetune.h) */
    px_offload offload;      /* what every configuration offloads (default none) */
    bool offload_auto;       /* when nothing fits, search again with the optimizer
                              * offloaded, where the framework and the profile allow
                              * it (default true; --offload none turns it off) */
    int64_t seq_len;         /* 0: the model's */
    int64_t global_batch;    /* sequences; 0: tokens_per_step / seq_len */
    int64_t tokens_per_step; /* 0: PX_SEARCH_TOKENS_PER_STEP_DEFAULT */
    int top;                 /* configurations kept, best first */
    /* bounds of the free dimensions */
    int max_tp, max_cp, max_vpp;
    int64_t max_micro_batch;
    /* allow pp that does not divide the layers (v = 1): a balanced uneven
     * split recorded in par.layers_per_chunk (default true) */
    bool uneven;
    /* time to train (0: skip) and the failure rate (0: the profile's) */
    double train_tokens;
    double gpu_mtbf_hours;
    /* Stage partitioning (docs/partition.md): after the analytic pass, the
     * top candidates and the few memory-rejected ones closest to fitting go
     * through the GLPK program (px_partition_refine), which may move layers
     * between stages and choose recomputation per layer; then the top list
     * is re-ranked.  Default true; false: uniform splits only. */
    bool milp;
    /* The program's limits.  By default a candidate's programs stop at
     * PX_SEARCH_MILP_WORK of GLPK's work (px_milp.h: simplex iterations x
     * nonzeros; a tenth for interleaved candidates, whose programs are
     * larger) and all the candidates' at PX_SEARCH_MILP_WORK_BUDGET, so that
     * a search gives the same plan on any machine under any load; the clock
     * is a backstop.  milp_time_limit_s > 0 makes the search wall-clock bound
     * instead: no work limits, that time limit per candidate. */
    double milp_time_limit_s; /* seconds per candidate; 0: PX_SEARCH_MILP_TIME_LIMIT_S */
    /* all the programs of one search together, seconds (0:
     * PX_SEARCH_MILP_BUDGET_S); candidates left when it or the work budget
     * is spent keep their uniform split (counted in milp_skipped) */
    double milp_budget_s;
    /* Threads of the analytic pass (0: the online processors, at most
     * PX_SEARCH_THREADS_MAX).  The result is the same for any number. */
    int threads;
    /* The reference search, for tests and benchmarks: every program through
     * GLPK (no exact DP pass, px_partition_opts.exact_dp off) and every one
     * of the top candidates refined (no lower-bound pruning).  Default
     * false. */
    bool milp_glpk_only;
    bool milp_no_prune;
    /* The reference analytic pass, for tests and benchmarks: every
     * configuration that fits is timed (no skipping by the lower bound of
     * px_bound.h).  The result is the same either way.  Default false. */
    bool exhaustive;
    /* The framework the plan is for (px_framework.h): the search scores only
     * configurations its capabilities allow (a fixed dimension it cannot run
     * is an error naming the capability), and takes the overlap and attention
     * defaults from how it runs.  NULL: px_caps_parallax (px_plan_check.h), the
     * whole space the cost model prices, with the planner's defaults. */
    const px_caps *caps;
    const struct px_fw_runtime *run;
    int flash_attention;     /* -1: the framework's fused attention (on without one); 0 off; 1 on */
    px_attn_kernel attn_kernel; /* the fused kernel (default: the framework's) */
    int shard_group;         /* ZeRO-3 hybrid sharding: shard within groups of N dp ranks
                              * (px_parallel.shard_group); 0: over the whole group */
} px_search_opts;

#define PX_SEARCH_THREADS_MAX 64

/* Per candidate; interleaved programs get a tenth (their heuristic split is
 * within about 1 % of the bound, and the top ten must stay near a second
 * together).  Half of PX_PARTITION_DEFAULT_WORK_LIMIT: a tenth to half a
 * second of one core on the programs GLPK does not prove (docs/partition.md,
 * "Work limit"). */
#define PX_SEARCH_MILP_WORK 2.5e6
#define PX_SEARCH_MILP_WORK_BUDGET 5e6
/* The clock's backstops: several times what the work limits take on the
 * hardest programs, so that they bind only on a machine much slower or
 * busier than the one the work limits were sized on. */
#define PX_SEARCH_MILP_TIME_LIMIT_S 2.0
/* Memory-rejected candidates (least memory first) handed to the program. */
#define PX_SEARCH_MILP_MISSES 4
#define PX_SEARCH_MILP_BUDGET_S 4.0
/* Candidates the analytic pass keeps beyond --top for the program. */
#define PX_SEARCH_MILP_EXTRA 4

void px_search_opts_init(px_search_opts *o);

typedef enum {
    PX_REJ_GPUS = 0,   /* G not divisible by tp·cp·pp, or a fixed dp that does not match */
    PX_REJ_HEADS,      /* tp does not divide the heads / kv heads / ffn */
    PX_REJ_SEQ,        /* cp does not divide the sequence length */
    PX_REJ_LAYERS,     /* pp·vpp does not divide the layers (vpp > 1, or uneven off) */
    PX_REJ_EXPERTS,    /* ep does not divide the experts, or ep·etp the tp·cp·dp GPUs */
    PX_REJ_BATCH,      /* global batch not divisible by micro-batch · dp (or fixed m);
                        * interleaving with fewer than pp micro-batches */
    PX_REJ_MEMORY,     /* does not fit in hbm_bytes − mem_reserve_bytes */
    PX_REJ_FRAMEWORK,  /* the framework (opts.caps) cannot run it */
    PX_REJ_COUNT
} px_reject;

const char *px_reject_name(px_reject r); /* "gpus not divisible", ... */

typedef struct {
    px_parallel par;
    px_prediction pred;
} px_candidate;

typedef struct {
    int gpus;
    int64_t seq_len, global_batch, tokens_per_step;
    int64_t mem_limit_bytes;          /* hbm − reserve */
    bool offload_auto_used;           /* nothing fit on the devices alone: the plans
                                       * offload the optimizer (opts.offload_auto) */
    /* stage partitioning (opts.milp) */
    bool milp_ran;
    int milp_top, milp_misses;        /* candidates from the analytic pass's top / its misses */
    int milp_refined;                 /* candidates given to the program */
    int milp_changed;                 /* ... whose split or recompute it changed */
    int milp_rescued;                 /* memory-rejected candidates it made fit */
    int milp_failed;                  /* program failed: candidate kept as it was */
    int milp_not_proven;              /* work or time limit, or gap: best split found, not
                                       * proven optimal */
    int milp_clock_hit;               /* candidates the clock stopped or skipped: their split
                                       * can differ on another machine or under another load */
    int milp_skipped;                 /* not refined: the budget was spent */
    int milp_pruned;                  /* not refined: a proven lower bound on its score
                                       * cannot reach the list */
    int milp_by_dp;                   /* answered by the exact DP, without GLPK */
    double milp_s;                    /* seconds in the program */
    char milp_note[1100];             /* the first failure's message (whole), or "" */
    px_candidate top[PX_SEARCH_TOP_MAX];
    int n_top;
    int64_t n_evaluated;              /* configurations scored (memory at least) */
    int64_t n_valid;                  /* ... that fit */
    int64_t n_pruned;                 /* ... that fit and were not timed: a proven lower
                                       * bound on their score (px_bound.h) could not reach
                                       * the list (the count depends on the threads' timing,
                                       * the result does not) */
    int64_t rejected[PX_REJ_COUNT];
    bool has_closest_miss;            /* the least-memory configuration that did not fit */
    px_candidate closest_miss;
    bool has_rule;                    /* the rule-of-thumb plan */
    bool rule_fits;
    bool rule_same_batch;             /* the rule plan runs the search's global batch */
    px_candidate rule;
    char rule_notes[1024];            /* the steps the rule took */
    double elapsed_s;
    double analytic_s;                /* seconds in the analytic pass */
    double rule_s;                    /* seconds in the rule-of-thumb plan */
    /* the default global batch moved to the nearest one the fixed layout
     * divides ("" = not moved) */
    char batch_note[256];
} px_search_result;

/* Runs the search.  Returns PX_ERR_INVALID for bad options (gpus < 1...),
 * PX_ERR_INFEASIBLE when nothing valid fits (the message says why, naming the
 * closest miss and the rejection counts; *res is filled either way). */
/* True when the options leave exactly one configuration to score: tp, cp,
 * pp fixed (dp then follows from the GPUs), ep and etp fixed or the model
 * dense, vpp fixed or implied (pp 1, or a schedule other than interleaved),
 * the micro-batch fixed (m then follows from the global batch), ZeRO,
 * recomputation and the schedule fixed (the schedule may be left free at
 * pp 1, where only 1F1B is scored; cp counts as fixed when tp·pp·dp = G
 * leaves it 1).  plan then keeps the uniform split
 * unless --partition milp is given: with all fixed it evaluates exactly
 * that configuration. */
bool px_search_fully_fixed(const px_model *m, int gpus, const px_search_opts *o);

px_status px_search_run(const px_model *m, const px_hw *hw, int gpus, const px_search_opts *o,
                        px_search_result *res, px_error *err);

/* The dimensions fixed in o that the framework o->caps cannot run:
 * PX_ERR_INFEASIBLE naming the flag and the capability (PX_OK without
 * caps), each judged by px_plan_check (px_search_caps.c).  Called by
 * px_search_run. */
px_status px_search_check_framework(const px_model *m, const px_search_opts *o, px_error *err);

/* The rule-of-thumb decision procedure as a plan (scored with px_cost);
 * fills res->rule, rule_fits, rule_notes.  Called by px_search_run. */
px_status px_search_rule_of_thumb(const px_model *m, const px_hw *hw, int gpus,
                                  const px_search_opts *o, px_search_result *res,
                                  px_error *err);

#endif
