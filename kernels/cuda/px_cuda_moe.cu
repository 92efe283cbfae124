/* px_cuda_moe.cu — the mixture-of-experts kernels of the CUDA backend: the
 * router (softmax over E, top-k by repeated arg-max) and its backward, the
 * dispatch permutation, the combine (unpermute) and the gate gradient.  The
 * semantics are the CPU twins' (kernels/cpu/px_kernels_cpu.h); the choices
 * specific to the GPU are explained at each kernel.
 *
 * Router statistics (probs, gates and their gradient) are fp32 in both
 * storage forms, like the norms' statistics: a gate scales a whole expert
 * output row, and a bf16 gate would put a 2^-9 relative error on every row
 * it scales.  Logits, their gradient and the token rows use the storage type. */
#include <math.h>

#include "px_cuda_common.cuh"

/* A warp per token (router) or per dispatched row (gate gradient), four warps
 * to a block: E is 8-256 in the presets, too few columns for a whole block,
 * and a warp reduces with shuffles alone, without __syncthreads. */
#define MOE_WARPS 4
#define MOE_THREADS (32 * MOE_WARPS)
/* A block per dispatched row for the row copies (C = the hidden size,
 * thousands of columns). */
#define MOE_ROW_THREADS 256

#define MOE_GRID_STRIDE(i, n)                                                                      \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);                      \
         i += (int64_t)gridDim.x * blockDim.x)

/* ---- router forward ----------------------------------------------------------------
 * Softmax in fp32 with warp reductions (max, then the sum of exp), written to
 * probs; then k passes of arg-max over the experts not taken yet.  Each lane
 * scans its experts in ascending order with a strict '>', so a lane's
 * candidate is its lowest-index maximum; across lanes the maximum p is found
 * first and then the lowest index holding it — the CPU's tie rule (p
 * descending, ties to the lower index) exactly, since equal logits give
 * bit-equal p on both sides.  The index travels through a float max
 * (exact for E <= 2^24, which the launcher checks). */
template <typename TS>
static __global__ void k_moe_router_fwd(float *probs, int32_t *idx, float *gate, const TS *logits,
                                        int64_t T, int64_t E, int k, px_router r)
{
    const int lane = (int)(threadIdx.x & 31);
    const int64_t warps = (int64_t)(blockDim.x >> 5);
    /* t is the same for the 32 lanes of a warp: the shuffles below see a full warp. */
    for (int64_t t = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); t < T;
         t += (int64_t)gridDim.x * warps) {
        const TS *l = logits + t * E;
        float *p = probs + t * E;
        if (r.score == PX_ROUTER_SIGMOID) {
            for (int64_t e = lane; e < E; e += 32)
                p[e] = 1.0f / (1.0f + expf(-ldv(l, e)));
        } else {
            float mx = -INFINITY;
            for (int64_t e = lane; e < E; e += 32)
                mx = fmaxf(mx, ldv(l, e));
            mx = warp_max(mx);
            float s = 0.0f;
            for (int64_t e = lane; e < E; e += 32) {
                float v = expf(ldv(l, e) - mx);
                p[e] = v;
                s += v;
            }
            s = warp_sum(s);
            for (int64_t e = lane; e < E; e += 32) /* a lane rereads only what it wrote */
                p[e] = p[e] / s;
        }
        int chosen[PX_MOE_MAX_K];
        float picked[PX_MOE_MAX_K];
        double sum = 0.0;
        for (int j = 0; j < k; j++) {
            float best = -1.0f; /* below every probability */
            int best_e = -1;
            for (int64_t e = lane; e < E; e += 32) {
                bool taken = false;
                for (int i = 0; i < j; i++)
                    taken = taken || chosen[i] == (int)e;
                float v = p[e];
                if (!taken && v > best) {
                    best = v;
                    best_e = (int)e;
                }
            }
            float m = warp_max(best);
            float cand = (best_e >= 0 && best == m) ? (float)best_e : INFINITY;
            float low = -warp_max(-cand); /* the lowest index holding m */
            /* No candidate anywhere (NaN probabilities): -1, which the host's
             * routing check reports, rather than INF converted to an int. */
            int e_star = isinf(low) ? -1 : (int)low;
            chosen[j] = e_star;
            picked[j] = e_star >= 0 ? m : NAN;
            sum += picked[j];
            if (lane == 0)
                idx[t * k + j] = (int32_t)e_star;
        }
        /* renormalised (norm_topk_prob) and scaled, as the CPU twin */
        if (lane == 0)
            for (int j = 0; j < k; j++)
                gate[t * k + j] =
                    (float)((r.renorm ? picked[j] / sum : (double)picked[j]) * r.scale);
    }
}

