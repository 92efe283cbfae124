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
 * fetch-add.  mma.m16n8k16 and ldmatrix are computed from the fragment
 * layouts of the PTX ISA — the same ones the kernels assume; that the device
 * agrees is checked only by the GPU tests (ldmatrix's model is at least
 * checked against a second, separately written table in emu_attention.cc).
 * cp.async lands its data only after wait_group and a barrier, and a
 * shared-memory race check flags a read and a write of one chunk between two
 * barriers (see "shared memory" below). */
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
#define __launch_bounds__(...)
#define __align__(x)
#define __shared__ static
#define PX_CUDA_EMULATE 1


struct warp_slots {
    float f[32];
    int i[32];
    uint32_t a[32][4], b[32][2];
    float c[32][4];
    const unsigned char *p[32]; /* ldmatrix row addresses */
};
/* Warps are formed from the linear thread index, as on the device. */
static inline int emu_linear() { return (int)(emu_tid.x + emu_tid.y * emu_bdim.x); }
static inline int emu_lane() { return emu_linear() & 31; }
static inline int emu_warp() { return emu_linear() >> 5; }

/* ---- shared memory: barrier epochs, a race check, cp.async -------------------------- *
 *
 * The block's barriers cut its run into epochs.  Shared memory is shadowed per
 * 16-byte chunk with the epoch of its last instrumented write (cp.async, the
 * kernels' tile stores) and last instrumented read (ldmatrix).  A write and a
 * read of one chunk in the same epoch are a race — on the device their order
 * is undefined — and are counted in px_emu_races whichever comes first here,
 * so a missing __syncthreads shows deterministically, not by luck of the
 * thread schedule.  (The kernels never read a chunk they wrote in the same
 * epoch, not even their own thread's, so the check need not know who wrote.)
 *
 * cp.async (PTX ISA "Data Movement and Conversion Instructions: cp.async",
 * cp.async.commit_group, cp.async.wait_group): the source is read at issue
 * time and the destination is poisoned (0xff bytes: bf16 NaN); the data lands
 * in shared memory only when (1) a cp.async.wait_group of the issuing thread
 * has retired its group and then (2) the block passes a barrier.  The device
 * makes a thread's own completed copies visible to itself at (1); landing them
 * at (2) is stricter, and is what the kernels need, since every tile is read
 * by other threads than the ones that copied it.  A missing wait or barrier
 * thus reads NaN, and the comparison with the CPU twin fails.  Copies still
 * pending when the block ends are counted as races too. */
constexpr size_t EMU_SMEM_BYTES = 256 * 1024;
alignas(16) unsigned char px_emu_smem[EMU_SMEM_BYTES]; /* the block's dynamic shared memory */

struct emu_copy {
    unsigned char *dst;
    unsigned char data[16];
};
struct emu_async_state {
    std::vector<emu_copy> open;                  /* issued, not yet committed */
    std::vector<std::vector<emu_copy>> groups;   /* committed, oldest first */
    std::vector<emu_copy> landed;                /* retired by wait_group */
};
static std::vector<emu_async_state> emu_async; /* per thread of the block */
static long emu_epoch;
static std::unique_ptr<std::atomic<long>[]> emu_w_epoch, emu_r_epoch;
static std::atomic<long> px_emu_races{0};

static void emu_race(const char *what, const void *p)
{
    if (px_emu_races.fetch_add(1) < 5)
        std::fprintf(stderr, "emu: shared-memory race: %s at offset %ld in epoch %ld "
                             "(a __syncthreads missing?)\n",
                     what, (long)(static_cast<const unsigned char *>(p) - px_emu_smem),
                     emu_epoch);
}

static inline void px_emu_smem_read(const void *p, size_t n_bytes)
{
    size_t c0 = (size_t)(static_cast<const unsigned char *>(p) - px_emu_smem) / 16;
    for (size_t c = c0; c < c0 + (n_bytes + 15) / 16; c++) {
        emu_r_epoch[c].store(emu_epoch);
        if (emu_w_epoch[c].load() == emu_epoch)
            emu_race("read of a chunk written in the same epoch", p);
    }
}

