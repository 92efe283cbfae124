/* px_cuda_xent.cu — vocabulary-parallel cross-entropy in the four local parts
 * of the CPU twin (max, sum-exp + target logit, loss, dlogits); the engine
 * all-reduces between them over TP, so no full logits row is ever gathered.
 * One block per token row for the reductions; the backward is element-wise. */
#include <math.h>

#include "px_cuda_common.cuh"

#define XENT_THREADS 256

#ifndef PX_CUDA_EMULATE /* launchers: host code */
static unsigned int rows_grid(int64_t T)
{
    return (unsigned int)(T < 65535 ? T : 65535);
}
#endif

template <typename TS>
static __global__ void k_xent_max(float *max, const TS *logits, int64_t T, int64_t Vl)
{
    __shared__ float scratch[32];
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        float m = -INFINITY;
        for (int64_t v = threadIdx.x; v < Vl; v += blockDim.x)
            m = fmaxf(m, ldv(logits, t * Vl + v));
        m = block_max(m, scratch);
        if (threadIdx.x == 0)
            max[t] = m;
    }
}

template <typename TS>
static __global__ void k_xent_sumexp(float *sumexp, float *target_logit, const TS *logits,
                                     const float *max, const int32_t *targets, int64_t T,
                                     int64_t Vl, int64_t v0)
{
    __shared__ float scratch[32];
    for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
        float mx = max[t], s = 0.0f;
        for (int64_t v = threadIdx.x; v < Vl; v += blockDim.x)
            s += expf(ldv(logits, t * Vl + v) - mx);
        s = block_sum(s, scratch);
        if (threadIdx.x == 0) {
            sumexp[t] = s;
            int64_t id = (int64_t)targets[t] - v0;
            target_logit[t] = (id >= 0 && id < Vl) ? ldv(logits, t * Vl + id) : 0.0f;
        }
    }
}

template <typename TS>
static __global__ void k_xent_loss(float *loss, const float *max, const float *sumexp,
                                   const float *target_logit, int64_t T)
{
    for (int64_t t = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; t < T;
         t += (int64_t)gridDim.x * blockDim.x)
        loss[t] = logf(sumexp[t]) + max[t] - target_logit[t];
}

template <typename TS>
static __global__ void k_xent_bwd(TS *dlogits, const TS *logits, const float *max,
                                  const float *sumexp, const int32_t *targets, float dloss,
                                  int64_t T, int64_t Vl, int64_t v0)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < T * Vl;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t t = i / Vl, v = i - t * Vl;
        float p = expf(ldv(logits, i) - max[t]) / sumexp[t];
        float onehot = ((int64_t)targets[t] - v0 == v) ? 1.0f : 0.0f;
        stv(dlogits, i, dloss * (p - onehot)); /* may alias logits: same element */
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status xent_max_fwd_impl(float *max, const TS *logits, int64_t T, int64_t Vl,
                                   cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && Vl > 0, "xent: T = %lld, Vl = %lld", (long long)T, (long long)Vl);
    if (T == 0)
        return PX_OK;
    k_xent_max<TS><<<rows_grid(T), XENT_THREADS, 0, stream>>>(max, logits, T, Vl);
    PX_CUDA_LAUNCH_TRY(err, "k_xent_max");
    return PX_OK;
}

template <typename TS>
static px_status xent_sumexp_fwd_impl(float *sumexp, float *target_logit, const TS *logits,
                                      const float *max, const int32_t *targets, int64_t T,
                                      int64_t Vl, int64_t v0, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && Vl > 0 && v0 >= 0, "xent: T = %lld, Vl = %lld, v0 = %lld",
               (long long)T, (long long)Vl, (long long)v0);
    if (T == 0)
        return PX_OK;
    k_xent_sumexp<TS><<<rows_grid(T), XENT_THREADS, 0, stream>>>(sumexp, target_logit, logits, max,
                                                                 targets, T, Vl, v0);
    PX_CUDA_LAUNCH_TRY(err, "k_xent_sumexp");
    return PX_OK;
}

template <typename TS>
static px_status xent_loss_fwd_impl(float *loss, const float *max, const float *sumexp,
                                    const float *target_logit, int64_t T, cudaStream_t stream,
                                    px_error *err)
{
    PX_REQUIRE(err, T >= 0, "xent: T = %lld", (long long)T);
    if (T == 0)
        return PX_OK;
    k_xent_loss<TS><<<px_grid_1d(T, 256), 256, 0, stream>>>(loss, max, sumexp, target_logit, T);
    PX_CUDA_LAUNCH_TRY(err, "k_xent_loss");
    return PX_OK;
}