/* ---- router backward: element-wise over [T, E] ----------------------------------
 * dp is non-zero only at the k chosen experts, so sum_e p dp is a k-term sum
 * that every element recomputes from cached loads instead of a reduction. */
template <typename TS>
static __global__ void k_moe_router_bwd(TS *dlogits, const float *probs, const int32_t *idx,
                                        const float *dgate, int64_t T, int64_t E, int k,
                                        px_router r)
{
    MOE_GRID_STRIDE(i, T * E)
    {
        int64_t t = i / E, e = i - t * E;
        const int32_t *it = idx + t * k;
        const float *dg = dgate + t * k;
        /* the chosen scores' gradient ds_j = scale (dg_j - sum_i dg_i p_i / S) / S
         * with renorm (S: their sum), scale dg_j without (the CPU twin's) */
        double S = 0.0, dot = 0.0;
        for (int j = 0; j < k; j++) {
            S += probs[t * E + it[j]];
            dot += (double)dg[j] * probs[t * E + it[j]];
        }
        double sub = r.renorm ? dot / S : 0.0, div = r.renorm ? S : 1.0;
        double pe = probs[i], d = 0.0;
        if (r.score == PX_ROUTER_SIGMOID) {
            for (int j = 0; j < k; j++)
                if (it[j] == (int32_t)e)
                    d = r.scale * (dg[j] - sub) / div * pe * (1.0 - pe);
        } else {
            double s = 0.0;
            for (int j = 0; j < k; j++)
                s += probs[t * E + it[j]] * (r.scale * (dg[j] - sub) / div);
            d = -pe * s;
            for (int j = 0; j < k; j++)
                if (it[j] == (int32_t)e)
                    d += pe * (r.scale * (dg[j] - sub) / div);
        }
        stv(dlogits, i, (float)d);
    }
}

/* ---- dispatch: out[a] = x[rows[a]] (times gate[slots[a]]) -------------------------- */
template <typename TS>
static __global__ void k_moe_permute(TS *out, const TS *x, const int32_t *rows, const float *gate,
                                     const int32_t *slots, int64_t n, int64_t C)
{
    for (int64_t a = blockIdx.x; a < n; a += gridDim.x) {
        const TS *src = x + (int64_t)rows[a] * C;
        float g = gate ? gate[slots[a]] : 1.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            stv(out, a * C + c, g * ldv(src, c));
    }
}

/* ---- combine: out[rows[a]] += y[a] (times gate[slots[a]]) ---------------------------
 * Up to k dispatched rows land on one token row.  The deterministic form
 * gathers instead of scattering: inv[slots[a]] = a inverts the slot
 * permutation, and the executor's slots are t k + j, so a token's rows sit
 * at consecutive slots.  The block at the first slot of such a run sums the
 * run's rows in slot order (j ascending) in fp32 and updates out[t] once;
 * no two blocks touch one output row, so the result is the same on every
 * run and every GPU, with no atomics and one read-modify-write per output
 * element.  (fp32 atomics would make the sum's order — and its last bits —
 * depend on scheduling, so two runs of the same step would differ.) */
static __global__ void k_moe_slot_inverse(int32_t *inv, const int32_t *slots, int64_t n)
{
    MOE_GRID_STRIDE(a, n)
    {
        int64_t s = slots[a];
        if (s >= 0 && s < n) /* out-of-range slots break the precondition; never write past inv */
            inv[s] = (int32_t)a;
    }
}

template <typename TS>
static __global__ void k_moe_unpermute_gather(TS *out, const TS *y, const int32_t *rows,
                                              const float *gate, const int32_t *inv, int64_t n,
                                              int64_t C)
{
    for (int64_t s = blockIdx.x; s < n; s += gridDim.x) {
        int32_t a = inv[s];
        if (a < 0)
            continue;
        int32_t r = rows[a];
        if (s > 0 && inv[s - 1] >= 0 && rows[inv[s - 1]] == r)
            continue; /* not the first slot of its token: that block sums this one */
        TS *dst = out + (int64_t)r * C;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float acc = 0.0f;
            for (int64_t u = s; u < n && inv[u] >= 0 && rows[inv[u]] == r; u++)
                acc += (gate ? gate[u] : 1.0f) * ldv(y, (int64_t)inv[u] * C + c);
            stv(dst, c, ldv(dst, c) + acc);
        }
    }
}

