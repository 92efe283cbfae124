/* px_measure.h — what `execute` measured next to what the plan predicted:
 * one line per step on rank 0, and the report JSON (docs/executor.md). */
#ifndef PX_MEASURE_H
#define PX_MEASURE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "px_error.h"
#include "px_memtrack.h"
#include "px_plan.h"

/* The five compared quantities. */
typedef struct {
    double step_time_s;
    double tokens_per_s;
    double mfu;
    double hfu;
    double peak_memory_bytes; /* worst rank */
} px_measure;

typedef struct {
    int64_t steps, warmup;
    int64_t first_step;  /* the first step's index (a resumed run's checkpoint step) */
    double *losses;      /* [warmup + steps], in order (NaN / inf kept: null in JSON) */
    double *grad_norms;  /* [warmup + steps] px_exec_grad_norm; NULL: not recorded */
    double *mtp_losses;  /* [warmup + steps] px_exec_mtp_loss, the MTP term inside
                          * losses; NULL: a model without MTP modules */
    int64_t diverged_step; /* the step whose loss or gradients were not finite, at
                            * which the run stopped; -1: none */
    double *step_time_s; /* [warmup + steps], slowest rank */
    double *cpu_time_s;  /* [warmup + steps], the rank whose main thread used the
                          * most CPU time in the step (px_cpu_clock.h); NULL: not
                          * recorded */
    double *device_time_s; /* [warmup + steps], slowest rank, by the device's clock
                            * (CUDA events); NULL where the backend has none */
    const char *dtype;     /* storage of activations and weights: "bf16", "fp32" */
    int64_t *reserved_peak_bytes; /* [world] the device allocator's reserved peak over
                                   * the timed steps; NULL where the backend has none */
    int world;
    const char *backend;             /* px_backend name */
    int64_t *peak_memory_bytes;      /* [world], over the timed steps */
    int64_t (*peak_breakdown)[PX_MEM_KINDS]; /* [world][kind] at each rank's peak */
    int64_t *host_bytes;             /* [world] host memory held over the timed steps (the
                                      * offloaded optimizer state); reported where the
                                      * plan offloads */
    /* The plan's predicted peak per pipeline stage and each rank's stage, so
     * that every rank is compared with its own stage, not only the worst
     * (px_measure_stages fills them; n_stages 0: not available). */
    int n_stages;                          /* plan->par.pp */
    int64_t *predicted_stage_peak_bytes;   /* [n_stages] */
    int *rank_stage;                       /* [world] */
    px_measure measured;       /* step_time_s: the median of the timed steps */
    double step_time_min_s, step_time_mean_s; /* of the timed steps */
    /* [world][PX_TRACE_N_CLASSES + 1]: each rank's seconds per timed step
     * by class (px_trace.h), then its own step time; NULL when not measured
     * (a backend with a device clock runs asynchronously) */
    double *class_s;
} px_run;

/* Fills run->n_stages, predicted_stage_peak_bytes and rank_stage (allocated
 * here; px_measure_free_stages frees them) from the plan file's per-stage
 * prediction (prediction.stages) and the rank layout (px_layout).
 * run->world must be set.  A plan without a prediction gets none per stage
 * either (PX_OK, n_stages 0).  On an error (a layout the world does not
 * match, out of memory) n_stages stays 0. */
px_status px_measure_stages(px_run *run, const px_plan *plan, px_error *err);
void px_measure_free_stages(px_run *run);

/* Measured numbers from the timed steps and the plan: the step time is the
 * median of the timed steps (warm-up excluded; one slow step from another
 * process on the machine does not move it), min and mean beside it. */
void px_measure_measure(px_run *run, const px_plan *plan);

/* The plan's prediction as the same five numbers. */
void px_measure_predicted(const px_plan *plan, px_measure *out);

/* The per-step table (rank 0): header (with '#' metadata) and one line. */
void px_measure_print_header(FILE *f, const px_plan *plan, int64_t steps, int64_t warmup);
void px_measure_print_step(FILE *f, int64_t step, bool warmup, double loss, double time_s,
                          const px_plan *plan, int64_t peak_bytes);
void px_measure_print_summary(FILE *f, const px_run *run, const px_plan *plan);

/* The plan's predicted step by the classes of px_trace.h (seconds per
 * step, from the plan file's prediction.time_by_class): gemm, attention and
 * elementwise of the slowest stage's micro-batches; comm: the exposed TP,
 * CP, EP and DP / ZeRO collectives; p2p: the pipeline messages and the
 * bubble; optimizer: the optimizer step.  They sum to the predicted step.
 * False (out all zero) when the plan carries no prediction. */
bool px_measure_predicted_classes(const px_plan *plan, double *out);

/* Writes the report JSON (sorted keys). */
px_status px_measure_write(const char *path, const px_run *run, const px_plan *plan,
                          const char *plan_path, px_error *err);

#endif
