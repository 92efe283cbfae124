/* test_kernels — every px_cpu_* backward against central finite differences
 * of its forward, on random data (seed printed), through a random projection
 * L = sum(r * y).  Plus: the attention probabilities path equals the
 * recomputing path, the context-parallel attention over split queries equals
 * the unsplit one, the vocabulary-parallel cross-entropy over two shards
 * equals the unsplit one, AdamW matches its formula, and the MoE router
 * (top-k, its backward) and token permutation kernels do what the engine
 * relies on. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "px_kernels_cpu.h"
#include "px_test.h"

static uint64_t rng_state = 20261130;

static float frand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 40) / 8388608.0 - 1.0);
}

static float *randv(int64_t n)
{
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++)
        v[i] = frand();
    return v;
}

static double dot(const float *a, const float *b, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* The operator under test: y = f(x), projected on r. */
typedef double (*loss_fn)(void);

/* Compares analytic[i] with the central difference of loss() in x[i], for
 * `count` indices spread over x. */
static void fd_check(const char *name, float *x, int64_t n, const float *analytic, loss_fn loss,
                     int count)
{
    const float eps = 1e-2f;
    int bad = 0;
    for (int c = 0; c < count; c++) {
        int64_t i = (int64_t)((double)c / count * (double)n);
        float keep = x[i];
        x[i] = keep + eps;
        double lp = loss();
        x[i] = keep - eps;
        double lm = loss();
        x[i] = keep;
        double num = (lp - lm) / (2.0 * eps);
        if (!(fabs(num - analytic[i]) <= 2e-3 + 2e-2 * fabs(num))) {
            if (bad++ < 3)
                fprintf(stderr, "%s[%lld]: analytic %.6g numeric %.6g\n", name, (long long)i,
                        analytic[i], num);
        }
    }
    CHECK_MSG(bad == 0, "%s: %d of %d gradients off", name, bad, count);
}

/* ---- shared problem sizes ---- */
enum { S = 6, B = 2, T = S * B, C = 16, NH = 4, NKV = 2, HD = 8, F = 12, V = 10 };
#define QKV ((NH + 2 * NKV) * HD)

static float *g_x, *g_w, *g_b, *g_r, *g_y, *g_tmp1, *g_tmp2;

static double l_rmsnorm(void)
{
    px_cpu_rmsnorm_fwd(g_y, g_tmp1, g_x, g_w, T, C, 1e-5f);
    return dot(g_y, g_r, T * C);
}

static double l_layernorm(void)
{
    px_cpu_layernorm_fwd(g_y, g_tmp1, g_tmp2, g_x, g_w, g_b, T, C, 1e-5f);
    return dot(g_y, g_r, T * C);
}

static double l_matmul(void)
{
    px_cpu_matmul_fwd(g_y, g_x, g_w, g_b, T, C, F);
    return dot(g_y, g_r, T * F);
}

static double l_rope(void)
{
    memcpy(g_y, g_x, sizeof(float) * T * QKV);
    px_rope rope = px_rope_plain(10000.0);
    px_cpu_rope_fwd(g_y, S, B, NH, NKV, HD, 3, &rope);
    return dot(g_y, g_r, T * QKV);
}

static double l_attention(void)
{
    px_cpu_attention_fwd(g_y, g_tmp1, NULL, g_x, S, B, NH, NKV, HD);
    return dot(g_y, g_r, T * NH * HD);
}

static double l_swiglu(void)
{
    px_cpu_swiglu_fwd(g_y, g_x, T, F);
    return dot(g_y, g_r, T * F);
}

static double l_gelu(void)
{
    px_cpu_gelu_fwd(g_y, g_x, T * F);
    return dot(g_y, g_r, T * F);
}

static int32_t g_tok[T];

static double l_embedding(void)
{
    px_cpu_embedding_fwd(g_y, g_tok, g_w, T, C, 2, 2 + V);
    px_cpu_positions_fwd(g_y, g_b, S, B, C, 1);
    return dot(g_y, g_r, T * C);
}

