/* px_kernels_cpu.c — fp32 CPU kernels; see px_kernels_cpu.h for conventions. */
#include "px_kernels_cpu.h"

#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

/* ---- embedding ------------------------------------------------------------ */

void px_cpu_embedding_fwd(float *out, const int32_t *tokens, const float *table, int64_t T,
                          int64_t C, int64_t v0, int64_t v1)
{
    for (int64_t t = 0; t < T; t++) {
        int64_t id = tokens[t];
        float *o = out + t * C;
        if (id >= v0 && id < v1)
            memcpy(o, table + (id - v0) * C, (size_t)C * sizeof *o);
        else
            memset(o, 0, (size_t)C * sizeof *o);
    }
}

void px_cpu_embedding_bwd(float *dtable, const float *dout, const int32_t *tokens, int64_t T,
                          int64_t C, int64_t v0, int64_t v1)
{
    for (int64_t t = 0; t < T; t++) {
        int64_t id = tokens[t];
        if (id < v0 || id >= v1)
            continue;
        float *d = dtable + (id - v0) * C;
        const float *g = dout + t * C;
        for (int64_t c = 0; c < C; c++)
            d[c] += g[c];
    }
}

/* ---- positions ---------------------------------------------------------------- */

void px_cpu_positions_fwd(float *x, const float *pos, int64_t S, int64_t B, int64_t C,
                          int64_t pos0)
{
    for (int64_t s = 0; s < S; s++)
        for (int64_t b = 0; b < B; b++) {
            float *row = x + (s * B + b) * C;
            const float *p = pos + (pos0 + s) * C;
            for (int64_t c = 0; c < C; c++)
                row[c] += p[c];
        }
}

void px_cpu_positions_bwd(float *dpos, const float *dout, int64_t S, int64_t B, int64_t C,
                          int64_t pos0)
{
    for (int64_t s = 0; s < S; s++)
        for (int64_t b = 0; b < B; b++) {
            const float *g = dout + (s * B + b) * C;
            float *p = dpos + (pos0 + s) * C;
            for (int64_t c = 0; c < C; c++)
                p[c] += g[c];
        }
}

/* ---- RMSNorm ------------------------------------------------------------------- */

void px_cpu_rmsnorm_fwd(float *out, float *rstd, const float *inp, const float *weight,
                        int64_t T, int64_t C, float eps)
{
    for (int64_t t = 0; t < T; t++) {
        const float *x = inp + t * C;
        double ss = 0.0; /* double: the mean of squares of large rows loses digits in fp32 */
        for (int64_t c = 0; c < C; c++)
            ss += (double)x[c] * x[c];
        float r = (float)(1.0 / sqrt(ss / (double)C + eps));
        rstd[t] = r;
        float *o = out + t * C;
        for (int64_t c = 0; c < C; c++)
            o[c] = x[c] * r * weight[c];
    }
}

void px_cpu_rmsnorm_bwd(float *dinp, float *dweight, const float *dout, const float *inp,
                        const float *weight, const float *rstd, int64_t T, int64_t C)
{
    for (int64_t t = 0; t < T; t++) {
        const float *x = inp + t * C, *g = dout + t * C;
        float r = rstd[t];
        /* y = x r w;  dx = r (w g) - x r^3 mean(w g x) */
        double dot = 0.0;
        for (int64_t c = 0; c < C; c++) {
            dot += (double)g[c] * weight[c] * x[c];
            dweight[c] += g[c] * x[c] * r;
        }
        float k = (float)(dot / (double)C) * r * r * r;
        float *d = dinp + t * C;
        for (int64_t c = 0; c < C; c++)
            d[c] += g[c] * weight[c] * r - x[c] * k;
    }
}

/* ---- LayerNorm ----------------------------------------------------------------- */

void px_cpu_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp,
                          const float *weight, const float *bias, int64_t T, int64_t C,
                          float eps)
{
    for (int64_t t = 0; t < T; t++) {
        const float *x = inp + t * C;
        double s = 0.0;
        for (int64_t c = 0; c < C; c++)
            s += x[c];
        double mu = s / (double)C, var = 0.0;
        for (int64_t c = 0; c < C; c++)
            var += ((double)x[c] - mu) * ((double)x[c] - mu);
        float r = (float)(1.0 / sqrt(var / (double)C + eps));
        mean[t] = (float)mu;
        rstd[t] = r;
        float *o = out + t * C;
        for (int64_t c = 0; c < C; c++)
            o[c] = (x[c] - (float)mu) * r * weight[c] + bias[c];
    }
}