/* Without slots nothing tells which dispatched rows share a token row, so
 * this form adds with atomics (fp32 or bf16; the sum's order is not fixed). */
static __device__ __forceinline__ void moe_atomic_add(float *p, float v) { atomicAdd(p, v); }
static __device__ __forceinline__ void moe_atomic_add(bf16 *p, float v)
{
    atomicAdd(p, __float2bfloat16_rn(v));
}

template <typename TS>
static __global__ void k_moe_unpermute_atomic(TS *out, const TS *y, const int32_t *rows,
                                              int64_t n, int64_t C)
{
    for (int64_t a = blockIdx.x; a < n; a += gridDim.x) {
        TS *dst = out + (int64_t)rows[a] * C;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
            moe_atomic_add(dst + c, ldv(y, a * C + c));
    }
}

/* ---- gate gradient: dgate[slots[a]] = <dout[rows[a]], y[a]>, a warp per row -------- */
template <typename TS>
static __global__ void k_moe_gate_bwd(float *dgate, const TS *dout, const TS *y,
                                      const int32_t *rows, const int32_t *slots, int64_t n,
                                      int64_t C)
{
    const int lane = (int)(threadIdx.x & 31);
    const int64_t warps = (int64_t)(blockDim.x >> 5);
    for (int64_t a = (int64_t)blockIdx.x * warps + (threadIdx.x >> 5); a < n;
         a += (int64_t)gridDim.x * warps) {
        const TS *d = dout + (int64_t)rows[a] * C;
        float acc = 0.0f;
        for (int64_t c = lane; c < C; c += 32)
            acc += ldv(d, c) * ldv(y, a * C + c);
        acc = warp_sum(acc);
        if (lane == 0)
            dgate[slots[a]] = acc;
    }
}

#ifndef PX_CUDA_EMULATE /* launchers: host code */
static unsigned int moe_rows_grid(int64_t n)
{
    return (unsigned int)(n < 65535 ? (n > 0 ? n : 1) : 65535);
}

static px_status router_check(int64_t T, int64_t E, int64_t k, const px_router *r,
                              px_error *err)
{
    PX_REQUIRE(err, r && r->n_group <= 1,
               "moe router: group-limited routing (n_group %d) has no CUDA kernel; allowed: "
               "n_group 1", r ? r->n_group : 0);
    PX_REQUIRE(err, T >= 0, "moe router: T = %lld tokens; must be >= 0", (long long)T);
    PX_REQUIRE(err, E >= 1 && E <= (1LL << 24),
               "moe router: E = %lld experts; must be 1..16777216", (long long)E);
    PX_REQUIRE(err, k >= 1 && k <= PX_MOE_MAX_K && k <= E,
               "moe router: k = %lld (top-k); must be 1..%d and <= E = %lld", (long long)k,
               PX_MOE_MAX_K, (long long)E);
    return PX_OK;
}

static px_status rows_check(const char *what, const int32_t *rows, const float *gate,
                            const int32_t *slots, int64_t n, int64_t C, px_error *err)
{
    PX_REQUIRE(err, n >= 0 && C >= 1, "moe %s: n = %lld rows, C = %lld; need n >= 0, C >= 1",
               what, (long long)n, (long long)C);
    PX_REQUIRE(err, n == 0 || rows, "moe %s: rows is NULL; it must hold n = %lld indices", what,
               (long long)n);
    PX_REQUIRE(err, !gate || slots || n == 0,
               "moe %s: gate given without slots; slots must be given with gate", what);
    return PX_OK;
}

template <typename TS>
static px_status router_fwd_impl(float *probs, int32_t *idx, float *gate, const TS *logits,
                                 int64_t T, int64_t E, int64_t k, const px_router *r,
                                 cudaStream_t stream, px_error *err)
{
    PX_TRY(router_check(T, E, k, r, err));
    if (T == 0)
        return PX_OK;
    k_moe_router_fwd<TS><<<px_grid_1d(T, MOE_WARPS), MOE_THREADS, 0, stream>>>(probs, idx, gate,
                                                                             logits, T, E, (int)k,
                                                                             *r);
    PX_CUDA_LAUNCH_TRY(err, "k_moe_router_fwd");
    return PX_OK;
}

