/* px_cuda_gemm.c — row-major GEMM on column-major cuBLAS (see header).
 *
 * cuBLAS is column-major; a row-major matrix X (r x c, ld) read column-major
 * is X^T (c x r, ld).  So row-major C = op(A) op(B) is column-major
 * C^T = op(B)^T op(A)^T: call cuBLAS with the operands swapped (B first),
 * m and n swapped, and each operand's own transpose flag. */
#include "px_cuda_gemm.h"

#include <stdlib.h>

#include <cublas_v2.h>

#include "px_cuda_status.h"

struct px_cuda_blas {
    cublasHandle_t handle;
    cudaStream_t stream; /* the handle's: every GEMM is queued there */
    void *workspace;
    int64_t workspace_bytes;
};

#define WORKSPACE_BYTES ((int64_t)32 << 20)

px_status px_cuda_blas_new(cudaStream_t stream, px_cuda_blas **out, px_error *err)
{
    *out = NULL;
    px_cuda_blas *b = calloc(1, sizeof *b);
    if (!b)
        return PX_FAIL(err, PX_ERR_NOMEM, "cuBLAS context");
    px_status st = px_cublas_status(cublasCreate(&b->handle), "cublasCreate", __FILE__,
                                    __LINE__, err);
    b->stream = stream;
    if (st == PX_OK)
        st = px_cublas_status(cublasSetStream(b->handle, stream), "cublasSetStream", __FILE__,
                              __LINE__, err);
    if (st == PX_OK)
        st = px_cuda_status(cudaMalloc(&b->workspace, (size_t)WORKSPACE_BYTES),
                            "cudaMalloc(cuBLAS workspace)", __FILE__, __LINE__, err);
    if (st == PX_OK) {
        b->workspace_bytes = WORKSPACE_BYTES;
        st = px_cublas_status(cublasSetWorkspace(b->handle, b->workspace,
                                                 (size_t)WORKSPACE_BYTES),
                              "cublasSetWorkspace", __FILE__, __LINE__, err);
    }
    /* Every call names its compute type (fp32 accumulation always); the
     * default math mode lets cuBLAS pick tensor-core kernels for it. */
    if (st == PX_OK)
        st = px_cublas_status(cublasSetMathMode(b->handle, CUBLAS_DEFAULT_MATH),
                              "cublasSetMathMode", __FILE__, __LINE__, err);
    if (st != PX_OK) {
        px_cuda_blas_delete(b);
        return st;
    }
    *out = b;
    return PX_OK;
}

void px_cuda_blas_delete(px_cuda_blas *b)
{
    if (!b)
        return;
    if (b->handle)
        cublasDestroy(b->handle);
    if (b->workspace)
        cudaFree(b->workspace);
    free(b);
}

int64_t px_cuda_blas_workspace_bytes(const px_cuda_blas *b) { return b->workspace_bytes; }

cudaStream_t px_cuda_blas_stream(const px_cuda_blas *b) { return b->stream; }

/* Checks the row-major shape contract before cuBLAS sees it, so a wrong ld
 * is reported with the engine's names rather than as CUBLAS_STATUS_INVALID_VALUE. */
static px_status check_shape(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                             int64_t lda, int64_t ldb, int64_t ldc, px_error *err)
{
    if (m < 0 || n < 0 || k < 0 || m > INT32_MAX || n > INT32_MAX || k > INT32_MAX)
        return PX_FAIL(err, PX_ERR_INVALID, "gemm m=%lld n=%lld k=%lld: each in [0, 2^31)",
                       (long long)m, (long long)n, (long long)k);
    int64_t min_lda = trans_a ? m : k, min_ldb = trans_b ? k : n;
    if (lda < (min_lda > 1 ? min_lda : 1) || ldb < (min_ldb > 1 ? min_ldb : 1) ||
        ldc < (n > 1 ? n : 1) || lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "gemm lda=%lld ldb=%lld ldc=%lld: row-major needs lda >= %lld, "
                       "ldb >= %lld, ldc >= %lld",
                       (long long)lda, (long long)ldb, (long long)ldc, (long long)min_lda,
                       (long long)min_ldb, (long long)n);
    return PX_OK;
}

px_status px_cuda_gemm(px_cuda_blas *blas, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                       int64_t ldb, float beta, void *c, int64_t ldc, px_cuda_dtype c_type,
                       px_error *err)
{
    PX_TRY(check_shape(trans_a, trans_b, m, n, k, lda, ldb, ldc, err));
    if (m == 0 || n == 0)
        return PX_OK;
    cudaDataType_t ct = c_type == PX_CUDA_F32 ? CUDA_R_32F : CUDA_R_16BF;
    PX_CUBLAS_TRY(err, cublasGemmEx(blas->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                    &alpha, b, CUDA_R_16BF, (int)ldb, a, CUDA_R_16BF, (int)lda,
                                    &beta, c, ct, (int)ldc, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT));
    return PX_OK;
}

px_status px_cuda_gemm_f32(px_cuda_blas *blas, bool trans_a, bool trans_b, int64_t m,
                           int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                           px_cuda_f32_math math, px_error *err)
{
    PX_TRY(check_shape(trans_a, trans_b, m, n, k, lda, ldb, ldc, err));
    if (m == 0 || n == 0)
        return PX_OK;
    cublasComputeType_t ct = math == PX_CUDA_F32_BF16_TC ? CUBLAS_COMPUTE_32F_FAST_16BF
                                                         : CUBLAS_COMPUTE_32F_PEDANTIC;
    PX_CUBLAS_TRY(err, cublasGemmEx(blas->handle, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                    trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k,
                                    &alpha, b, CUDA_R_32F, (int)ldb, a, CUDA_R_32F, (int)lda,
                                    &beta, c, CUDA_R_32F, (int)ldc, ct, CUBLAS_GEMM_DEFAULT));
    return PX_OK;
}