template <typename TS>
static px_status xent_bwd_impl(TS *dlogits, const TS *logits, const float *max, const float *sumexp,
                               const int32_t *targets, float dloss, int64_t T, int64_t Vl,
                               int64_t v0, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && Vl > 0 && v0 >= 0, "xent: T = %lld, Vl = %lld, v0 = %lld",
               (long long)T, (long long)Vl, (long long)v0);
    if (T == 0)
        return PX_OK;
    k_xent_bwd<TS><<<px_grid_1d(T * Vl, 256), 256, 0, stream>>>(dlogits, logits, max, sumexp,
                                                                targets, dloss, T, Vl, v0);
    PX_CUDA_LAUNCH_TRY(err, "k_xent_bwd");
    return PX_OK;
}
#endif

/* ---- C entry points: bf16 storage (the twins) and fp32 storage (_f32) ---- */

#ifndef PX_CUDA_EMULATE /* launchers: host code */
extern "C" px_status px_cuda_xent_max_fwd(float *max, const px_bf16 *logits, int64_t T, int64_t Vl,
                                          cudaStream_t stream, px_error *err)
{
    return xent_max_fwd_impl<bf16>(max, reinterpret_cast<const bf16 *>(logits), T, Vl, stream, err);
}

extern "C" px_status px_cuda_xent_max_fwd_f32(float *max, const float *logits, int64_t T,
                                              int64_t Vl, cudaStream_t stream, px_error *err)
{
    return xent_max_fwd_impl<float>(max, logits, T, Vl, stream, err);
}

extern "C" px_status px_cuda_xent_sumexp_fwd(float *sumexp, float *target_logit,
                                             const px_bf16 *logits, const float *max,
                                             const int32_t *targets, int64_t T, int64_t Vl,
                                             int64_t v0, cudaStream_t stream, px_error *err)
{
    return xent_sumexp_fwd_impl<bf16>(sumexp, target_logit, reinterpret_cast<const bf16 *>(logits),
                                      max, targets, T, Vl, v0, stream, err);
}

extern "C" px_status px_cuda_xent_sumexp_fwd_f32(float *sumexp, float *target_logit,
                                                 const float *logits, const float *max,
                                                 const int32_t *targets, int64_t T, int64_t Vl,
                                                 int64_t v0, cudaStream_t stream, px_error *err)
{
    return xent_sumexp_fwd_impl<float>(sumexp, target_logit, logits, max, targets, T, Vl, v0,
                                       stream, err);
}

extern "C" px_status px_cuda_xent_loss_fwd(float *loss, const float *max, const float *sumexp,
                                           const float *target_logit, int64_t T,
                                           cudaStream_t stream, px_error *err)
{
    return xent_loss_fwd_impl<bf16>(loss, max, sumexp, target_logit, T, stream, err);
}

extern "C" px_status px_cuda_xent_loss_fwd_f32(float *loss, const float *max, const float *sumexp,
                                               const float *target_logit, int64_t T,
                                               cudaStream_t stream, px_error *err)
{
    return xent_loss_fwd_impl<float>(loss, max, sumexp, target_logit, T, stream, err);
}

extern "C" px_status px_cuda_xent_bwd(px_bf16 *dlogits, const px_bf16 *logits, const float *max,
                                      const float *sumexp, const int32_t *targets, float dloss,
                                      int64_t T, int64_t Vl, int64_t v0, cudaStream_t stream,
                                      px_error *err)
{
    return xent_bwd_impl<bf16>(reinterpret_cast<bf16 *>(dlogits),
                               reinterpret_cast<const bf16 *>(logits), max, sumexp, targets, dloss,
                               T, Vl, v0, stream, err);
}

extern "C" px_status px_cuda_xent_bwd_f32(float *dlogits, const float *logits, const float *max,
                                          const float *sumexp, const int32_t *targets, float dloss,
                                          int64_t T, int64_t Vl, int64_t v0, cudaStream_t stream,
                                          px_error *err)
{
    return xent_bwd_impl<float>(dlogits, logits, max, sumexp, targets, dloss, T, Vl, v0, stream,
                                err);
}
#endif
