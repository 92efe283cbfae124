/* px_cuda_attention.cu — causal attention, FlashAttention-2 style, on bf16
 * tensor cores (mma.sync.m16n8k16, fp32 accumulate), for sm_80 and sm_90.
 *
 * Forward: a block of 4 warps owns 64 query rows of one (batch, head); each
 * warp owns 16 of them and keeps, in registers, its q fragments, the running
 * max m and sum l of the online softmax and the 16 x HD output accumulator.
 * Key/value tiles of 64 rows stream through shared memory up to the causal
 * diagonal (two stages, filled by cp.async while the other is used; every
 * mma operand is read with ldmatrix); the 16 x 64 score tile stays in
 * registers, is turned into
 * probabilities and fed straight back to the tensor cores as the A operand of
 * P V (the accumulator layout of m16n8k16 is the A layout of the next k16
 * step), so no score matrix is ever written anywhere.  Output: O / l in bf16
 * and lse = m + log(l) (natural log) in fp32 per row.
 *
 * Backward (no atomics, deterministic):
 *   1. D = rowsum(dO * O) per query row (fp32 scratch).
 *   2. dQ kernel: per 64 query rows, stream the key/value tiles again,
 *      P = exp(S - lse), dP = dO V^T, dS = P (dP - D), dQ += dS K.
 *   3. dK/dV kernel: per 64 key rows of one kv head, loop over the query heads
 *      that share it (GQA) and the query tiles that see its keys:
 *      P^T = exp(S^T - lse), dV += P^T dO, dP^T = V dO^T,
 *      dS^T = P^T (dP^T - D), dK += dS^T Q — accumulated in registers.
 * The softmax scale 1/sqrt(HD) multiplies dQ and dK at the end.
 *
 * Context parallelism (the _kv entry points) runs the same kernels: q and kv
 * are separate tensors of Sq and Skv rows and query row r sits at position
 * qpos[r] ("query positions" below); plain attention is qpos = NULL, q = kv.
 *
 * Fragment layouts of mma.m16n8k16 (PTX ISA), lane = 4 * g + t:
 *   A (16 x 16, row):  a0 = (g,    2t..2t+1)  a1 = (g + 8, 2t..2t+1)
 *                      a2 = (g,  2t+8..2t+9)  a3 = (g + 8, 2t+8..2t+9)
 *   B (16 x 8, col):   b0 = (k = 2t..2t+1, n = g)  b1 = (k = 2t+8..2t+9, n = g)
 *   C (16 x 8, f32):   c0, c1 = (g, 2t..2t+1)  c2, c3 = (g + 8, 2t..2t+1)
 * Two bf16 in one 32-bit register: the lower index in the low half. */
#include <math.h>
#include <string.h>

#include "px_cuda_common.cuh"

#define ATT_THREADS 128
#define ATT_BQ 64  /* query rows per block (forward, dQ) */
#define ATT_BK 64  /* key rows per tile / per dK-dV block */
#define ATT_BQ2 32 /* query rows per tile in the dK/dV kernel */
/* The forward stages its Q tile in one of its K buffers. */
static_assert(ATT_BQ == ATT_BK, "query and key tiles must have the same height");
/* A block's query tile is two warp-wide position scans (last_key32). */
static_assert(ATT_BQ == 64 && ATT_BQ2 == 32, "query tiles are 2 or 1 warps' worth of rows");
#define LOG2E 1.4426950408889634f
#define LN2 0.6931471805599453f

/* ---- fragments ------------------------------------------------------------------ */

static __device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi); /* .x = lo = low 16 bits */
    uint32_t u;
    memcpy(&u, &v, sizeof u); /* a register move; no type punning */
    return u;
}

static __device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4],
                                                const uint32_t b[2])
{
#ifdef PX_CUDA_EMULATE /* tests/gpu/emu_attention.cc runs these kernels on the CPU */
    px_emu_mma(c, a, b);
#else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/* ldmatrix.sync.aligned.m8n8.xNUM[.trans].shared.b16 (PTX ISA, "Warp-level
 * matrix load instruction: ldmatrix"): NUM 8 x 8 matrices of bf16; lanes
 * 8i..8i+7 give the addresses of rows 0..7 of matrix i (16 contiguous,
 * 16-byte-aligned bytes each); register i of lane l receives row l/4, columns
 * 2(l%4), 2(l%4)+1 of matrix i — exactly an A/B/C fragment row of mma.m16n8k16
 * — or, with .trans, column l/4, rows 2(l%4), 2(l%4)+1.  One instruction
 * replaces 4 (x4) 32-bit loads per lane, or 8 16-bit loads plus packing
 * (.trans), and the conflict-free case is one shared-memory wavefront per
 * matrix. */
template <int NUM, bool TRANS>
static __device__ __forceinline__ void ldsm(uint32_t r[NUM], const bf16 *row)
{
#ifdef PX_CUDA_EMULATE
    px_emu_ldmatrix(r, NUM, TRANS, row);
#else
    const unsigned a = (unsigned)__cvta_generic_to_shared(row);
    if constexpr (NUM == 1 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
                     : "=r"(r[0]) : "r"(a));
    else if constexpr (NUM == 1)
        asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
                     : "=r"(r[0]) : "r"(a));
    else if constexpr (NUM == 2 && !TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(a));
    else if constexpr (NUM == 2)
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                     : "=r"(r[0]), "=r"(r[1]) : "r"(a));
    else if constexpr (!TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
#endif
}

/* Shared tiles are row-major with LD = HD + 8 elements per row.  The 16 bytes
 * of padding shift each row by 4 banks (row stride HD/2 + 4 words, and HD/2 is
 * a multiple of 8), so the 8 row addresses of one ldmatrix matrix cover
 * 8 x 4 = 32 distinct banks for every HD in {16, 32, 64, 128}: conflict-free.
 * Padding rather than an XOR swizzle keeps the cp.async destinations and the
 * zero-filled tails plain row arithmetic, and the emulator's bounds checks
 * simple; it costs 16 / (2 HD) of the tile (6 % at HD 128). */

/* A fragment (16 x 16) of the row-major matrix M at rows r0.., columns k0..:
 * matrices 0..3 = (rows +0, cols +0), (+8, +0), (+0, +8), (+8, +8) are
 * registers a0..a3 of the mma A layout. */
static __device__ __forceinline__ void load_a(uint32_t a[4], const bf16 *M, int ld, int r0,
                                              int k0, int lane)
{
    ldsm<4, false>(a, M + (r0 + (lane & 7) + (lane & 8)) * ld + k0 + ((lane >> 4) << 3));
}

/* B fragments of two adjacent n tiles, b[i] for n0 + 8i, with B[k][n] =
 * M[n][k] (M's rows are n, contiguous along k): the K of Q K^T, the V of
 * dO V^T, the Q and dO of K Q^T and V dO^T.  A row of M is a column of B, so
 * no transpose: matrices (n +0, k +0), (+0, +8), (+8, +0), (+8, +8) are
 * b[0][0], b[0][1], b[1][0], b[1][1]. */
static __device__ __forceinline__ void load_b_nmajor2(uint32_t b[2][2], const bf16 *M, int ld,
                                                      int n0, int k0, int lane)
{
    uint32_t r[4];
    ldsm<4, false>(r, M + (n0 + (lane & 7) + ((lane >> 4) << 3)) * ld + k0 + (lane & 8));
    b[0][0] = r[0];
    b[0][1] = r[1];
    b[1][0] = r[2];
    b[1][1] = r[3];
}

