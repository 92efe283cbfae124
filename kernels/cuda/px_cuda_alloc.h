/* px_cuda_alloc.h — the executor's device allocator: stream-ordered
 * (cudaMallocAsync from the device's memory pool, kept warm so a freed block
 * is reused at once instead of going back to the driver) and tracked, so the
 * executor reports current and peak bytes per rank exactly as the CPU
 * backend's tracked allocator does.
 *
 * Accounting counts the bytes *requested* (what the cost model predicts);
 * px_cuda_alloc_pool_peak_bytes gives what the pool really reserved
 * (fragmentation and rounding included), for the report's breakdown.
 *
 * Ordering: allocations and frees are ordered on the allocator's stream (the
 * compute stream).  A buffer another stream used (NCCL's) may be freed only
 * after that stream's work was joined into the compute stream with an event. */
#ifndef PX_CUDA_ALLOC_H
#define PX_CUDA_ALLOC_H

#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_error.h"

typedef struct px_cuda_alloc px_cuda_alloc;

/* Allocator on the current device, ordered on `stream`. */
px_status px_cuda_alloc_new(cudaStream_t stream, px_cuda_alloc **out, px_error *err);

/* Frees every block still held, then the allocator itself.  NULL is fine. */
void px_cuda_alloc_delete(px_cuda_alloc *a);

/* n_bytes >= 0 (0 gives NULL and counts nothing).  Blocks are 256-byte aligned. */
px_status px_cuda_malloc(px_cuda_alloc *a, int64_t n_bytes, void **out, px_error *err);

/* ptr must come from this allocator (or be NULL). */
px_status px_cuda_free(px_cuda_alloc *a, void *ptr, px_error *err);

int64_t px_cuda_alloc_current_bytes(const px_cuda_alloc *a);
int64_t px_cuda_alloc_peak_bytes(const px_cuda_alloc *a);
/* Peak reserved by the pool (>= peak requested). */
int64_t px_cuda_alloc_pool_peak_bytes(const px_cuda_alloc *a);
/* Restarts peak tracking at the current level (after warm-up, per step). */
void px_cuda_alloc_reset_peak(px_cuda_alloc *a);

#ifdef __cplusplus
}
#endif

#endif
