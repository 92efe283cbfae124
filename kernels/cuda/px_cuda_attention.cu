/* px_cuda_attention.cu — causal attention, FlashAttention-2 style, on bf16
 * tensor cores (mma.sync.m16n8k16, fp32 accumulate), for sm_80 and sm_90.
 *
 * Forward: a block of 4 warps owns 64 query rows of one (batch, head); each
 * warp owns 16 of them and keeps, in registers, its q fragments, the running
 * max m and sum l of the online softmax and the 16 x HD output accumulator.
 * Key/value tiles of 64 rows stream through shared memory up to the causal
 * diagonal; the 16 x 64 score tile stays in registers, is turned into
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
 *      that share it (GQA) and the query tiles at or below the diagonal:
 *      P^T = exp(S^T - lse), dV += P^T dO, dP^T = V dO^T,
 *      dS^T = P^T (dP^T - D), dK += dS^T Q — accumulated in registers.
 * The softmax scale 1/sqrt(HD) multiplies dQ and dK at the end.
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

static __device__ __forceinline__ uint32_t pack_raw(uint16_t lo, uint16_t hi)
{
    return (uint32_t)lo | ((uint32_t)hi << 16);
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

/* A fragment of the row-major shared matrix M (rows = m, contiguous k) at
 * rows r0.., columns k0.. */
static __device__ __forceinline__ void load_a(uint32_t a[4], const bf16 *M, int ld, int r0,
                                              int k0, int g, int t)
{
    const bf16 *p = M + (r0 + g) * ld + k0 + 2 * t;
    a[0] = *reinterpret_cast<const uint32_t *>(p);
    a[1] = *reinterpret_cast<const uint32_t *>(p + 8 * ld);
    a[2] = *reinterpret_cast<const uint32_t *>(p + 8);
    a[3] = *reinterpret_cast<const uint32_t *>(p + 8 * ld + 8);
}

/* B fragment with B[k][n] = M[n][k] (M's rows are n, contiguous along k):
 * the K operand of Q K^T, the V operand of dO V^T. */
static __device__ __forceinline__ void load_b_nmajor(uint32_t b[2], const bf16 *M, int ld,
                                                     int n0, int k0, int g, int t)
{
    const bf16 *p = M + (n0 + g) * ld + k0 + 2 * t;
    b[0] = *reinterpret_cast<const uint32_t *>(p);
    b[1] = *reinterpret_cast<const uint32_t *>(p + 8);
}

/* B fragment with B[k][n] = M[k][n] (M's rows are k): the V of P V, the K of
 * dS K, the dO of P^T dO, the Q of dS^T Q. */
