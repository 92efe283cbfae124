/* px_cuda_norm.cu — RMSNorm and LayerNorm, forward and backward.
 *
 * One block per row (blocks stride over rows), fp32 statistics reduced over
 * the block.  The backward's weight (and bias) gradients are a sum over all
 * rows: each thread owns fixed columns of its row, so it accumulates its
 * columns' partial sums in shared memory without contention across the rows
 * its block visits, and the block adds them to the fp32 gradient once at the
 * end (one atomic per column per block, not per row).  Rows too wide for
 * shared memory fall back to one atomic per element. */
#include <math.h>

#include "px_cuda_common.cuh"

#define NORM_THREADS    256
#define NORM_BWD_BLOCKS 256 /* blocks of the backward: rows per block = T / 256 */

#ifndef PX_CUDA_EMULATE /* launchers: host code */
static int norm_threads(int64_t C)
{
    return C >= 2048 ? 256 : (C >= 512 ? 128 : 64);
}

static unsigned int row_blocks(int64_t T, int64_t cap)
{
    return (unsigned int)(T < cap ? T : cap);
}
#endif

/* ---- RMSNorm -------------------------------------------------------------------- */

template <typename TS>
static __global__ void k_rmsnorm_fwd(TS *out, float *rstd, const TS *inp, const TS *weight,
                                     int64_t T, int64_t C, float eps)
{
    __shared__ float scratch[32];
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const TS *x = inp + t * C;
        float ss = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float v = ldv(x, c);
            ss += v * v;
        }
        ss = block_sum(ss, scratch);
        float r = rsqrtf(ss / (float)C + eps);
        if (threadIdx.x == 0)
            rstd[t] = r;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            stv(out, t * C + c, ldv(x, c) * r * ldv(weight, c));
    }
}

template <typename TS>
static __global__ void k_rmsnorm_bwd(TS *dinp, float *dweight, const TS *dout, const TS *inp,
                                     const TS *weight, const float *rstd, int64_t T, int64_t C,
                                     int direct)
{
    PX_DYNAMIC_SMEM(float, dw_part); /* [C] unless direct */
    __shared__ float scratch[32];
    if (!direct)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            dw_part[c] = 0.0f;
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const TS *x = inp + t * C, *g = dout + t * C;
        float r = rstd[t];
        float dot = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float xv = ldv(x, c), gv = ldv(g, c);
            dot += gv * ldv(weight, c) * xv;
            if (direct)
                atomicAdd(&dweight[c], gv * xv * r);
            else
                dw_part[c] += gv * xv * r;
        }
        dot = block_sum(dot, scratch);
        float k = dot / (float)C * r * r * r;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            int64_t i = t * C + c;
            float d = ldv(g, c) * ldv(weight, c) * r - ldv(x, c) * k;
            stv(dinp, i, ldv(dinp, i) + d);
        }
    }
    if (!direct)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            atomicAdd(&dweight[c], dw_part[c]);
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
/* Shared bytes of a backward block, or 0 to use direct atomics; raises the
 * kernel's dynamic shared-memory limit when the partials need > 48 KiB. */
static px_status bwd_smem(const void *kernel, int64_t bytes, int *out_bytes, px_error *err)
{
    int dev = 0, optin = 0;
    PX_CUDA_TRY(err, cudaGetDevice(&dev));
    PX_CUDA_TRY(err, cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    if (bytes > optin - 1024) { /* leave room for the static scratch */
        *out_bytes = 0;
        return PX_OK;
    }
    if (bytes > 48 * 1024)
        PX_CUDA_TRY(err, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              (int)bytes));
    *out_bytes = (int)bytes;
    return PX_OK;
}

template <typename TS>
static px_status rmsnorm_fwd_impl(TS *out, float *rstd, const TS *inp, const TS *weight, int64_t T,
                                  int64_t C, float eps, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && C > 0, "rmsnorm: T = %lld, C = %lld", (long long)T, (long long)C);
    if (T == 0)
        return PX_OK;
    k_rmsnorm_fwd<TS>
        <<<row_blocks(T, 65535), norm_threads(C), 0, stream>>>(out, rstd, inp, weight, T, C, eps);
    PX_CUDA_LAUNCH_TRY(err, "k_rmsnorm_fwd");
    return PX_OK;
}