static double l_xent(void)
{
    float mx[T], se[T], tl[T], loss[T];
    px_cpu_xent_max_fwd(mx, g_x, T, V);
    px_cpu_xent_sumexp_fwd(se, tl, g_x, mx, g_tok, T, V, 0);
    px_cpu_xent_loss_fwd(loss, mx, se, tl, T);
    double s = 0.0;
    for (int t = 0; t < T; t++)
        s += loss[t];
    return s;
}

/* MoE router: L = sum_t sum_j gate[t, j] r[t, idx[t, j]] (the gradient of a
 * gate is then r at its expert). */
enum { ME = 6, MK = 2 };
static float *g_rr;
static px_router g_router;

static double l_router(void)
{
    float probs[T * ME], gate[T * MK];
    int32_t idx[T * MK];
    px_cpu_moe_router_fwd(probs, idx, gate, g_x, T, ME, MK, &g_router);
    double s = 0.0;
    for (int t = 0; t < T; t++)
        for (int j = 0; j < MK; j++)
            s += (double)gate[t * MK + j] * g_rr[t * ME + idx[t * MK + j]];
    return s;
}

/* The router options against the rule written out per token: scores
 * (softmax or sigmoid), the groups' top-2 sums keeping topk_group of them,
 * the k largest scores inside, gates renormalised over the k and scaled;
 * and the backward through all of it by finite differences. */
static void check_router_variant(const px_router *r, const char *what)
{
    g_router = *r;
    float probs[T * ME], gate[T * MK], dgate[T * MK], dl[T * ME];
    int32_t idx[T * MK];
    px_cpu_moe_router_fwd(probs, idx, gate, g_x, T, ME, MK, r);
    int G = r->n_group > 1 ? r->n_group : 1, per = ME / G, ok = 1;
    for (int t = 0; t < T; t++) {
        const float *l = g_x + t * ME;
        double sc[ME], mx = l[0], z = 0.0;
        for (int e = 1; e < ME; e++)
            mx = fmax(mx, l[e]);
        for (int e = 0; e < ME; e++)
            z += exp(l[e] - mx);
        for (int e = 0; e < ME; e++)
            sc[e] = r->score == PX_ROUTER_SIGMOID ? 1.0 / (1.0 + exp(-l[e])) : exp(l[e] - mx) / z;
        /* groups kept: those with fewer than topk_group groups above them */
        int keep[ME];
        for (int e = 0; e < ME; e++) {
            double gs[PX_ROUTER_MAX_GROUPS];
            for (int g = 0; g < G; g++) {
                double a = -1.0, b = -1.0;
                for (int f = g * per; f < (g + 1) * per; f++)
                    if (sc[f] > a) { b = a; a = sc[f]; } else if (sc[f] > b) { b = sc[f]; }
                gs[g] = a + b;
            }
            int above = 0;
            for (int g = 0; g < G; g++)
                above += gs[g] > gs[e / per];
            keep[e] = G == 1 || above < r->topk_group;
        }
        double sum = 0.0;
        for (int j = 0; j < MK; j++)
            sum += sc[idx[t * MK + j]];
        for (int j = 0; j < MK; j++) {
            int e = idx[t * MK + j], larger = 0;
            for (int f = 0; f < ME; f++)
                larger += keep[f] && sc[f] > sc[e];
            double want = (r->renorm ? sc[e] / sum : sc[e]) * r->scale;
            ok &= keep[e] && larger == j && fabs(gate[t * MK + j] - want) <= 1e-6 * fabs(want);
            dgate[t * MK + j] = g_rr[t * ME + e];
        }
    }
    CHECK_MSG(ok, "moe router %s: picks or gates differ from the rule", what);
    px_cpu_moe_router_bwd(dl, probs, idx, dgate, T, ME, MK, r);
    fd_check(what, g_x, T * ME, dl, l_router, 40);
}