template <typename TS>
static px_status router_bwd_impl(TS *dlogits, const float *probs, const int32_t *idx,
                                 const float *dgate, int64_t T, int64_t E, int64_t k,
                                 const px_router *r, cudaStream_t stream, px_error *err)
{
    PX_TRY(router_check(T, E, k, r, err));
    if (T == 0)
        return PX_OK;
    k_moe_router_bwd<TS><<<px_grid_1d(T * E, 256), 256, 0, stream>>>(dlogits, probs, idx, dgate,
                                                                     T, E, (int)k, *r);
    PX_CUDA_LAUNCH_TRY(err, "k_moe_router_bwd");
    return PX_OK;
}

template <typename TS>
static px_status permute_impl(TS *out, const TS *x, const int32_t *rows, const float *gate,
                              const int32_t *slots, int64_t n, int64_t C, cudaStream_t stream,
                              px_error *err)
{
    PX_TRY(rows_check("permute", rows, gate, slots, n, C, err));
    if (n == 0)
        return PX_OK;
    k_moe_permute<TS><<<moe_rows_grid(n), MOE_ROW_THREADS, 0, stream>>>(out, x, rows, gate, slots,
                                                                        n, C);
    PX_CUDA_LAUNCH_TRY(err, "k_moe_permute");
    return PX_OK;
}

template <typename TS>
static px_status unpermute_impl(TS *out, const TS *y, const int32_t *rows, const float *gate,
                                const int32_t *slots, int64_t n, int64_t C, cudaStream_t stream,
                                px_error *err)
{
    PX_TRY(rows_check("unpermute", rows, gate, slots, n, C, err));
    PX_REQUIRE(err, n <= INT32_MAX, "moe unpermute: n = %lld rows; must fit int32", (long long)n);
    if (n == 0)
        return PX_OK;
    if (!slots) {
        k_moe_unpermute_atomic<TS><<<moe_rows_grid(n), MOE_ROW_THREADS, 0, stream>>>(out, y, rows,
                                                                                     n, C);
        PX_CUDA_LAUNCH_TRY(err, "k_moe_unpermute_atomic");
        return PX_OK;
    }
    /* n int32 of stream-ordered scratch for the slot inverse, from the
     * device's pool; -1 marks a slot no row claimed. */
    int32_t *inv = NULL;
    PX_CUDA_TRY(err, cudaMallocAsync((void **)&inv, (size_t)n * sizeof *inv, stream));
    px_status st = px_cuda_status(cudaMemsetAsync(inv, 0xff, (size_t)n * sizeof *inv, stream),
                                  "cudaMemsetAsync(moe slot inverse)", __FILE__, __LINE__, err);
    if (st == PX_OK) {
        k_moe_slot_inverse<<<px_grid_1d(n, 256), 256, 0, stream>>>(inv, slots, n);
        st = px_cuda_status(cudaGetLastError(), "launch of k_moe_slot_inverse", __FILE__,
                            __LINE__, err);
    }
    if (st == PX_OK) {
        k_moe_unpermute_gather<TS><<<moe_rows_grid(n), MOE_ROW_THREADS, 0, stream>>>(
            out, y, rows, gate, inv, n, C);
        st = px_cuda_status(cudaGetLastError(), "launch of k_moe_unpermute_gather", __FILE__,
                            __LINE__, err);
    }
    cudaError_t e = cudaFreeAsync(inv, stream);
    if (st == PX_OK)
        st = px_cuda_status(e, "cudaFreeAsync(moe slot inverse)", __FILE__, __LINE__, err);
    return st;
}

template <typename TS>
static px_status gate_bwd_impl(float *dgate, const TS *dout, const TS *y, const int32_t *rows,
                               const int32_t *slots, int64_t n, int64_t C, cudaStream_t stream,
                               px_error *err)
{
    PX_TRY(rows_check("gate_bwd", rows, NULL, slots, n, C, err));
    PX_REQUIRE(err, n == 0 || slots, "moe gate_bwd: slots is NULL; it must hold n = %lld slots",
               (long long)n);
    if (n == 0)
        return PX_OK;
    k_moe_gate_bwd<TS><<<px_grid_1d(n, MOE_WARPS), MOE_THREADS, 0, stream>>>(dgate, dout, y, rows,
                                                                           slots, n, C);
    PX_CUDA_LAUNCH_TRY(err, "k_moe_gate_bwd");
    return PX_OK;
}
#endif