void px_cpu_layernorm_bwd(float *dinp, float *dweight, float *dbias, const float *dout,
                          const float *inp, const float *weight, const float *mean,
                          const float *rstd, int64_t T, int64_t C)
{
    for (int64_t t = 0; t < T; t++) {
        const float *x = inp + t * C, *g = dout + t * C;
        float mu = mean[t], r = rstd[t];
        double sum_gw = 0.0, sum_gwx = 0.0;
        for (int64_t c = 0; c < C; c++) {
            float xhat = (x[c] - mu) * r;
            float gw = g[c] * weight[c];
            sum_gw += gw;
            sum_gwx += (double)gw * xhat;
            dweight[c] += g[c] * xhat;
            dbias[c] += g[c];
        }
        float m1 = (float)(sum_gw / (double)C), m2 = (float)(sum_gwx / (double)C);
        float *d = dinp + t * C;
        for (int64_t c = 0; c < C; c++) {
            float xhat = (x[c] - mu) * r;
            d[c] += r * (g[c] * weight[c] - m1 - xhat * m2);
        }
    }
}

/* ---- linear -------------------------------------------------------------------- */

void px_cpu_matmul_fwd(float *out, const float *inp, const float *weight, const float *bias,
                       int64_t T, int64_t K, int64_t N)
{
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)T, (int)N, (int)K, 1.0f, inp,
                (int)K, weight, (int)K, 0.0f, out, (int)N);
    if (bias)
        px_cpu_bias_add_fwd(out, bias, T, N);
}

void px_cpu_matmul_bwd(float *dinp, float *dweight, float *dbias, const float *dout,
                       const float *inp, const float *weight, int64_t T, int64_t K, int64_t N)
{
    if (dinp) /* dinp[T,K] = dout[T,N] W[N,K] */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)T, (int)K, (int)N, 1.0f,
                    dout, (int)N, weight, (int)K, 0.0f, dinp, (int)K);
    if (dweight) /* dW[N,K] += dout^T[N,T] inp[T,K] */
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)N, (int)K, (int)T, 1.0f, dout,
                    (int)N, inp, (int)K, 1.0f, dweight, (int)K);
    if (dbias)
        px_cpu_bias_add_bwd(dbias, dout, T, N);
}

/* ---- bias, residual -------------------------------------------------------------- */

void px_cpu_bias_add_fwd(float *x, const float *bias, int64_t T, int64_t N)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t n = 0; n < N; n++)
            x[t * N + n] += bias[n];
}

void px_cpu_bias_add_bwd(float *dbias, const float *dout, int64_t T, int64_t N)
{
    for (int64_t t = 0; t < T; t++)
        for (int64_t n = 0; n < N; n++)
            dbias[n] += dout[t * N + n];
}

void px_cpu_residual_fwd(float *out, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        out[i] = a[i] + b[i];
}

void px_cpu_residual_bwd(float *da, float *db, const float *dout, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (da)
            da[i] += dout[i];
        if (db)
            db[i] += dout[i];
    }
}

/* ---- RoPE ------------------------------------------------------------------------ */

/* Rotates the q and k heads by +angle (dir = 1) or -angle (dir = -1). */
static void rope_apply(float *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t pos0, const px_rope *rope, float dir)
{
    int64_t half = HD / 2, row = (NH + 2 * NKV) * HD;
    for (int64_t s = 0; s < S; s++) {
        double p = (double)(pos0 + s);
        for (int64_t i = 0; i < half; i++) {
            double a = p * px_rope_inv_freq(rope, i, HD);
            float c = (float)cos(a), sn = dir * (float)sin(a);
            int64_t i0, i1;
            px_rope_pair(rope, i, HD, &i0, &i1);
            for (int64_t b = 0; b < B; b++) {
                float *x = qkv + (s * B + b) * row;
                for (int64_t h = 0; h < NH + NKV; h++) {
                    float *v = x + h * HD;
                    float x0 = v[i0], x1 = v[i1];
                    v[i0] = x0 * c - x1 * sn;
                    v[i1] = x0 * sn + x1 * c;
                }
            }
        }
    }
}

void px_cpu_rope_fwd(float *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                     int64_t pos0, const px_rope *rope)
{
    rope_apply(qkv, S, B, NH, NKV, HD, pos0, rope, 1.0f);
}

