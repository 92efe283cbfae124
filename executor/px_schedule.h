/* px_schedule.h — the order in which one pipeline rank runs the forward (F)
 * and backward (B) passes of its chunks over the micro-batches of a step.
 * Pure arithmetic (no MPI), so it is unit-tested on its own. */
#ifndef PX_EXEC_SCHEDULE_H
#define PX_EXEC_SCHEDULE_H

#include "px_error.h"
#include "px_plan.h"

typedef struct {
    char kind;  /* 'F' forward, 'B' backward */
    int chunk;  /* local chunk 0..vpp-1 (model chunk = chunk * pp + stage) */
    int micro;  /* micro-batch 0..m-1 */
} px_sched_op;

/* Fills ops[2 * vpp * n_micro] for `stage` of pp under schedule s:
 * GPipe (all F, then all B), 1F1B (pp - stage - 1 warm-up forwards), or
 * interleaved 1F1B (Megatron's order; needs vpp > 1 and n_micro % pp == 0).
 * Zero-bubble schedules are PX_ERR_UNSUPPORTED. */
px_status px_schedule_build(px_schedule s, int pp, int vpp, int stage, int n_micro,
                            px_sched_op *ops, int *n_ops, px_error *err);

/* Largest number of (chunk, micro-batch) forwards whose backward has not run
 * yet, over the op list: the activation sets held at the peak. */
int px_schedule_max_in_flight(const px_sched_op *ops, int n_ops);

#endif
