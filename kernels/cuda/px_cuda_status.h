/* px_cuda_status.h — the one place where CUDA runtime, cuBLAS and NCCL status
 * codes become px_status.  Every call into those libraries, and every kernel
 * launch, goes through one of the PX_*_TRY macros so a failure carries the
 * source file:line of the call, the call's text and the library's own message
 * into the caller's px_error, and the function returns instead of crashing
 * later on a poisoned context.
 *
 * The error record's file/line hold the *source* position of the failing call
 * (there is no input file for a device error). */
#ifndef PX_CUDA_STATUS_H
#define PX_CUDA_STATUS_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_error.h"

/* Each returns PX_OK when the foreign status is success, else fills err with
 * PX_ERR_CUDA (PX_ERR_NOMEM for allocation failures) and returns it.  `what`
 * is the failing expression's text, file/line its source position. */
px_status px_cuda_status(cudaError_t e, const char *what, const char *file, int line,
                         px_error *err);
px_status px_cublas_status(cublasStatus_t s, const char *what, const char *file, int line,
                           px_error *err);
/* comm may be NULL; when set, ncclGetLastError(comm) adds NCCL's own detail
 * (which peer, which transport) to the message. */
px_status px_nccl_status(ncclResult_t r, ncclComm_t comm, const char *what, const char *file,
                         int line, px_error *err);

/* Number of usable devices, 0 when there is no driver, no device or the
 * runtime refuses (the tests skip on 0 rather than fail). */
int px_cuda_device_count(void);

#ifdef __cplusplus
}
#endif

/* Return from the enclosing px_status function when the call fails. */
#define PX_CUDA_TRY(err, call)                                                        \
    do {                                                                              \
        cudaError_t px_e_ = (call);                                                   \
        if (px_e_ != cudaSuccess)                                                     \
            return px_cuda_status(px_e_, #call, __FILE__, __LINE__, (err));           \
    } while (0)

/* After a <<<...>>> launch: catches bad launch configurations at once (the
 * asynchronous faults surface at the next synchronising call, also checked). */
#define PX_CUDA_LAUNCH_TRY(err, kernel_name)                                          \
    do {                                                                              \
        cudaError_t px_e_ = cudaGetLastError();                                       \
        if (px_e_ != cudaSuccess)                                                     \
            return px_cuda_status(px_e_, "launch of " kernel_name, __FILE__, __LINE__, \
                                  (err));                                             \
    } while (0)

#define PX_CUBLAS_TRY(err, call)                                                      \
    do {                                                                              \
        cublasStatus_t px_s_ = (call);                                                \
        if (px_s_ != CUBLAS_STATUS_SUCCESS)                                           \
            return px_cublas_status(px_s_, #call, __FILE__, __LINE__, (err));         \
    } while (0)

#define PX_NCCL_TRY(err, comm, call)                                                  \
    do {                                                                              \
        ncclResult_t px_r_ = (call);                                                  \
        if (px_r_ != ncclSuccess && px_r_ != ncclInProgress)                          \
            return px_nccl_status(px_r_, (comm), #call, __FILE__, __LINE__, (err));   \
    } while (0)

/* PX_TRY (px_error.h) propagates a px_status. */

#endif