void px_cpu_rope_bwd(float *dqkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                     int64_t pos0, const px_rope *rope)
{
    /* The rotation is orthogonal: its transpose is the rotation by -angle. */
    rope_apply(dqkv, S, B, NH, NKV, HD, pos0, rope, -1.0f);
}

/* ---- attention ---------------------------------------------------------------------- */

/* Tiled, FlashAttention-style.  Per (batch, head) the queries are cut into
 * row tiles of ATTN_BR and the keys into column tiles of ATTN_BC; each score
 * tile S = scale Q K^T and each product with V, dO, K or Q is one
 * cblas_sgemm straight on the interleaved [S, B, heads HD] layout (leading
 * dimension B * row), so nothing is copied and the only scratch is two
 * ATTN_BR x ATTN_BC tiles on the stack (16 KiB): O(tile^2), never S x S.
 * The causal mask is applied per row as a column limit, which only cuts the
 * tiles that straddle the diagonal; tiles wholly above it are never
 * computed. */
enum { ATTN_BR = 32, ATTN_BC = 64 };

/* exp(x) for the softmax, x <= 0 in practice: 2^(x log2 e) split into an
 * integer power built in the exponent bits and 2^f, |f| <= 1/2, by a
 * degree-6 series in f ln 2 (relative error ~1e-7, fp32 rounding).  Written
 * branch-free so the compiler vectorises it over a row; the libm expf call
 * it replaces cost as much as the GEMMs at head dim 64.  Below 2^-126 it
 * saturates to the smallest normal, which is 0 for every sum it enters.
 * GCC keeps the clamps as branches (no vectorising) under its default
 * -ftrapping-math, which only matters to programs that unmask floating-point
 * traps (nothing here does), so the row loops are compiled without it. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif
static inline float attn_exp(float x)
{
    float t = x * 1.44269504088896341f;
    if (t != t) /* NaN (a diverged run): stays NaN; the int cast below would be undefined */
        return t;
    t = t < -126.0f ? -126.0f : t;
    t = t > 126.0f ? 126.0f : t;
    /* round to nearest with the 1.5 * 2^23 trick (no libm call, no SSE4.1) */
    float n = (t + 12582912.0f) - 12582912.0f;
    float g = (t - n) * 0.693147180559945309f;
    float p = 1.0f + g * (1.0f + g * (0.5f + g * (1.0f / 6.0f + g * (1.0f / 24.0f +
              g * (1.0f / 120.0f + g * (1.0f / 720.0f))))));
    int32_t bits = ((int32_t)n + 127) << 23;
    float pow2;
    memcpy(&pow2, &bits, sizeof pow2);
    return p * pow2;
}

/* p[c] = exp(p[c] - sub) for c < n, then zero up to width (the masked
 * columns of a tile straddling the diagonal). */
static void attn_exp_row(float *p, int64_t n, int64_t width, float sub)
{
    for (int64_t c = 0; c < n; c++)
        p[c] = attn_exp(p[c] - sub);
    for (int64_t c = n; c < width; c++)
        p[c] = 0.0f;
}
/* Row max and sum over 8 independent lanes: a single running value is a
 * serial dependency the compiler may not reorder (fp32 addition is not
 * associative), so it would stay scalar. */
static float attn_row_max(const float *p, int64_t n, float init)
{
    float lane[8] = {init, init, init, init, init, init, init, init};
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        for (int k = 0; k < 8; k++)
            lane[k] = p[c + k] > lane[k] ? p[c + k] : lane[k];
    float mx = init;
    for (int k = 0; k < 8; k++)
        mx = lane[k] > mx ? lane[k] : mx;
    for (; c < n; c++)
        mx = p[c] > mx ? p[c] : mx;
    return mx;
}

