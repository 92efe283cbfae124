/* test_attention — the tiled attention kernels (px_cpu_attention_fwd/_bwd,
 * px_cpu_attention_kv_fwd/_bwd) against a straightforward O(S^2) reference
 * written here in double precision, on random data, for shapes that cut the
 * tiles unevenly (S not a multiple of the tile, one row, several tiles), GQA
 * ratios 1, 2 and 4, head dims 16, 32 and 64, the stored-probabilities path,
 * and context-parallel query shards with zigzag (non-monotonic) positions.
 * Every output and gradient must agree within 1e-5 relative to the largest
 * reference value of its array. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_kernels_cpu.h"
#include "px_test.h"

static uint64_t rng_state = 4242;

static float frand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / 8388608.0 - 1.0);
}

static float *randv(int64_t n, float amp)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = amp * frand();
    return v;
}

typedef struct {
    int64_t S, B, NH, NKV, HD;
} shape;

/* Reference: query rows of q (Sq of them, positions qpos or 0..Sq-1) against
 * the keys/values of kv (Skv rows); gradients of dq's q heads and dkv's k, v
 * heads; everything [rows, B, (NH + 2 NKV) HD] like the kernels. */
static void reference(double *out, double *lse, double *dq, double *dkv, const float *q,
                      const int32_t *qpos, const float *kv, const float *dout, int64_t Sq,
                      int64_t Skv, shape s)
{
    int64_t row = (s.NH + 2 * s.NKV) * s.HD, group = s.NH / s.NKV, HD = s.HD, B = s.B;
    double scale = 1.0 / sqrt((double)HD);
    double *p = malloc((size_t)Skv * sizeof *p);
    memset(dq, 0, (size_t)(Sq * B * row) * sizeof *dq);
    memset(dkv, 0, (size_t)(Skv * B * row) * sizeof *dkv);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < s.NH; h++) {
            int64_t kh = h / group;
            for (int64_t i = 0; i < Sq; i++) {
                const float *qi = q + (i * B + b) * row + h * HD;
                int64_t last = qpos ? (qpos[i] < Skv ? qpos[i] : Skv - 1) : i;
                double mx = -INFINITY, sum = 0.0;
                for (int64_t j = 0; j <= last; j++) {
                    const float *k = kv + (j * B + b) * row + (s.NH + kh) * HD;
                    double d = 0.0;
                    for (int64_t e = 0; e < HD; e++)
                        d += (double)qi[e] * k[e];
                    p[j] = d * scale;
                    mx = fmax(mx, p[j]);
                }
                for (int64_t j = 0; j <= last; j++)
                    sum += exp(p[j] - mx);
                double L = mx + log(sum);
                lse[(b * s.NH + h) * Sq + i] = L;
                double *o = out + (i * B + b) * s.NH * HD + h * HD;
                const float *go = dout + (i * B + b) * s.NH * HD + h * HD;
                for (int64_t e = 0; e < HD; e++)
                    o[e] = 0.0;
                for (int64_t j = 0; j <= last; j++) {
                    const float *v = kv + (j * B + b) * row + (s.NH + s.NKV + kh) * HD;
                    p[j] = exp(p[j] - L);
                    for (int64_t e = 0; e < HD; e++)
                        o[e] += p[j] * v[e];
                }
                double D = 0.0;
                for (int64_t e = 0; e < HD; e++)
                    D += go[e] * o[e];
                for (int64_t j = 0; j <= last; j++) {
                    const float *k = kv + (j * B + b) * row + (s.NH + kh) * HD;
                    const float *v = kv + (j * B + b) * row + (s.NH + s.NKV + kh) * HD;
                    double dp = 0.0;
                    for (int64_t e = 0; e < HD; e++)
                        dp += (double)go[e] * v[e];
                    double ds = p[j] * (dp - D) * scale;
                    double *dqi = dq + (i * B + b) * row + h * HD;
                    double *dk = dkv + (j * B + b) * row + (s.NH + kh) * HD;
                    double *dv = dkv + (j * B + b) * row + (s.NH + s.NKV + kh) * HD;
                    for (int64_t e = 0; e < HD; e++) {
                        dqi[e] += ds * k[e];
                        dk[e] += ds * qi[e];
                        dv[e] += p[j] * go[e];
                    }
                }
            }
        }
    free(p);
}