/* B fragments of two adjacent n tiles with B[k][n] = M[k][n] (M's rows are
 * k): the V of P V, the K of dS K, the dO of P^T dO, the Q of dS^T Q.  A lane
 * needs two k-consecutive elements of one column, so .trans: matrices
 * (k +0, n +0), (+8, +0), (+0, +8), (+8, +8) are b[0][0], b[0][1], b[1][0],
 * b[1][1]. */
static __device__ __forceinline__ void load_b_kmajor2(uint32_t b[2][2], const bf16 *M, int ld,
                                                      int k0, int n0, int lane)
{
    uint32_t r[4];
    ldsm<4, true>(r, M + (k0 + (lane & 7) + (lane & 8)) * ld + n0 + ((lane >> 4) << 3));
    b[0][0] = r[0];
    b[0][1] = r[1];
    b[1][0] = r[2];
    b[1][1] = r[3];
}

/* The A fragment of k-tile kk from accumulator tiles 2kk and 2kk+1 (each
 * 16 x 8, in C layout), rounded to bf16. */
static __device__ __forceinline__ void acc_to_a(uint32_t a[4], const float c0[4],
                                                const float c1[4])
{
    a[0] = pack_bf16x2(c0[0], c0[1]);
    a[1] = pack_bf16x2(c0[2], c0[3]);
    a[2] = pack_bf16x2(c1[0], c1[1]);
    a[3] = pack_bf16x2(c1[2], c1[3]);
}

/* Eight consecutive fp32 elements as eight bf16 (16 bytes): the tensor cores
 * always see bf16; fp32 storage is rounded on the way in. */
static __device__ __forceinline__ uint4 load8(const float *p)
{
    const float4 a = reinterpret_cast<const float4 *>(p)[0];
    const float4 b = reinterpret_cast<const float4 *>(p)[1];
    return make_uint4(pack_bf16x2(a.x, a.y), pack_bf16x2(a.z, a.w), pack_bf16x2(b.x, b.y),
                      pack_bf16x2(b.z, b.w));
}

/* Two consecutive outputs (p 4- or 8-byte aligned: an even column). */
static __device__ __forceinline__ void store2(bf16 *p, float a, float b)
{
    *reinterpret_cast<uint32_t *>(p) = pack_bf16x2(a, b);
}
static __device__ __forceinline__ void store2(float *p, float a, float b)
{
    *reinterpret_cast<float2 *>(p) = make_float2(a, b);
}

/* A 16-byte store of a shared tile chunk (the emulator checks it for races). */
static __device__ __forceinline__ void st_shared16(bf16 *dst, uint4 v)
{
#ifdef PX_CUDA_EMULATE
    px_emu_check_smem(dst, 16, "tile store");
    px_emu_smem_write(dst, 16);
#endif
    *reinterpret_cast<uint4 *>(dst) = v;
}

/* cp.async.cg.shared.global (PTX ISA, "Data Movement and Conversion
 * Instructions: cp.async"): 16 bytes global -> shared without passing through
 * registers, completing in the background.  src_bytes = 0 reads nothing and
 * writes 16 zero bytes: the ragged tail rows of a tile.  .cg caches in L2
 * only — every tile row is read once per block, L1 would not help.  Copies
 * are grouped by cp.async.commit_group; cp.async.wait_group N waits until at
 * most the N newest groups of this thread are outstanding.  Completion makes
 * the bytes visible to the issuing thread only: a __syncthreads must follow
 * before other threads read them (ldmatrix reads other threads' chunks). */
static __device__ __forceinline__ void cp_async16(bf16 *dst, const bf16 *src, bool in_range)
{
#ifdef PX_CUDA_EMULATE
    px_emu_cp_async16(dst, src, in_range ? 16 : 0);
#else
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src),
                 "r"(in_range ? 16 : 0)
                 : "memory");
#endif
}

