/* emu_attention.cc — runs the attention kernels of
 * kernels/cuda/px_cuda_attention.cu on the CPU, thread for thread, and
 * compares them with the CPU twin: a check of the kernels' index math,
 * tiling, masking and online softmax that needs no GPU.
 *
 * Every CUDA thread of a block is a std::thread; __syncthreads is a barrier
 * of the block; __shfl_xor_sync and mma.sync exchange values through
 * per-warp slots between two barriers of the warp.  mma.m16n8k16 is computed
 * from the fragment layouts of the PTX ISA (the same ones the kernels assume:
 * what this cannot check is that assumption itself — the GPU tests do).
 * Blocks run one after another.  Exit 0 pass, 1 fail; the seed is printed
 * (PX_TEST_SEED replays it). */
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
#define __shared__
#define PX_CUDA_EMULATE 1

alignas(16) unsigned char smem_raw[256 * 1024]; /* the block's dynamic shared memory */

struct warp_slots {
    float f[32];
    uint32_t a[32][4], b[32][2];
    float c[32][4];
};
static std::unique_ptr<std::barrier<>> block_bar;
static std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
static std::vector<warp_slots> slots;

static inline int emu_lane() { return (int)(emu_tid.x & 31); }
static inline int emu_warp() { return (int)(emu_tid.x >> 5); }

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
static void px_emu_mma(float c[4], const uint32_t a[4], const uint32_t b[2])
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

#include "../../kernels/cuda/px_cuda_attention.cu"

extern "C" {
#include "px_kernels_cpu.h"
}

/* Runs kernel(args...) over grid x block threads, block after block. */
template <typename F>
static void launch(dim3 grid, int threads, F kernel)
{
    emu_gdim = grid;
    emu_bdim = dim3((unsigned)threads, 1, 1);
    int warps = threads / 32;
    slots.assign((size_t)warps, warp_slots{});
    warp_bar.clear();
    for (int w = 0; w < warps; w++)
        warp_bar.emplace_back(new std::barrier<>(32));
    block_bar.reset(new std::barrier<>(threads));
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                emu_bid = make_uint3(x, y, z);
                std::memset(smem_raw, 0xff, sizeof smem_raw); /* stale data shows up as NaN */
                std::vector<std::thread> th;
                for (int i = 0; i < threads; i++)
                    th.emplace_back([&, i] {
                        emu_tid = make_uint3((unsigned)i, 0, 0);
                        kernel();
                    });
                for (auto &x2 : th)
                    x2.join();
            }
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
template <> bf16 to_ts<bf16>(float x) { return __float2bfloat16_rn(x); }
static float from_ts(float x) { return x; }
static float from_ts(bf16 x) { return __bfloat162float(x); }