/* max |got - want| / max |want| */
static double rel_err(const float *got, const double *want, int64_t n)
{
    double diff = 0.0, big = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs((double)got[i] - want[i]));
        big = fmax(big, fabs(want[i]));
    }
    return diff / big;
}

static void check(const char *what, const float *got, const double *want, int64_t n, shape s)
{
    double e = rel_err(got, want, n);
    CHECK_MSG(e < 1e-5, "%s S=%lld B=%lld NH=%lld NKV=%lld HD=%lld: relative error %g", what,
              (long long)s.S, (long long)s.B, (long long)s.NH, (long long)s.NKV,
              (long long)s.HD, e);
}

static void test_full(shape s)
{
    int64_t row = (s.NH + 2 * s.NKV) * s.HD, T = s.S * s.B, O = T * s.NH * s.HD;
    int64_t nl = s.B * s.NH * s.S;
    float *qkv = randv(T * row, 2.0f), *dout = randv(O, 1.0f);
    float *out = malloc((size_t)O * sizeof *out), *lse = malloc((size_t)nl * sizeof *lse);
    float *probs = malloc((size_t)(nl * s.S) * sizeof *probs);
    float *out2 = malloc((size_t)O * sizeof *out2), *lse2 = malloc((size_t)nl * sizeof *lse2);
    float *dqkv = malloc((size_t)(T * row) * sizeof *dqkv);
    float *dqkv2 = malloc((size_t)(T * row) * sizeof *dqkv2);
    double *rout = malloc((size_t)O * sizeof *rout), *rlse = malloc((size_t)nl * sizeof *rlse);
    double *rdq = malloc((size_t)(T * row) * sizeof *rdq);
    double *rdkv = malloc((size_t)(T * row) * sizeof *rdkv);
    reference(rout, rlse, rdq, rdkv, qkv, NULL, qkv, dout, s.S, s.S, s);
    for (int64_t i = 0; i < T * row; i++) /* q heads from rdq, k and v from rdkv */
        rdkv[i] += rdq[i];

    px_cpu_attention_fwd(out, lse, NULL, qkv, s.S, s.B, s.NH, s.NKV, s.HD);
    px_cpu_attention_bwd(dqkv, dout, out, lse, NULL, qkv, s.S, s.B, s.NH, s.NKV, s.HD);
    check("attention out", out, rout, O, s);
    check("attention lse", lse, rlse, nl, s);
    check("attention dqkv", dqkv, rdkv, T * row, s);

    /* the stored-probabilities path: same outputs, rows of P sum to one,
     * zero above the diagonal, and the same gradients from the stored P */
    px_cpu_attention_fwd(out2, lse2, probs, qkv, s.S, s.B, s.NH, s.NKV, s.HD);
    px_cpu_attention_bwd(dqkv2, dout, out2, lse2, probs, qkv, s.S, s.B, s.NH, s.NKV, s.HD);
    check("attention out (probs)", out2, rout, O, s);
    check("attention dqkv (probs)", dqkv2, rdkv, T * row, s);
    double worst_sum = 0.0, above = 0.0;
    for (int64_t r = 0; r < nl; r++) {
        int64_t i = r % s.S;
        double sum = 0.0;
        for (int64_t j = 0; j < s.S; j++) {
            sum += probs[r * s.S + j];
            if (j > i)
                above = fmax(above, fabs(probs[r * s.S + j]));
        }
        worst_sum = fmax(worst_sum, fabs(sum - 1.0));
    }
    CHECK_MSG(worst_sum < 1e-5, "probability rows sum to 1 within %g", worst_sum);
    CHECK_MSG(above == 0.0, "probabilities above the diagonal: %g", above);

    free(qkv), free(dout), free(out), free(lse), free(probs), free(out2), free(lse2);
    free(dqkv), free(dqkv2), free(rout), free(rlse), free(rdq), free(rdkv);
}