static __device__ __forceinline__ void cp_async_commit(void)
{
#ifdef PX_CUDA_EMULATE
    px_emu_cp_async_commit();
#else
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

template <int N> static __device__ __forceinline__ void cp_async_wait(void)
{
#ifdef PX_CUDA_EMULATE
    px_emu_cp_async_wait(N);
#else
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

/* Copies rows [row0, row0 + n_rows) of a strided [S, ...] tensor (row s at
 * base + s * row_stride, HD contiguous elements) into shared memory as bf16
 * (row stride LD), 8 elements = 16 bytes per thread per step; rows >= S
 * become zeros.
 *   bf16 storage: cp.async, part of the caller's next commit_group; the tile
 *     is usable after cp_async_wait and a __syncthreads.
 *   fp32 storage: synchronous loads rounded to bf16 (cp.async cannot convert),
 *     usable after a __syncthreads; the caller's commit/wait are then empty
 *     groups, so both storage types share one pipeline. */
template <int HD, int LD>
static __device__ __forceinline__ void load_tile(bf16 *sm, const bf16 *base, int64_t row_stride,
                                                 int row0, int n_rows, int S)
{
    constexpr int CHUNKS = HD / 8;
    for (int idx = threadIdx.x; idx < n_rows * CHUNKS; idx += blockDim.x) {
        const int r = idx / CHUNKS, c = idx - r * CHUNKS, s = row0 + r;
        const bool in = s < S;
        /* out of range: a valid address that is not read (src_bytes 0) */
        cp_async16(sm + r * LD + c * 8, base + (in ? (int64_t)s * row_stride + c * 8 : 0), in);
    }
}

template <int HD, int LD>
static __device__ __forceinline__ void load_tile(bf16 *sm, const float *base,
                                                 int64_t row_stride, int row0, int n_rows,
                                                 int S)
{
    constexpr int CHUNKS = HD / 8;
    for (int idx = threadIdx.x; idx < n_rows * CHUNKS; idx += blockDim.x) {
        const int r = idx / CHUNKS, c = idx - r * CHUNKS, s = row0 + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (s < S)
            v = load8(base + (int64_t)s * row_stride + c * 8);
        st_shared16(sm + r * LD + c * 8, v);
    }
}

/* ---- query positions ------------------------------------------------------------------ *
 * The kernels take the query rows (q, Sq rows) and the key/value rows (kv,
 * Skv rows) as two tensors, and the queries' positions in the sequence: key
 * row j is at position j, query row r at qpos[r] (context parallelism: this
 * rank's query chunks against the gathered sequence) or, with qpos NULL, at
 * r (plain causal attention, q = kv = qkv).  Causal: key j is visible to
 * query r when j <= qpos[r]; keys >= Skv do not exist.  lim(r) = min(qpos[r],
 * Skv - 1) is thus the last key a row sees. */
static __device__ __forceinline__ int last_key(const int32_t *qpos, int r, int Skv)
{
    const int p = qpos ? qpos[r] : r;
    return p < Skv - 1 ? p : Skv - 1;
}

/* The largest last_key over query rows [r0, r0 + 32) that exist (< Sq), -1
 * if none: the same value in every lane.  Called by whole warps. */
static __device__ __forceinline__ int last_key32(const int32_t *qpos, int r0, int Sq, int Skv,
                                                 int lane)
{
    if (!qpos) {
        const int r = r0 + 31 < Sq - 1 ? r0 + 31 : Sq - 1;
        return r < 0 ? -1 : (r < Skv - 1 ? r : Skv - 1);
    }
    int p = r0 + lane < Sq ? last_key(qpos, r0 + lane, Skv) : -1;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const int x = __shfl_xor_sync(0xffffffffu, p, o);
        p = x > p ? x : p;
    }
    return p;
}

/* ---- pieces of the kernels -------------------------------------------------------------- *
 * Each kernel is a loop over tiles whose steps follow; every piece is forced
 * inline, so its arrays stay in the caller's registers (every index is a
 * compile-time constant once the loops are unrolled). */

/* Zeroes N8 accumulator tiles (16 x 8 each, C layout). */
template <int N8> static __device__ __forceinline__ void zero_acc(float s[N8][4])
{
#pragma unroll
    for (int n = 0; n < N8; n++)
        s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
}

/* s += A B over one k-step of 16: A a fragment (16 x 16) of this warp's
 * rows, B[k][n] = M[n][k0 + k] for the N8 x 8 rows n of the shared tile M
 * (n-major: the K of Q K^T, the V of dO V^T, the Q and dO of K Q^T and
 * V dO^T). */
template <int LD, int N8>
static __device__ __forceinline__ void mma_nmajor(float s[N8][4], const uint32_t a[4],
                                                  const bf16 *M, int k0, int lane)
{
#pragma unroll
    for (int n = 0; n < N8; n += 2) {
        uint32_t bf[2][2];
        load_b_nmajor2(bf, M, LD, n * 8, k0, lane);
        mma_bf16(s[n], a, bf[0]);
        mma_bf16(s[n + 1], a, bf[1]);
    }
}

/* acc (16 x HD, C layout) += A M, A the 16 x (16 KK) accumulator tiles a
 * rounded to bf16, M the (16 KK) x HD shared tile with rows k (k-major B):
 * P V in the forward, dS K in dQ, P^T dO and dS^T Q in dK/dV. */
template <int DT, int LD, int KK>
static __device__ __forceinline__ void mma_kmajor(float acc[DT][4], const float a[2 * KK][4],
                                                  const bf16 *M, int lane)
{
#pragma unroll
    for (int kk = 0; kk < KK; kk++) {
        uint32_t pa[4];
        acc_to_a(pa, a[2 * kk], a[2 * kk + 1]);
#pragma unroll
        for (int d = 0; d < DT; d += 2) {
            uint32_t bf[2][2];
            load_b_kmajor2(bf, M, LD, kk * 16, d * 8, lane);
            mma_bf16(acc[d], pa, bf[0]);
            mma_bf16(acc[d + 1], pa, bf[1]);
        }
    }
}

/* Rows r0 and r1 (= r0 + 8) of a lane's accumulator, those below n, to
 * base + r * stride, times f0 and f1. */
template <int DT, typename TS>
static __device__ __forceinline__ void store_rows(TS *base, const float acc[DT][4], int r0,
                                                  int r1, int n, int64_t stride, int t,
                                                  float f0, float f1)
{
    if (r0 < n)
#pragma unroll
        for (int d = 0; d < DT; d++)
            store2(base + r0 * stride + d * 8 + 2 * t, acc[d][0] * f0, acc[d][1] * f0);
    if (r1 < n)
#pragma unroll
        for (int d = 0; d < DT; d++)
            store2(base + r1 * stride + d * 8 + 2 * t, acc[d][2] * f1, acc[d][3] * f1);
}

/* The online softmax of a lane's two rows (g and g + 8 of its warp's 16):
 * the running maxima m and partial sums l, in the log2 domain, and the last
 * key each row sees. */
struct softmax_rows {
    float m0, m1, l0, l1;
    int lim0, lim1, lim_min;
};

/* One key tile (keys k0..k0 + 63) of the online softmax: scores s scaled
 * into the log2 domain, keys past a row's last key masked (only tiles that
 * reach past this lane's rows need the test), the running maxima moved, s
 * turned into probabilities and the sums l and the output o rescaled by the
 * change of the maxima. */
template <int DT>
static __device__ __forceinline__ void softmax_tile(float s[8][4], float o[DT][4],
                                                    softmax_rows &r, int k0, int t,
                                                    float scale_log2)
{
    const bool edge = k0 + ATT_BK - 1 > r.lim_min;
    float mx0 = r.m0, mx1 = r.m1;
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int kj = k0 + n * 8 + 2 * t + e;
            float v0 = s[n][e] * scale_log2, v1 = s[n][2 + e] * scale_log2;
            if (edge) {
                if (kj > r.lim0)
                    v0 = -INFINITY;
                if (kj > r.lim1)
                    v1 = -INFINITY;
            }
            s[n][e] = v0;
            s[n][2 + e] = v1;
            mx0 = fmaxf(mx0, v0);
            mx1 = fmaxf(mx1, v1);
        }
    /* The four lanes of a quad (same g) hold one row between them. */
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    /* Every row sees key 0 (positions are >= 0), so mx is finite from the
     * first tile on and exp2(m - mx) is 0 at the start rather than NaN. */
    const float a0 = exp2f(r.m0 - mx0), a1 = exp2f(r.m1 - mx1);
    r.m0 = mx0;
    r.m1 = mx1;
    float r0 = 0.0f, r1 = 0.0f;
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            s[n][e] = exp2f(s[n][e] - mx0);
            s[n][2 + e] = exp2f(s[n][2 + e] - mx1);
            r0 += s[n][e];
            r1 += s[n][2 + e];
        }
    r.l0 = r.l0 * a0 + r0; /* per-lane partial sums; the quad adds them at the end */
    r.l1 = r.l1 * a1 + r1;
#pragma unroll
    for (int d = 0; d < DT; d++) {
        o[d][0] *= a0;
        o[d][1] *= a0;
        o[d][2] *= a1;
        o[d][3] *= a1;
    }
}

/* The forward's output rows qi0, qi1 (those < Sq): O / l, and lse = m +
 * log l (natural log) at lse_row[qi], once the quad has added its partial
 * sums. */
template <int DT, typename TS>
static __device__ __forceinline__ void fwd_store(TS *ob, float *lse_row, const float o[DT][4],
                                                 softmax_rows r, int qi0, int qi1, int Sq,
                                                 int64_t orow, int t)
{
    r.l0 += __shfl_xor_sync(0xffffffffu, r.l0, 1);
    r.l0 += __shfl_xor_sync(0xffffffffu, r.l0, 2);
    r.l1 += __shfl_xor_sync(0xffffffffu, r.l1, 1);
    r.l1 += __shfl_xor_sync(0xffffffffu, r.l1, 2);
    store_rows<DT>(ob, o, qi0, qi1, Sq, orow, t, 1.0f / r.l0, 1.0f / r.l1);
    if (t == 0 && qi0 < Sq)
        lse_row[qi0] = (r.m0 + log2f(r.l0)) * LN2;
    if (t == 0 && qi1 < Sq)
        lse_row[qi1] = (r.m1 + log2f(r.l1)) * LN2;
}

/* ---- forward -------------------------------------------------------------------------- */

/* bf16 storage: three blocks per SM.  3 x 68 KiB of shared memory fit an SM of
 * sm_90 (228 KiB; an A100's 164 KiB holds two), and the bound caps ptxas at 168 registers (unbounded it chose
 * 171 at HD 128, which leaves room for two).  fp32 storage would spill under
 * the cap (its loads convert in registers), so it is left unbounded. */