template <typename TS>
static px_status rmsnorm_bwd_impl(TS *dinp, float *dweight, const TS *dout, const TS *inp,
                                  const TS *weight, const float *rstd, int64_t T, int64_t C,
                                  cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && C > 0, "rmsnorm: T = %lld, C = %lld", (long long)T, (long long)C);
    if (T == 0)
        return PX_OK;
    int smem = 0;
    PX_TRY(bwd_smem((const void *)k_rmsnorm_bwd<TS>, C * (int64_t)sizeof(float), &smem, err));
    k_rmsnorm_bwd<TS><<<row_blocks(T, NORM_BWD_BLOCKS), norm_threads(C), (size_t)smem, stream>>>(
        dinp, dweight, dout, inp, weight, rstd, T, C, smem == 0);
    PX_CUDA_LAUNCH_TRY(err, "k_rmsnorm_bwd");
    return PX_OK;
}
#endif

/* ---- LayerNorm ----------------------------------------------------------------------
 * Two passes over the row (mean, then the centred variance) as the CPU twin:
 * the one-pass E[x^2] - E[x]^2 cancels badly for rows with a large mean. */

template <typename TS>
static __global__ void k_layernorm_fwd(TS *out, float *mean, float *rstd, const TS *inp,
                                       const TS *weight, const TS *bias, int64_t T, int64_t C,
                                       float eps)
{
    __shared__ float scratch[32];
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const TS *x = inp + t * C;
        float s = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            s += ldv(x, c);
        float mu = block_sum(s, scratch) / (float)C;
        float var = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float d = ldv(x, c) - mu;
            var += d * d;
        }
        var = block_sum(var, scratch) / (float)C;
        float r = rsqrtf(var + eps);
        if (threadIdx.x == 0) {
            mean[t] = mu;
            rstd[t] = r;
        }
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            stv(out, t * C + c, (ldv(x, c) - mu) * r * ldv(weight, c) + ldv(bias, c));
    }
}

template <typename TS>
static __global__ void k_layernorm_bwd(TS *dinp, float *dweight, float *dbias, const TS *dout,
                                       const TS *inp, const TS *weight, const float *mean,
                                       const float *rstd, int64_t T, int64_t C, int direct)
{
    PX_DYNAMIC_SMEM(float, part); /* dweight [C] then dbias [C], unless direct */
    __shared__ float scratch[32];
    float *dw_part = part, *db_part = part + C;
    if (!direct)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            dw_part[c] = db_part[c] = 0.0f;
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        const TS *x = inp + t * C, *g = dout + t * C;
        float mu = mean[t], r = rstd[t];
        float sum_gw = 0.0f, sum_gwx = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float xhat = (ldv(x, c) - mu) * r, gv = ldv(g, c);
            float gw = gv * ldv(weight, c);
            sum_gw += gw;
            sum_gwx += gw * xhat;
            if (direct) {
                atomicAdd(&dweight[c], gv * xhat);
                atomicAdd(&dbias[c], gv);
            } else {
                dw_part[c] += gv * xhat;
                db_part[c] += gv;
            }
        }
        float m1 = block_sum(sum_gw, scratch) / (float)C;
        float m2 = block_sum(sum_gwx, scratch) / (float)C;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            int64_t i = t * C + c;
            float xhat = (ldv(x, c) - mu) * r;
            float d = r * (ldv(g, c) * ldv(weight, c) - m1 - xhat * m2);
            stv(dinp, i, ldv(dinp, i) + d);
        }
    }
    if (!direct)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            atomicAdd(&dweight[c], dw_part[c]);
            atomicAdd(&dbias[c], db_part[c]);
        }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status layernorm_fwd_impl(TS *out, float *mean, float *rstd, const TS *inp,
                                    const TS *weight, const TS *bias, int64_t T, int64_t C,
                                    float eps, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && C > 0, "layernorm: T = %lld, C = %lld", (long long)T, (long long)C);
    if (T == 0)
        return PX_OK;
    k_layernorm_fwd<TS><<<row_blocks(T, 65535), norm_threads(C), 0, stream>>>(
        out, mean, rstd, inp, weight, bias, T, C, eps);
    PX_CUDA_LAUNCH_TRY(err, "k_layernorm_fwd");
    return PX_OK;
}

template <typename TS>
static px_status layernorm_bwd_impl(TS *dinp, float *dweight, float *dbias, const TS *dout,
                                    const TS *inp, const TS *weight, const float *mean,
                                    const float *rstd, int64_t T, int64_t C, cudaStream_t stream,
                                    px_error *err)
{
    PX_REQUIRE(err, T >= 0 && C > 0, "layernorm: T = %lld, C = %lld", (long long)T, (long long)C);
    if (T == 0)
        return PX_OK;
    int smem = 0;
    PX_TRY(bwd_smem((const void *)k_layernorm_bwd<TS>, 2 * C * (int64_t)sizeof(float), &smem, err));
    k_layernorm_bwd<TS><<<row_blocks(T, NORM_BWD_BLOCKS), norm_threads(C), (size_t)smem, stream>>>(
        dinp, dweight, dbias, dout, inp, weight, mean, rstd, T, C, smem == 0);
    PX_CUDA_LAUNCH_TRY(err, "k_layernorm_bwd");
    return PX_OK;
}
#endif