/* Context parallelism, zigzag: the sequence in 2 R chunks, this shard holds
 * chunks r and 2R - 1 - r (so its positions jump inside a query tile). */
static void test_cp(shape s, int64_t R, int64_t r)
{
    int64_t row = (s.NH + 2 * s.NKV) * s.HD, chunk = s.S / (2 * R), Sq = 2 * chunk;
    int64_t O = Sq * s.B * s.NH * s.HD, nl = s.B * s.NH * Sq;
    int32_t *qpos = malloc((size_t)Sq * sizeof *qpos);
    for (int64_t i = 0; i < chunk; i++) {
        qpos[i] = (int32_t)(r * chunk + i);
        qpos[chunk + i] = (int32_t)((2 * R - 1 - r) * chunk + i);
    }
    float *kv = randv(s.S * s.B * row, 2.0f), *dout = randv(O, 1.0f);
    float *q = malloc((size_t)(Sq * s.B * row) * sizeof *q);
    for (int64_t i = 0; i < Sq; i++)
        memcpy(q + i * s.B * row, kv + qpos[i] * s.B * row, (size_t)(s.B * row) * sizeof *q);
    float *out = malloc((size_t)O * sizeof *out), *lse = malloc((size_t)nl * sizeof *lse);
    float *dq = malloc((size_t)(Sq * s.B * row) * sizeof *dq);
    float *dkv = malloc((size_t)(s.S * s.B * row) * sizeof *dkv);
    double *rout = malloc((size_t)O * sizeof *rout), *rlse = malloc((size_t)nl * sizeof *rlse);
    double *rdq = malloc((size_t)(Sq * s.B * row) * sizeof *rdq);
    double *rdkv = malloc((size_t)(s.S * s.B * row) * sizeof *rdkv);
    reference(rout, rlse, rdq, rdkv, q, qpos, kv, dout, Sq, s.S, s);
    px_cpu_attention_kv_fwd(out, lse, q, qpos, kv, Sq, s.S, s.B, s.NH, s.NKV, s.HD);
    px_cpu_attention_kv_bwd(dq, dkv, dout, out, lse, q, qpos, kv, Sq, s.S, s.B, s.NH, s.NKV,
                            s.HD);
    check("cp attention out", out, rout, O, s);
    check("cp attention lse", lse, rlse, nl, s);
    check("cp attention dq", dq, rdq, Sq * s.B * row, s);
    check("cp attention dkv", dkv, rdkv, s.S * s.B * row, s);
    free(qpos), free(kv), free(dout), free(q), free(out), free(lse), free(dq), free(dkv);
    free(rout), free(rlse), free(rdq), free(rdkv);
}

int main(void)
{
    /* S, B, NH, NKV, HD */
    static const shape full[] = {
        {1, 1, 2, 2, 16},    /* one row */
        {63, 2, 4, 4, 32},   /* just under one tile, MHA */
        {100, 2, 4, 2, 16},  /* two uneven tiles, GQA 2 */
        {130, 1, 4, 1, 64},  /* three tiles, GQA 4 (MQA-like) */
        {200, 1, 8, 2, 32},  /* four tiles, GQA 4 */
    };
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        test_full(full[i]);
    /* context-parallel shards: 2 ranks (chunks of 36 / 52), 4 ranks (chunks of 20) */
    test_cp((shape){144, 2, 4, 2, 32}, 2, 0);
    test_cp((shape){208, 1, 4, 4, 64}, 2, 1);
    test_cp((shape){160, 1, 8, 2, 16}, 4, 2);
    return px_test_result("exec_attention");
}
