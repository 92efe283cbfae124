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
                       int64_t pos0, float theta, float dir)
{
    int64_t half = HD / 2, row = (NH + 2 * NKV) * HD;
    for (int64_t s = 0; s < S; s++) {
        double p = (double)(pos0 + s);
        for (int64_t i = 0; i < half; i++) {
            double freq = pow((double)theta, -2.0 * (double)i / (double)HD);
            float c = (float)cos(p * freq), sn = dir * (float)sin(p * freq);
            for (int64_t b = 0; b < B; b++) {
                float *x = qkv + (s * B + b) * row;
                for (int64_t h = 0; h < NH + NKV; h++) {
                    float *v = x + h * HD;
                    float x0 = v[i], x1 = v[i + half];
                    v[i] = x0 * c - x1 * sn;
                    v[i + half] = x0 * sn + x1 * c;
                }
            }
        }
    }
}

void px_cpu_rope_fwd(float *qkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                     int64_t pos0, float theta)
{
    rope_apply(qkv, S, B, NH, NKV, HD, pos0, theta, 1.0f);
}

void px_cpu_rope_bwd(float *dqkv, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                     int64_t pos0, float theta)
{
    /* The rotation is orthogonal: its transpose is the rotation by -angle. */
    rope_apply(dqkv, S, B, NH, NKV, HD, pos0, theta, -1.0f);
}

/* ---- attention ---------------------------------------------------------------------- */

void px_cpu_attention_fwd(float *out, float *lse, float *probs, const float *qkv, int64_t S,
                          int64_t B, int64_t NH, int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    float scale = 1.0f / sqrtf((float)HD);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            for (int64_t i = 0; i < S; i++) {
                const float *q = qkv + (i * B + b) * row + h * HD;
                float *o = out + (i * B + b) * NH * HD + h * HD;
                /* Online softmax (running max and sum, output rescaled when the
                 * max grows): no score row is ever materialised. */
                float mx = -INFINITY, sum = 0.0f;
                memset(o, 0, (size_t)HD * sizeof *o);
                for (int64_t j = 0; j <= i; j++) {
                    const float *k = qkv + (j * B + b) * row + (NH + kh) * HD;
                    const float *v = qkv + (j * B + b) * row + (NH + NKV + kh) * HD;
                    float d = 0.0f;
                    for (int64_t e = 0; e < HD; e++)
                        d += q[e] * k[e];
                    d *= scale;
                    if (d > mx) {
                        float r = expf(mx - d); /* 0 on the first key */
                        sum *= r;
                        for (int64_t e = 0; e < HD; e++)
                            o[e] *= r;
                        mx = d;
                    }
                    float w = expf(d - mx);
                    sum += w;
                    for (int64_t e = 0; e < HD; e++)
                        o[e] += w * v[e];
                }
                float inv = 1.0f / sum;
                for (int64_t e = 0; e < HD; e++)
                    o[e] *= inv;
                float L = mx + logf(sum);
                lse[(b * NH + h) * S + i] = L;
                if (probs) {
                    float *pr = probs + ((b * NH + h) * S + i) * S;
                    for (int64_t j = 0; j < S; j++) {
                        if (j > i) {
                            pr[j] = 0.0f;
                            continue;
                        }
                        const float *k = qkv + (j * B + b) * row + (NH + kh) * HD;
                        float d = 0.0f;
                        for (int64_t e = 0; e < HD; e++)
                            d += q[e] * k[e];
                        pr[j] = expf(d * scale - L);
                    }
                }
            }
        }
}

void px_cpu_attention_bwd(float *dqkv, const float *dout, const float *out, const float *lse,
                          const float *probs, const float *qkv, int64_t S, int64_t B,
                          int64_t NH, int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    float scale = 1.0f / sqrtf((float)HD);
    memset(dqkv, 0, (size_t)(S * B * row) * sizeof *dqkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            for (int64_t i = 0; i < S; i++) {
                const float *q = qkv + (i * B + b) * row + h * HD;
                float *dq = dqkv + (i * B + b) * row + h * HD;
                const float *go = dout + (i * B + b) * NH * HD + h * HD;
                const float *o = out + (i * B + b) * NH * HD + h * HD;
                float L = lse[(b * NH + h) * S + i];
                /* D_i = dO_i . O_i = sum_j P_ij dP_ij (softmax backward) */
                float D = 0.0f;
                for (int64_t e = 0; e < HD; e++)
                    D += go[e] * o[e];
                for (int64_t j = 0; j <= i; j++) {
                    const float *k = qkv + (j * B + b) * row + (NH + kh) * HD;
                    const float *v = qkv + (j * B + b) * row + (NH + NKV + kh) * HD;
                    float pij;
                    if (probs) {
                        pij = probs[((b * NH + h) * S + i) * S + j];
                    } else {
                        float d = 0.0f;
                        for (int64_t e = 0; e < HD; e++)
                            d += q[e] * k[e];
                        pij = expf(d * scale - L);
                    }
                    float dp = 0.0f;
                    for (int64_t e = 0; e < HD; e++)
                        dp += go[e] * v[e];
                    float ds = pij * (dp - D) * scale;
                    float *dk = dqkv + (j * B + b) * row + (NH + kh) * HD;
                    float *dv = dqkv + (j * B + b) * row + (NH + NKV + kh) * HD;
                    for (int64_t e = 0; e < HD; e++) {
                        dq[e] += ds * k[e];
                        dk[e] += ds * q[e];
                        dv[e] += pij * go[e];
                    }
                }
            }
        }
}