static __device__ __forceinline__ void load_b_kmajor(uint32_t b[2], const bf16 *M, int ld,
                                                     int k0, int n0, int g, int t)
{
    const uint16_t *m = reinterpret_cast<const uint16_t *>(M);
    const uint16_t *p = m + (k0 + 2 * t) * ld + n0 + g;
    b[0] = pack_raw(p[0], p[ld]);
    b[1] = pack_raw(p[8 * ld], p[9 * ld]);
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

/* Eight consecutive elements of either storage type as eight bf16 (16 bytes):
 * the tensor cores always see bf16; fp32 storage is rounded on the way in. */
static __device__ __forceinline__ uint4 load8(const bf16 *p)
{
    return *reinterpret_cast<const uint4 *>(p);
}
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

/* Copies rows [row0, row0 + n_rows) of a strided [S, ...] tensor (row s at
 * base + s * row_stride, HD contiguous elements) into shared memory as bf16
 * (row stride LD), 8 elements per thread per step; rows >= S become zeros. */
template <int HD, int LD, typename TS>
static __device__ __forceinline__ void load_tile(bf16 *sm, const TS *base, int64_t row_stride,
                                                 int row0, int n_rows, int S)
{
    constexpr int CHUNKS = HD / 8;
    for (int idx = threadIdx.x; idx < n_rows * CHUNKS; idx += blockDim.x) {
        int r = idx / CHUNKS, c = idx - r * CHUNKS;
        int s = row0 + r;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (s < S)
            v = load8(base + (int64_t)s * row_stride + c * 8);
        *reinterpret_cast<uint4 *>(sm + r * LD + c * 8) = v;
    }
}

/* ---- forward -------------------------------------------------------------------------- */

template <int HD, typename TS>
static __global__ void __launch_bounds__(ATT_THREADS)
    k_attn_fwd(TS *out, float *lse, const TS *qkv, int S, int B, int NH, int NKV,
               float scale_log2)
{
    constexpr int LD = HD + 8; /* +16 bytes: fragment loads hit 32 distinct banks */
    constexpr int KT = HD / 16, DT = HD / 8;
    PX_DYNAMIC_SMEM(bf16, sQ);
    bf16 *sK = sQ + ATT_BQ * LD, *sV = sK + ATT_BK * LD;

    const int qt = gridDim.x - 1 - blockIdx.x; /* longest rows first */
    const int h = blockIdx.y, b = blockIdx.z, kh = h / (NH / NKV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, rs = (int64_t)B * W;
    const TS *qb = qkv + b * W + (int64_t)h * HD;
    const TS *kb = qkv + b * W + (int64_t)(NH + kh) * HD;
    const TS *vb = qkv + b * W + (int64_t)(NH + NKV + kh) * HD;
    const int q0 = qt * ATT_BQ;

    load_tile<HD, LD>(sQ, qb, rs, q0, ATT_BQ, S);
    __syncthreads();
    uint32_t qf[KT][4];
#pragma unroll
    for (int kk = 0; kk < KT; kk++)
        load_a(qf[kk], sQ, LD, warp * 16, kk * 16, g, t);

    float o[DT][4];
#pragma unroll
    for (int d = 0; d < DT; d++)
        o[d][0] = o[d][1] = o[d][2] = o[d][3] = 0.0f;
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.0f, l1 = 0.0f;
    const int qi0 = q0 + warp * 16 + g, qi1 = qi0 + 8;

    for (int j = 0; j <= qt; j++) { /* ATT_BQ == ATT_BK: tile qt is the diagonal */
        const int k0 = j * ATT_BK;
        __syncthreads(); /* every warp is done with the previous K, V */
        load_tile<HD, LD>(sK, kb, rs, k0, ATT_BK, S);
        load_tile<HD, LD>(sV, vb, rs, k0, ATT_BK, S);
        __syncthreads();

        float s[8][4];
#pragma unroll
        for (int n = 0; n < 8; n++)
            s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KT; kk++)
#pragma unroll
            for (int n = 0; n < 8; n++) {
                uint32_t bf[2];
                load_b_nmajor(bf, sK, LD, n * 8, kk * 16, g, t);
                mma_bf16(s[n], qf[kk], bf);
            }

        /* Scale into the log2 domain, mask above the diagonal, row maxima. */
        float mx0 = m0, mx1 = m1;
#pragma unroll
        for (int n = 0; n < 8; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int kj = k0 + n * 8 + 2 * t + e;
                float v0 = s[n][e] * scale_log2, v1 = s[n][2 + e] * scale_log2;
                if (j == qt) {
                    if (kj > qi0)
                        v0 = -INFINITY;
                    if (kj > qi1)
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
        /* Every row sees its own key (kj = qi) in the diagonal tile and only
         * unmasked keys before it, so mx is finite from the first tile on and
         * exp2(m - mx) is 0 at the start rather than NaN. */
        const float a0 = exp2f(m0 - mx0), a1 = exp2f(m1 - mx1);
        m0 = mx0;
        m1 = mx1;
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
        l0 = l0 * a0 + r0; /* per-lane partial sums; the quad adds them at the end */
        l1 = l1 * a1 + r1;
#pragma unroll
        for (int d = 0; d < DT; d++) {
            o[d][0] *= a0;
            o[d][1] *= a0;
            o[d][2] *= a1;
            o[d][3] *= a1;
        }
        /* O += P V: k runs over the 64 keys (4 k-tiles), n over HD. */
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint32_t pa[4];
            acc_to_a(pa, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
            for (int d = 0; d < DT; d++) {
                uint32_t bf[2];
                load_b_kmajor(bf, sV, LD, kk * 16, d * 8, g, t);
                mma_bf16(o[d], pa, bf);
            }
        }
    }

    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = 1.0f / l0, inv1 = 1.0f / l1;
    const int64_t orow = (int64_t)B * NH * HD;
    TS *ob = out + b * (int64_t)NH * HD + (int64_t)h * HD;
    if (qi0 < S) {
#pragma unroll
        for (int d = 0; d < DT; d++)
            store2(ob + qi0 * orow + d * 8 + 2 * t, o[d][0] * inv0, o[d][1] * inv0);
        if (t == 0)
            lse[((int64_t)b * NH + h) * S + qi0] = (m0 + log2f(l0)) * LN2;
    }
    if (qi1 < S) {
#pragma unroll
        for (int d = 0; d < DT; d++)
            store2(ob + qi1 * orow + d * 8 + 2 * t, o[d][2] * inv1, o[d][3] * inv1);
        if (t == 0)
            lse[((int64_t)b * NH + h) * S + qi1] = (m1 + log2f(l1)) * LN2;
    }
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

template <int HD, typename TS>
static __global__ void __launch_bounds__(ATT_THREADS)
    k_attn_bwd_dq(TS *dqkv, const TS *dout, const float *lse, const float *Dsum,
                  const TS *qkv, int S, int B, int NH, int NKV, float scale_log2, float scale)
{
    constexpr int LD = HD + 8;
    constexpr int KT = HD / 16, DT = HD / 8;
    PX_DYNAMIC_SMEM(bf16, sQ);
    bf16 *sO = sQ + ATT_BQ * LD; /* dO rows */
    bf16 *sK = sO + ATT_BQ * LD, *sV = sK + ATT_BK * LD;

    const int qt = gridDim.x - 1 - blockIdx.x;
    const int h = blockIdx.y, b = blockIdx.z, kh = h / (NH / NKV);
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, rs = (int64_t)B * W;
    const int64_t orow = (int64_t)B * NH * HD;
    const TS *qb = qkv + b * W + (int64_t)h * HD;
    const TS *kb = qkv + b * W + (int64_t)(NH + kh) * HD;
    const TS *vb = qkv + b * W + (int64_t)(NH + NKV + kh) * HD;
    const TS *dob = dout + b * (int64_t)NH * HD + (int64_t)h * HD;
    const int q0 = qt * ATT_BQ;

    load_tile<HD, LD>(sQ, qb, rs, q0, ATT_BQ, S);
    load_tile<HD, LD>(sO, dob, orow, q0, ATT_BQ, S);

    const int qi0 = q0 + warp * 16 + g, qi1 = qi0 + 8;
    const int64_t lrow = ((int64_t)b * NH + h) * S;
    /* Rows past S: lse = +inf makes every p = 0, so they contribute nothing. */
    const float L0 = qi0 < S ? lse[lrow + qi0] * LOG2E : INFINITY;
    const float L1 = qi1 < S ? lse[lrow + qi1] * LOG2E : INFINITY;
    const float D0 = qi0 < S ? Dsum[lrow + qi0] : 0.0f;
    const float D1 = qi1 < S ? Dsum[lrow + qi1] : 0.0f;

    float dq[DT][4];
#pragma unroll
    for (int d = 0; d < DT; d++)
        dq[d][0] = dq[d][1] = dq[d][2] = dq[d][3] = 0.0f;

    for (int j = 0; j <= qt; j++) {
        const int k0 = j * ATT_BK;
        __syncthreads();
        load_tile<HD, LD>(sK, kb, rs, k0, ATT_BK, S);
        load_tile<HD, LD>(sV, vb, rs, k0, ATT_BK, S);
        __syncthreads();

        float s[8][4], dp[8][4];
#pragma unroll
        for (int n = 0; n < 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                s[n][e] = dp[n][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < KT; kk++) {
            uint32_t qa[4], da[4];
            load_a(qa, sQ, LD, warp * 16, kk * 16, g, t);
            load_a(da, sO, LD, warp * 16, kk * 16, g, t);
#pragma unroll
            for (int n = 0; n < 8; n++) {
                uint32_t bk[2], bv[2];
                load_b_nmajor(bk, sK, LD, n * 8, kk * 16, g, t);
                load_b_nmajor(bv, sV, LD, n * 8, kk * 16, g, t);
                mma_bf16(s[n], qa, bk);  /* S = Q K^T */
                mma_bf16(dp[n], da, bv); /* dP = dO V^T */
            }
        }
        /* dS = P (dP - D), P = exp(S scale - lse), 0 above the diagonal. */
#pragma unroll
        for (int n = 0; n < 8; n++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                const int kj = k0 + n * 8 + 2 * t + e;
                float p0 = exp2f(s[n][e] * scale_log2 - L0);
                float p1 = exp2f(s[n][2 + e] * scale_log2 - L1);
                if (kj > qi0)
                    p0 = 0.0f;
                if (kj > qi1)
                    p1 = 0.0f;
                s[n][e] = p0 * (dp[n][e] - D0);
                s[n][2 + e] = p1 * (dp[n][2 + e] - D1);
            }
        /* dQ += dS K: k over the 64 keys, n over HD. */
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            uint32_t sa[4];
            acc_to_a(sa, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
            for (int d = 0; d < DT; d++) {
                uint32_t bk[2];
                load_b_kmajor(bk, sK, LD, kk * 16, d * 8, g, t);
                mma_bf16(dq[d], sa, bk);
            }
        }
    }

    TS *dqb = dqkv + b * W + (int64_t)h * HD;
    if (qi0 < S)
#pragma unroll
        for (int d = 0; d < DT; d++)
            store2(dqb + qi0 * rs + d * 8 + 2 * t, dq[d][0] * scale, dq[d][1] * scale);
    if (qi1 < S)
#pragma unroll
        for (int d = 0; d < DT; d++)
            store2(dqb + qi1 * rs + d * 8 + 2 * t, dq[d][2] * scale, dq[d][3] * scale);
}

/* ---- backward: dK, dV ---------------------------------------------------------------------- */

template <int HD, typename TS>
static __global__ void __launch_bounds__(ATT_THREADS)
    k_attn_bwd_dkdv(TS *dqkv, const TS *dout, const float *lse, const float *Dsum,
                    const TS *qkv, int S, int B, int NH, int NKV, float scale_log2,
                    float scale)
{
    constexpr int LD = HD + 8;
    constexpr int KT = HD / 16, DT = HD / 8;
    PX_DYNAMIC_SMEM(bf16, sK);
    bf16 *sV = sK + ATT_BK * LD;
    bf16 *sQ = sV + ATT_BK * LD, *sO = sQ + ATT_BQ2 * LD;
    float *sL = reinterpret_cast<float *>(sO + ATT_BQ2 * LD), *sD = sL + ATT_BQ2;

    const int kt = blockIdx.x, kh = blockIdx.y, b = blockIdx.z; /* kt = 0 has most work */
    const int group = NH / NKV;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int64_t W = (int64_t)(NH + 2 * NKV) * HD, rs = (int64_t)B * W;
    const int64_t orow = (int64_t)B * NH * HD;
    const int k0 = kt * ATT_BK;
    const int kj0 = k0 + warp * 16 + g, kj1 = kj0 + 8;

    load_tile<HD, LD>(sK, qkv + b * W + (int64_t)(NH + kh) * HD, rs, k0, ATT_BK, S);
    load_tile<HD, LD>(sV, qkv + b * W + (int64_t)(NH + NKV + kh) * HD, rs, k0, ATT_BK, S);

    float dk[DT][4], dv[DT][4];
#pragma unroll
    for (int d = 0; d < DT; d++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            dk[d][e] = dv[d][e] = 0.0f;

    for (int h = kh * group; h < (kh + 1) * group; h++) {
        const TS *qb = qkv + b * W + (int64_t)h * HD;
        const TS *dob = dout + b * (int64_t)NH * HD + (int64_t)h * HD;
        const int64_t lrow = ((int64_t)b * NH + h) * S;
        /* Query tiles at or below the diagonal: qi >= kj needs q0 + 31 >= k0. */
        for (int q0 = k0; q0 < S; q0 += ATT_BQ2) {
            __syncthreads(); /* previous tile's sQ, sO, sL, sD are no longer read */
            load_tile<HD, LD>(sQ, qb, rs, q0, ATT_BQ2, S);
            load_tile<HD, LD>(sO, dob, orow, q0, ATT_BQ2, S);
            for (int r = threadIdx.x; r < ATT_BQ2; r += blockDim.x) {
                const bool in = q0 + r < S;
                sL[r] = in ? lse[lrow + q0 + r] * LOG2E : INFINITY;
                sD[r] = in ? Dsum[lrow + q0 + r] : 0.0f;
            }
            __syncthreads();

            /* S^T = K Q^T and dP^T = V dO^T for this warp's 16 keys x 32 queries. */
            float st[4][4], dpt[4][4];
#pragma unroll
            for (int n = 0; n < 4; n++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    st[n][e] = dpt[n][e] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < KT; kk++) {
                uint32_t ka[4], va[4];
                load_a(ka, sK, LD, warp * 16, kk * 16, g, t);
                load_a(va, sV, LD, warp * 16, kk * 16, g, t);
#pragma unroll
                for (int n = 0; n < 4; n++) {
                    uint32_t bq[2], bo[2];
                    load_b_nmajor(bq, sQ, LD, n * 8, kk * 16, g, t);
                    load_b_nmajor(bo, sO, LD, n * 8, kk * 16, g, t);
                    mma_bf16(st[n], ka, bq);
                    mma_bf16(dpt[n], va, bo);
                }
            }
            /* P^T (kept in st) and dS^T (in dpt): column = query qi. */
#pragma unroll
            for (int n = 0; n < 4; n++)
#pragma unroll
                for (int e = 0; e < 2; e++) {
                    const int c = n * 8 + 2 * t + e, qi = q0 + c;
                    const float L = sL[c], Dq = sD[c];
                    float p0 = exp2f(st[n][e] * scale_log2 - L);
                    float p1 = exp2f(st[n][2 + e] * scale_log2 - L);
                    if (kj0 > qi)
                        p0 = 0.0f;
                    if (kj1 > qi)
                        p1 = 0.0f;
                    st[n][e] = p0;
                    st[n][2 + e] = p1;
                    dpt[n][e] = p0 * (dpt[n][e] - Dq);
                    dpt[n][2 + e] = p1 * (dpt[n][2 + e] - Dq);
                }
            /* dV += P^T dO and dK += dS^T Q: k over the 32 queries, n over HD. */
#pragma unroll
            for (int kk = 0; kk < 2; kk++) {
                uint32_t pa[4], sa[4];
                acc_to_a(pa, st[2 * kk], st[2 * kk + 1]);
                acc_to_a(sa, dpt[2 * kk], dpt[2 * kk + 1]);
#pragma unroll
                for (int d = 0; d < DT; d++) {
                    uint32_t bo[2], bq[2];
                    load_b_kmajor(bo, sO, LD, kk * 16, d * 8, g, t);
                    load_b_kmajor(bq, sQ, LD, kk * 16, d * 8, g, t);
                    mma_bf16(dv[d], pa, bo);
                    mma_bf16(dk[d], sa, bq);
                }
            }
        }
    }

    TS *dkb = dqkv + b * W + (int64_t)(NH + kh) * HD;
    TS *dvb = dqkv + b * W + (int64_t)(NH + NKV + kh) * HD;
    if (kj0 < S)
#pragma unroll
        for (int d = 0; d < DT; d++) {
            store2(dkb + kj0 * rs + d * 8 + 2 * t, dk[d][0] * scale, dk[d][1] * scale);
            store2(dvb + kj0 * rs + d * 8 + 2 * t, dv[d][0], dv[d][1]);
        }
    if (kj1 < S)
#pragma unroll
        for (int d = 0; d < DT; d++) {
            store2(dkb + kj1 * rs + d * 8 + 2 * t, dk[d][2] * scale, dk[d][3] * scale);
            store2(dvb + kj1 * rs + d * 8 + 2 * t, dv[d][2], dv[d][3]);
        }
}

#ifndef PX_CUDA_EMULATE /* the emulator drives the kernels itself */
/* ---- launchers ---------------------------------------------------------------------- */

static px_status check_shape(const char *what, const void *const *ptrs, int n_ptrs, int64_t S,
                             int64_t B, int64_t NH, int64_t NKV, int64_t HD, const void *probs,
                             px_error *err)
{
    if (probs)
        return px_error_set(err, PX_ERR_UNSUPPORTED, NULL, 0, 0,
                            "%s: probs must be NULL: the CUDA backend always runs the "
                            "FlashAttention path (no S x S matrix); set flash_attention: true",
                            what);
    PX_REQUIRE(err, S >= 0 && B >= 0 && NH > 0 && NKV > 0 && NH % NKV == 0,
               "%s: S = %lld, B = %lld, NH = %lld, NKV = %lld: need NH a multiple of NKV",
               what, (long long)S, (long long)B, (long long)NH, (long long)NKV);
    if (HD != 16 && HD != 32 && HD != 64 && HD != 128)
        return px_error_set(err, PX_ERR_UNSUPPORTED, NULL, 0, 0,
                            "%s: head dim %lld; the CUDA kernels support 16, 32, 64 and 128",
                            what, (long long)HD);
    PX_REQUIRE(err, S < (1LL << 30) && B * (NH + 2 * NKV) * HD < (1LL << 40) && NH < 65536 &&
                        B < 65536,
               "%s: S = %lld, B = %lld, NH = %lld exceed the grid limits", what, (long long)S,
               (long long)B, (long long)NH);
    for (int i = 0; i < n_ptrs; i++)
        if ((uintptr_t)ptrs[i] % 16 != 0)
            return px_error_set(err, PX_ERR_INVALID, NULL, 0, 0,
                                "%s: tensor argument %d is not 16-byte aligned", what, i + 1);
    return PX_OK;
}

template <int HD>
static int fwd_smem(void) { return (ATT_BQ + 2 * ATT_BK) * (HD + 8) * (int)sizeof(bf16); }
template <int HD>
static int dq_smem(void) { return (2 * ATT_BQ + 2 * ATT_BK) * (HD + 8) * (int)sizeof(bf16); }
template <int HD>
static int dkdv_smem(void)
{
    return (2 * ATT_BK + 2 * ATT_BQ2) * (HD + 8) * (int)sizeof(bf16) +
           2 * ATT_BQ2 * (int)sizeof(float);
}

template <int HD, typename TS>
static px_status launch_fwd(TS *out, float *lse, const TS *qkv, int S, int B, int NH, int NKV,
                            cudaStream_t stream, px_error *err)
{
    const int smem = fwd_smem<HD>();
    PX_CUDA_TRY(err, cudaFuncSetAttribute(k_attn_fwd<HD, TS>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    dim3 grid((unsigned)((S + ATT_BQ - 1) / ATT_BQ), (unsigned)NH, (unsigned)B);
    const float scale_log2 = LOG2E / sqrtf((float)HD);
    k_attn_fwd<HD, TS><<<grid, ATT_THREADS, smem, stream>>>(out, lse, qkv, S, B, NH, NKV,
                                                             scale_log2);
    PX_CUDA_LAUNCH_TRY(err, "k_attn_fwd");
    return PX_OK;
}

template <int HD, typename TS>
static px_status launch_bwd(TS *dqkv, const TS *dout, const float *lse, const float *Dsum,
                            const TS *qkv, int S, int B, int NH, int NKV, cudaStream_t stream,
                            px_error *err)
{
    const float scale = 1.0f / sqrtf((float)HD), scale_log2 = LOG2E * scale;
    const int sdq = dq_smem<HD>(), skv = dkdv_smem<HD>();
    PX_CUDA_TRY(err, cudaFuncSetAttribute(k_attn_bwd_dq<HD, TS>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, sdq));
    PX_CUDA_TRY(err, cudaFuncSetAttribute(k_attn_bwd_dkdv<HD, TS>,
                                          cudaFuncAttributeMaxDynamicSharedMemorySize, skv));
    const unsigned tiles_q = (unsigned)((S + ATT_BQ - 1) / ATT_BQ);
    const unsigned tiles_k = (unsigned)((S + ATT_BK - 1) / ATT_BK);
    k_attn_bwd_dq<HD, TS><<<dim3(tiles_q, (unsigned)NH, (unsigned)B), ATT_THREADS, sdq, stream>>>(
        dqkv, dout, lse, Dsum, qkv, S, B, NH, NKV, scale_log2, scale);
    PX_CUDA_LAUNCH_TRY(err, "k_attn_bwd_dq");
    k_attn_bwd_dkdv<HD, TS>
        <<<dim3(tiles_k, (unsigned)NKV, (unsigned)B), ATT_THREADS, skv, stream>>>(
            dqkv, dout, lse, Dsum, qkv, S, B, NH, NKV, scale_log2, scale);
    PX_CUDA_LAUNCH_TRY(err, "k_attn_bwd_dkdv");
    return PX_OK;
}

template <typename TS>
static px_status attention_fwd(TS *out, float *lse, float *probs, const TS *qkv, int64_t S,
                               int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                               cudaStream_t stream, px_error *err)
{
    const void *ptrs[] = {out, qkv};
    PX_TRY(check_shape("attention_fwd", ptrs, 2, S, B, NH, NKV, HD, probs, err));
    if (S == 0 || B == 0)
        return PX_OK;
    const int s = (int)S, b = (int)B, nh = (int)NH, nkv = (int)NKV;
    switch (HD) {
    case 16: return launch_fwd<16, TS>(out, lse, qkv, s, b, nh, nkv, stream, err);
    case 32: return launch_fwd<32, TS>(out, lse, qkv, s, b, nh, nkv, stream, err);
    case 64: return launch_fwd<64, TS>(out, lse, qkv, s, b, nh, nkv, stream, err);
    default: return launch_fwd<128, TS>(out, lse, qkv, s, b, nh, nkv, stream, err);
    }
}

template <typename TS>
static px_status attention_bwd(TS *dqkv, const TS *dout, const TS *out, const float *lse,
                               const float *probs, const TS *qkv, int64_t S, int64_t B,
                               int64_t NH, int64_t NKV, int64_t HD, cudaStream_t stream,
                               px_error *err)
{
    const void *ptrs[] = {dqkv, dout, out, qkv};
    PX_TRY(check_shape("attention_bwd", ptrs, 4, S, B, NH, NKV, HD, probs, err));
    if (S == 0 || B == 0)
        return PX_OK;
    const int64_t rows = B * NH * S;
    float *Dsum = NULL;
    PX_CUDA_TRY(err, cudaMallocAsync((void **)&Dsum, (size_t)rows * sizeof(float), stream));
    const int per_block = 256 / 32;
    k_attn_bwd_dot<TS><<<(unsigned)((rows + per_block - 1) / per_block), 256, 0, stream>>>(
        Dsum, dout, out, (int)S, (int)B, (int)NH, (int)HD);
    px_status st = px_cuda_status(cudaGetLastError(), "launch of k_attn_bwd_dot", __FILE__,
                                  __LINE__, err);
    const int s = (int)S, b = (int)B, nh = (int)NH, nkv = (int)NKV;
    if (st == PX_OK) {
        if (HD == 16)
            st = launch_bwd<16, TS>(dqkv, dout, lse, Dsum, qkv, s, b, nh, nkv, stream, err);
        else if (HD == 32)
            st = launch_bwd<32, TS>(dqkv, dout, lse, Dsum, qkv, s, b, nh, nkv, stream, err);
        else if (HD == 64)
            st = launch_bwd<64, TS>(dqkv, dout, lse, Dsum, qkv, s, b, nh, nkv, stream, err);
        else
            st = launch_bwd<128, TS>(dqkv, dout, lse, Dsum, qkv, s, b, nh, nkv, stream, err);
    }
    cudaError_t e = cudaFreeAsync(Dsum, stream);
    if (st == PX_OK)
        st = px_cuda_status(e, "cudaFreeAsync(attention scratch)", __FILE__, __LINE__, err);
    return st;
}

/* ---- C entry points: bf16 storage (the twins) and fp32 storage (_f32) ---- */

extern "C" px_status px_cuda_attention_fwd(px_bf16 *out, float *lse, float *probs,
                                           const px_bf16 *qkv, int64_t S, int64_t B, int64_t NH,
                                           int64_t NKV, int64_t HD, cudaStream_t stream,
                                           px_error *err)
{
    return attention_fwd<bf16>(reinterpret_cast<bf16 *>(out), lse, probs,
                               reinterpret_cast<const bf16 *>(qkv), S, B, NH, NKV, HD, stream,
                               err);
}

extern "C" px_status px_cuda_attention_fwd_f32(float *out, float *lse, float *probs,
                                               const float *qkv, int64_t S, int64_t B,
                                               int64_t NH, int64_t NKV, int64_t HD,
                                               cudaStream_t stream, px_error *err)
{
    return attention_fwd<float>(out, lse, probs, qkv, S, B, NH, NKV, HD, stream, err);
}

extern "C" px_status px_cuda_attention_bwd(px_bf16 *dqkv, const px_bf16 *dout,
                                           const px_bf16 *out, const float *lse,
                                           const float *probs, const px_bf16 *qkv, int64_t S,
                                           int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                                           cudaStream_t stream, px_error *err)
{
    return attention_bwd<bf16>(reinterpret_cast<bf16 *>(dqkv),
                               reinterpret_cast<const bf16 *>(dout),
                               reinterpret_cast<const bf16 *>(out), lse, probs,
                               reinterpret_cast<const bf16 *>(qkv), S, B, NH, NKV, HD, stream,
                               err);
}

extern "C" px_status px_cuda_attention_bwd_f32(float *dqkv, const float *dout, const float *out,
                                               const float *lse, const float *probs,
                                               const float *qkv, int64_t S, int64_t B,
                                               int64_t NH, int64_t NKV, int64_t HD,
                                               cudaStream_t stream, px_error *err)
{
    return attention_bwd<float>(dqkv, dout, out, lse, probs, qkv, S, B, NH, NKV, HD, stream,
                                err);
}
#endif /* PX_CUDA_EMULATE */
