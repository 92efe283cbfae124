/* emu_cuda.h — runs CUDA kernels of kernels/cuda/ on the CPU, thread for
 * thread, so their index math, tiling, masking and reductions are checked
 * against the CPU twins on machines without a GPU (test code; include it
 * once, before the .cu files, in a C++20 test program).
 *
 * Every CUDA thread of a block is a std::thread; __syncthreads is a barrier
 * of the block; __shfl_xor_sync and mma.sync exchange values through
 * per-warp slots between two barriers of the warp; __shared__ variables are
 * function statics (blocks run one after another, so one copy serves the
 * block); the dynamic shared memory is px_emu_smem; atomicAdd is an atomic
 * fetch-add.  mma.m16n8k16 is computed from the fragment layouts of the PTX
 * ISA — the same ones the kernels assume; that assumption itself is checked
 * only by the GPU tests. */
#ifndef EMU_CUDA_H
#define EMU_CUDA_H

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <thread>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

/* ---- the CUDA built-ins, emulated ------------------------------------------------ */

static thread_local uint3 emu_tid;
static uint3 emu_bid;
static dim3 emu_bdim, emu_gdim;
#undef __global__
#undef __device__
#undef __forceinline__
#undef __launch_bounds__
#undef __align__
#undef __shared__
#define threadIdx emu_tid
#define blockIdx emu_bid
#define blockDim emu_bdim
#define gridDim emu_gdim
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __align__(x)
#define __shared__ static
#define PX_CUDA_EMULATE 1

alignas(16) unsigned char px_emu_smem[256 * 1024]; /* the block's dynamic shared memory */

struct warp_slots {
    float f[32];
    uint32_t a[32][4], b[32][2];
    float c[32][4];
};
static std::unique_ptr<std::barrier<>> block_bar;
static std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
static std::vector<warp_slots> slots;

/* Warps are formed from the linear thread index, as on the device. */
static inline int emu_linear() { return (int)(emu_tid.x + emu_tid.y * emu_bdim.x); }
static inline int emu_lane() { return emu_linear() & 31; }
static inline int emu_warp() { return emu_linear() >> 5; }

static void __syncthreads() { block_bar->arrive_and_wait(); }

static float __shfl_xor_sync(unsigned mask, float v, int lane_mask)
{
    (void)mask;
    warp_slots &s = slots[(size_t)emu_warp()];
    s.f[emu_lane()] = v;
    warp_bar[(size_t)emu_warp()]->arrive_and_wait();
    float r = s.f[emu_lane() ^ lane_mask];
    warp_bar[(size_t)emu_warp()]->arrive_and_wait();
    return r;
}

static float bf16_bits(uint32_t reg, int high)
{
    uint32_t u = (high ? (reg >> 16) : (reg & 0xffffu)) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

/* mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32, lane = 4 g + t:
 * A (r, k): lane (r % 8) * 4 + (k % 8) / 2, register (r / 8) + 2 (k / 8), half k % 2
 * B (k, n): lane n * 4 + (k % 8) / 2, register k / 8, half k % 2
 * C/D: lane holds (g, 2t..2t+1) in c0, c1 and (g + 8, 2t..2t+1) in c2, c3. */
static inline void px_emu_mma(float c[4], const uint32_t a[4], const uint32_t b[2])
{
    warp_slots &s = slots[(size_t)emu_warp()];
    int lane = emu_lane();
    std::memcpy(s.a[lane], a, sizeof s.a[lane]);
    std::memcpy(s.b[lane], b, sizeof s.b[lane]);
    warp_bar[(size_t)emu_warp()]->arrive_and_wait();
    int g = lane >> 2, t = lane & 3;
    float out[4];
    for (int e = 0; e < 4; e++) {
        int r = g + (e >= 2 ? 8 : 0), n = 2 * t + (e & 1);
        double acc = c[e];
        for (int k = 0; k < 16; k++) {
            float av = bf16_bits(s.a[(r % 8) * 4 + (k % 8) / 2][(r / 8) + 2 * (k / 8)], k % 2);
            float bv = bf16_bits(s.b[n * 4 + (k % 8) / 2][k / 8], k % 2);
            acc += (double)av * (double)bv;
        }
        out[e] = (float)acc;
    }
    warp_bar[(size_t)emu_warp()]->arrive_and_wait();
    std::memcpy(c, out, sizeof out);
}

static inline float atomicAdd(float *p, float v)
{
    return std::atomic_ref<float>(*p).fetch_add(v);
}

static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }

/* Runs kernel() over grid x block threads (block.x * block.y a multiple of
 * 32), block after block. */
template <typename F>
static void launch(dim3 grid, dim3 block, F kernel)
{
    emu_gdim = grid;
    emu_bdim = dim3(block.x, block.y, 1);
    int threads = (int)(block.x * block.y), warps = threads / 32;
    slots.assign((size_t)warps, warp_slots{});
    warp_bar.clear();
    for (int w = 0; w < warps; w++)
        warp_bar.emplace_back(new std::barrier<>(32));
    block_bar.reset(new std::barrier<>(threads));
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                emu_bid = make_uint3(x, y, z);
                std::memset(px_emu_smem, 0xff, sizeof px_emu_smem); /* stale data: NaN */
                std::vector<std::thread> th;
                for (int i = 0; i < threads; i++)
                    th.emplace_back([&, i] {
                        emu_tid = make_uint3((unsigned)i % block.x, (unsigned)i / block.x, 0);
                        kernel();
                    });
                for (auto &t : th)
                    t.join();
            }
}

template <typename F> static void launch(dim3 grid, int threads, F kernel)
{
    launch(grid, dim3((unsigned)threads, 1, 1), kernel);
}

/* ---- data, comparison ----------------------------------------------------------------- */

static uint64_t rng;
static float uniform(float lo, float hi)
{
    rng += 0x9e3779b97f4a7c15ULL;
    uint64_t z = rng;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return lo + (hi - lo) * (float)((z >> 40) * (1.0 / 16777216.0));
}

static float round_bf16(float f) { return __bfloat162float(__float2bfloat16_rn(f)); }

static int failures = 0;

static void compare(const char *what, const std::vector<float> &got,
                    const std::vector<float> &ref, double atol_frac, double rtol)
{
    double scale = 0;
    for (float r : ref)
        scale = std::fmax(scale, std::fabs(r));
    double atol = atol_frac * (scale > 0 ? scale : 1);
    size_t bad = 0, worst = 0;
    double worst_x = -1e300;
    for (size_t i = 0; i < ref.size(); i++) {
        double x = std::fabs((double)got[i] - ref[i]) - (atol + rtol * std::fabs(ref[i]));
        if (!(x <= 0))
            bad++;
        if (x > worst_x || std::isnan(x)) {
            worst_x = std::isnan(x) ? 1e300 : x;
            worst = i;
        }
    }
    std::printf("  %-40s n=%-7zu max|ref|=%-9.3g worst: ref %.5g got %.5g  %s\n", what,
                ref.size(), scale, ref[worst], got[worst], bad ? "FAIL" : "ok");
    if (bad)
        failures++;
}

template <typename TS> static TS to_ts(float x);
template <> float to_ts<float>(float x) { return x; }
template <> __nv_bfloat16 to_ts<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
static float from_ts(float x) { return x; }
static float from_ts(__nv_bfloat16 x) { return __bfloat162float(x); }

#endif