static void check_router_variants(void)
{
    px_router mixtral = px_router_softmax_topk(); /* norm_topk_prob */
    mixtral.renorm = 1;
    check_router_variant(&mixtral, "moe_router renormalised");
    px_router dsv3 = {PX_ROUTER_SIGMOID, 1, 3, 2, 2.5f}; /* DeepSeek-V3's, 3 groups of 2 */
    check_router_variant(&dsv3, "moe_router sigmoid, groups, scaled");
    px_router sig = {PX_ROUTER_SIGMOID, 0, 1, 1, 1.0f};
    check_router_variant(&sig, "moe_router sigmoid");
}

static void check_moe(void)
{
    g_x = randv(T * ME);
    for (int i = 0; i < T * ME; i++)
        g_x[i] *= 3.0f; /* spread logits: no near-ties within the FD step */
    g_rr = randv(T * ME);
    g_router = px_router_softmax_topk();
    float probs[T * ME], gate[T * MK], dgate[T * MK], dl[T * ME];
    int32_t idx[T * MK];
    px_cpu_moe_router_fwd(probs, idx, gate, g_x, T, ME, MK, &g_router);
    int sel_ok = 1;
    for (int t = 0; t < T; t++) {
        double sum = 0.0;
        for (int e = 0; e < ME; e++)
            sum += probs[t * ME + e];
        CHECK_CLOSE(sum, 1.0, 1e-5, 0.0);
        /* idx[t, 0..k) are the k largest probabilities, descending */
        for (int j = 0; j < MK; j++) {
            int e = idx[t * MK + j];
            sel_ok &= gate[t * MK + j] == probs[t * ME + e];
            int larger = 0;
            for (int f = 0; f < ME; f++)
                larger += probs[t * ME + f] > probs[t * ME + e];
            sel_ok &= larger == j;
        }
        for (int j = 0; j < MK; j++)
            dgate[t * MK + j] = g_rr[t * ME + idx[t * MK + j]];
    }
    CHECK_MSG(sel_ok, "moe router: top-k selection or gates wrong");
    px_cpu_moe_router_bwd(dl, probs, idx, dgate, T, ME, MK, &g_router);
    fd_check("moe_router", g_x, T * ME, dl, l_router, 40);
    check_router_variants();

    /* Permutation: rows sorted by expert, as the engine dispatches them; a
     * fake expert e scales its rows by (1 + e). */
    enum { N = T * MK };
    int32_t rows[N], slots[N];
    int n = 0;
    for (int e = 0; e < ME; e++)
        for (int t = 0; t < T; t++)
            for (int j = 0; j < MK; j++)
                if (idx[t * MK + j] == e) {
                    rows[n] = t;
                    slots[n++] = t * MK + j;
                }
    CHECK(n == N);
    float *x = randv(T * C), *dout = randv(T * C);
    float *xs = malloc(sizeof(float) * N * C), *out = calloc(T * C, sizeof(float));
    float dg[N];
    px_cpu_moe_permute(xs, x, rows, NULL, NULL, N, C);
    for (int a = 0; a < N; a++)
        for (int c = 0; c < C; c++)
            xs[a * C + c] *= 1.0f + (float)idx[slots[a]];
    px_cpu_moe_unpermute(out, xs, rows, gate, slots, N, C);
    px_cpu_moe_gate_bwd(dg, dout, xs, rows, slots, N, C);
    double worst = 0.0, worst_g = 0.0;
    for (int t = 0; t < T; t++) {
        for (int c = 0; c < C; c++) {
            double want = 0.0;
            for (int j = 0; j < MK; j++)
                want += gate[t * MK + j] * (1.0 + idx[t * MK + j]) * x[t * C + c];
            worst = fmax(worst, fabs(out[t * C + c] - want));
        }
        for (int j = 0; j < MK; j++)
            worst_g = fmax(worst_g, fabs(dg[t * MK + j] - (1.0 + idx[t * MK + j]) *
                                                             dot(dout + t * C, x + t * C, C)));
    }
    CHECK_MSG(worst < 1e-5, "moe combine: worst difference %g", worst);
    CHECK_MSG(worst_g < 1e-4, "moe gate gradient: worst difference %g", worst_g);
    px_cpu_moe_permute(xs, dout, rows, gate, slots, N, C); /* gate-scaled rows */
    CHECK_CLOSE(xs[3 * C + 5], gate[slots[3]] * dout[rows[3] * C + 5], 1e-6, 0.0);
    free(x);
    free(dout);
    free(xs);
    free(out);
    free(g_rr);
    free(g_x);
}

