/* px_cuda_gemm.h — GEMMs of the CUDA backend through cuBLAS: bf16 inputs, fp32
 * accumulation (CUBLAS_COMPUTE_32F), bf16 or fp32 output.  The interface is
 * row-major with the transposes of cblas_sgemm(CblasRowMajor, ...), exactly as
 * the CPU backend calls BLAS, so the engine passes the same (trans, m, n, k,
 * ld) to either backend:
 *
 *   C[m,n] = alpha * op(A)[m,k] * op(B)[k,n] + beta * C[m,n]
 *   op(A) = A (A is m x k, lda >= k) or A^T (A is k x m, lda >= m); same for B.
 *
 * Weight gradients accumulate into fp32 (c_type PX_CUDA_F32, beta = 1) so the
 * sum over micro-batches is not rounded to bf16 at each step. */
#ifndef PX_CUDA_GEMM_H
#define PX_CUDA_GEMM_H

#include <stdbool.h>
#include <stdint.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "px_error.h"

typedef enum { PX_CUDA_BF16 = 0, PX_CUDA_F32 = 1 } px_cuda_dtype;

typedef struct px_cuda_blas px_cuda_blas;

/* A cuBLAS handle bound to `stream` with its own workspace (cuBLAS's
 * recommendation on Hopper: 32 MiB), counted in workspace_bytes. */
px_status px_cuda_blas_new(cudaStream_t stream, px_cuda_blas **out, px_error *err);
void px_cuda_blas_delete(px_cuda_blas *b);
int64_t px_cuda_blas_workspace_bytes(const px_cuda_blas *b);
/* The stream every GEMM of this handle is queued on. */
cudaStream_t px_cuda_blas_stream(const px_cuda_blas *b);

/* a, b: bf16 device pointers; c: bf16 or fp32 (c_type). */
px_status px_cuda_gemm(px_cuda_blas *blas, bool trans_a, bool trans_b, int64_t m, int64_t n,
                       int64_t k, float alpha, const void *a, int64_t lda, const void *b,
                       int64_t ldb, float beta, void *c, int64_t ldc, px_cuda_dtype c_type,
                       px_error *err);

/* The same with a, b, c all fp32.  PX_CUDA_F32_EXACT: true fp32 products
 * (CUBLAS_COMPUTE_32F_PEDANTIC: the reference path of the tests).
 * PX_CUDA_F32_BF16_TC: fp32 in and out, the products on bf16 tensor cores
 * with fp32 accumulation (CUBLAS_COMPUTE_32F_FAST_16BF) — the executor's
 * fp32 engine on a GPU, at tensor-core speed and bf16 input rounding. */
typedef enum { PX_CUDA_F32_EXACT = 0, PX_CUDA_F32_BF16_TC = 1 } px_cuda_f32_math;

px_status px_cuda_gemm_f32(px_cuda_blas *blas, bool trans_a, bool trans_b, int64_t m,
                           int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                           const float *b, int64_t ldb, float beta, float *c, int64_t ldc,
                           px_cuda_f32_math math, px_error *err);

#ifdef __cplusplus
}
#endif

#endif