static inline void px_emu_smem_write(const void *p, size_t n_bytes)
{
    size_t c0 = (size_t)(static_cast<const unsigned char *>(p) - px_emu_smem) / 16;
    for (size_t c = c0; c < c0 + (n_bytes + 15) / 16; c++) {
        emu_w_epoch[c].store(emu_epoch);
        if (emu_r_epoch[c].load() == emu_epoch)
            emu_race("write of a chunk read in the same epoch", p);
    }
}

static inline void px_emu_check_smem(const void *p, size_t n_bytes, const char *what)
{
    const unsigned char *c = static_cast<const unsigned char *>(p);
    if (c < px_emu_smem || c + n_bytes > px_emu_smem + EMU_SMEM_BYTES ||
        (uintptr_t)c % 16 != 0) {
        std::fprintf(stderr, "emu: %s: address %p is not a 16-byte-aligned shared address\n",
                     what, p);
        std::abort();
    }
}

/* cp.async.cg.shared.global [dst], [src], 16, src_bytes: src_bytes (0 or 16)
 * are copied, the rest of the 16 zero-filled. */
static inline void px_emu_cp_async16(void *dst, const void *src, int src_bytes)
{
    px_emu_check_smem(dst, 16, "cp.async destination");
    if ((uintptr_t)src % 16 != 0 || src_bytes < 0 || src_bytes > 16) {
        std::fprintf(stderr, "emu: cp.async: source %p not 16-byte aligned or size %d\n", src,
                     src_bytes);
        std::abort();
    }
    emu_copy c;
    c.dst = static_cast<unsigned char *>(dst);
    std::memset(c.data, 0, 16);
    std::memcpy(c.data, src, (size_t)src_bytes);
    px_emu_smem_write(dst, 16);
    std::memset(dst, 0xff, 16);
    emu_async[(size_t)emu_linear()].open.push_back(c);
}

static inline void px_emu_cp_async_commit()
{
    emu_async_state &a = emu_async[(size_t)emu_linear()];
    a.groups.push_back(std::move(a.open));
    a.open.clear();
}

/* cp.async.wait_group n: all but the newest n committed groups complete. */
static inline void px_emu_cp_async_wait(int n)
{
    emu_async_state &a = emu_async[(size_t)emu_linear()];
    while ((int)a.groups.size() > n) {
        a.landed.insert(a.landed.end(), a.groups.front().begin(), a.groups.front().end());
        a.groups.erase(a.groups.begin());
    }
}

/* Runs once per barrier, after every thread arrived and before any leaves. */
struct emu_barrier_done {
    void operator()() noexcept
    {
        for (auto &a : emu_async) {
            for (const emu_copy &c : a.landed)
                std::memcpy(c.dst, c.data, 16);
            a.landed.clear();
        }
        emu_epoch++;
    }
};

static std::unique_ptr<std::barrier<emu_barrier_done>> block_bar;
static std::vector<std::unique_ptr<std::barrier<>>> warp_bar;
static std::vector<warp_slots> slots;

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