/* RoPE against the rotation written out: pair (i, i + HD/2) of a head at
 * position p turns by p * theta^(-2i/HD).  One head (q) of width 16 at
 * positions 0..S-1 from pos0; theta as Llama 3's 500000, which a kernel that
 * kept 10000 fails by whole radians. */
static void check_rope_theta(void)
{
    enum { RS = 5, RHD = 16 };
    const double theta = 500000.0;
    const int64_t pos0 = 1000;
    float x[RS * 3 * RHD], y[RS * 3 * RHD];
    for (int i = 0; i < RS * 3 * RHD; i++)
        x[i] = y[i] = frand();
    px_rope rope = px_rope_plain(theta);
    px_cpu_rope_fwd(y, RS, 1, 1, 1, RHD, pos0, &rope);
    double worst = 0.0;
    for (int s = 0; s < RS; s++)
        for (int head = 0; head < 2; head++) /* q and k; v stays */
            for (int i = 0; i < RHD / 2; i++) {
                const float *xv = x + s * 3 * RHD + head * RHD;
                const float *yv = y + s * 3 * RHD + head * RHD;
                double a = (double)(pos0 + s) / pow(theta, (2.0 * i) / RHD);
                double e0 = xv[i] * cos(a) - xv[i + RHD / 2] * sin(a);
                double e1 = xv[i] * sin(a) + xv[i + RHD / 2] * cos(a);
                worst = fmax(worst, fmax(fabs(e0 - yv[i]), fabs(e1 - yv[i + RHD / 2])));
            }
    /* |x| < 1: fp32 products of two terms, a few ulps of 1 */
    CHECK_MSG(worst < 1e-6, "rope theta %g: worst difference %g", theta, worst);
}

/* Llama 3.1's frequencies (theta 500000, head_dim 128, rope_scaling llama3:
 * factor 8, low 1, high 4, original 8192) against transformers 5.25's
 * _compute_llama3_parameters, printed to 10 digits (it computes in fp32:
 * 2e-6 relative covers its rounding): unchanged (i <= 28), blended (29..35)
 * and divided by 8 (i >= 36). */
static void check_rope_llama3(void)
{
    static const struct {
        int i;
        double f;
    } hf[] = {{0, 1.000000000e+00},  {20, 1.656044088e-02}, {28, 3.211446106e-03},
              {29, 2.166570630e-03}, {30, 1.371893683e-03}, {32, 5.248460220e-04},
              {34, 1.785077911e-04}, {35, 9.556212171e-05}, {36, 7.784655463e-05},
              {40, 3.428102355e-05}, {50, 4.411534519e-06}, {63, 3.068925878e-07}};
    px_rope r = px_rope_plain(500000.0);
    r.scale = PX_ROPE_SCALE_LLAMA3;
    r.factor = 8.0;
    r.low_freq_factor = 1.0;
    r.high_freq_factor = 4.0;
    r.original_max_positions = 8192.0;
    double worst = 0.0;
    for (size_t j = 0; j < sizeof hf / sizeof hf[0]; j++)
        worst = fmax(worst, fabs(px_rope_inv_freq(&r, hf[j].i, 128) / hf[j].f - 1.0));
    CHECK_MSG(worst < 2e-6, "llama3 inverse frequencies: worst relative difference %g", worst);
}