static float attn_row_sum(const float *p, int64_t n)
{
    float lane[8] = {0};
    int64_t c = 0;
    for (; c + 8 <= n; c += 8)
        for (int k = 0; k < 8; k++)
            lane[k] += p[c + k];
    float sum = 0.0f;
    for (int k = 0; k < 8; k++)
        sum += lane[k];
    for (; c < n; c++)
        sum += p[c];
    return sum;
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

/* One (batch, head) slice.  q, k, v point at the head's first element; rows
 * are ld floats apart.  Query i may see keys 0 ..= attn_last(i). */
typedef struct {
    const float *q, *k, *v;
    int64_t ld;           /* B * (NH + 2 NKV) HD */
    int64_t Sq, Skv, HD;
    const int32_t *qpos;  /* NULL: query i sits at position i */
    float scale;
} attn_head;

static int64_t attn_last(const attn_head *a, int64_t i)
{
    if (!a->qpos)
        return i;
    int64_t p = a->qpos[i];
    return p < a->Skv ? p : a->Skv - 1;
}

/* Visible columns of query row i in the key tile starting at j0, of width bc. */
static int64_t attn_cols(const attn_head *a, int64_t i, int64_t j0, int64_t bc)
{
    int64_t n = attn_last(a, i) - j0 + 1;
    return n < 0 ? 0 : n > bc ? bc : n;
}

/* Last key any row of the query tile [i0, i0 + br) sees. */
static int64_t attn_tile_last(const attn_head *a, int64_t i0, int64_t br)
{
    int64_t last = 0;
    for (int64_t r = 0; r < br; r++) {
        int64_t l = attn_last(a, i0 + r);
        last = l > last ? l : last;
    }
    return last;
}

/* out rows (ldo apart) and lse[Sq] of one slice; probs [Sq, Skv] or NULL. */
static void attn_fwd_head(const attn_head *a, float *o, int64_t ldo, float *lse, float *probs)
{
    float P[ATTN_BR * ATTN_BC];
    float m[ATTN_BR], l[ATTN_BR];
    int64_t HD = a->HD, ld = a->ld;
    for (int64_t i0 = 0; i0 < a->Sq; i0 += ATTN_BR) {
        int64_t br = a->Sq - i0 < ATTN_BR ? a->Sq - i0 : ATTN_BR;
        int64_t kend = attn_tile_last(a, i0, br) + 1;
        for (int64_t r = 0; r < br; r++) {
            m[r] = -INFINITY;
            l[r] = 0.0f;
            memset(o + (i0 + r) * ldo, 0, (size_t)HD * sizeof *o);
        }
        for (int64_t j0 = 0; j0 < kend; j0 += ATTN_BC) {
            int64_t bc = kend - j0 < ATTN_BC ? kend - j0 : ATTN_BC;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)br, (int)bc, (int)HD,
                        a->scale, a->q + i0 * ld, (int)ld, a->k + j0 * ld, (int)ld, 0.0f, P,
                        ATTN_BC);
            /* Online softmax: the running max only grows; when it does the
             * sum and the output row so far are rescaled by exp(old - new). */
            for (int64_t r = 0; r < br; r++) {
                float *p = P + r * ATTN_BC;
                int64_t n = attn_cols(a, i0 + r, j0, bc);
                float mx = attn_row_max(p, n, m[r]);
                attn_exp_row(p, n, bc, mx);
                float sum = attn_row_sum(p, n);
                if (mx > m[r] && m[r] > -INFINITY) {
                    float alpha = expf(m[r] - mx);
                    float *orow = o + (i0 + r) * ldo;
                    l[r] *= alpha;
                    for (int64_t e = 0; e < HD; e++)
                        orow[e] *= alpha;
                }
                m[r] = mx;
                l[r] += sum;
            }
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)br, (int)HD, (int)bc,
                        1.0f, P, ATTN_BC, a->v + j0 * ld, (int)ld, 1.0f, o + i0 * ldo, (int)ldo);
        }
        for (int64_t r = 0; r < br; r++) {
            float inv = 1.0f / l[r], *orow = o + (i0 + r) * ldo;
            for (int64_t e = 0; e < HD; e++)
                orow[e] *= inv;
            lse[i0 + r] = m[r] + logf(l[r]);
        }
        if (probs) {
            /* the non-FlashAttention path keeps P = exp(S - lse) whole */
            float *pr = probs + i0 * a->Skv;
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)br, (int)kend, (int)HD,
                        a->scale, a->q + i0 * ld, (int)ld, a->k, (int)ld, 0.0f, pr,
                        (int)a->Skv);
            for (int64_t r = 0; r < br; r++) {
                float *p = pr + r * a->Skv, L = lse[i0 + r];
                int64_t n = attn_cols(a, i0 + r, 0, a->Skv);
                attn_exp_row(p, n, a->Skv, L);
            }
        }
    }
}

/* Gradients of one slice, accumulated (+=) into dq, dk, dv (rows ld apart);
 * dout and out rows ldo apart; probs as stored by the forward, or NULL. */
