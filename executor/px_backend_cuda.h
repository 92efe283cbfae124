/* px_backend_cuda.h — the CUDA backend of the executor (backend_cuda.cu):
 * device memory from the tracked stream-ordered allocator, the px_cuda_*
 * kernels (bf16 storage) or their _f32 instantiations (fp32 storage, the
 * table after create) and cuBLAS on one compute stream, NCCL collectives and
 * grouped ncclSend/ncclRecv point-to-point on their own stream, ordered
 * against compute with events (docs/cuda-backend.md).  Available when the build has CUDA
 * (PX_HAVE_CUDA defined for the executor). */
#ifndef PX_BACKEND_CUDA_H
#define PX_BACKEND_CUDA_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_backend.h"

/* Collective over world: selects this rank's GPU (node-local rank from the
 * host-name hashes), creates the streams, cuBLAS, the allocator.  One CUDA
 * backend per process (the kernel table has no context argument, so the
 * backend's state is process-wide).  Errors of the void kernels are kept and
 * returned by the next sync, collective or message call. */
px_status px_backend_cuda_create(px_backend *out, MPI_Comm world, px_error *err);

/* Aborts every NCCL communicator of the backend (ncclCommAbort): the
 * watchdog's abort hook (px_watchdog_set_abort_hook) when a collective
 * outlives --timeout.  Safe from another thread. */
void px_backend_cuda_abort(void *arg);

/* Peak bytes the device allocator handed out, and what its pool reserved. */
int64_t px_backend_cuda_peak_bytes(const px_backend *be);
int64_t px_backend_cuda_pool_peak_bytes(const px_backend *be);

#ifdef __cplusplus
}
#endif

#endif