/* ---- C entry points: bf16 storage (the twins) and fp32 storage (_f32) ---- */

#ifndef PX_CUDA_EMULATE /* launchers: host code */
extern "C" px_status px_cuda_rmsnorm_fwd(px_bf16 *out, float *rstd, const px_bf16 *inp,
                                         const px_bf16 *weight, int64_t T, int64_t C, float eps,
                                         cudaStream_t stream, px_error *err)
{
    return rmsnorm_fwd_impl<bf16>(reinterpret_cast<bf16 *>(out), rstd,
                                  reinterpret_cast<const bf16 *>(inp),
                                  reinterpret_cast<const bf16 *>(weight), T, C, eps, stream, err);
}

extern "C" px_status px_cuda_rmsnorm_fwd_f32(float *out, float *rstd, const float *inp,
                                             const float *weight, int64_t T, int64_t C, float eps,
                                             cudaStream_t stream, px_error *err)
{
    return rmsnorm_fwd_impl<float>(out, rstd, inp, weight, T, C, eps, stream, err);
}

extern "C" px_status px_cuda_rmsnorm_bwd(px_bf16 *dinp, float *dweight, const px_bf16 *dout,
                                         const px_bf16 *inp, const px_bf16 *weight,
                                         const float *rstd, int64_t T, int64_t C,
                                         cudaStream_t stream, px_error *err)
{
    return rmsnorm_bwd_impl<bf16>(reinterpret_cast<bf16 *>(dinp), dweight,
                                  reinterpret_cast<const bf16 *>(dout),
                                  reinterpret_cast<const bf16 *>(inp),
                                  reinterpret_cast<const bf16 *>(weight), rstd, T, C, stream, err);
}

extern "C" px_status px_cuda_rmsnorm_bwd_f32(float *dinp, float *dweight, const float *dout,
                                             const float *inp, const float *weight,
                                             const float *rstd, int64_t T, int64_t C,
                                             cudaStream_t stream, px_error *err)
{
    return rmsnorm_bwd_impl<float>(dinp, dweight, dout, inp, weight, rstd, T, C, stream, err);
}

extern "C" px_status px_cuda_layernorm_fwd(px_bf16 *out, float *mean, float *rstd,
                                           const px_bf16 *inp, const px_bf16 *weight,
                                           const px_bf16 *bias, int64_t T, int64_t C, float eps,
                                           cudaStream_t stream, px_error *err)
{
    return layernorm_fwd_impl<bf16>(reinterpret_cast<bf16 *>(out), mean, rstd,
                                    reinterpret_cast<const bf16 *>(inp),
                                    reinterpret_cast<const bf16 *>(weight),
                                    reinterpret_cast<const bf16 *>(bias), T, C, eps, stream, err);
}

extern "C" px_status px_cuda_layernorm_fwd_f32(float *out, float *mean, float *rstd,
                                               const float *inp, const float *weight,
                                               const float *bias, int64_t T, int64_t C, float eps,
                                               cudaStream_t stream, px_error *err)
{
    return layernorm_fwd_impl<float>(out, mean, rstd, inp, weight, bias, T, C, eps, stream, err);
}

extern "C" px_status px_cuda_layernorm_bwd(px_bf16 *dinp, float *dweight, float *dbias,
                                           const px_bf16 *dout, const px_bf16 *inp,
                                           const px_bf16 *weight, const float *mean,
                                           const float *rstd, int64_t T, int64_t C,
                                           cudaStream_t stream, px_error *err)
{
    return layernorm_bwd_impl<bf16>(
        reinterpret_cast<bf16 *>(dinp), dweight, dbias, reinterpret_cast<const bf16 *>(dout),
        reinterpret_cast<const bf16 *>(inp), reinterpret_cast<const bf16 *>(weight), mean, rstd, T,
        C, stream, err);
}

extern "C" px_status px_cuda_layernorm_bwd_f32(float *dinp, float *dweight, float *dbias,
                                               const float *dout, const float *inp,
                                               const float *weight, const float *mean,
                                               const float *rstd, int64_t T, int64_t C,
                                               cudaStream_t stream, px_error *err)
{
    return layernorm_bwd_impl<float>(dinp, dweight, dbias, dout, inp, weight, mean, rstd, T, C,
                                     stream, err);
}
#endif
