/* px_train.h — the timed training run `execute` drives over an engine: its
 * record (px_run) allocated, the steps run with the step numbers reduced to
 * rank 0, and each rank's peak memory and time by class gathered there.
 * Every function is collective over MPI_COMM_WORLD; an error returned by
 * one rank may leave the others inside a collective, so the caller ends
 * the job (MPI_Abort). */
#ifndef PX_TRAIN_H
#define PX_TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "px_backend.h"
#include "px_error.h"
#include "px_exec.h"
#include "px_measure.h"
#include "px_trace.h"

typedef struct {
    px_exec *ex;
    px_backend *be;
    const px_plan *plan;
    px_trace *trace; /* NULL: not traced */
    int rank, world;
    int64_t start, end;   /* the steps [start, end) of this run */
    int64_t warmup;       /* the first `warmup` of them untimed */
    int64_t trace_warmup; /* the tracer times steps from this index on (--warmup) */
    const char *save_dir; /* checkpoints every save_interval steps and at the end */
    int64_t save_interval;
    int fail_rank;        /* test hook: this rank fails at the start of fail_step */
    long long fail_step;
    FILE *out;            /* the step table (rank 0), NULL for none */
} px_train;

/* run's arrays for end - start steps and world ranks, and its fields. */
px_status px_train_run_init(const px_train *t, px_run *run, px_error *err);

/* Runs the steps, printing each to t->out (px_measure_print_step); stops after
 * a step that diverged (run->diverged_step) and saves checkpoints. */
px_status px_train_steps(const px_train *t, px_run *run, px_error *err);

/* Rank 0 receives every rank's peak memory, its breakdown by kind, the
 * device allocator's reserved peak and, when traced on a synchronous
 * backend, the seconds per timed step by class. */
px_status px_train_gather(const px_train *t, px_run *run, px_error *err);

/* Frees what px_train_run_init and px_train_gather allocated. */
void px_train_run_free(px_run *run);

#endif
