/* px_cuda_common.cuh — device helpers shared by the .cu files of the CUDA
 * backend (internal; not part of the C interface). */
#ifndef PX_CUDA_COMMON_CUH
#define PX_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "px_cuda_status.h"
#include "px_kernels_cuda.h"

typedef __nv_bfloat16 bf16;

/* Loads and stores of one element of either storage type, computing in
 * fp32: the kernels are templates over the storage type TS, instantiated for
 * bf16 (the px_cuda_* twins) and float (the px_cuda_*_f32 variants that the
 * executor's fp32 engine drives). */
static __device__ __forceinline__ float ldv(const bf16 *p, int64_t i)
{
    return __bfloat162float(p[i]);
}
static __device__ __forceinline__ float ldv(const float *p, int64_t i) { return p[i]; }
static __device__ __forceinline__ void stv(bf16 *p, int64_t i, float x)
{
    p[i] = __float2bfloat16_rn(x);
}
static __device__ __forceinline__ void stv(float *p, int64_t i, float x) { p[i] = x; }

/* Sum (or max) over a warp; every lane gets the result. */
static __device__ __forceinline__ float warp_sum(float x)
{
    for (int o = 16; o > 0; o >>= 1)
        x += __shfl_xor_sync(0xffffffffu, x, o);
    return x;
}

static __device__ __forceinline__ float warp_max(float x)
{
    for (int o = 16; o > 0; o >>= 1)
        x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    return x;
}

/* Sum over the block (blockDim.x a multiple of 32, <= 1024); every thread
 * gets the result.  `scratch` holds 32 floats; the call synchronises. */
static __device__ __forceinline__ float block_sum(float x, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    x = warp_sum(x);
    __syncthreads(); /* scratch may still be read by a previous call */
    if (lane == 0)
        scratch[warp] = x;
    __syncthreads();
    x = lane < n_warps ? scratch[lane] : 0.0f;
    return warp_sum(x);
}

static __device__ __forceinline__ float block_max(float x, float *scratch)
{
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
    x = warp_max(x);
    __syncthreads();
    if (lane == 0)
        scratch[warp] = x;
    __syncthreads();
    x = lane < n_warps ? scratch[lane] : -INFINITY;
    return warp_max(x);
}

/* Grid for a grid-stride loop over n elements: enough blocks to fill the
 * device several times over, never more than needed. */
static inline unsigned int px_grid_1d(int64_t n, int threads)
{
    int64_t blocks = (n + threads - 1) / threads;
    if (blocks > 65535LL * 8)
        blocks = 65535LL * 8;
    return (unsigned int)(blocks > 0 ? blocks : 1);
}

/* The block's dynamic shared memory as a T array.  (Under PX_CUDA_EMULATE,
 * tests/gpu/emu_cuda.h runs the kernels on the CPU and provides the buffer.) */
#ifdef PX_CUDA_EMULATE
#define PX_DYNAMIC_SMEM(T, name) T *name = reinterpret_cast<T *>(px_emu_smem)
#else
#define PX_DYNAMIC_SMEM(T, name)                                                       \
    extern __shared__ __align__(16) unsigned char px_dyn_smem_[];                      \
    T *name = reinterpret_cast<T *>(px_dyn_smem_)
#endif

/* The size checks every launcher does before touching the device. */
#define PX_REQUIRE(err, cond, ...)                                                     \
    do {                                                                               \
        if (!(cond))                                                                   \
            return px_error_set((err), PX_ERR_INVALID, NULL, 0, 0, __VA_ARGS__);       \
    } while (0)

#endif
