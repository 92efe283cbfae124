/* px_exec.h — the engine: one rank's part of a plan's training step
 * (TP/SP and CP inside layers, MoE layers under expert parallelism, the
 * pipeline schedule with gradient accumulation, DP / ZeRO 0-3 and AdamW), on
 * any px_backend.  Library code:
 * returns px_status, fills px_error, never prints or exits. */
#ifndef PX_EXEC_H
#define PX_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "px_backend.h"
#include "px_memtrack.h"
#include "px_params.h"
#include "px_plan.h"
#include "px_plan_check.h"

typedef struct {
    const char *data_path; /* NULL: synthetic tokens */
    uint64_t seed;         /* weights and synthetic data */
    float lr, beta1, beta2, adam_eps, weight_decay;
    float vector_wd_mult;  /* weight decay multiplier of the norms and biases: 0
                            * (Megatron's and the HF Trainer's default), 1 decays
                            * every parameter (px_optim.c) */
    float init_std;        /* std of the random weights */
    int dtype_bytes;       /* storage of activations and the compute copy of the
                            * weights: 2 bf16 (fp32 master, gradients and moments),
                            * 4 fp32; 0 (default): the plan's hw.dtype_bytes */
    int64_t inject_nan_step; /* test switch: this rank's loss and gradients are NaN
                              * at this step (-1, the default: never) */
    float mtp_loss_scale;  /* lambda of the multi-token-prediction term (lambda / D)
                            * sum_k loss_k: 0.1, Megatron-LM's
                            * --mtp-loss-scaling-factor default */
} px_exec_options;

/* The most steps one run (or a checkpoint) counts: 10 million, ~8x the 1.2M
 * of Llama 3 405B's pre-training; the per-step loss and norm arrays are
 * allocated up front, so a larger --steps or --warmup fails there. */
#define PX_EXEC_MAX_STEPS 10000000LL

/* lr 1e-3, betas (0.9, 0.95), eps 1e-8, weight decay 0.1 on the matrices only,
 * init std 0.02, seed 1. */
void px_exec_options_default(px_exec_options *o);

typedef struct px_exec px_exec;

/* The capability set of a backend ("cpu", "cuda"): px_plan_check.h. */
void px_exec_caps(const char *backend, px_caps *out);

/* Checks that this executor can run the plan (px_plan_check under its
 * capability set); the message says which field is wrong and what is allowed. */
px_status px_exec_check_plan(const px_plan *plan, const px_caps *caps, px_error *err);

/* Checks the plan's tp x cp x pp x dp against the MPI job's ranks. */
px_status px_exec_check_world(const px_plan *plan, int world_size, px_error *err);

/* Collective over `world`: splits the communicators, builds this rank's
 * parameter slices and initialises them.  be must outlive the engine. */
px_status px_exec_create(px_exec **out, const px_plan *plan, const px_exec_options *opt,
                         px_backend *be, MPI_Comm world, px_error *err);

/* One training step (collective): forward and backward of every
 * micro-batch under the schedule, gradient reduction, and the AdamW update
 * when `update`.  `step` (0-based) picks the data.  *loss is the mean token
 * loss of the global batch (same value on every rank).  A step whose loss or
 * gradients are not finite on any rank (px_exec_diverged) does not update
 * the weights: they stay those of the last good step. */
px_status px_exec_step(px_exec *ex, int64_t step, bool update, double *loss, px_error *err);

/* The last step's gradient norm: the largest over the ranks of the norm of
 * each rank's gradient buffer, NaN when any rank's is not finite; and
 * whether that step diverged (its loss or a gradient NaN or infinite).  The
 * same on every rank. */
double px_exec_grad_norm(const px_exec *ex);
/* The last step's multi-token-prediction term of its loss, (lambda / D)
 * sum_k loss_k (0 without MTP modules): the step's loss is the main
 * model's plus this. */
double px_exec_mtp_loss(const px_exec *ex);
bool px_exec_diverged(const px_exec *ex);

/* This rank's fp32 parameter and gradient buffers (device memory; host
 * memory on the CPU backend), laid out as px_exec_table: n = the table's
 * elements.  Under ZeRO-2 the gradients, and under ZeRO-3 the parameters too,
 * are this rank's shard instead (n = its elements; layout in px_shard.c).
 * In bf16 storage px_exec_params is the fp32 master, laid out as the AdamW
 * moments (the table below ZeRO-1, the optimizer's shard above); the kernels
 * read its bf16 copy, which only the next update rewrites.  Under optimizer
 * offload that master is in two places: NULL and n = 0 (px_exec_dump_weights
 * reads it whole). */
float *px_exec_params(px_exec *ex, int64_t *n);
float *px_exec_grads(px_exec *ex, int64_t *n);
const px_param_table *px_exec_table(const px_exec *ex);
/* The storage dtype the engine runs (px_exec_options.dtype_bytes). */
px_dtype px_exec_dtype(const px_exec *ex);
const px_memtrack *px_exec_memory(const px_exec *ex);
void px_exec_reset_peak(px_exec *ex);

/* Writes dir/rank<R>.bin (the parameters: the fp32 master in every storage,
 * little-endian fp32) and
 * dir/rank<R>.tsv (one segment per line: tensor_id full_rows full_cols row0
 * n_rows col0 n_cols offset). */
px_status px_exec_dump_weights(px_exec *ex, const char *dir, px_error *err);

void px_exec_destroy(px_exec *ex);

#endif