static void attn_bwd_head(const attn_head *a, float *dq, float *dk, float *dv,
                          const float *dout, const float *out, int64_t ldo, const float *lse,
                          const float *probs)
{
    float Pt[ATTN_BR * ATTN_BC], dS[ATTN_BR * ATTN_BC];
    float D[ATTN_BR];
    int64_t HD = a->HD, ld = a->ld;
    for (int64_t i0 = 0; i0 < a->Sq; i0 += ATTN_BR) {
        int64_t br = a->Sq - i0 < ATTN_BR ? a->Sq - i0 : ATTN_BR;
        int64_t kend = attn_tile_last(a, i0, br) + 1;
        /* D_i = dO_i . O_i = sum_j P_ij dP_ij (softmax backward) */
        for (int64_t r = 0; r < br; r++) {
            const float *go = dout + (i0 + r) * ldo, *o = out + (i0 + r) * ldo;
            float s = 0.0f;
            for (int64_t e = 0; e < HD; e++)
                s += go[e] * o[e];
            D[r] = s;
        }
        for (int64_t j0 = 0; j0 < kend; j0 += ATTN_BC) {
            int64_t bc = kend - j0 < ATTN_BC ? kend - j0 : ATTN_BC;
            const float *P;
            int64_t ldp;
            if (probs) {
                P = probs + i0 * a->Skv + j0;
                ldp = a->Skv;
            } else {
                /* recompute P = exp(scale Q K^T - lse) for this tile */
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)br, (int)bc,
                            (int)HD, a->scale, a->q + i0 * ld, (int)ld, a->k + j0 * ld,
                            (int)ld, 0.0f, Pt, ATTN_BC);
                for (int64_t r = 0; r < br; r++) {
                    float *p = Pt + r * ATTN_BC, L = lse[i0 + r];
                    int64_t n = attn_cols(a, i0 + r, j0, bc);
                    attn_exp_row(p, n, bc, L);
                }
                P = Pt;
                ldp = ATTN_BC;
            }
            /* dV += P^T dO */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)bc, (int)HD, (int)br, 1.0f,
                        P, (int)ldp, dout + i0 * ldo, (int)ldo, 1.0f, dv + j0 * ld, (int)ld);
            /* dP = dO V^T, then dS = P (dP - D) scale (zero where P is masked) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)br, (int)bc, (int)HD, 1.0f,
                        dout + i0 * ldo, (int)ldo, a->v + j0 * ld, (int)ld, 0.0f, dS, ATTN_BC);
            for (int64_t r = 0; r < br; r++) {
                const float *p = P + r * ldp;
                float *ds = dS + r * ATTN_BC, Dr = D[r];
                for (int64_t c = 0; c < bc; c++)
                    ds[c] = p[c] * (ds[c] - Dr) * a->scale;
            }
            /* dQ += dS K, dK += dS^T Q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)br, (int)HD, (int)bc,
                        1.0f, dS, ATTN_BC, a->k + j0 * ld, (int)ld, 1.0f, dq + i0 * ld, (int)ld);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)bc, (int)HD, (int)br, 1.0f,
                        dS, ATTN_BC, a->q + i0 * ld, (int)ld, 1.0f, dk + j0 * ld, (int)ld);
        }
    }
}

void px_cpu_attention_fwd(float *out, float *lse, float *probs, const float *qkv, int64_t S,
                          int64_t B, int64_t NH, int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            const float *base = qkv + b * row;
            attn_head a = {base + h * HD, base + (NH + kh) * HD, base + (NH + NKV + kh) * HD,
                           B * row, S, S, HD, NULL, 1.0f / sqrtf((float)HD)};
            attn_fwd_head(&a, out + (b * NH + h) * HD, B * NH * HD, lse + (b * NH + h) * S,
                          probs ? probs + (b * NH + h) * S * S : NULL);
        }
}

void px_cpu_attention_bwd(float *dqkv, const float *dout, const float *out, const float *lse,
                          const float *probs, const float *qkv, int64_t S, int64_t B,
                          int64_t NH, int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    memset(dqkv, 0, (size_t)(S * B * row) * sizeof *dqkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            const float *base = qkv + b * row;
            float *dbase = dqkv + b * row;
            attn_head a = {base + h * HD, base + (NH + kh) * HD, base + (NH + NKV + kh) * HD,
                           B * row, S, S, HD, NULL, 1.0f / sqrtf((float)HD)};
            attn_bwd_head(&a, dbase + h * HD, dbase + (NH + kh) * HD,
                          dbase + (NH + NKV + kh) * HD, dout + (b * NH + h) * HD,
                          out + (b * NH + h) * HD, B * NH * HD, lse + (b * NH + h) * S,
                          probs ? probs + (b * NH + h) * S * S : NULL);
        }
}

/* ---- context-parallel attention ------------------------------------------------ */

