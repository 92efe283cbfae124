/* px_ex_core.h — what the layer files use of the engine: allocation,
 * positions and the TP collectives (px_ex_core.c).  The engine's state is in
 * px_exec_internal.h, which includes this. */
#ifndef PX_EX_CORE_H
#define PX_EX_CORE_H

#include <stdint.h>

#include "px_backend.h"
#include "px_exec.h"
#include "px_memtrack.h"

/* Device allocations through the tracker: n elements of dtype t (int32
 * buffers: px_ex_alloc_i32).  px_ex_free(ex, &p) (px_exec_internal.h, a
 * macro so that it takes a pointer of every type) frees any of them. */
px_status px_ex_alloc(px_exec *ex, px_mem_kind kind, int64_t n, px_dtype t, void **out,
                      px_error *err);
px_status px_ex_alloc_f32(px_exec *ex, px_mem_kind kind, int64_t n, float **out,
                          px_error *err);
px_status px_ex_alloc_i32(px_exec *ex, px_mem_kind kind, int64_t n, int32_t **out,
                          px_error *err);
/* Index of the global sequence in row `row` of micro-batch `micro` at
 * `step`: a function of (step, dp replica, micro, row) only, so every split
 * trains on the same global batch. */
int64_t px_ex_sequence_index(const px_exec *ex, int64_t step, int64_t micro, int64_t row);
/* Global position of local sequence row p (context parallelism). */
int64_t px_ex_pos(const px_exec *ex, int cp_rank, int64_t p);

/* Calls fn(ex, first_local_row, n_rows, first_global_position, arg) for each
 * run of local rows [lo, hi) that is contiguous in global positions. */
void px_ex_pos_runs(const px_exec *ex, int64_t lo, int64_t hi,
                    void (*fn)(px_exec *, int64_t, int64_t, int64_t, void *), void *arg);

/* TP helpers.  gather: shard [Ts, h] -> fresh full [T, h] (SP only).
 * reduce: partial [T, h] (consumed) -> *out [Ts, h]: reduce-scatter under
 * SP, in-place all-reduce otherwise. */
px_status px_ex_tp_gather(px_exec *ex, const void *shard, void **full, px_error *err);
px_status px_ex_tp_reduce(px_exec *ex, void *partial, void **out, px_mem_kind kind,
                          px_error *err);

#endif