template <int HD, typename TS>
static __global__ void __launch_bounds__(ATT_THREADS, sizeof(TS) == 2 ? 3 : 1)
    k_attn_fwd(TS *out, float *lse, const TS *q, const TS *kv, const int32_t *qpos, int Sq,
               int Skv, int B, int NH, int NKV, float scale_log2)
{
    constexpr int LD = HD + 8; /* +16 bytes: ldmatrix rows hit 32 distinct banks */
    constexpr int KT = HD / 16, DT = HD / 8;
    /* Two stages of K and V tiles: tile j + 1 is copied while tile j is used.
     * Q is needed only once (its fragments then live in registers), so it is
     * staged in stage 1's K buffer: 4 tiles, 68 KiB at HD 128, not 5. */
    PX_DYNAMIC_SMEM(bf16, smem);
    /* stage s: K at smem + s * TILE, V at smem + (2 + s) * TILE (offsets, not
     * an array of pointers: indexed at run time, that would live on the stack) */
    constexpr int TILE = ATT_BK * LD;
    bf16 *const sQ = smem + TILE;

    const int qt = gridDim.x - 1 - blockIdx.x; /* longest rows first */
    const int h = blockIdx.y, b = blockIdx.z, kh = h / (NH / NKV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, rs = (int64_t)B * W;
    const TS *qb = q + b * W + (int64_t)h * HD;
    const TS *kb = kv + b * W + (int64_t)(NH + kh) * HD;
    const TS *vb = kv + b * W + (int64_t)(NH + NKV + kh) * HD;
    const int q0 = qt * ATT_BQ;
    /* key tiles 0..jn-1 hold every key some row of this block sees */
    const int lk_a = last_key32(qpos, q0, Sq, Skv, lane);
    const int lk_b = last_key32(qpos, q0 + 32, Sq, Skv, lane);
    const int jn = ((lk_a > lk_b ? lk_a : lk_b) + ATT_BK) / ATT_BK;

    load_tile<HD, LD>(sQ, qb, rs, q0, ATT_BQ, Sq);
    load_tile<HD, LD>(smem, kb, rs, 0, ATT_BK, Skv);
    load_tile<HD, LD>(smem + 2 * TILE, vb, rs, 0, ATT_BK, Skv);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf[KT][4];
#pragma unroll
    for (int kk = 0; kk < KT; kk++)
        load_a(qf[kk], sQ, LD, warp * 16, kk * 16, lane);

    float o[DT][4];
    zero_acc<DT>(o);
    const int qi0 = q0 + warp * 16 + g, qi1 = qi0 + 8;
    softmax_rows r;
    r.m0 = r.m1 = -INFINITY;
    r.l0 = r.l1 = 0.0f;
    /* rows past Sq see every key: finite, and never stored */
    r.lim0 = qi0 < Sq ? last_key(qpos, qi0, Skv) : Skv - 1;
    r.lim1 = qi1 < Sq ? last_key(qpos, qi1, Skv) : Skv - 1;
    r.lim_min = r.lim0 < r.lim1 ? r.lim0 : r.lim1;

    for (int j = 0; j < jn; j++) {
        const int k0 = j * ATT_BK, st = j & 1;
        /* One barrier per tile: after it, tile j is visible to every warp and
         * every warp is done with tile j - 1 (and, at j = 0, with sQ), so
         * stage st ^ 1 may be refilled with tile j + 1. */
        cp_async_wait<0>();
        __syncthreads();
        if (j + 1 < jn) {
            load_tile<HD, LD>(smem + (st ^ 1) * TILE, kb, rs, k0 + ATT_BK, ATT_BK, Skv);
            load_tile<HD, LD>(smem + (2 + (st ^ 1)) * TILE, vb, rs, k0 + ATT_BK, ATT_BK, Skv);
        }
        cp_async_commit();
        const bf16 *const sK = smem + st * TILE, *const sV = smem + (2 + st) * TILE;

        float s[8][4]; /* S = Q K^T */
        zero_acc<8>(s);
#pragma unroll
        for (int kk = 0; kk < KT; kk++)
            mma_nmajor<LD, 8>(s, qf[kk], sK, kk * 16, lane);
        softmax_tile<DT>(s, o, r, k0, t, scale_log2);
        mma_kmajor<DT, LD, 4>(o, s, sV, lane); /* O += P V: k over the 64 keys */
    }

    fwd_store<DT>(out + b * (int64_t)NH * HD + (int64_t)h * HD,
                  lse + ((int64_t)b * NH + h) * Sq, o, r, qi0, qi1, Sq, (int64_t)B * NH * HD, t);
}

/* ---- backward: D = rowsum(dO * O) ----------------------------------------------------- */

/* One warp per (b, h, s) row of HD elements. */
template <typename TS>
static __global__ void k_attn_bwd_dot(float *D, const TS *dout, const TS *out, int S, int B,
                                      int NH, int HD)
{
    const int64_t rows = (int64_t)B * NH * S;
    const int64_t row = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (row >= rows)
        return;
    const int64_t s = row % S, bh = row / S, h = bh % NH, b = bh / NH;
    const int64_t off = (s * B + b) * (int64_t)NH * HD + h * HD;
    float acc = 0.0f;
    for (int d = lane; d < HD; d += 32)
        acc += ldv(dout, off + d) * ldv(out, off + d);
    acc = warp_sum(acc);
    if (lane == 0)
        D[row] = acc; /* row = (b * NH + h) * S + s, the lse layout */
}

/* ---- backward: dQ ------------------------------------------------------------------------ */

/* Two products of one shape for this warp's 16 rows: X = A1 B1^T and
 * Y = A2 B2^T over the head width, N tiles of 8 columns each.  dQ:
 * S = Q K^T and dP = dO V^T (the tile's 64 keys, N 8); dK, dV: S^T = K Q^T
 * and dP^T = V dO^T (the item's 32 queries, N 4). */
template <int HD, int LD, int N>
static __device__ __forceinline__ void paired_scores(float x[N][4], float y[N][4],
                                                     const bf16 *sA1, const bf16 *sA2,
                                                     const bf16 *sB1, const bf16 *sB2, int warp,
                                                     int lane)
{
    zero_acc<N>(x);
    zero_acc<N>(y);
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        uint32_t a1[4], a2[4];
        load_a(a1, sA1, LD, warp * 16, kk * 16, lane);
        load_a(a2, sA2, LD, warp * 16, kk * 16, lane);
        mma_nmajor<LD, N>(x, a1, sB1, kk * 16, lane);
        mma_nmajor<LD, N>(y, a2, sB2, kk * 16, lane);
    }
}

/* dS = P (dP - D) into s, P = exp(S scale - lse) (L: lse in log2 units),
 * 0 past a row's last key (lim). */
static __device__ __forceinline__ void dq_ds(float s[8][4], const float dp[8][4], int k0, int t,
                                             float scale_log2, float L0, float L1, float D0,
                                             float D1, int lim0, int lim1)
{
#pragma unroll
    for (int n = 0; n < 8; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int kj = k0 + n * 8 + 2 * t + e;
            float p0 = exp2f(s[n][e] * scale_log2 - L0);
            float p1 = exp2f(s[n][2 + e] * scale_log2 - L1);
            if (kj > lim0)
                p0 = 0.0f;
            if (kj > lim1)
                p1 = 0.0f;
            s[n][e] = p0 * (dp[n][e] - D0);
            s[n][2 + e] = p1 * (dp[n][2 + e] - D1);
        }
}