/* Interleaved pairs: (2i, 2i+1) turn by p * theta^(-2i/HD), as DeepSeek's
 * apply_rotary_pos_emb_interleave does before it de-interleaves. */
static void check_rope_interleaved(void)
{
    enum { RS = 3, RHD = 8 };
    const int64_t pos0 = 7;
    float x[RS * 3 * RHD], y[RS * 3 * RHD];
    for (int i = 0; i < RS * 3 * RHD; i++)
        x[i] = y[i] = frand();
    px_rope rope = px_rope_plain(10000.0);
    rope.interleaved = 1;
    px_cpu_rope_fwd(y, RS, 1, 1, 1, RHD, pos0, &rope);
    double worst = 0.0;
    for (int s = 0; s < RS; s++)
        for (int i = 0; i < RHD / 2; i++) {
            const float *xv = x + s * 3 * RHD, *yv = y + s * 3 * RHD;
            double a = (double)(pos0 + s) / pow(10000.0, (2.0 * i) / RHD);
            double e0 = xv[2 * i] * cos(a) - xv[2 * i + 1] * sin(a);
            double e1 = xv[2 * i] * sin(a) + xv[2 * i + 1] * cos(a);
            worst = fmax(worst, fmax(fabs(e0 - yv[2 * i]), fabs(e1 - yv[2 * i + 1])));
        }
    CHECK_MSG(worst < 1e-6, "interleaved rope: worst difference %g", worst);
}