/* The same tiles; the causal limit comes from qpos, which need not be
 * monotonic (zigzag shards), so a query tile runs to the last key any of its
 * rows sees and each row cuts its own columns. */
void px_cpu_attention_kv_fwd(float *out, float *lse, const float *q, const int32_t *qpos,
                             const float *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                             int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            const float *kvb = kv + b * row;
            attn_head a = {q + b * row + h * HD, kvb + (NH + kh) * HD,
                           kvb + (NH + NKV + kh) * HD, B * row, Sq, Skv, HD, qpos,
                           1.0f / sqrtf((float)HD)};
            attn_fwd_head(&a, out + (b * NH + h) * HD, B * NH * HD, lse + (b * NH + h) * Sq,
                          NULL);
        }
}

void px_cpu_attention_kv_bwd(float *dq, float *dkv, const float *dout, const float *out,
                             const float *lse, const float *q, const int32_t *qpos,
                             const float *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                             int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    memset(dq, 0, (size_t)(Sq * B * row) * sizeof *dq);
    memset(dkv, 0, (size_t)(Skv * B * row) * sizeof *dkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            const float *kvb = kv + b * row;
            float *dkvb = dkv + b * row;
            attn_head a = {q + b * row + h * HD, kvb + (NH + kh) * HD,
                           kvb + (NH + NKV + kh) * HD, B * row, Sq, Skv, HD, qpos,
                           1.0f / sqrtf((float)HD)};
            attn_bwd_head(&a, dq + b * row + h * HD, dkvb + (NH + kh) * HD,
                          dkvb + (NH + NKV + kh) * HD, dout + (b * NH + h) * HD,
                          out + (b * NH + h) * HD, B * NH * HD, lse + (b * NH + h) * Sq, NULL);
        }
}

/* ---- MLP activations -------------------------------------------------------------- */

void px_cpu_swiglu_fwd(float *out, const float *gate_up, int64_t T, int64_t F)
{
    for (int64_t t = 0; t < T; t++) {
        const float *g = gate_up + t * 2 * F, *u = g + F;
        float *o = out + t * F;
        for (int64_t i = 0; i < F; i++) {
            float sig = 1.0f / (1.0f + expf(-g[i]));
            o[i] = g[i] * sig * u[i];
        }
    }
}

void px_cpu_swiglu_bwd(float *dgate_up, const float *dout, const float *gate_up, int64_t T,
                       int64_t F)
{
    for (int64_t t = 0; t < T; t++) {
        const float *g = gate_up + t * 2 * F, *u = g + F, *d = dout + t * F;
        float *dg = dgate_up + t * 2 * F, *du = dg + F;
        for (int64_t i = 0; i < F; i++) {
            float sig = 1.0f / (1.0f + expf(-g[i]));
            float silu = g[i] * sig;
            du[i] = d[i] * silu;
            dg[i] = d[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
        }
    }
}

#define PX_GELU_K 0.7978845608028654f /* sqrt(2/pi) */

void px_cpu_gelu_fwd(float *out, const float *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = inp[i];
        out[i] = 0.5f * x * (1.0f + tanhf(PX_GELU_K * (x + 0.044715f * x * x * x)));
    }
}

void px_cpu_gelu_bwd(float *dinp, const float *dout, const float *inp, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = inp[i];
        float u = PX_GELU_K * (x + 0.044715f * x * x * x);
        float th = tanhf(u);
        float du = PX_GELU_K * (1.0f + 3.0f * 0.044715f * x * x);
        float grad = 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * du;
        dinp[i] = dout[i] * grad;
    }
}

/* ---- cross-entropy ----------------------------------------------------------------- */

void px_cpu_xent_max_fwd(float *max, const float *logits, int64_t T, int64_t Vl)
{
    for (int64_t t = 0; t < T; t++) {
        const float *l = logits + t * Vl;
        float m = -INFINITY;
        for (int64_t v = 0; v < Vl; v++)
            m = l[v] > m ? l[v] : m;
        max[t] = m;
    }
}

