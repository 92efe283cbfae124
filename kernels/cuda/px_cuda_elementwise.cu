/* px_cuda_elementwise.cu — the memory-bound kernels of the CUDA backend:
 * casts, embedding and positions, bias and residual, RoPE, SwiGLU, GeLU and
 * AdamW.  Each is a grid-stride loop over independent elements (or a column
 * reduction for the bias gradient), computing in fp32 from bf16 storage with
 * the CPU twin's formula, so differences come only from bf16 rounding. */
#include <math.h>

#include "px_cuda_common.cuh"

#define THREADS 256

#define GRID_STRIDE(i, n)                                                                          \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* ---- casts and fill ---------------------------------------------------------- */

template <typename TS> static __global__ void k_cast_f32_bf16(TS *out, const float *inp, int64_t n)
{
    GRID_STRIDE(i, n) stv(out, i, inp[i]);
}

template <typename TS> static __global__ void k_cast_bf16_f32(float *out, const TS *inp, int64_t n)
{
    GRID_STRIDE(i, n) out[i] = ldv(inp, i);
}

static __global__ void k_fill_f32(float *buf, float value, int64_t n)
{
    GRID_STRIDE(i, n) buf[i] = value;
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status cast_f32_to_bf16_impl(TS *out, const float *inp, int64_t n, cudaStream_t stream,
                                       px_error *err)
{
    PX_REQUIRE(err, n >= 0, "cast: n = %lld must be >= 0", (long long)n);
    if (n == 0)
        return PX_OK;
    k_cast_f32_bf16<TS><<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(out, inp, n);
    PX_CUDA_LAUNCH_TRY(err, "k_cast_f32_bf16");
    return PX_OK;
}

template <typename TS>
static px_status cast_bf16_to_f32_impl(float *out, const TS *inp, int64_t n, cudaStream_t stream,
                                       px_error *err)
{
    PX_REQUIRE(err, n >= 0, "cast: n = %lld must be >= 0", (long long)n);
    if (n == 0)
        return PX_OK;
    k_cast_bf16_f32<TS><<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(out, inp, n);
    PX_CUDA_LAUNCH_TRY(err, "k_cast_bf16_f32");
    return PX_OK;
}

template <typename TS>
static px_status fill_f32_impl(float *buf, float value, int64_t n, cudaStream_t stream,
                               px_error *err)
{
    PX_REQUIRE(err, n >= 0, "fill: n = %lld must be >= 0", (long long)n);
    if (n == 0)
        return PX_OK;
    k_fill_f32<<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(buf, value, n);
    PX_CUDA_LAUNCH_TRY(err, "k_fill_f32");
    return PX_OK;
}
#endif

/* ---- embedding ---------------------------------------------------------------- */

template <typename TS>
static __global__ void k_embedding_fwd(TS *out, const int32_t *tokens, const TS *table, int64_t T,
                                       int64_t C, int64_t v0, int64_t v1)
{
    GRID_STRIDE(i, T * C)
    {
        int64_t t = i / C, c = i - t * C;
        int64_t id = tokens[t];
        if (id >= v0 && id < v1)
            out[i] = table[(id - v0) * C + c]; /* a copy: exact in either storage */
        else
            stv(out, i, 0.0f);
    }
}

/* Rows of repeated tokens collide: fp32 atomics (order-dependent rounding,
 * well inside the test tolerance). */
template <typename TS>
static __global__ void k_embedding_bwd(float *dtable, const TS *dout, const int32_t *tokens,
                                       int64_t T, int64_t C, int64_t v0, int64_t v1)
{
    GRID_STRIDE(i, T * C)
    {
        int64_t t = i / C, c = i - t * C;
        int64_t id = tokens[t];
        if (id >= v0 && id < v1)
            atomicAdd(&dtable[(id - v0) * C + c], ldv(dout, i));
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status embedding_fwd_impl(TS *out, const int32_t *tokens, const TS *table, int64_t T,
                                    int64_t C, int64_t v0, int64_t v1, cudaStream_t stream,
                                    px_error *err)
{
    PX_REQUIRE(err, T >= 0 && C > 0 && v0 >= 0 && v1 >= v0,
               "embedding: T = %lld, C = %lld, rows [%lld, %lld): need T >= 0, C > 0, "
               "0 <= v0 <= v1",
               (long long)T, (long long)C, (long long)v0, (long long)v1);
    if (T == 0)
        return PX_OK;
    k_embedding_fwd<TS>
        <<<px_grid_1d(T * C, THREADS), THREADS, 0, stream>>>(out, tokens, table, T, C, v0, v1);
    PX_CUDA_LAUNCH_TRY(err, "k_embedding_fwd");
    return PX_OK;
}

template <typename TS>
static px_status embedding_bwd_impl(float *dtable, const TS *dout, const int32_t *tokens, int64_t T,
                                    int64_t C, int64_t v0, int64_t v1, cudaStream_t stream,
                                    px_error *err)
{
    PX_REQUIRE(err, T >= 0 && C > 0 && v0 >= 0 && v1 >= v0,
               "embedding: T = %lld, C = %lld, rows [%lld, %lld)", (long long)T, (long long)C,
               (long long)v0, (long long)v1);
    if (T == 0)
        return PX_OK;
    k_embedding_bwd<TS>
        <<<px_grid_1d(T * C, THREADS), THREADS, 0, stream>>>(dtable, dout, tokens, T, C, v0, v1);
    PX_CUDA_LAUNCH_TRY(err, "k_embedding_bwd");
    return PX_OK;
}
#endif

/* ---- learned positions ------------------------------------------------------------ */

template <typename TS>
static __global__ void k_positions_fwd(TS *x, const TS *pos, int64_t S, int64_t B, int64_t C,
                                       int64_t pos0)
{
    GRID_STRIDE(i, S * B * C)
    {
        int64_t s = i / (B * C), c = i % C;
        stv(x, i, ldv(x, i) + ldv(pos, (pos0 + s) * C + c));
    }
}

/* One thread per (s, c) sums the B rows: no two threads share an output. */
template <typename TS>
static __global__ void k_positions_bwd(float *dpos, const TS *dout, int64_t S, int64_t B, int64_t C,
                                       int64_t pos0)
{
    GRID_STRIDE(i, S * C)
    {
        int64_t s = i / C, c = i - s * C;
        float acc = 0.0f;
        for (int64_t b = 0; b < B; b++)
            acc += ldv(dout, (s * B + b) * C + c);
        dpos[(pos0 + s) * C + c] += acc;
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status positions_fwd_impl(TS *x, const TS *pos, int64_t S, int64_t B, int64_t C,
                                    int64_t pos0, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, S >= 0 && B >= 0 && C > 0 && pos0 >= 0,
               "positions: S = %lld, B = %lld, C = %lld, pos0 = %lld", (long long)S, (long long)B,
               (long long)C, (long long)pos0);
    if (S * B == 0)
        return PX_OK;
    k_positions_fwd<TS>
        <<<px_grid_1d(S * B * C, THREADS), THREADS, 0, stream>>>(x, pos, S, B, C, pos0);
    PX_CUDA_LAUNCH_TRY(err, "k_positions_fwd");
    return PX_OK;
}

template <typename TS>
static px_status positions_bwd_impl(float *dpos, const TS *dout, int64_t S, int64_t B, int64_t C,
                                    int64_t pos0, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, S >= 0 && B >= 0 && C > 0 && pos0 >= 0,
               "positions: S = %lld, B = %lld, C = %lld, pos0 = %lld", (long long)S, (long long)B,
               (long long)C, (long long)pos0);
    if (S * B == 0)
        return PX_OK;
    k_positions_bwd<TS>
        <<<px_grid_1d(S * C, THREADS), THREADS, 0, stream>>>(dpos, dout, S, B, C, pos0);
    PX_CUDA_LAUNCH_TRY(err, "k_positions_bwd");
    return PX_OK;
}
#endif

/* ---- bias and residual -------------------------------------------------------------- */

template <typename TS>
static __global__ void k_bias_add_fwd(TS *x, const TS *bias, int64_t T, int64_t N)
{
    GRID_STRIDE(i, T * N) stv(x, i, ldv(x, i) + ldv(bias, i % N));
}

/* Column sums: a 32 x 8 block covers 32 columns; its 8 rows of threads walk
 * the row range of this blockIdx.y slice, then reduce through shared memory
 * and add one partial per column (fp32 atomics across the y slices). */
template <typename TS>
static __global__ void k_bias_add_bwd(float *dbias, const TS *dout, int64_t T, int64_t N,
                                      int64_t rows_per_slice)
{
    __shared__ float part[8][33];
    int64_t col = (int64_t)blockIdx.x * 32 + threadIdx.x;
    int64_t r0 = (int64_t)blockIdx.y * rows_per_slice;
    int64_t r1 = r0 + rows_per_slice < T ? r0 + rows_per_slice : T;
    float acc = 0.0f;
    if (col < N)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8)
            acc += ldv(dout, r * N + col);
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && col < N) {
        float s = 0.0f;
        for (int y = 0; y < 8; y++)
            s += part[y][threadIdx.x];
        atomicAdd(&dbias[col], s);
    }
}

template <typename TS>
static __global__ void k_residual_fwd(TS *out, const TS *a, const TS *b, int64_t n)
{
    GRID_STRIDE(i, n) stv(out, i, ldv(a, i) + ldv(b, i));
}

template <typename TS>
static __global__ void k_residual_bwd(TS *da, TS *db, const TS *dout, int64_t n)
{
    GRID_STRIDE(i, n)
    {
        float g = ldv(dout, i);
        if (da)
            stv(da, i, ldv(da, i) + g);
        if (db)
            stv(db, i, ldv(db, i) + g);
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status bias_add_fwd_impl(TS *x, const TS *bias, int64_t T, int64_t N, cudaStream_t stream,
                                   px_error *err)
{
    PX_REQUIRE(err, T >= 0 && N > 0, "bias_add: T = %lld, N = %lld", (long long)T, (long long)N);
    if (T == 0)
        return PX_OK;
    k_bias_add_fwd<TS><<<px_grid_1d(T * N, THREADS), THREADS, 0, stream>>>(x, bias, T, N);
    PX_CUDA_LAUNCH_TRY(err, "k_bias_add_fwd");
    return PX_OK;
}

template <typename TS>
static px_status bias_add_bwd_impl(float *dbias, const TS *dout, int64_t T, int64_t N,
                                   cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && N > 0, "bias_add: T = %lld, N = %lld", (long long)T, (long long)N);
    if (T == 0)
        return PX_OK;
    /* Enough y slices to keep the device busy when N is small, each at least
     * 256 rows long so the atomics stay few. */
    int64_t slices = (T + 255) / 256;
    int64_t col_blocks = (N + 31) / 32;
    if (slices * col_blocks > 4096)
        slices = 4096 / col_blocks > 1 ? 4096 / col_blocks : 1;
    if (slices > 65535)
        slices = 65535;
    int64_t rows = (T + slices - 1) / slices;
    dim3 grid((unsigned)col_blocks, (unsigned)slices), block(32, 8);
    k_bias_add_bwd<TS><<<grid, block, 0, stream>>>(dbias, dout, T, N, rows);
    PX_CUDA_LAUNCH_TRY(err, "k_bias_add_bwd");
    return PX_OK;
}

template <typename TS>
static px_status residual_fwd_impl(TS *out, const TS *a, const TS *b, int64_t n,
                                   cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, n >= 0, "residual: n = %lld", (long long)n);
    if (n == 0)
        return PX_OK;
    k_residual_fwd<TS><<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(out, a, b, n);
    PX_CUDA_LAUNCH_TRY(err, "k_residual_fwd");
    return PX_OK;
}

template <typename TS>
static px_status residual_bwd_impl(TS *da, TS *db, const TS *dout, int64_t n, cudaStream_t stream,
                                   px_error *err)
{
    PX_REQUIRE(err, n >= 0, "residual: n = %lld", (long long)n);
    if (n == 0 || (!da && !db))
        return PX_OK;
    k_residual_bwd<TS><<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(da, db, dout, n);
    PX_CUDA_LAUNCH_TRY(err, "k_residual_bwd");
    return PX_OK;
}
#endif

/* ---- RoPE ----------------------------------------------------------------------------
 * One thread per rotated pair of one q or k head of one token; the pairs and
 * frequencies of px_rope.h (passed by value).  The angle is computed in
 * double, as the CPU twin does, so long positions (s ~ 8k, angle ~ 8e3 rad)
 * keep their low bits. */
template <typename TS>
static __global__ void k_rope(TS *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                              int64_t pos0, px_rope rope, float dir)
{
    int64_t half = HD / 2, heads = NH + NKV, row = (NH + 2 * NKV) * HD;
    GRID_STRIDE(idx, S * B * heads * half)
    {
        int64_t i = idx % half;
        int64_t h = (idx / half) % heads;
        int64_t tok = idx / (half * heads); /* = s * B + b */
        int64_t s = tok / B;
        double a = (double)(pos0 + s) * px_rope_inv_freq(&rope, i, HD);
        float c = (float)cos(a), sn = dir * (float)sin(a);
        int64_t base = tok * row + h * HD, i0, i1;
        px_rope_pair(&rope, i, HD, &i0, &i1);
        float x0 = ldv(qkv, base + i0), x1 = ldv(qkv, base + i1);
        stv(qkv, base + i0, x0 * c - x1 * sn);
        stv(qkv, base + i1, x0 * sn + x1 * c);
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status rope(TS *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                      int64_t pos0, const px_rope *r, float dir, cudaStream_t stream,
                      px_error *err)
{
    PX_REQUIRE(err, S >= 0 && B >= 0 && NH > 0 && NKV >= 0 && HD > 0 && HD % 2 == 0 &&
                        pos0 >= 0 && r,
               "rope: S = %lld, B = %lld, NH = %lld, NKV = %lld, HD = %lld (even), pos0 = %lld",
               (long long)S, (long long)B, (long long)NH, (long long)NKV, (long long)HD,
               (long long)pos0);
    int64_t n = S * B * (NH + NKV) * (HD / 2);
    if (n == 0)
        return PX_OK;
    k_rope<TS>
        <<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(qkv, S, B, NH, NKV, HD, pos0, *r, dir);
    PX_CUDA_LAUNCH_TRY(err, "k_rope");
    return PX_OK;
}

template <typename TS>
static px_status rope_fwd_impl(TS *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                               int64_t pos0, const px_rope *r, cudaStream_t stream,
                               px_error *err)
{
    return rope(qkv, S, B, NH, NKV, HD, pos0, r, 1.0f, stream, err);
}

template <typename TS>
static px_status rope_bwd_impl(TS *dqkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                               int64_t pos0, const px_rope *r, cudaStream_t stream,
                               px_error *err)
{
    /* The rotation is orthogonal: its transpose rotates by -angle. */
    return rope(dqkv, S, B, NH, NKV, HD, pos0, r, -1.0f, stream, err);
}
#endif

/* ---- SwiGLU and GeLU ------------------------------------------------------------------ */

template <typename TS>
static __global__ void k_swiglu_fwd(TS *out, const TS *gate_up, int64_t T, int64_t F)
{
    GRID_STRIDE(i, T * F)
    {
        int64_t t = i / F, f = i - t * F;
        float g = ldv(gate_up, t * 2 * F + f), u = ldv(gate_up, t * 2 * F + F + f);
        float sig = 1.0f / (1.0f + expf(-g));
        stv(out, i, g * sig * u);
    }
}

template <typename TS>
static __global__ void k_swiglu_bwd(TS *dgate_up, const TS *dout, const TS *gate_up, int64_t T,
                                    int64_t F)
{
    GRID_STRIDE(i, T * F)
    {
        int64_t t = i / F, f = i - t * F;
        int64_t ig = t * 2 * F + f, iu = ig + F;
        float g = ldv(gate_up, ig), u = ldv(gate_up, iu), d = ldv(dout, i);
        float sig = 1.0f / (1.0f + expf(-g));
        /* gate_up and dgate_up may be the same buffer: both inputs are read above. */
        stv(dgate_up, iu, d * g * sig);
        stv(dgate_up, ig, d * u * sig * (1.0f + g * (1.0f - sig)));
    }
}

#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */

template <typename TS> static __global__ void k_gelu_fwd(TS *out, const TS *inp, int64_t n)
{
    GRID_STRIDE(i, n)
    {
        float x = ldv(inp, i);
        stv(out, i, 0.5f * x * (1.0f + tanhf(GELU_K * (x + 0.044715f * x * x * x))));
    }
}

template <typename TS>
static __global__ void k_gelu_bwd(TS *dinp, const TS *dout, const TS *inp, int64_t n)
{
    GRID_STRIDE(i, n)
    {
        float x = ldv(inp, i);
        float th = tanhf(GELU_K * (x + 0.044715f * x * x * x));
        float du = GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
        stv(dinp, i, ldv(dout, i) * grad); /* dinp may alias dout: same element */
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status swiglu_fwd_impl(TS *out, const TS *gate_up, int64_t T, int64_t F,
                                 cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && F > 0, "swiglu: T = %lld, F = %lld", (long long)T, (long long)F);
    if (T == 0)
        return PX_OK;
    k_swiglu_fwd<TS><<<px_grid_1d(T * F, THREADS), THREADS, 0, stream>>>(out, gate_up, T, F);
    PX_CUDA_LAUNCH_TRY(err, "k_swiglu_fwd");
    return PX_OK;
}

template <typename TS>
static px_status swiglu_bwd_impl(TS *dgate_up, const TS *dout, const TS *gate_up, int64_t T,
                                 int64_t F, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, T >= 0 && F > 0, "swiglu: T = %lld, F = %lld", (long long)T, (long long)F);
    if (T == 0)
        return PX_OK;
    k_swiglu_bwd<TS>
        <<<px_grid_1d(T * F, THREADS), THREADS, 0, stream>>>(dgate_up, dout, gate_up, T, F);
    PX_CUDA_LAUNCH_TRY(err, "k_swiglu_bwd");
    return PX_OK;
}

template <typename TS>
static px_status gelu_fwd_impl(TS *out, const TS *inp, int64_t n, cudaStream_t stream,
                               px_error *err)
{
    PX_REQUIRE(err, n >= 0, "gelu: n = %lld", (long long)n);
    if (n == 0)
        return PX_OK;
    k_gelu_fwd<TS><<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(out, inp, n);
    PX_CUDA_LAUNCH_TRY(err, "k_gelu_fwd");
    return PX_OK;
}

template <typename TS>
static px_status gelu_bwd_impl(TS *dinp, const TS *dout, const TS *inp, int64_t n,
                               cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, n >= 0, "gelu: n = %lld", (long long)n);
    if (n == 0)
        return PX_OK;
    k_gelu_bwd<TS><<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(dinp, dout, inp, n);
    PX_CUDA_LAUNCH_TRY(err, "k_gelu_bwd");
    return PX_OK;
}
#endif

/* ---- AdamW ------------------------------------------------------------------------------ */

static __global__ void k_adamw(float *param, const float *grad, float *m, float *v, int64_t n,
                               float lr, float beta1, float beta2, float eps, float wd, float c1,
                               float c2, bf16 *param_bf16)
{
    GRID_STRIDE(i, n)
    {
        float g = grad[i];
        float mi = beta1 * m[i] + (1.0f - beta1) * g;
        float vi = beta2 * v[i] + (1.0f - beta2) * g * g;
        m[i] = mi;
        v[i] = vi;
        float p = param[i];
        p -= lr * ((mi / c1) / (sqrtf(vi / c2) + eps) + wd * p);
        param[i] = p;
        if (param_bf16)
            stv(param_bf16, i, p);
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
template <typename TS>
static px_status adamw_step_impl(float *param, const float *grad, float *m, float *v, int64_t n,
                                 float lr, float beta1, float beta2, float eps, float weight_decay,
                                 int64_t step, bf16 *param_bf16, cudaStream_t stream, px_error *err)
{
    PX_REQUIRE(err, n >= 0 && step >= 1, "adamw: n = %lld (>= 0), step = %lld (1-based)",
               (long long)n, (long long)step);
    if (n == 0)
        return PX_OK;
    /* Bias corrections on the host, in float as the CPU twin computes them. */
    float c1 = 1.0f - powf(beta1, (float)step), c2 = 1.0f - powf(beta2, (float)step);
    k_adamw<<<px_grid_1d(n, THREADS), THREADS, 0, stream>>>(param, grad, m, v, n, lr, beta1, beta2,
                                                            eps, weight_decay, c1, c2, param_bf16);
    PX_CUDA_LAUNCH_TRY(err, "k_adamw");
    return PX_OK;
}
#endif

/* ---- C entry points: bf16 storage (the twins) and fp32 storage (_f32) ---- */

#ifndef PX_CUDA_EMULATE /* launchers: host code */
extern "C" px_status px_cuda_cast_f32_to_bf16(px_bf16 *out, const float *inp, int64_t n,
                                              cudaStream_t stream, px_error *err)
{
    return cast_f32_to_bf16_impl<bf16>(reinterpret_cast<bf16 *>(out), inp, n, stream, err);
}

extern "C" px_status px_cuda_cast_bf16_to_f32(float *out, const px_bf16 *inp, int64_t n,
                                              cudaStream_t stream, px_error *err)
{
    return cast_bf16_to_f32_impl<bf16>(out, reinterpret_cast<const bf16 *>(inp), n, stream, err);
}

extern "C" px_status px_cuda_fill_f32(float *buf, float value, int64_t n, cudaStream_t stream,
                                      px_error *err)
{
    return fill_f32_impl<bf16>(buf, value, n, stream, err);
}

extern "C" px_status px_cuda_embedding_fwd(px_bf16 *out, const int32_t *tokens,
                                           const px_bf16 *table, int64_t T, int64_t C, int64_t v0,
                                           int64_t v1, cudaStream_t stream, px_error *err)
{
    return embedding_fwd_impl<bf16>(reinterpret_cast<bf16 *>(out), tokens,
                                    reinterpret_cast<const bf16 *>(table), T, C, v0, v1, stream,
                                    err);
}

extern "C" px_status px_cuda_embedding_fwd_f32(float *out, const int32_t *tokens,
                                               const float *table, int64_t T, int64_t C, int64_t v0,
                                               int64_t v1, cudaStream_t stream, px_error *err)
{
    return embedding_fwd_impl<float>(out, tokens, table, T, C, v0, v1, stream, err);
}

extern "C" px_status px_cuda_embedding_bwd(float *dtable, const px_bf16 *dout,
                                           const int32_t *tokens, int64_t T, int64_t C, int64_t v0,
                                           int64_t v1, cudaStream_t stream, px_error *err)
{
    return embedding_bwd_impl<bf16>(dtable, reinterpret_cast<const bf16 *>(dout), tokens, T, C, v0,
                                    v1, stream, err);
}

extern "C" px_status px_cuda_embedding_bwd_f32(float *dtable, const float *dout,
                                               const int32_t *tokens, int64_t T, int64_t C,
                                               int64_t v0, int64_t v1, cudaStream_t stream,
                                               px_error *err)
{
    return embedding_bwd_impl<float>(dtable, dout, tokens, T, C, v0, v1, stream, err);
}

extern "C" px_status px_cuda_positions_fwd(px_bf16 *x, const px_bf16 *pos, int64_t S, int64_t B,
                                           int64_t C, int64_t pos0, cudaStream_t stream,
                                           px_error *err)
{
    return positions_fwd_impl<bf16>(reinterpret_cast<bf16 *>(x),
                                    reinterpret_cast<const bf16 *>(pos), S, B, C, pos0, stream,
                                    err);
}

extern "C" px_status px_cuda_positions_fwd_f32(float *x, const float *pos, int64_t S, int64_t B,
                                               int64_t C, int64_t pos0, cudaStream_t stream,
                                               px_error *err)
{
    return positions_fwd_impl<float>(x, pos, S, B, C, pos0, stream, err);
}

extern "C" px_status px_cuda_positions_bwd(float *dpos, const px_bf16 *dout, int64_t S, int64_t B,
                                           int64_t C, int64_t pos0, cudaStream_t stream,
                                           px_error *err)
{
    return positions_bwd_impl<bf16>(dpos, reinterpret_cast<const bf16 *>(dout), S, B, C, pos0,
                                    stream, err);
}

extern "C" px_status px_cuda_positions_bwd_f32(float *dpos, const float *dout, int64_t S, int64_t B,
                                               int64_t C, int64_t pos0, cudaStream_t stream,
                                               px_error *err)
{
    return positions_bwd_impl<float>(dpos, dout, S, B, C, pos0, stream, err);
}

extern "C" px_status px_cuda_bias_add_fwd(px_bf16 *x, const px_bf16 *bias, int64_t T, int64_t N,
                                          cudaStream_t stream, px_error *err)
{
    return bias_add_fwd_impl<bf16>(reinterpret_cast<bf16 *>(x),
                                   reinterpret_cast<const bf16 *>(bias), T, N, stream, err);
}

extern "C" px_status px_cuda_bias_add_fwd_f32(float *x, const float *bias, int64_t T, int64_t N,
                                              cudaStream_t stream, px_error *err)
{
    return bias_add_fwd_impl<float>(x, bias, T, N, stream, err);
}

extern "C" px_status px_cuda_bias_add_bwd(float *dbias, const px_bf16 *dout, int64_t T, int64_t N,
                                          cudaStream_t stream, px_error *err)
{
    return bias_add_bwd_impl<bf16>(dbias, reinterpret_cast<const bf16 *>(dout), T, N, stream, err);
}

extern "C" px_status px_cuda_bias_add_bwd_f32(float *dbias, const float *dout, int64_t T, int64_t N,
                                              cudaStream_t stream, px_error *err)
{
    return bias_add_bwd_impl<float>(dbias, dout, T, N, stream, err);
}

extern "C" px_status px_cuda_residual_fwd(px_bf16 *out, const px_bf16 *a, const px_bf16 *b,
                                          int64_t n, cudaStream_t stream, px_error *err)
{
    return residual_fwd_impl<bf16>(reinterpret_cast<bf16 *>(out), reinterpret_cast<const bf16 *>(a),
                                   reinterpret_cast<const bf16 *>(b), n, stream, err);
}

extern "C" px_status px_cuda_residual_fwd_f32(float *out, const float *a, const float *b, int64_t n,
                                              cudaStream_t stream, px_error *err)
{
    return residual_fwd_impl<float>(out, a, b, n, stream, err);
}

extern "C" px_status px_cuda_residual_bwd(px_bf16 *da, px_bf16 *db, const px_bf16 *dout, int64_t n,
                                          cudaStream_t stream, px_error *err)
{
    return residual_bwd_impl<bf16>(reinterpret_cast<bf16 *>(da), reinterpret_cast<bf16 *>(db),
                                   reinterpret_cast<const bf16 *>(dout), n, stream, err);
}

extern "C" px_status px_cuda_residual_bwd_f32(float *da, float *db, const float *dout, int64_t n,
                                              cudaStream_t stream, px_error *err)
{
    return residual_bwd_impl<float>(da, db, dout, n, stream, err);
}

extern "C" px_status px_cuda_rope_fwd(px_bf16 *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                                      int64_t HD, int64_t pos0, const px_rope *rope, cudaStream_t stream,
                                      px_error *err)
{
    return rope_fwd_impl<bf16>(reinterpret_cast<bf16 *>(qkv), S, B, NH, NKV, HD, pos0, rope,
                               stream, err);
}

extern "C" px_status px_cuda_rope_fwd_f32(float *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                                          int64_t HD, int64_t pos0, const px_rope *rope,
                                          cudaStream_t stream, px_error *err)
{
    return rope_fwd_impl<float>(qkv, S, B, NH, NKV, HD, pos0, rope, stream, err);
}

extern "C" px_status px_cuda_rope_bwd(px_bf16 *dqkv, int64_t S, int64_t B, int64_t NH, int64_t NKV,
                                      int64_t HD, int64_t pos0, const px_rope *rope, cudaStream_t stream,
                                      px_error *err)
{
    return rope_bwd_impl<bf16>(reinterpret_cast<bf16 *>(dqkv), S, B, NH, NKV, HD, pos0, rope,
                               stream, err);
}

extern "C" px_status px_cuda_rope_bwd_f32(float *dqkv, int64_t S, int64_t B, int64_t NH,
                                          int64_t NKV, int64_t HD, int64_t pos0, const px_rope *rope,
                                          cudaStream_t stream, px_error *err)
{
    return rope_bwd_impl<float>(dqkv, S, B, NH, NKV, HD, pos0, rope, stream, err);
}

extern "C" px_status px_cuda_swiglu_fwd(px_bf16 *out, const px_bf16 *gate_up, int64_t T, int64_t F,
                                        cudaStream_t stream, px_error *err)
{
    return swiglu_fwd_impl<bf16>(reinterpret_cast<bf16 *>(out),
                                 reinterpret_cast<const bf16 *>(gate_up), T, F, stream, err);
}

extern "C" px_status px_cuda_swiglu_fwd_f32(float *out, const float *gate_up, int64_t T, int64_t F,
                                            cudaStream_t stream, px_error *err)
{
    return swiglu_fwd_impl<float>(out, gate_up, T, F, stream, err);
}

extern "C" px_status px_cuda_swiglu_bwd(px_bf16 *dgate_up, const px_bf16 *dout,
                                        const px_bf16 *gate_up, int64_t T, int64_t F,
                                        cudaStream_t stream, px_error *err)
{
    return swiglu_bwd_impl<bf16>(reinterpret_cast<bf16 *>(dgate_up),
                                 reinterpret_cast<const bf16 *>(dout),
                                 reinterpret_cast<const bf16 *>(gate_up), T, F, stream, err);
}

extern "C" px_status px_cuda_swiglu_bwd_f32(float *dgate_up, const float *dout,
                                            const float *gate_up, int64_t T, int64_t F,
                                            cudaStream_t stream, px_error *err)
{
    return swiglu_bwd_impl<float>(dgate_up, dout, gate_up, T, F, stream, err);
}

extern "C" px_status px_cuda_gelu_fwd(px_bf16 *out, const px_bf16 *inp, int64_t n,
                                      cudaStream_t stream, px_error *err)
{
    return gelu_fwd_impl<bf16>(reinterpret_cast<bf16 *>(out), reinterpret_cast<const bf16 *>(inp),
                               n, stream, err);
}

extern "C" px_status px_cuda_gelu_fwd_f32(float *out, const float *inp, int64_t n,
                                          cudaStream_t stream, px_error *err)
{
    return gelu_fwd_impl<float>(out, inp, n, stream, err);
}

extern "C" px_status px_cuda_gelu_bwd(px_bf16 *dinp, const px_bf16 *dout, const px_bf16 *inp,
                                      int64_t n, cudaStream_t stream, px_error *err)
{
    return gelu_bwd_impl<bf16>(reinterpret_cast<bf16 *>(dinp), reinterpret_cast<const bf16 *>(dout),
                               reinterpret_cast<const bf16 *>(inp), n, stream, err);
}

extern "C" px_status px_cuda_gelu_bwd_f32(float *dinp, const float *dout, const float *inp,
                                          int64_t n, cudaStream_t stream, px_error *err)
{
    return gelu_bwd_impl<float>(dinp, dout, inp, n, stream, err);
}

extern "C" px_status px_cuda_adamw_step(float *param, const float *grad, float *m, float *v,
                                        int64_t n, float lr, float beta1, float beta2, float eps,
                                        float weight_decay, int64_t step, px_bf16 *param_bf16,
                                        cudaStream_t stream, px_error *err)
{
    return adamw_step_impl<bf16>(param, grad, m, v, n, lr, beta1, beta2, eps, weight_decay, step,
                                 reinterpret_cast<bf16 *>(param_bf16), stream, err);
}
#endif
