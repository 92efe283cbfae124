/* px_cuda_matmul.c — the linear layer of the CUDA backend: out = inp W^T (+ b)
 * with W stored [N, K] as in the CPU twin, GEMMs through px_cuda_gemm (bf16
 * in, fp32 accumulate), weight gradients accumulated in fp32. */
#include "px_kernels_cuda.h"

#include <stddef.h>

#include "px_cuda_status.h"

/* The GEMMs run on the cuBLAS handle's stream and the bias kernels on
 * `stream`: they must be one stream, or the bias work would race the GEMM. */
static px_status same_stream(const px_cuda_blas *blas, cudaStream_t stream, px_error *err)
{
    if (px_cuda_blas_stream(blas) != stream)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "matmul: the cuBLAS handle queues on another stream than the caller's");
    return PX_OK;
}

px_status px_cuda_matmul_fwd(px_bf16 *out, const px_bf16 *inp, const px_bf16 *weight,
                             const px_bf16 *bias, int64_t T, int64_t K, int64_t N,
                             px_cuda_blas *blas, cudaStream_t stream, px_error *err)
{
    PX_TRY(same_stream(blas, stream, err));
    /* out[T,N] = inp[T,K] W[N,K]^T */
    PX_TRY(px_cuda_gemm(blas, false, true, T, N, K, 1.0f, inp, K, weight, K, 0.0f, out, N,
                        PX_CUDA_BF16, err));
    if (bias)
        PX_TRY(px_cuda_bias_add_fwd(out, bias, T, N, stream, err));
    return PX_OK;
}

px_status px_cuda_matmul_bwd(px_bf16 *dinp, float *dweight, float *dbias, const px_bf16 *dout,
                             const px_bf16 *inp, const px_bf16 *weight, int64_t T, int64_t K,
                             int64_t N, px_cuda_blas *blas, cudaStream_t stream, px_error *err)
{
    PX_TRY(same_stream(blas, stream, err));
    if (dinp) /* dinp[T,K] = dout[T,N] W[N,K] */
        PX_TRY(px_cuda_gemm(blas, false, false, T, K, N, 1.0f, dout, N, weight, K, 0.0f, dinp,
                            K, PX_CUDA_BF16, err));
    if (dweight) /* dW[N,K] += dout^T[N,T] inp[T,K], fp32 */
        PX_TRY(px_cuda_gemm(blas, true, false, N, K, T, 1.0f, dout, N, inp, K, 1.0f, dweight,
                            K, PX_CUDA_F32, err));
    if (dbias)
        PX_TRY(px_cuda_bias_add_bwd(dbias, dout, T, N, stream, err));
    return PX_OK;
}

/* fp32 storage, bf16 tensor-core products (px_cuda_gemm_f32, PX_CUDA_F32_BF16_TC). */
px_status px_cuda_matmul_fwd_f32(float *out, const float *inp, const float *weight,
                                 const float *bias, int64_t T, int64_t K, int64_t N,
                                 px_cuda_blas *blas, cudaStream_t stream, px_error *err)
{
    PX_TRY(same_stream(blas, stream, err));
    PX_TRY(px_cuda_gemm_f32(blas, false, true, T, N, K, 1.0f, inp, K, weight, K, 0.0f, out, N,
                            PX_CUDA_F32_BF16_TC, err));
    if (bias)
        PX_TRY(px_cuda_bias_add_fwd_f32(out, bias, T, N, stream, err));
    return PX_OK;
}

px_status px_cuda_matmul_bwd_f32(float *dinp, float *dweight, float *dbias, const float *dout,
                                 const float *inp, const float *weight, int64_t T, int64_t K,
                                 int64_t N, px_cuda_blas *blas, cudaStream_t stream,
                                 px_error *err)
{
    PX_TRY(same_stream(blas, stream, err));
    if (dinp)
        PX_TRY(px_cuda_gemm_f32(blas, false, false, T, K, N, 1.0f, dout, N, weight, K, 0.0f,
                                dinp, K, PX_CUDA_F32_BF16_TC, err));
    if (dweight)
        PX_TRY(px_cuda_gemm_f32(blas, true, false, N, K, T, 1.0f, dout, N, inp, K, 1.0f,
                                dweight, K, PX_CUDA_F32_BF16_TC, err));
    if (dbias)
        PX_TRY(px_cuda_bias_add_bwd_f32(dbias, dout, T, N, stream, err));
    return PX_OK;
}