void px_cpu_xent_sumexp_fwd(float *sumexp, float *target_logit, const float *logits,
                            const float *max, const int32_t *targets, int64_t T, int64_t Vl,
                            int64_t v0)
{
    for (int64_t t = 0; t < T; t++) {
        const float *l = logits + t * Vl;
        double s = 0.0;
        for (int64_t v = 0; v < Vl; v++)
            s += expf(l[v] - max[t]);
        sumexp[t] = (float)s;
        int64_t id = targets[t] - v0;
        target_logit[t] = (id >= 0 && id < Vl) ? l[id] : 0.0f;
    }
}

void px_cpu_xent_loss_fwd(float *loss, const float *max, const float *sumexp,
                          const float *target_logit, int64_t T)
{
    for (int64_t t = 0; t < T; t++)
        loss[t] = logf(sumexp[t]) + max[t] - target_logit[t];
}

void px_cpu_xent_bwd(float *dlogits, const float *logits, const float *max,
                     const float *sumexp, const int32_t *targets, float dloss, int64_t T,
                     int64_t Vl, int64_t v0)
{
    for (int64_t t = 0; t < T; t++) {
        const float *l = logits + t * Vl;
        float *d = dlogits + t * Vl;
        float inv = 1.0f / sumexp[t];
        int64_t id = targets[t] - v0;
        for (int64_t v = 0; v < Vl; v++) {
            float p = expf(l[v] - max[t]) * inv;
            d[v] = dloss * (p - (v == id ? 1.0f : 0.0f));
        }
    }
}

/* ---- AdamW ------------------------------------------------------------------------- */

void px_cpu_adamw_step(float *param, const float *grad, float *m, float *v, int64_t n,
                       float lr, float beta1, float beta2, float eps, float weight_decay,
                       int64_t step)
{
    float c1 = 1.0f - powf(beta1, (float)step), c2 = 1.0f - powf(beta2, (float)step);
    for (int64_t i = 0; i < n; i++) {
        float g = grad[i];
        m[i] = beta1 * m[i] + (1.0f - beta1) * g;
        v[i] = beta2 * v[i] + (1.0f - beta2) * g * g;
        float mh = m[i] / c1, vh = v[i] / c2;
        param[i] -= lr * (mh / (sqrtf(vh) + eps) + weight_decay * param[i]);
    }
}

/* ---- mixture of experts ------------------------------------------------------------ */

/* Scores of one token's logits into p: softmax over E, or sigmoid each. */
static void router_scores(float *p, const float *l, int64_t E, int score)
{
    if (score == PX_ROUTER_SIGMOID) {
        for (int64_t e = 0; e < E; e++)
            p[e] = 1.0f / (1.0f + expf(-l[e]));
        return;
    }
    float mx = l[0];
    for (int64_t e = 1; e < E; e++)
        mx = l[e] > mx ? l[e] : mx;
    double sum = 0.0;
    for (int64_t e = 0; e < E; e++) {
        p[e] = expf(l[e] - mx);
        sum += p[e];
    }
    for (int64_t e = 0; e < E; e++)
        p[e] = (float)(p[e] / sum);
}

/* Sum of the two largest p of experts [e0, e0 + n) (n >= 2). */
static float top2_sum(const float *p, int64_t e0, int64_t n)
{
    float a = -INFINITY, b = -INFINITY;
    for (int64_t e = e0; e < e0 + n; e++) {
        if (p[e] > a) {
            b = a;
            a = p[e];
        } else if (p[e] > b) {
            b = p[e];
        }
    }
    return a + b;
}

/* allowed[g]: group g is among the topk_group of the token (all when the
 * router has no groups). */
static void router_groups(const float *p, int64_t E, const px_router *r, bool *allowed)
{
    int G = r->n_group > 1 ? r->n_group : 1;
    for (int g = 0; g < G; g++)
        allowed[g] = G == 1;
    if (G == 1)
        return;
    float gs[PX_ROUTER_MAX_GROUPS];
    for (int g = 0; g < G; g++)
        gs[g] = top2_sum(p, g * (E / G), E / G);
    for (int j = 0; j < r->topk_group; j++) { /* ties: the lower group */
        int best = -1;
        for (int g = 0; g < G; g++)
            if (!allowed[g] && (best < 0 || gs[g] > gs[best]))
                best = g;
        allowed[best] = true;
    }
}

