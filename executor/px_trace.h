/* px_trace.h — where a step's time goes, measured: every kernel, collective
 * and point-to-point batch the engine hands to its backend, timed on the
 * host clock and sorted into the cost model's classes, plus the engine's
 * own spans around them (the step, each F / B / W op, the gradient
 * reduction, the optimizer step).
 *
 * The tracer wraps a backend (px_trace_attach): it copies the backend's
 * table, puts its own functions in the backend's place and forwards every
 * call.  It always sums each class's seconds over the timed steps (two clock
 * reads a call; the report's `measured_class_s`); with events kept it also
 * records each span and px_trace_write gathers all ranks' spans to rank 0
 * and writes one Chrome trace-event JSON file (pid = world rank), which
 * Perfetto and chrome://tracing open.  docs/executor.md, "Trace".
 *
 * Kernels take no context argument, so the wrapped kernel table reaches its
 * recorder through one process-wide pointer: one traced backend per process
 * (execute runs one engine per MPI rank).  Spans of an asynchronous backend
 * (CUDA) are host-side enqueue times; its class sums are not reported. */
#ifndef PX_TRACE_H
#define PX_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "px_backend.h"
#include "px_error.h"

/* The classes of the cost model's step (docs/cost-model.md) a leaf span
 * belongs to.  COMM: every collective (TP, CP, DP / ZeRO, EP, the loss
 * statistics); P2P: pipeline message batches, which on this engine include
 * the wait for the peer stage, i.e. the pipeline bubble. */
typedef enum {
    PX_TRACE_GEMM = 0,
    PX_TRACE_ATTENTION,
    PX_TRACE_ELEMENTWISE,
    PX_TRACE_COMM,
    PX_TRACE_P2P,
    PX_TRACE_OPTIMIZER,
    PX_TRACE_N_CLASSES
} px_trace_class;

/* Engine spans (px_trace_span): they contain leaf spans. */
typedef enum {
    PX_SPAN_STEP = 0,
    PX_SPAN_FWD,      /* a0 = model chunk, a1 = micro-batch */
    PX_SPAN_BWD,      /* B (input gradients; the whole backward outside zero-bubble) */
    PX_SPAN_WGRAD,    /* W of a zero-bubble schedule */
    PX_SPAN_REDUCE,   /* gradient reduction after the last backward */
    PX_SPAN_OPTIMIZER,/* the optimizer step with its ZeRO collectives */
    PX_SPAN_COUNT
} px_trace_span_kind;

/* "gemm", "attention", "elementwise", "comm", "p2p", "optimizer". */
const char *px_trace_class_name(px_trace_class c);

typedef struct px_trace_event px_trace_event;

typedef struct {
    px_backend inner;          /* the wrapped backend's table as it was */
    const px_kernels *inner_k; /* the kernels the wrappers forward to */
    px_kernels k;              /* the wrapping kernel table */
    bool keep_events;
    px_trace_event *ev;
    int64_t n_ev, cap_ev;
    bool ev_failed;            /* an event could not be stored (out of memory) */
    double t_origin;           /* host clock at px_trace_start, seconds */
    int64_t step;              /* current step, -1 outside one */
    bool timed;                /* the current step is timed */
    double class_s[PX_TRACE_N_CLASSES]; /* summed over the timed steps */
    double step_s;             /* this rank's own time of the timed steps, summed */
    int64_t timed_steps;
    double step_t0;
} px_trace;

/* Wraps *be (before px_exec_create, which installs the kernel table of the
 * storage dtype through be->set_dtype: the wrapper re-wraps it).  keep_events:
 * record spans for px_trace_write.  Makes tr the process's active tracer. */
px_status px_trace_attach(px_trace *tr, px_backend *be, bool keep_events, px_error *err);

/* Sets the common time origin: every rank calls it right after a barrier. */
void px_trace_start(px_trace *tr);

/* Around each step (px_exec_step): timed = not a warm-up step. */
void px_trace_step_begin(px_trace *tr, int64_t step, bool timed);
void px_trace_step_end(px_trace *tr);

/* Engine hooks: px_trace_now() before, px_trace_span(kind, t0, a0, a1)
 * after.  Both are no-ops (now() returns 0) without an active tracer. */
double px_trace_now(void);
void px_trace_span(px_trace_span_kind kind, double t0, int64_t a0, int64_t a1);

/* Per-class seconds per timed step of this rank: out[PX_TRACE_N_CLASSES]. */
void px_trace_class_means(const px_trace *tr, double *out);

/* Collective over `world`: gathers every rank's spans to rank 0, which
 * writes `path` (written to a temporary file and renamed).  The result
 * (PX_OK or the error) is the same on every rank. */
px_status px_trace_write(px_trace *tr, const char *path, MPI_Comm world, px_error *err);

/* Detaches (the process has no active tracer after it) and frees. */
void px_trace_free(px_trace *tr);

#endif