template <int HD, typename TS>
static __global__ void __launch_bounds__(ATT_THREADS)
    k_attn_bwd_dq(TS *dq_out, const TS *dout, const float *lse, const float *Dsum, const TS *q,
                  const TS *kv, const int32_t *qpos, int Sq, int Skv, int B, int NH, int NKV,
                  float scale_log2, float scale)
{
    constexpr int LD = HD + 8;
    constexpr int DT = HD / 8;
    /* Q and dO (read for every key tile: their A fragments would not fit in
     * registers beside dq), then two stages of K and V: 102 KiB at HD 128. */
    PX_DYNAMIC_SMEM(bf16, sQ);
    bf16 *const sO = sQ + ATT_BQ * LD; /* dO rows */
    constexpr int TILE = ATT_BK * LD;   /* stage s: K at sKV + s TILE, V at sKV + (2 + s) TILE */
    bf16 *const sKV = sO + ATT_BQ * LD;

    const int qt = gridDim.x - 1 - blockIdx.x;
    const int h = blockIdx.y, b = blockIdx.z, kh = h / (NH / NKV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, rs = (int64_t)B * W;
    const int64_t orow = (int64_t)B * NH * HD;
    const TS *qb = q + b * W + (int64_t)h * HD;
    const TS *kb = kv + b * W + (int64_t)(NH + kh) * HD;
    const TS *vb = kv + b * W + (int64_t)(NH + NKV + kh) * HD;
    const TS *dob = dout + b * (int64_t)NH * HD + (int64_t)h * HD;
    const int q0 = qt * ATT_BQ;

    const int lk_a = last_key32(qpos, q0, Sq, Skv, lane);
    const int lk_b = last_key32(qpos, q0 + 32, Sq, Skv, lane);
    const int jn = ((lk_a > lk_b ? lk_a : lk_b) + ATT_BK) / ATT_BK; /* key tiles needed */
    load_tile<HD, LD>(sQ, qb, rs, q0, ATT_BQ, Sq);
    load_tile<HD, LD>(sO, dob, orow, q0, ATT_BQ, Sq);
    load_tile<HD, LD>(sKV, kb, rs, 0, ATT_BK, Skv);
    load_tile<HD, LD>(sKV + 2 * TILE, vb, rs, 0, ATT_BK, Skv);
    cp_async_commit();

    const int qi0 = q0 + warp * 16 + g, qi1 = qi0 + 8;
    const int64_t lrow = ((int64_t)b * NH + h) * Sq;
    /* Rows past Sq: lse = +inf makes every p = 0, so they contribute nothing. */
    const float L0 = qi0 < Sq ? lse[lrow + qi0] * LOG2E : INFINITY;
    const float L1 = qi1 < Sq ? lse[lrow + qi1] * LOG2E : INFINITY;
    const float D0 = qi0 < Sq ? Dsum[lrow + qi0] : 0.0f;
    const float D1 = qi1 < Sq ? Dsum[lrow + qi1] : 0.0f;
    const int lim0 = qi0 < Sq ? last_key(qpos, qi0, Skv) : Skv - 1;
    const int lim1 = qi1 < Sq ? last_key(qpos, qi1, Skv) : Skv - 1;

    float dq[DT][4];
    zero_acc<DT>(dq);
    for (int j = 0; j < jn; j++) {
        const int k0 = j * ATT_BK, st = j & 1;
        /* tile j visible, tile j - 1 no longer read: refill stage st ^ 1 */
        cp_async_wait<0>();
        __syncthreads();
        if (j + 1 < jn) {
            load_tile<HD, LD>(sKV + (st ^ 1) * TILE, kb, rs, k0 + ATT_BK, ATT_BK, Skv);
            load_tile<HD, LD>(sKV + (2 + (st ^ 1)) * TILE, vb, rs, k0 + ATT_BK, ATT_BK, Skv);
        }
        cp_async_commit();
        const bf16 *const sK = sKV + st * TILE, *const sV = sKV + (2 + st) * TILE;

        float s[8][4], dp[8][4];
        paired_scores<HD, LD, 8>(s, dp, sQ, sO, sK, sV, warp, lane);
        dq_ds(s, dp, k0, t, scale_log2, L0, L1, D0, D1, lim0, lim1);
        mma_kmajor<DT, LD, 4>(dq, s, sK, lane); /* dQ += dS K: k over the 64 keys */
    }
    store_rows<DT>(dq_out + b * W + (int64_t)h * HD, dq, qi0, qi1, Sq, rs, t, scale, scale);
}

/* ---- backward: dK, dV ---------------------------------------------------------------------- */

/* P^T into st and dS^T = P^T (dP^T - D) into dpt (column = query c, whose
 * lse, D and last key are sL, sD, sP[c]); 0 where key kj0 / kj1 is past the
 * query's last key. */
static __device__ __forceinline__ void dkdv_probs(float st[4][4], float dpt[4][4],
                                                  const float *sL, const float *sD,
                                                  const int *sP, int kj0, int kj1, int t,
                                                  float scale_log2)
{
#pragma unroll
    for (int n = 0; n < 4; n++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const int c = n * 8 + 2 * t + e, lim = sP[c];
            const float L = sL[c], Dq = sD[c];
            float p0 = exp2f(st[n][e] * scale_log2 - L);
            float p1 = exp2f(st[n][2 + e] * scale_log2 - L);
            if (kj0 > lim)
                p0 = 0.0f;
            if (kj1 > lim)
                p1 = 0.0f;
            st[n][e] = p0;
            st[n][2 + e] = p1;
            dpt[n][e] = p0 * (dpt[n][e] - Dq);
            dpt[n][2 + e] = p1 * (dpt[n][2 + e] - Dq);
        }
}

template <int HD, typename TS>
static __global__ void __launch_bounds__(ATT_THREADS)
    k_attn_bwd_dkdv(TS *dkv_out, const TS *dout, const float *lse, const float *Dsum,
                    const TS *q, const TS *kv, const int32_t *qpos, int Sq, int Skv, int B,
                    int NH, int NKV, float scale_log2, float scale)
{
    constexpr int LD = HD + 8;
    constexpr int DT = HD / 8;
    /* K and V of this key tile (the A operands of every product), then two
     * stages of Q, dO, lse, D and last keys for the query tiles: 68.8 KiB at
     * HD 128. */
    PX_DYNAMIC_SMEM(bf16, sK);
    bf16 *const sV = sK + ATT_BK * LD;
    /* stage s (offsets, not run-time-indexed pointer arrays, which would
     * live on the stack): Q at sQ0 + s QT, dO at sQ0 + (2 + s) QT; lse, D and
     * last keys at sL0, sD0, sP0 + s ATT_BQ2 */
    constexpr int QT = ATT_BQ2 * LD;
    bf16 *const sQ0 = sV + ATT_BK * LD;
    float *const sL0 = reinterpret_cast<float *>(sQ0 + 4 * QT), *const sD0 = sL0 + 2 * ATT_BQ2;
    int *const sP0 = reinterpret_cast<int *>(sD0 + 2 * ATT_BQ2);

    const int kt = blockIdx.x, kh = blockIdx.y, b = blockIdx.z; /* kt = 0 has most work */
    const int group = NH / NKV;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, rs = (int64_t)B * W;
    const int64_t orow = (int64_t)B * NH * HD;
    const int k0 = kt * ATT_BK;
    const int kj0 = k0 + warp * 16 + g, kj1 = kj0 + 8;

    /* The work is every (query head sharing this kv head, query tile with a
     * row that sees a key of this tile) pair, in one sequence so that one
     * pipeline runs across the heads too.  A query tile of 32 rows is needed
     * when its largest last key reaches k0 (without qpos: tiles from k0 / 32
     * on; with it, a warp-wide scan per tile, uniform over the block). */
    const int n_qt = (Sq + ATT_BQ2 - 1) / ATT_BQ2, h_end = (kh + 1) * group;
    auto next_qt = [&](int tq) {
        while (tq < n_qt && last_key32(qpos, tq * ATT_BQ2, Sq, Skv, lane) < k0)
            tq++;
        return tq;
    };
    auto issue = [&](int qh, int qtile, int stage) {
        const int q0 = qtile * ATT_BQ2;
        const int64_t lrow = ((int64_t)b * NH + qh) * Sq;
        load_tile<HD, LD>(sQ0 + stage * QT, q + b * W + (int64_t)qh * HD, rs, q0, ATT_BQ2, Sq);
        load_tile<HD, LD>(sQ0 + (2 + stage) * QT, dout + b * (int64_t)NH * HD + (int64_t)qh * HD,
                          orow, q0, ATT_BQ2, Sq);
        for (int r = threadIdx.x; r < ATT_BQ2; r += blockDim.x) {
            const bool in = q0 + r < Sq;
            sL0[stage * ATT_BQ2 + r] = in ? lse[lrow + q0 + r] * LOG2E : INFINITY;
            sD0[stage * ATT_BQ2 + r] = in ? Dsum[lrow + q0 + r] : 0.0f;
            sP0[stage * ATT_BQ2 + r] = in ? last_key(qpos, q0 + r, Skv) : -1;
        }
    };
    const int tq_first = next_qt(qpos ? 0 : k0 / ATT_BQ2);
    int h = kh * group, tq = tq_first;
    load_tile<HD, LD>(sK, kv + b * W + (int64_t)(NH + kh) * HD, rs, k0, ATT_BK, Skv);
    load_tile<HD, LD>(sV, kv + b * W + (int64_t)(NH + NKV + kh) * HD, rs, k0, ATT_BK, Skv);
    if (tq_first < n_qt)
        issue(h, tq, 0);
    else
        h = h_end; /* no query sees these keys: dK = dV = 0 */
    cp_async_commit();

    float dk[DT][4], dv[DT][4];
    zero_acc<DT>(dk);
    zero_acc<DT>(dv);
    for (int stage = 0; h < h_end; stage ^= 1) {
        const bf16 *const sQ = sQ0 + stage * QT, *const sO = sQ0 + (2 + stage) * QT;
        int h_next = h, tq_next = next_qt(tq + 1);
        if (tq_next == n_qt) {
            h_next++;
            tq_next = tq_first;
        }
        /* item visible to all, item - 1 no longer read: refill the other stage */
        cp_async_wait<0>();
        __syncthreads();
        if (h_next < h_end)
            issue(h_next, tq_next, stage ^ 1);
        cp_async_commit();

        float st[4][4], dpt[4][4];
        paired_scores<HD, LD, 4>(st, dpt, sK, sV, sQ, sO, warp, lane);
        dkdv_probs(st, dpt, sL0 + stage * ATT_BQ2, sD0 + stage * ATT_BQ2,
                   sP0 + stage * ATT_BQ2, kj0, kj1, t, scale_log2);
        /* dV += P^T dO and dK += dS^T Q: k over the 32 queries, n over HD */
        mma_kmajor<DT, LD, 2>(dv, st, sO, lane);
        mma_kmajor<DT, LD, 2>(dk, dpt, sQ, lane);
        h = h_next;
        tq = tq_next;
    }
    store_rows<DT>(dkv_out + b * W + (int64_t)(NH + kh) * HD, dk, kj0, kj1, Skv, rs, t, scale,
                   scale);
    store_rows<DT>(dkv_out + b * W + (int64_t)(NH + NKV + kh) * HD, dv, kj0, kj1, Skv, rs, t,
                   1.0f, 1.0f);
}

#ifndef PX_CUDA_EMULATE /* the emulator drives the kernels itself */
/* ---- launchers ---------------------------------------------------------------------- */

static px_status check_shape(const char *what, const void *const *ptrs, int n_ptrs, int64_t Sq,
                             int64_t Skv, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                             const void *probs, px_error *err)
{
    if (probs)
        return px_error_set(err, PX_ERR_UNSUPPORTED, NULL, 0, 0,
                            "%s: probs must be NULL: the CUDA backend always runs the "
                            "FlashAttention path (no S x S matrix); set flash_attention: true",
                            what);
    PX_REQUIRE(err, Sq >= 0 && Skv >= 0 && B >= 0 && NH > 0 && NKV > 0 && NH % NKV == 0,
               "%s: Sq = %lld, Skv = %lld, B = %lld, NH = %lld, NKV = %lld: need sizes >= 0 "
               "and NH a multiple of NKV",
               what, (long long)Sq, (long long)Skv, (long long)B, (long long)NH,
               (long long)NKV);
    if (HD != 16 && HD != 32 && HD != 64 && HD != 128)
        return px_error_set(err, PX_ERR_UNSUPPORTED, NULL, 0, 0,
                            "%s: head dim %lld; the CUDA kernels support 16, 32, 64 and 128",
                            what, (long long)HD);
    PX_REQUIRE(err, Sq < (1LL << 30) && Skv < (1LL << 30) &&
                        B * (NH + 2 * NKV) * HD < (1LL << 40) && NH < 65536 && B < 65536,
               "%s: Sq = %lld, Skv = %lld, B = %lld, NH = %lld exceed the grid limits", what,
               (long long)Sq, (long long)Skv, (long long)B, (long long)NH);
    for (int i = 0; i < n_ptrs; i++)
        if ((uintptr_t)ptrs[i] % 16 != 0)
            return px_error_set(err, PX_ERR_INVALID, NULL, 0, 0,
                                "%s: tensor argument %d is not 16-byte aligned", what, i + 1);
    return PX_OK;
}

/* The kv forms' extra arguments: positions, and keys for every query. */
static px_status check_kv(const char *what, const int32_t *qpos, int64_t Sq, int64_t Skv,
                          px_error *err)
{
    PX_REQUIRE(err, Sq == 0 || (qpos != NULL && Skv > 0),
               "%s: qpos = %p, Sq = %lld, Skv = %lld: the query positions are required, and "
               "Skv >= 1 (every query sees key 0)",
               what, (const void *)qpos, (long long)Sq, (long long)Skv);
    return PX_OK;
}

/* Dynamic shared memory of each kernel (the layouts at their top). */
template <int HD>
static int fwd_smem(void) { return 4 * ATT_BK * (HD + 8) * (int)sizeof(bf16); }
template <int HD>
static int dq_smem(void) { return (2 * ATT_BQ + 4 * ATT_BK) * (HD + 8) * (int)sizeof(bf16); }
template <int HD>
static int dkdv_smem(void)
{
    return (2 * ATT_BK + 4 * ATT_BQ2) * (HD + 8) * (int)sizeof(bf16) +
           6 * ATT_BQ2 * (int)sizeof(float);
}

/* The problem as the kernels take it: q rows against kv rows (q = kv and
 * qpos = NULL for plain causal attention). */
template <typename TS> struct att_args {
    const TS *q, *kv;
    const int32_t *qpos;
    int Sq, Skv, B, NH, NKV;
};

/* Opts a kernel in to `bytes` of dynamic shared memory, and asks for the
 * largest shared-memory carveout so that the blocks per SM its launch bounds
 * plan for actually fit (the driver's default split may leave less). */
template <typename K> static px_status smem_opt_in(K *kernel, int bytes, px_error *err)
{
    PX_CUDA_TRY(err, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          bytes));
    PX_CUDA_TRY(err, cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                          (int)cudaSharedmemCarveoutMaxShared));
    return PX_OK;
}