void px_cpu_moe_router_fwd(float *probs, int32_t *idx, float *gate, const float *logits,
                           int64_t T, int64_t E, int64_t k, const px_router *r)
{
    int64_t per_group = r->n_group > 1 ? E / r->n_group : E;
    for (int64_t t = 0; t < T; t++) {
        float *p = probs + t * E;
        router_scores(p, logits + t * E, E, r->score);
        bool allowed[PX_ROUTER_MAX_GROUPS];
        router_groups(p, E, r, allowed);
        /* k passes of arg-max over the experts not taken yet: E is small, and
         * a strict > keeps the lower index on ties. */
        double sum = 0.0;
        for (int64_t j = 0; j < k; j++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++) {
                bool taken = !allowed[e / per_group];
                for (int64_t i = 0; i < j; i++)
                    taken = taken || idx[t * k + i] == e;
                if (!taken && (best < 0 || p[e] > p[best]))
                    best = e;
            }
            idx[t * k + j] = (int32_t)best;
            gate[t * k + j] = best >= 0 ? p[best] : NAN;
            sum += best >= 0 ? p[best] : NAN;
        }
        for (int64_t j = 0; j < k; j++)
            gate[t * k + j] = (float)((r->renorm ? gate[t * k + j] / sum : gate[t * k + j]) *
                                      r->scale);
    }
}

void px_cpu_moe_router_bwd(float *dlogits, const float *probs, const int32_t *idx,
                           const float *dgate, int64_t T, int64_t E, int64_t k,
                           const px_router *r)
{
    for (int64_t t = 0; t < T; t++) {
        const float *p = probs + t * E;
        const int32_t *it = idx + t * k;
        const float *dg = dgate + t * k;
        float *d = dlogits + t * E;
        /* gate_j = scale p_j / S (S = sum of the chosen p) or scale p_j:
         * dp_j = scale (dg_j - sum_i dg_i p_i / S) / S, or scale dg_j */
        double S = 0.0, dot = 0.0;
        for (int64_t j = 0; j < k; j++) {
            S += p[it[j]];
            dot += (double)dg[j] * p[it[j]];
        }
        double sub = r->renorm ? dot / S : 0.0, div = r->renorm ? S : 1.0;
        if (r->score == PX_ROUTER_SIGMOID) { /* each score its own logit's */
            for (int64_t e = 0; e < E; e++)
                d[e] = 0.0f;
            for (int64_t j = 0; j < k; j++) {
                double pe = p[it[j]], dp = r->scale * (dg[j] - sub) / div;
                d[it[j]] = (float)(dp * pe * (1.0 - pe));
            }
            continue;
        }
        /* softmax: dlogits = p (dp - sum_e p dp); dp non-zero at the chosen */
        double s = 0.0;
        for (int64_t j = 0; j < k; j++)
            s += (double)p[it[j]] * r->scale * (dg[j] - sub) / div;
        for (int64_t e = 0; e < E; e++)
            d[e] = (float)(-p[e] * s);
        for (int64_t j = 0; j < k; j++) {
            int64_t e = it[j];
            d[e] += (float)(p[e] * r->scale * (dg[j] - sub) / div);
        }
    }
}

void px_cpu_moe_permute(float *out, const float *x, const int32_t *rows, const float *gate,
                        const int32_t *slots, int64_t n, int64_t C)
{
    for (int64_t a = 0; a < n; a++) {
        const float *src = x + (int64_t)rows[a] * C;
        float g = gate ? gate[slots[a]] : 1.0f;
        for (int64_t c = 0; c < C; c++)
            out[a * C + c] = g * src[c];
    }
}

void px_cpu_moe_unpermute(float *out, const float *y, const int32_t *rows, const float *gate,
                          const int32_t *slots, int64_t n, int64_t C)
{
    for (int64_t a = 0; a < n; a++) {
        float *dst = out + (int64_t)rows[a] * C;
        float g = gate ? gate[slots[a]] : 1.0f;
        for (int64_t c = 0; c < C; c++)
            dst[c] += g * y[a * C + c];
    }
}

void px_cpu_moe_gate_bwd(float *dgate, const float *dout, const float *y, const int32_t *rows,
                         const int32_t *slots, int64_t n, int64_t C)
{
    for (int64_t a = 0; a < n; a++) {
        const float *d = dout + (int64_t)rows[a] * C;
        double s = 0.0;
        for (int64_t c = 0; c < C; c++)
            s += (double)d[c] * y[a * C + c];
        dgate[slots[a]] = (float)s;
    }
}
