/* px_schedule.h — the order in which one pipeline rank runs the forward (F)
 * and backward (B) passes of its chunks over the micro-batches of a step.
 * Pure arithmetic (no MPI), so it is unit-tested on its own. */
#ifndef PX_EXEC_SCHEDULE_H
#define PX_EXEC_SCHEDULE_H

#include "px_error.h"
#include "px_plan.h"

typedef struct {
    char kind;  /* 'F' forward, 'B' backward (input gradients; all gradients
                 * unless the schedule has W ops), 'W' weight gradients */
    int chunk;  /* local chunk 0..vpp-1 (model chunk = chunk * pp + stage) */
    int micro;  /* micro-batch 0..m-1 */
} px_sched_op;

/* Fills ops[3 * vpp * n_micro] for `stage` of pp under schedule s:
 * GPipe (all F, then all B), 1F1B (pp - stage - 1 warm-up forwards),
 * interleaved 1F1B (Megatron's order; needs vpp > 1 and n_micro % pp == 0),
 * or ZB-H1 (1F1B with each backward split into B and W, W(j) right after
 * B(j): stage i holds at most min(pp - i, m) micro-batches between F and W,
 * the 1F1B count, and at most one between B and W; the cool-down W's fill
 * the wait for the next B).  ZB-H1 with vpp > 1 splits the interleaved order
 * the same way (W right after each B).  ZB-H2 (vpp = 1 only; vpp > 1 is
 * PX_ERR_UNSUPPORTED): stage i runs min(2(pp - i) - 1, m) warm-up forwards,
 * then B's as their gradients arrive with F's and W's between them, at most
 * 2pp - 1 micro-batches between F and W, and its last 2i + 1 ops are W's (m
 * >= 2pp - 1): the order of a unit-time simulation, see px_schedule.c and
 * docs/executor.md.  The caller's ops[] must hold 3 * vpp * n_micro ops. */
px_status px_schedule_build(px_schedule s, int pp, int vpp, int stage, int n_micro,
                            px_sched_op *ops, int *n_ops, px_error *err);

/* Largest number of (chunk, micro-batch) forwards whose backward (W when the
 * list has W ops) has not run yet: the activation sets held at the peak. */
int px_schedule_max_in_flight(const px_sched_op *ops, int n_ops);

/* Among the moments that hold px_schedule_max_in_flight activation sets,
 * the most (chunk, micro-batch) B's whose W has not run (0 without W ops).  These hold the output gradients kept for W besides their
 * activations; planner/cost/px_cost_1_layout.c's px_cost_inflight_bw predicts it. */
int px_schedule_max_b_to_w(const px_sched_op *ops, int n_ops);

/* ---- pipeline messages on a shared logical clock ------------------------------
 * NCCL-style point-to-point (px_backend.h p2p_batch) has no tags and a send
 * completes only once its receive is posted, so the ranks must agree when
 * each message moves.  The timeline gives every op of every stage a slot of a
 * unit-time clock (each stage runs its list in order, one op per slot, an op
 * no earlier than the slot after its input left the neighbour), and every
 * message the slot of the op that produced it.  A rank sends and receives the
 * messages of slot t as one batch after its op of slot t and before its next
 * op: all ranks then post the same messages in the same phases, so no phase
 * can wait on a later one (no deadlock), and each pair exchanges at most one
 * message per direction per phase (no mismatch). */
typedef struct {
    int slot;    /* phase: the producer's slot */
    int src, dst;/* pipeline stages */
    char kind;   /* 'F': activations for the F of model chunk mc + 1;
                  * 'B': input gradients for the B of model chunk mc - 1 */
    int mc;      /* producing model chunk */
    int micro;
} px_pipe_msg;

typedef struct {
    int pp, n_slots;
    int *n_ops;          /* [pp] */
    px_sched_op **ops;   /* [pp][n_ops] each stage's list */
    int **slot;          /* [pp][n_ops] */
    px_pipe_msg *msgs;   /* every message, by slot, then source stage */
    int n_msgs;
} px_timeline;

/* Builds the timeline of schedule s for all pp stages (zeroed tl first). */
px_status px_timeline_build(px_timeline *tl, px_schedule s, int pp, int vpp, int n_micro,
                            px_error *err);
void px_timeline_free(px_timeline *tl);

#endif