template <int HD, typename TS>
static px_status launch_fwd(TS *out, float *lse, const att_args<TS> &a, cudaStream_t stream,
                            px_error *err)
{
    const int smem = fwd_smem<HD>();
    PX_TRY(smem_opt_in(k_attn_fwd<HD, TS>, smem, err));
    dim3 grid((unsigned)((a.Sq + ATT_BQ - 1) / ATT_BQ), (unsigned)a.NH, (unsigned)a.B);
    const float scale_log2 = LOG2E / sqrtf((float)HD);
    k_attn_fwd<HD, TS><<<grid, ATT_THREADS, smem, stream>>>(
        out, lse, a.q, a.kv, a.qpos, a.Sq, a.Skv, a.B, a.NH, a.NKV, scale_log2);
    PX_CUDA_LAUNCH_TRY(err, "k_attn_fwd");
    return PX_OK;
}

template <int HD, typename TS>
static px_status launch_bwd(TS *dq, TS *dkv, const TS *dout, const float *lse,
                            const float *Dsum, const att_args<TS> &a, cudaStream_t stream,
                            px_error *err)
{
    const float scale = 1.0f / sqrtf((float)HD), scale_log2 = LOG2E * scale;
    const int sdq = dq_smem<HD>(), skv = dkdv_smem<HD>();
    PX_TRY(smem_opt_in(k_attn_bwd_dq<HD, TS>, sdq, err));
    PX_TRY(smem_opt_in(k_attn_bwd_dkdv<HD, TS>, skv, err));
    const unsigned tiles_q = (unsigned)((a.Sq + ATT_BQ - 1) / ATT_BQ);
    const unsigned tiles_k = (unsigned)((a.Skv + ATT_BK - 1) / ATT_BK);
    k_attn_bwd_dq<HD, TS>
        <<<dim3(tiles_q, (unsigned)a.NH, (unsigned)a.B), ATT_THREADS, sdq, stream>>>(
            dq, dout, lse, Dsum, a.q, a.kv, a.qpos, a.Sq, a.Skv, a.B, a.NH, a.NKV, scale_log2,
            scale);
    PX_CUDA_LAUNCH_TRY(err, "k_attn_bwd_dq");
    k_attn_bwd_dkdv<HD, TS>
        <<<dim3(tiles_k, (unsigned)a.NKV, (unsigned)a.B), ATT_THREADS, skv, stream>>>(
            dkv, dout, lse, Dsum, a.q, a.kv, a.qpos, a.Sq, a.Skv, a.B, a.NH, a.NKV, scale_log2,
            scale);
    PX_CUDA_LAUNCH_TRY(err, "k_attn_bwd_dkdv");
    return PX_OK;
}