int main(void)
{
    fprintf(stderr, "test_kernels: seed %llu\n", (unsigned long long)rng_state);
    g_r = randv(T * QKV * 4);
    g_y = malloc(sizeof(float) * T * QKV * 4);
    g_tmp1 = malloc(sizeof(float) * T * QKV * 4);
    g_tmp2 = malloc(sizeof(float) * T * QKV * 4);

    /* RMSNorm */
    g_x = randv(T * C);
    g_w = randv(C);
    {
        float *dx = calloc(T * C, sizeof *dx), *dw = calloc(C, sizeof *dw);
        l_rmsnorm();
        px_cpu_rmsnorm_bwd(dx, dw, g_r, g_x, g_w, g_tmp1, T, C);
        fd_check("rmsnorm dx", g_x, T * C, dx, l_rmsnorm, 24);
        fd_check("rmsnorm dw", g_w, C, dw, l_rmsnorm, C);
        free(dx);
        free(dw);
    }
    /* LayerNorm */
    g_b = randv(C);
    {
        float *dx = calloc(T * C, sizeof *dx), *dw = calloc(C, sizeof *dw),
              *db = calloc(C, sizeof *db);
        l_layernorm();
        px_cpu_layernorm_bwd(dx, dw, db, g_r, g_x, g_w, g_tmp1, g_tmp2, T, C);
        fd_check("layernorm dx", g_x, T * C, dx, l_layernorm, 24);
        fd_check("layernorm dw", g_w, C, dw, l_layernorm, C);
        fd_check("layernorm db", g_b, C, db, l_layernorm, C);
        free(dx);
        free(dw);
        free(db);
    }
    free(g_w);
    free(g_b);
    /* matmul with bias: x [T, C], W [F, C], b [F] */
    g_w = randv(F * C);
    g_b = randv(F);
    {
        float *dx = malloc(sizeof(float) * T * C), *dw = calloc(F * C, sizeof *dw),
              *db = calloc(F, sizeof *db);
        l_matmul();
        px_cpu_matmul_bwd(dx, dw, db, g_r, g_x, g_w, T, C, F);
        fd_check("matmul dinp", g_x, T * C, dx, l_matmul, 24);
        fd_check("matmul dweight", g_w, F * C, dw, l_matmul, 24);
        fd_check("matmul dbias", g_b, F, db, l_matmul, F);
        /* dweight accumulates: a second call doubles it */
        float w0 = dw[5];
        px_cpu_matmul_bwd(NULL, dw, NULL, g_r, g_x, g_w, T, C, F);
        CHECK_CLOSE(dw[5], 2.0f * w0, 1e-5, 1e-6);
        free(dx);
        free(dw);
        free(db);
    }
    free(g_x);
    /* RoPE and attention on qkv [S, B, (NH + 2 NKV) HD] */
    g_x = randv(T * QKV);
    {
        float *d = malloc(sizeof(float) * T * QKV);
        memcpy(d, g_r, sizeof(float) * T * QKV);
        px_rope rope = px_rope_plain(10000.0);
        px_cpu_rope_bwd(d, S, B, NH, NKV, HD, 3, &rope);
        fd_check("rope", g_x, T * QKV, d, l_rope, 40);
        /* v heads are untouched */
        l_rope();
        CHECK(g_y[(NH + NKV) * HD] == g_x[(NH + NKV) * HD]);

        float *out = malloc(sizeof(float) * T * NH * HD), *lse = malloc(sizeof(float) * B * NH * S);
        float *probs = malloc(sizeof(float) * B * NH * S * S);
        float *d2 = malloc(sizeof(float) * T * QKV);
        px_cpu_attention_fwd(out, lse, probs, g_x, S, B, NH, NKV, HD);
        px_cpu_attention_bwd(d, g_r, out, lse, NULL, g_x, S, B, NH, NKV, HD);
        px_cpu_attention_bwd(d2, g_r, out, lse, probs, g_x, S, B, NH, NKV, HD);
        fd_check("attention", g_x, T * QKV, d, l_attention, 48);
        double worst = 0.0;
        for (int i = 0; i < T * QKV; i++)
            worst = fmax(worst, fabs(d[i] - d2[i]));
        CHECK_MSG(worst < 1e-5, "stored vs recomputed probabilities: %g", worst);
        /* causal: the first query sees only itself, so its output is its v */
        for (int e = 0; e < HD; e++)
            CHECK_CLOSE(out[e], g_x[(NH + NKV) * HD + e], 1e-5, 1e-6);
        /* probability rows sum to one */
        double s = 0.0;
        for (int j = 0; j < S; j++)
            s += probs[(S - 1) * S + j];
        CHECK_CLOSE(s, 1.0, 1e-5, 0.0);
        /* Context parallelism: queries split over two "ranks" ({0, 3, 5} and
         * {1, 2, 4}) against the full k/v give the same rows, and the two
         * ranks' k/v gradients sum to the unsplit one. */
        {
            const int32_t pos[2][3] = {{0, 3, 5}, {1, 2, 4}};
            float *qs = malloc(sizeof(float) * 3 * B * QKV), *os = malloc(sizeof(float) * 3 * B * NH * HD);
            float *ls = malloc(sizeof(float) * B * NH * 3), *gs = malloc(sizeof(float) * 3 * B * NH * HD);
            float *dqs = malloc(sizeof(float) * 3 * B * QKV), *dkv = malloc(sizeof(float) * T * QKV);
            float *dkv_sum = calloc(T * QKV, sizeof *dkv_sum);
            double worst_o = 0.0, worst_dq = 0.0, worst_dkv = 0.0;
            for (int r = 0; r < 2; r++) {
                for (int i = 0; i < 3; i++)
                    for (int bb = 0; bb < B; bb++) {
                        memcpy(qs + (i * B + bb) * QKV, g_x + (pos[r][i] * B + bb) * QKV,
                               sizeof(float) * QKV);
                        memcpy(gs + (i * B + bb) * NH * HD, g_r + (pos[r][i] * B + bb) * NH * HD,
                               sizeof(float) * NH * HD);
                    }
                px_cpu_attention_kv_fwd(os, ls, qs, pos[r], g_x, 3, S, B, NH, NKV, HD);
                px_cpu_attention_kv_bwd(dqs, dkv, gs, os, ls, qs, pos[r], g_x, 3, S, B, NH, NKV, HD);
                for (int i = 0; i < 3; i++)
                    for (int bb = 0; bb < B; bb++) {
                        for (int e = 0; e < NH * HD; e++)
                            worst_o = fmax(worst_o, fabs(os[(i * B + bb) * NH * HD + e] -
                                                         out[(pos[r][i] * B + bb) * NH * HD + e]));
                        for (int e = 0; e < NH * HD; e++) /* q heads */
                            worst_dq = fmax(worst_dq, fabs(dqs[(i * B + bb) * QKV + e] -
                                                           d[(pos[r][i] * B + bb) * QKV + e]));
                    }
                for (int i = 0; i < T * QKV; i++)
                    dkv_sum[i] += dkv[i];
            }
            for (int i = 0; i < T; i++)
                for (int e = NH * HD; e < QKV; e++) /* k and v heads */
                    worst_dkv = fmax(worst_dkv, fabs(dkv_sum[i * QKV + e] - d[i * QKV + e]));
            CHECK_MSG(worst_o < 1e-5, "cp attention output differs by %g", worst_o);
            CHECK_MSG(worst_dq < 1e-5, "cp attention dq differs by %g", worst_dq);
            CHECK_MSG(worst_dkv < 1e-5, "cp attention dk/dv differ by %g", worst_dkv);
            free(qs);
            free(os);
            free(ls);
            free(gs);
            free(dqs);
            free(dkv);
            free(dkv_sum);
        }
        free(out);
        free(lse);
        free(probs);
        free(d2);
        free(d);
    }
    free(g_x);
    /* SwiGLU and GeLU */
    g_x = randv(T * 2 * F);
    {
        float *d = malloc(sizeof(float) * T * 2 * F);
        l_swiglu();
        px_cpu_swiglu_bwd(d, g_r, g_x, T, F);
        fd_check("swiglu", g_x, T * 2 * F, d, l_swiglu, 30);
        px_cpu_gelu_bwd(d, g_r, g_x, T * F);
        fd_check("gelu", g_x, T * F, d, l_gelu, 30);
        free(d);
    }
    free(g_x);
    /* Embedding shard [2, 2 + V) with positions from 1 */
    for (int t = 0; t < T; t++)
        g_tok[t] = (int32_t)(t * 7 % (V + 4)); /* some outside the shard */
    g_w = randv(V * C);
    g_b = randv((S + 1) * C);
    {
        float *dt = calloc(V * C, sizeof *dt), *dp = calloc((S + 1) * C, sizeof *dp);
        px_cpu_embedding_bwd(dt, g_r, g_tok, T, C, 2, 2 + V);
        px_cpu_positions_bwd(dp, g_r, S, B, C, 1);
        fd_check("embedding", g_w, V * C, dt, l_embedding, 40);
        fd_check("positions", g_b, (S + 1) * C, dp, l_embedding, 40);
        l_embedding();
        int out_of_shard = -1;
        for (int t = 0; t < T; t++)
            if (g_tok[t] < 2 || g_tok[t] >= 2 + V)
                out_of_shard = t;
        CHECK(out_of_shard >= 0);
        free(dt);
        free(dp);
    }
    free(g_w);
    free(g_b);
    /* Cross-entropy: gradient, and two vocabulary shards equal the whole */
    g_x = randv(T * V);
    for (int t = 0; t < T; t++)
        g_tok[t] = (int32_t)((t * 3) % V);
    {
        float mx[T], se[T], tl[T], loss[T];
        float *d = malloc(sizeof(float) * T * V);
        px_cpu_xent_max_fwd(mx, g_x, T, V);
        px_cpu_xent_sumexp_fwd(se, tl, g_x, mx, g_tok, T, V, 0);
        px_cpu_xent_loss_fwd(loss, mx, se, tl, T);
        px_cpu_xent_bwd(d, g_x, mx, se, g_tok, 1.0f, T, V, 0);
        fd_check("xent", g_x, T * V, d, l_xent, 40);
        /* shards [0, 4) and [4, 10), combined as the caller's all-reduces would */
        const int v1 = 4;
        float *sh0 = malloc(sizeof(float) * T * v1), *sh1 = malloc(sizeof(float) * T * (V - v1));
        for (int t = 0; t < T; t++) {
            memcpy(sh0 + t * v1, g_x + t * V, sizeof(float) * v1);
            memcpy(sh1 + t * (V - v1), g_x + t * V + v1, sizeof(float) * (V - v1));
        }
        float m0[T], m1[T], s0[T], s1[T], t0[T], t1[T], l2[T];
        px_cpu_xent_max_fwd(m0, sh0, T, v1);
        px_cpu_xent_max_fwd(m1, sh1, T, V - v1);
        for (int t = 0; t < T; t++)
            m0[t] = m1[t] = fmaxf(m0[t], m1[t]);
        px_cpu_xent_sumexp_fwd(s0, t0, sh0, m0, g_tok, T, v1, 0);
        px_cpu_xent_sumexp_fwd(s1, t1, sh1, m1, g_tok, T, V - v1, v1);
        for (int t = 0; t < T; t++) {
            s0[t] += s1[t];
            t0[t] += t1[t];
        }
        px_cpu_xent_loss_fwd(l2, m0, s0, t0, T);
        for (int t = 0; t < T; t++)
            CHECK_CLOSE(l2[t], loss[t], 1e-5, 1e-6);
        px_cpu_xent_bwd(sh1, sh1, m0, s0, g_tok, 1.0f, T, V - v1, v1); /* in place */
        for (int t = 0; t < T; t++)
            for (int v = v1; v < V; v++)
                CHECK_CLOSE(sh1[t * (V - v1) + v - v1], d[t * V + v], 1e-5, 1e-6);
        free(sh0);
        free(sh1);
        free(d);
    }
    free(g_x);
    /* AdamW: one element by hand */
    {
        float p = 0.5f, g = 0.2f, m = 0.1f, v = 0.01f;
        float pe = p, me = 0.9f * m + 0.1f * g, ve = 0.95f * v + 0.05f * g * g;
        float mh = me / (1.0f - 0.9f * 0.9f), vh = ve / (1.0f - 0.95f * 0.95f);
        pe -= 1e-2f * (mh / (sqrtf(vh) + 1e-8f) + 0.1f * p);
        px_cpu_adamw_step(&p, &g, &m, &v, 1, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 2);
        CHECK_CLOSE(p, pe, 1e-6, 1e-7);
        CHECK_CLOSE(m, me, 1e-6, 0.0);
        CHECK_CLOSE(v, ve, 1e-6, 0.0);
    }
    /* bias and residual */
    {
        float x[6] = {1, 2, 3, 4, 5, 6}, b[3] = {1, -1, 2}, db[3] = {0, 0, 0};
        px_cpu_bias_add_fwd(x, b, 2, 3);
        CHECK(x[0] == 2 && x[4] == 4 && x[5] == 8);
        px_cpu_bias_add_bwd(db, x, 2, 3);
        CHECK(db[0] == 2 + 5 && db[2] == 5 + 8);
        float a[3] = {1, 2, 3}, c[3] = {3, 2, 1}, o[3], da[3] = {1, 1, 1}, dc[3] = {0, 0, 0};
        px_cpu_residual_fwd(o, a, c, 3);
        CHECK(o[0] == 4 && o[1] == 4 && o[2] == 4);
        px_cpu_residual_bwd(da, dc, a, 3);
        CHECK(da[2] == 4 && dc[2] == 3);
    }
    check_moe();
    check_rope_theta();
    check_rope_llama3();
    check_rope_interleaved();
    free(g_r);
    free(g_y);
    free(g_tmp1);
    free(g_tmp2);
    return px_test_result("kernels");
}