/* ---- C entry points: bf16 storage (the twins) and fp32 storage (_f32) ---- */

#ifndef PX_CUDA_EMULATE /* launchers: host code */
#define B16(p) reinterpret_cast<bf16 *>(p)
#define CB16(p) reinterpret_cast<const bf16 *>(p)

extern "C" px_status px_cuda_moe_router_fwd(float *probs, int32_t *idx, float *gate,
                                            const px_bf16 *logits, int64_t T, int64_t E,
                                            int64_t k, const px_router *r, cudaStream_t stream,
                                            px_error *err)
{
    return router_fwd_impl<bf16>(probs, idx, gate, CB16(logits), T, E, k, r, stream, err);
}

extern "C" px_status px_cuda_moe_router_fwd_f32(float *probs, int32_t *idx, float *gate,
                                                const float *logits, int64_t T, int64_t E,
                                                int64_t k, const px_router *r,
                                                cudaStream_t stream, px_error *err)
{
    return router_fwd_impl<float>(probs, idx, gate, logits, T, E, k, r, stream, err);
}

extern "C" px_status px_cuda_moe_router_bwd(px_bf16 *dlogits, const float *probs,
                                            const int32_t *idx, const float *dgate, int64_t T,
                                            int64_t E, int64_t k, const px_router *r,
                                            cudaStream_t stream, px_error *err)
{
    return router_bwd_impl<bf16>(B16(dlogits), probs, idx, dgate, T, E, k, r, stream, err);
}

extern "C" px_status px_cuda_moe_router_bwd_f32(float *dlogits, const float *probs,
                                                const int32_t *idx, const float *dgate, int64_t T,
                                                int64_t E, int64_t k, const px_router *r,
                                                cudaStream_t stream, px_error *err)
{
    return router_bwd_impl<float>(dlogits, probs, idx, dgate, T, E, k, r, stream, err);
}

extern "C" px_status px_cuda_moe_permute(px_bf16 *out, const px_bf16 *x, const int32_t *rows,
                                         const float *gate, const int32_t *slots, int64_t n,
                                         int64_t C, cudaStream_t stream, px_error *err)
{
    return permute_impl<bf16>(B16(out), CB16(x), rows, gate, slots, n, C, stream, err);
}

extern "C" px_status px_cuda_moe_permute_f32(float *out, const float *x, const int32_t *rows,
                                             const float *gate, const int32_t *slots, int64_t n,
                                             int64_t C, cudaStream_t stream, px_error *err)
{
    return permute_impl<float>(out, x, rows, gate, slots, n, C, stream, err);
}

extern "C" px_status px_cuda_moe_unpermute(px_bf16 *out, const px_bf16 *y, const int32_t *rows,
                                           const float *gate, const int32_t *slots, int64_t n,
                                           int64_t C, cudaStream_t stream, px_error *err)
{
    return unpermute_impl<bf16>(B16(out), CB16(y), rows, gate, slots, n, C, stream, err);
}

extern "C" px_status px_cuda_moe_unpermute_f32(float *out, const float *y, const int32_t *rows,
                                               const float *gate, const int32_t *slots, int64_t n,
                                               int64_t C, cudaStream_t stream, px_error *err)
{
    return unpermute_impl<float>(out, y, rows, gate, slots, n, C, stream, err);
}

extern "C" px_status px_cuda_moe_gate_bwd(float *dgate, const px_bf16 *dout, const px_bf16 *y,
                                          const int32_t *rows, const int32_t *slots, int64_t n,
                                          int64_t C, cudaStream_t stream, px_error *err)
{
    return gate_bwd_impl<bf16>(dgate, CB16(dout), CB16(y), rows, slots, n, C, stream, err);
}

extern "C" px_status px_cuda_moe_gate_bwd_f32(float *dgate, const float *dout, const float *y,
                                              const int32_t *rows, const int32_t *slots, int64_t n,
                                              int64_t C, cudaStream_t stream, px_error *err)
{
    return gate_bwd_impl<float>(dgate, dout, y, rows, slots, n, C, stream, err);
}
#endif