template <typename TS>
static px_status attention_fwd(TS *out, float *lse, const att_args<TS> &a, int64_t HD,
                               cudaStream_t stream, px_error *err)
{
    if (a.Sq == 0 || a.B == 0)
        return PX_OK;
    switch (HD) {
    case 16: return launch_fwd<16, TS>(out, lse, a, stream, err);
    case 32: return launch_fwd<32, TS>(out, lse, a, stream, err);
    case 64: return launch_fwd<64, TS>(out, lse, a, stream, err);
    default: return launch_fwd<128, TS>(out, lse, a, stream, err);
    }
}

/* dq gets the q heads of the Sq query rows, dkv the k and v heads of the Skv
 * rows; with zero_rest (the kv forms: two buffers) the other heads are set to
 * zero, as the CPU twin does.  (For plain attention dq = dkv = dqkv and the
 * two kernels together write every element.) */
template <typename TS>
static px_status attention_bwd(TS *dq, TS *dkv, const TS *dout, const TS *out, const float *lse,
                               const att_args<TS> &a, int64_t HD, bool zero_rest,
                               cudaStream_t stream, px_error *err)
{
    if (a.B == 0 || (a.Sq == 0 && a.Skv == 0))
        return PX_OK;
    const size_t pitch = (size_t)(a.NH + 2 * a.NKV) * (size_t)HD * sizeof(TS);
    if (zero_rest) {
        const size_t q_bytes = (size_t)a.NH * (size_t)HD * sizeof(TS);
        if (a.Sq > 0)
            PX_CUDA_TRY(err, cudaMemset2DAsync(reinterpret_cast<char *>(dq) + q_bytes, pitch, 0,
                                               pitch - q_bytes, (size_t)a.Sq * (size_t)a.B,
                                               stream));
        if (a.Skv > 0)
            PX_CUDA_TRY(err, cudaMemset2DAsync(dkv, pitch, 0, q_bytes,
                                               (size_t)a.Skv * (size_t)a.B, stream));
    }
    if (a.Sq == 0) /* no query sees any key: the k, v heads are zero too */
        return px_cuda_status(cudaMemset2DAsync(reinterpret_cast<char *>(dkv) +
                                                    (size_t)a.NH * (size_t)HD * sizeof(TS),
                                                pitch, 0, (size_t)(2 * a.NKV) * HD * sizeof(TS),
                                                (size_t)a.Skv * (size_t)a.B, stream),
                              "cudaMemset2DAsync(dkv)", __FILE__, __LINE__, err);
    const int64_t rows = (int64_t)a.B * a.NH * a.Sq;
    float *Dsum = NULL;
    PX_CUDA_TRY(err, cudaMallocAsync((void **)&Dsum, (size_t)rows * sizeof(float), stream));
    const int per_block = 256 / 32;
    k_attn_bwd_dot<TS><<<(unsigned)((rows + per_block - 1) / per_block), 256, 0, stream>>>(
        Dsum, dout, out, a.Sq, a.B, a.NH, (int)HD);
    px_status st = px_cuda_status(cudaGetLastError(), "launch of k_attn_bwd_dot", __FILE__,
                                  __LINE__, err);
    if (st == PX_OK) {
        if (HD == 16)
            st = launch_bwd<16, TS>(dq, dkv, dout, lse, Dsum, a, stream, err);
        else if (HD == 32)
            st = launch_bwd<32, TS>(dq, dkv, dout, lse, Dsum, a, stream, err);
        else if (HD == 64)
            st = launch_bwd<64, TS>(dq, dkv, dout, lse, Dsum, a, stream, err);
        else
            st = launch_bwd<128, TS>(dq, dkv, dout, lse, Dsum, a, stream, err);
    }
    cudaError_t e = cudaFreeAsync(Dsum, stream);
    if (st == PX_OK)
        st = px_cuda_status(e, "cudaFreeAsync(attention scratch)", __FILE__, __LINE__, err);
    return st;
}