static inline int __shfl_xor_sync(unsigned mask, int v, int lane_mask)
{
    (void)mask;
    warp_slots &s = slots[(size_t)emu_warp()];
    s.i[emu_lane()] = v;
    warp_bar[(size_t)emu_warp()]->arrive_and_wait();
    int r = s.i[emu_lane() ^ lane_mask];
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

/* ldmatrix.sync.aligned.m8n8.x{1,2,4}[.trans].shared.b16, modelled on the PTX
 * ISA section "Warp-level matrix load instruction: ldmatrix" (Parallel
 * Synchronization and Communication / Warp Level Matrix Multiply-Accumulate
 * Instructions):
 *  - each of the num 8 x 8 matrices of 16-bit elements is given by 8 row
 *    addresses: lanes 8i .. 8i+7 supply rows 0..7 of matrix i (x1 uses lanes
 *    0-7, x2 lanes 0-15, x4 all; the other lanes' addresses are ignored);
 *    a row is 16 contiguous, 16-byte-aligned bytes of shared memory;
 *  - destination register i of lane l holds two elements of matrix i: row
 *    l / 4, columns 2 (l % 4) and 2 (l % 4) + 1, the lower column in the low
 *    half;
 *  - .trans delivers the transpose: (row 2 (l % 4), column l / 4) in the low
 *    half, (row 2 (l % 4) + 1, column l / 4) in the high half.
 * Rows must lie in the block's shared memory (px_emu_smem) and be aligned:
 * anything else aborts, as the device would fault or load garbage.  The
 * element map is written here once; emu_attention.cc checks it against the
 * ISA table written out element by element. */
static inline void px_emu_ldmatrix(uint32_t *r, int num, bool trans, const void *row)
{
    warp_slots &s = slots[(size_t)emu_warp()];
    const int lane = emu_lane();
    s.p[lane] = static_cast<const unsigned char *>(row);
    if (lane < 8 * num) {
        px_emu_check_smem(row, 16, "ldmatrix row");
        px_emu_smem_read(row, 16);
    }
    warp_bar[(size_t)emu_warp()]->arrive_and_wait();
    for (int i = 0; i < num; i++) {
        uint16_t e[2];
        for (int h = 0; h < 2; h++) {
            const int rr = trans ? 2 * (lane % 4) + h : lane / 4;
            const int cc = trans ? lane / 4 : 2 * (lane % 4) + h;
            std::memcpy(&e[h], s.p[8 * i + rr] + 2 * cc, 2);
        }
        r[i] = (uint32_t)e[0] | ((uint32_t)e[1] << 16);
    }
    warp_bar[(size_t)emu_warp()]->arrive_and_wait();
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
    block_bar.reset(new std::barrier<emu_barrier_done>(threads));
    emu_async.assign((size_t)threads, emu_async_state{});
    if (!emu_w_epoch) {
        emu_w_epoch.reset(new std::atomic<long>[EMU_SMEM_BYTES / 16]);
        emu_r_epoch.reset(new std::atomic<long>[EMU_SMEM_BYTES / 16]);
    }
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                emu_bid = make_uint3(x, y, z);
                std::memset(px_emu_smem, 0xff, sizeof px_emu_smem); /* stale data: NaN */
                emu_epoch = 0;
                for (size_t c = 0; c < EMU_SMEM_BYTES / 16; c++) {
                    emu_w_epoch[c].store(-1);
                    emu_r_epoch[c].store(-1);
                }
                std::vector<std::thread> th;
                for (int i = 0; i < threads; i++)
                    th.emplace_back([&, i] {
                        emu_tid = make_uint3((unsigned)i % block.x, (unsigned)i / block.x, 0);
                        kernel();
                    });
                for (auto &t : th)
                    t.join();
                for (auto &a : emu_async) {
                    bool pending = !a.open.empty() || !a.landed.empty();
                    for (const auto &grp : a.groups) /* empty groups complete trivially */
                        pending = pending || !grp.empty();
                    if (pending)
                        emu_race("cp.async still pending when the block ended", px_emu_smem);
                    a = emu_async_state{};
                }
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


/* Test data: random values already rounded to bf16 (so the CPU twin sees
 * exactly what the kernel stores), and copies to / from a storage type. */
typedef std::vector<float> vec;

static inline vec rnd(int64_t n, float lo, float hi)
{
    vec v((size_t)n);
    for (auto &x : v)
        x = round_bf16(uniform(lo, hi));
    return v;
}

template <typename TS> static std::vector<TS> dev(const vec &x)
{
    std::vector<TS> d(x.size());
    for (size_t i = 0; i < x.size(); i++)
        d[i] = to_ts<TS>(x[i]);
    return d;
}

template <typename TS> static vec host(const std::vector<TS> &d)
{
    vec x(d.size());
    for (size_t i = 0; i < d.size(); i++)
        x[i] = from_ts(d[i]);
    return x;
}

#endif
