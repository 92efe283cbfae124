/* px_cuda_status.c — foreign status codes to px_status (see header). */
#include "px_cuda_status.h"

#include <string.h>

/* Keep only the file's base name: build paths are long and say nothing. */
static const char *base_name(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    return slash ? slash + 1 : (path ? path : "");
}

px_status px_cuda_status(cudaError_t e, const char *what, const char *file, int line,
                         px_error *err)
{
    if (e == cudaSuccess)
        return PX_OK;
    /* Clear the sticky-free "last error" so a later unrelated check does not
     * report this one again; sticky (context-killing) errors stay regardless. */
    (void)cudaGetLastError();
    px_status code = (e == cudaErrorMemoryAllocation) ? PX_ERR_NOMEM : PX_ERR_CUDA;
    return px_error_set(err, code, base_name(file), line, 0, "%s: %s (%s, cudaError %d)", what,
                        cudaGetErrorString(e), cudaGetErrorName(e), (int)e);
}

px_status px_cublas_status(cublasStatus_t s, const char *what, const char *file, int line,
                           px_error *err)
{
    if (s == CUBLAS_STATUS_SUCCESS)
        return PX_OK;
    px_status code = (s == CUBLAS_STATUS_ALLOC_FAILED) ? PX_ERR_NOMEM
                     : (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_ARCH_MISMATCH)
                         ? PX_ERR_UNSUPPORTED
                         : PX_ERR_CUDA;
    return px_error_set(err, code, base_name(file), line, 0, "%s: cuBLAS %s: %s", what,
                        cublasGetStatusName(s), cublasGetStatusString(s));
}

px_status px_nccl_status(ncclResult_t r, ncclComm_t comm, const char *what, const char *file,
                         int line, px_error *err)
{
    if (r == ncclSuccess)
        return PX_OK;
    const char *detail = ncclGetLastError(comm);
    return px_error_set(err, PX_ERR_CUDA, base_name(file), line, 0, "%s: NCCL %s%s%s", what,
                        ncclGetErrorString(r), (detail && detail[0]) ? ": " : "",
                        (detail && detail[0]) ? detail : "");
}

int px_cuda_device_count(void)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}