template <int HD, typename TS>
static void run_case(int S, int B, int NH, int NKV, float range)
{
    const bool f32 = sizeof(TS) == 4;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, nq = (int64_t)S * B * W,
                  no = (int64_t)S * B * NH * HD, nl = (int64_t)B * NH * S;
    std::vector<float> qkv((size_t)nq), g((size_t)no);
    for (auto &x : qkv)
        x = round_bf16(uniform(-range, range));
    for (auto &x : g)
        x = round_bf16(uniform(-1, 1));
    std::vector<TS> dqkv_in((size_t)nq), dg((size_t)no), dout((size_t)no), ddq((size_t)nq);
    for (size_t i = 0; i < qkv.size(); i++)
        dqkv_in[i] = to_ts<TS>(qkv[i]);
    for (size_t i = 0; i < g.size(); i++)
        dg[i] = to_ts<TS>(g[i]);
    std::vector<float> out((size_t)no), lse((size_t)nl), dq((size_t)nq), dlse((size_t)nl, NAN);

    px_cpu_attention_fwd(out.data(), lse.data(), nullptr, qkv.data(), S, B, NH, NKV, HD);
    const float scale = 1.0f / std::sqrt((float)HD), scale_log2 = LOG2E * scale;
    launch(dim3((unsigned)((S + ATT_BQ - 1) / ATT_BQ), (unsigned)NH, (unsigned)B), ATT_THREADS,
           [&] { k_attn_fwd<HD, TS>(dout.data(), dlse.data(), dqkv_in.data(), S, B, NH, NKV,
                                    scale_log2); });
    char l[120];
    std::snprintf(l, sizeof l, "fwd S=%d B=%d heads %d/%d HD=%d [%s]", S, B, NH, NKV, HD,
                  f32 ? "f32" : "bf16");
    std::vector<float> got((size_t)no);
    for (size_t i = 0; i < got.size(); i++)
        got[i] = from_ts(dout[i]);
    compare(l, got, out, 2e-2, 2e-2);
    compare("  lse", dlse, lse, 2e-3, 2e-3);

    /* backward from the reference's out (rounded as the storage holds it) and lse */
    std::vector<TS> dref_out((size_t)no);
    for (size_t i = 0; i < out.size(); i++) {
        dref_out[i] = to_ts<TS>(out[i]);
        out[i] = from_ts(dref_out[i]);
    }
    px_cpu_attention_bwd(dq.data(), g.data(), out.data(), lse.data(), nullptr, qkv.data(), S, B,
                         NH, NKV, HD);
    std::vector<float> Dsum((size_t)nl, NAN);
    const unsigned dot_blocks = (unsigned)((nl + 7) / 8);
    launch(dim3(dot_blocks, 1, 1), 256,
           [&] { k_attn_bwd_dot<TS>(Dsum.data(), dg.data(), dref_out.data(), S, B, NH, HD); });
    for (auto &x : ddq)
        x = to_ts<TS>(NAN); /* every element must be overwritten */
    launch(dim3((unsigned)((S + ATT_BQ - 1) / ATT_BQ), (unsigned)NH, (unsigned)B), ATT_THREADS,
           [&] { k_attn_bwd_dq<HD, TS>(ddq.data(), dg.data(), lse.data(), Dsum.data(),
                                       dqkv_in.data(), S, B, NH, NKV, scale_log2, scale); });
    launch(dim3((unsigned)((S + ATT_BK - 1) / ATT_BK), (unsigned)NKV, (unsigned)B), ATT_THREADS,
           [&] { k_attn_bwd_dkdv<HD, TS>(ddq.data(), dg.data(), lse.data(), Dsum.data(),
                                         dqkv_in.data(), S, B, NH, NKV, scale_log2, scale); });
    const char *part[3] = {"  dq", "  dk", "  dv"};
    int64_t c0[3] = {0, (int64_t)NH * HD, (int64_t)(NH + NKV) * HD};
    int64_t c1[3] = {(int64_t)NH * HD, (int64_t)(NH + NKV) * HD, W};
    for (int p = 0; p < 3; p++) {
        std::vector<float> gs, rs;
        for (int64_t r = 0; r < (int64_t)S * B; r++)
            for (int64_t c = c0[p]; c < c1[p]; c++) {
                gs.push_back(from_ts(ddq[(size_t)(r * W + c)]));
                rs.push_back(dq[(size_t)(r * W + c)]);
            }
        compare(part[p], gs, rs, 3e-2, 3e-2);
    }
}

int main()
{
    const char *env = std::getenv("PX_TEST_SEED");
    uint64_t seed = env ? std::strtoull(env, nullptr, 0) : (uint64_t)std::time(nullptr);
    rng = seed;
    std::printf("# attention kernels emulated on the CPU: seed %llu (PX_TEST_SEED=%llu)\n",
                (unsigned long long)seed, (unsigned long long)seed);
    run_case<64, bf16>(130, 1, 2, 1, 2.0f);  /* MQA, 3 query tiles, ragged last tile */
    run_case<16, float>(70, 2, 4, 2, 2.0f);  /* GQA, fp32 storage, two batches */
    run_case<128, bf16>(64, 1, 2, 2, 3.0f);  /* MHA, one tile, sharper softmax */
    run_case<32, float>(100, 1, 2, 1, 2.0f);
    std::printf("# emulated attention: %s\n", failures ? "FAIL" : "ok");
    return failures ? 1 : 0;
}