template <typename TS>
static px_status plain_fwd(TS *out, float *lse, float *probs, const TS *qkv, int64_t S,
                           int64_t B, int64_t NH, int64_t NKV, int64_t HD, cudaStream_t stream,
                           px_error *err)
{
    const void *ptrs[] = {out, qkv};
    PX_TRY(check_shape("attention_fwd", ptrs, 2, S, S, B, NH, NKV, HD, probs, err));
    const att_args<TS> a = {qkv, qkv, NULL, (int)S, (int)S, (int)B, (int)NH, (int)NKV};
    return attention_fwd<TS>(out, lse, a, HD, stream, err);
}

template <typename TS>
static px_status plain_bwd(TS *dqkv, const TS *dout, const TS *out, const float *lse,
                           const float *probs, const TS *qkv, int64_t S, int64_t B, int64_t NH,
                           int64_t NKV, int64_t HD, cudaStream_t stream, px_error *err)
{
    const void *ptrs[] = {dqkv, dout, out, qkv};
    PX_TRY(check_shape("attention_bwd", ptrs, 4, S, S, B, NH, NKV, HD, probs, err));
    const att_args<TS> a = {qkv, qkv, NULL, (int)S, (int)S, (int)B, (int)NH, (int)NKV};
    return attention_bwd<TS>(dqkv, dqkv, dout, out, lse, a, HD, false, stream, err);
}

template <typename TS>
static px_status kv_fwd(TS *out, float *lse, const TS *q, const int32_t *qpos, const TS *kv,
                        int64_t Sq, int64_t Skv, int64_t B, int64_t NH, int64_t NKV,
                        int64_t HD, cudaStream_t stream, px_error *err)
{
    const void *ptrs[] = {out, q, kv};
    PX_TRY(check_shape("attention_kv_fwd", ptrs, 3, Sq, Skv, B, NH, NKV, HD, NULL, err));
    PX_TRY(check_kv("attention_kv_fwd", qpos, Sq, Skv, err));
    const att_args<TS> a = {q, kv, qpos, (int)Sq, (int)Skv, (int)B, (int)NH, (int)NKV};
    return attention_fwd<TS>(out, lse, a, HD, stream, err);
}

template <typename TS>
static px_status kv_bwd(TS *dq, TS *dkv, const TS *dout, const TS *out, const float *lse,
                        const TS *q, const int32_t *qpos, const TS *kv, int64_t Sq, int64_t Skv,
                        int64_t B, int64_t NH, int64_t NKV, int64_t HD, cudaStream_t stream,
                        px_error *err)
{
    const void *ptrs[] = {dq, dkv, dout, out, q, kv};
    PX_TRY(check_shape("attention_kv_bwd", ptrs, 6, Sq, Skv, B, NH, NKV, HD, NULL, err));
    PX_TRY(check_kv("attention_kv_bwd", qpos, Sq, Skv, err));
    const att_args<TS> a = {q, kv, qpos, (int)Sq, (int)Skv, (int)B, (int)NH, (int)NKV};
    return attention_bwd<TS>(dq, dkv, dout, out, lse, a, HD, true, stream, err);
}

/* ---- C entry points: bf16 storage (the twins) and fp32 storage (_f32) ---- */

static bf16 *dev(px_bf16 *p) { return reinterpret_cast<bf16 *>(p); }
static const bf16 *dev(const px_bf16 *p) { return reinterpret_cast<const bf16 *>(p); }

extern "C" px_status px_cuda_attention_fwd(px_bf16 *out, float *lse, float *probs,
                                           const px_bf16 *qkv, int64_t S, int64_t B, int64_t NH,
                                           int64_t NKV, int64_t HD, cudaStream_t stream,
                                           px_error *err)
{
    return plain_fwd<bf16>(dev(out), lse, probs, dev(qkv), S, B, NH, NKV, HD, stream, err);
}

extern "C" px_status px_cuda_attention_fwd_f32(float *out, float *lse, float *probs,
                                               const float *qkv, int64_t S, int64_t B,
                                               int64_t NH, int64_t NKV, int64_t HD,
                                               cudaStream_t stream, px_error *err)
{
    return plain_fwd<float>(out, lse, probs, qkv, S, B, NH, NKV, HD, stream, err);
}

extern "C" px_status px_cuda_attention_bwd(px_bf16 *dqkv, const px_bf16 *dout,
                                           const px_bf16 *out, const float *lse,
                                           const float *probs, const px_bf16 *qkv, int64_t S,
                                           int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                                           cudaStream_t stream, px_error *err)
{
    return plain_bwd<bf16>(dev(dqkv), dev(dout), dev(out), lse, probs, dev(qkv), S, B, NH, NKV,
                           HD, stream, err);
}

extern "C" px_status px_cuda_attention_bwd_f32(float *dqkv, const float *dout, const float *out,
                                               const float *lse, const float *probs,
                                               const float *qkv, int64_t S, int64_t B,
                                               int64_t NH, int64_t NKV, int64_t HD,
                                               cudaStream_t stream, px_error *err)
{
    return plain_bwd<float>(dqkv, dout, out, lse, probs, qkv, S, B, NH, NKV, HD, stream, err);
}

extern "C" px_status px_cuda_attention_kv_fwd(px_bf16 *out, float *lse, const px_bf16 *q,
                                              const int32_t *qpos, const px_bf16 *kv,
                                              int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                                              int64_t NKV, int64_t HD, cudaStream_t stream,
                                              px_error *err)
{
    return kv_fwd<bf16>(dev(out), lse, dev(q), qpos, dev(kv), Sq, Skv, B, NH, NKV, HD, stream,
                        err);
}

extern "C" px_status px_cuda_attention_kv_fwd_f32(float *out, float *lse, const float *q,
                                                  const int32_t *qpos, const float *kv,
                                                  int64_t Sq, int64_t Skv, int64_t B,
                                                  int64_t NH, int64_t NKV, int64_t HD,
                                                  cudaStream_t stream, px_error *err)
{
    return kv_fwd<float>(out, lse, q, qpos, kv, Sq, Skv, B, NH, NKV, HD, stream, err);
}

extern "C" px_status px_cuda_attention_kv_bwd(px_bf16 *dq, px_bf16 *dkv, const px_bf16 *dout,
                                              const px_bf16 *out, const float *lse,
                                              const px_bf16 *q, const int32_t *qpos,
                                              const px_bf16 *kv, int64_t Sq, int64_t Skv,
                                              int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                                              cudaStream_t stream, px_error *err)
{
    return kv_bwd<bf16>(dev(dq), dev(dkv), dev(dout), dev(out), lse, dev(q), qpos, dev(kv), Sq,
                        Skv, B, NH, NKV, HD, stream, err);
}

extern "C" px_status px_cuda_attention_kv_bwd_f32(float *dq, float *dkv, const float *dout,
                                                  const float *out, const float *lse,
                                                  const float *q, const int32_t *qpos,
                                                  const float *kv, int64_t Sq, int64_t Skv,
                                                  int64_t B, int64_t NH, int64_t NKV,
                                                  int64_t HD, cudaStream_t stream,
                                                  px_error *err)
{
    return kv_bwd<float>(dq, dkv, dout, out, lse, q, qpos, kv, Sq, Skv, B, NH, NKV, HD, stream,
                         err);
}
#endif /* PX_CUDA_EMULATE */