/* ---- context-parallel attention ------------------------------------------------ */

void px_cpu_attention_kv_fwd(float *out, float *lse, const float *q, const int32_t *qpos,
                             const float *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                             int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    float scale = 1.0f / sqrtf((float)HD);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            for (int64_t i = 0; i < Sq; i++) {
                const float *qi = q + (i * B + b) * row + h * HD;
                float *o = out + (i * B + b) * NH * HD + h * HD;
                float mx = -INFINITY, sum = 0.0f;
                int64_t last = qpos[i] < Skv ? qpos[i] : Skv - 1;
                memset(o, 0, (size_t)HD * sizeof *o);
                for (int64_t j = 0; j <= last; j++) { /* online softmax, as above */
                    const float *k = kv + (j * B + b) * row + (NH + kh) * HD;
                    const float *v = kv + (j * B + b) * row + (NH + NKV + kh) * HD;
                    float d = 0.0f;
                    for (int64_t e = 0; e < HD; e++)
                        d += qi[e] * k[e];
                    d *= scale;
                    if (d > mx) {
                        float r = expf(mx - d);
                        sum *= r;
                        for (int64_t e = 0; e < HD; e++)
                            o[e] *= r;
                        mx = d;
                    }
                    float w = expf(d - mx);
                    sum += w;
                    for (int64_t e = 0; e < HD; e++)
                        o[e] += w * v[e];
                }
                float inv = 1.0f / sum;
                for (int64_t e = 0; e < HD; e++)
                    o[e] *= inv;
                lse[(b * NH + h) * Sq + i] = mx + logf(sum);
            }
        }
}

void px_cpu_attention_kv_bwd(float *dq, float *dkv, const float *dout, const float *out,
                             const float *lse, const float *q, const int32_t *qpos,
                             const float *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                             int64_t NKV, int64_t HD)
{
    int64_t row = (NH + 2 * NKV) * HD, group = NH / NKV;
    float scale = 1.0f / sqrtf((float)HD);
    memset(dq, 0, (size_t)(Sq * B * row) * sizeof *dq);
    memset(dkv, 0, (size_t)(Skv * B * row) * sizeof *dkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < NH; h++) {
            int64_t kh = h / group;
            for (int64_t i = 0; i < Sq; i++) {
                const float *qi = q + (i * B + b) * row + h * HD;
                float *dqi = dq + (i * B + b) * row + h * HD;
                const float *go = dout + (i * B + b) * NH * HD + h * HD;
                const float *o = out + (i * B + b) * NH * HD + h * HD;
                float L = lse[(b * NH + h) * Sq + i];
                float D = 0.0f;
                for (int64_t e = 0; e < HD; e++)
                    D += go[e] * o[e];
                int64_t last = qpos[i] < Skv ? qpos[i] : Skv - 1;
                for (int64_t j = 0; j <= last; j++) {
                    const float *k = kv + (j * B + b) * row + (NH + kh) * HD;
                    const float *v = kv + (j * B + b) * row + (NH + NKV + kh) * HD;
                    float d = 0.0f, dp = 0.0f;
                    for (int64_t e = 0; e < HD; e++) {
                        d += qi[e] * k[e];
                        dp += go[e] * v[e];
                    }
                    float pij = expf(d * scale - L);
                    float ds = pij * (dp - D) * scale;
                    float *dk = dkv + (j * B + b) * row + (NH + kh) * HD;
                    float *dv = dkv + (j * B + b) * row + (NH + NKV + kh) * HD;
                    for (int64_t e = 0; e < HD; e++) {
                        dqi[e] += ds * k[e];
                        dk[e] += ds * qi[e];
                        dv[e] += pij * go[e];
                    }
                }
            }
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

void px_cpu_moe_router_fwd(float *probs, int32_t *idx, float *gate, const float *logits,
                           int64_t T, int64_t E, int64_t k)
{
    for (int64_t t = 0; t < T; t++) {
        const float *l = logits + t * E;
        float *p = probs + t * E;
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
        /* k passes of arg-max over the experts not taken yet: E is small, and
         * a strict > keeps the lower index on ties. */
        for (int64_t j = 0; j < k; j++) {
            int64_t best = -1;
            for (int64_t e = 0; e < E; e++) {
                bool taken = false;
                for (int64_t i = 0; i < j; i++)
                    taken = taken || idx[t * k + i] == e;
                if (!taken && (best < 0 || p[e] > p[best]))
                    best = e;
            }
            idx[t * k + j] = (int32_t)best;
            gate[t * k + j] = p[best];
        }
    }
}

void px_cpu_moe_router_bwd(float *dlogits, const float *probs, const int32_t *idx,
                           const float *dgate, int64_t T, int64_t E, int64_t k)
{
    for (int64_t t = 0; t < T; t++) {
        const float *p = probs + t * E;
        float *d = dlogits + t * E;
        double s = 0.0; /* sum_e p dp: only the chosen experts have dp != 0 */
        for (int64_t j = 0; j < k; j++)
            s += (double)p[idx[t * k + j]] * dgate[t * k + j];
        for (int64_t e = 0; e < E; e++)
            d[e] = (float)(-p[e] * s);
        for (int64_t j = 0; j < k; j++) {
            int64_t e = idx[t * k + j];
            d[e] += p[e] * dgate[t * k + j];
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
