/* px_calib_kernels.c — timing the executor's non-GEMM kernels (see
 * px_calib_kernels.h). */
#include "px_calib_kernels.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "px_kernels_cpu.h"

/* The representative layer: 512 tokens of a hidden-256 model (the loop
 * test's small models), 4 query heads of 64, 2 kv heads, GeLU f = 4h,
 * SwiGLU f = 8h/3 rounded to 16, a 2048-entry vocabulary shard, and a
 * 1M-parameter AdamW slice. */
enum { K_T = 512, K_C = 256, K_NH = 4, K_NKV = 2, K_HD = 64, K_F_GELU = 1024,
       K_F_SWIGLU = 688, K_V = 2048, K_ADAM_N = 1 << 20 };

typedef struct {
    float *x, *y, *z, *w;      /* [T, C] activations and gradients (x, w: "big") */
    float *big1, *big2;        /* [T, max(2F, V)]: gate-up, logits, AdamW params/grads */
    float *adam_m, *adam_v;    /* AdamW moments */
    float *qkv, *dqkv;         /* [T, (NH + 2 NKV) HD] */
    float *stat1, *stat2, *stat3; /* [T] per-row statistics */
    float *wt, *dwt, *bias;    /* [C] norm weight, its gradient, a bias */
    int32_t *tok;              /* [T] targets */
    int64_t adam_step; /* AdamW steps run so far (the step number counts) */
} bufs;

static float *fill(size_t n, float base)
{
    float *p = malloc(n * sizeof *p);
    if (p)
        for (size_t i = 0; i < n; i++)
            p[i] = base + 0.001f * (float)(i % 1000);
    return p;
}

/* Activations as training sees them: normal, mean 0, standard deviation
 * `std` (Box-Muller over a 32-bit LCG).  The data matters: libm's tanhf and
 * expf take longer paths for |x| of order 1 than near 0, so a GeLU timed on
 * near-constant inputs runs twice as fast as in a real step. */
static float *fill_normal(size_t n, float std, uint32_t seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p)
        return NULL;
    uint32_t r = seed;
    for (size_t i = 0; i < n; i++) {
        r = r * 1664525u + 1013904223u;
        double u1 = ((double)(r >> 8) + 1.0) / 16777217.0;
        r = r * 1664525u + 1013904223u;
        double u2 = (double)(r >> 8) / 16777216.0;
        p[i] = (float)(std * sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
    }
    return p;
}

typedef void (*group_fn)(bufs *b);

px_calib_ew_shape px_calib_kernels_shape(void)
{
    px_calib_ew_shape s = {K_T, K_C, K_F_GELU, K_F_SWIGLU, K_NH, K_NKV, K_HD, K_V, K_ADAM_N};
    return s;
}

/* One class of element-wise operator: its forward + backward kernels, run
 * once per call (px_calib_kernels.h says what each call does); the bytes the
 * cost model charges for that work are px_calib_class_bytes of the shape
 * above in fp32 storage. */
static void norm_fb(bufs *b)
{
    const int64_t T = K_T, C = K_C;
    /* both norm kinds: the class covers Llama's RMSNorm and GPT's LayerNorm */
    px_cpu_rmsnorm_fwd(b->y, b->stat1, b->x, b->wt, T, C, 1e-5f);
    px_cpu_rmsnorm_bwd(b->z, b->dwt, b->y, b->x, b->wt, b->stat1, T, C);
    px_cpu_layernorm_fwd(b->y, b->stat1, b->stat2, b->x, b->wt, b->bias, T, C, 1e-5f);
    px_cpu_layernorm_bwd(b->z, b->dwt, b->stat3, b->y, b->x, b->wt, b->stat1, b->stat2, T, C);
}

static void residual_fb(bufs *b)
{
    px_cpu_residual_fwd(b->z, b->x, b->y, (int64_t)K_T * K_C);
    px_cpu_residual_bwd(b->w, b->z, b->y, (int64_t)K_T * K_C);
}

static void gelu_fb(bufs *b)
{
    px_cpu_gelu_fwd(b->big2, b->big1, (int64_t)K_T * K_F_GELU);
    px_cpu_gelu_bwd(b->w, b->big2, b->big1, (int64_t)K_T * K_F_GELU);
}

static void swiglu_fb(bufs *b)
{
    px_cpu_swiglu_fwd(b->big2, b->big1, K_T, K_F_SWIGLU);
    px_cpu_swiglu_bwd(b->w, b->big2, b->big1, K_T, K_F_SWIGLU);
}

static void rope_fb(bufs *b)
{
    px_rope rope = px_rope_plain(10000.0);
    px_cpu_rope_fwd(b->qkv, K_T, 1, K_NH, K_NKV, K_HD, 0, &rope);
    px_cpu_rope_bwd(b->dqkv, K_T, 1, K_NH, K_NKV, K_HD, 0, &rope);
}

static void xent_fb(bufs *b)
{
    /* big1 holds [T, V] logits (it is sized for that) */
    px_cpu_xent_max_fwd(b->stat1, b->big1, K_T, K_V);
    px_cpu_xent_sumexp_fwd(b->stat2, b->stat3, b->big1, b->stat1, b->tok, K_T, K_V, 0);
    px_cpu_xent_loss_fwd(b->x, b->stat1, b->stat2, b->stat3, K_T);
    px_cpu_xent_bwd(b->big2, b->big1, b->stat1, b->stat2, b->tok, 1.0f / K_T, K_T, K_V, 0);
}

static void adamw_fb(bufs *b)
{
    px_cpu_adamw_step(b->big1, b->big2, b->adam_m, b->adam_v, K_ADAM_N, 1e-4f, 0.9f, 0.95f,
                      1e-8f, 0.1f, ++b->adam_step);
}

static void embed_fb(bufs *b)
{
    px_cpu_embedding_fwd(b->y, b->tok, b->big1, K_T, K_C, 0, K_V);
    px_cpu_embedding_bwd(b->big2, b->y, b->tok, K_T, K_C, 0, K_V);
}

/* Seconds per call of fn: the fastest of 3 batches filling min_time_s. */
static double time_group(const px_calib_opts *o, group_fn fn, bufs *b)
{
    px_calib_sync(o);
    double t0 = px_calib_work_s(o);
    fn(b); /* warm-up and estimate */
    double first = px_calib_work_s(o) - t0;
    long reps = (long)ceil(o->min_time_s / 3.0 / fmax(first, 1e-9));
    reps = reps < 1 ? 1 : reps;
    double best = INFINITY;
    for (int batch = 0; batch < 3; batch++) {
        t0 = px_calib_work_s(o);
        for (long r = 0; r < reps; r++)
            fn(b);
        best = fmin(best, (px_calib_work_s(o) - t0) / (double)reps);
    }
    return best;
}

/* One attention shape, forward + backward (the FlashAttention path: no
 * stored probabilities); returns seconds, *model_flops the cost model's
 * FLOPs for the same work. */
static double time_attention(const px_calib_opts *o, int64_t S, int64_t NH, int64_t HD,
                             double *model_flops, px_error *err)
{
    int64_t row = 3 * NH * HD; /* MHA */
    float *qkv = fill_normal((size_t)(S * row), 1.0f, 11), *dqkv = fill((size_t)(S * row), 0.0f);
    float *out = fill((size_t)(S * NH * HD), 0.0f);
    float *dout = fill_normal((size_t)(S * NH * HD), 0.01f, 12);
    float *lse = fill((size_t)(NH * S), 0.0f);
    double best = INFINITY;
    if (!qkv || !dqkv || !out || !dout || !lse) {
        PX_FAIL(err, PX_ERR_NOMEM, "attention timing: out of memory");
    } else {
        /* warm-up, then the fastest of 3 batches filling the window (at
         * least one call each): another process on this shared machine only
         * ever slows a batch down */
        px_calib_sync(o);
        double t0 = px_calib_work_s(o);
        px_cpu_attention_fwd(out, lse, NULL, qkv, S, 1, NH, NH, HD);
        px_cpu_attention_bwd(dqkv, dout, out, lse, NULL, qkv, S, 1, NH, NH, HD);
        double first = px_calib_work_s(o) - t0;
        long reps = (long)ceil(o->min_time_s / 3.0 / fmax(first, 1e-9));
        reps = reps < 1 ? 1 : reps;
        for (int batch = 0; batch < 3; batch++) {
            t0 = px_calib_work_s(o);
            for (long r = 0; r < reps; r++) {
                px_cpu_attention_fwd(out, lse, NULL, qkv, S, 1, NH, NH, HD);
                px_cpu_attention_bwd(dqkv, dout, out, lse, NULL, qkv, S, 1, NH, NH, HD);
            }
            best = fmin(best, (px_calib_work_s(o) - t0) / (double)reps);
        }
    }
    free(qkv);
    free(dqkv);
    free(out);
    free(dout);
    free(lse);
    /* full s x s product forward: 2 S^2 NH (HD + HD); causal half; fwd 1 +
     * bwd 2.5 */
    *model_flops = 3.5 * 0.5 * 2.0 * (double)S * (double)S * (double)NH * 2.0 * (double)HD;
    return best;
}

/* The kernels' operands, filled; false when one could not be allocated
 * (the others are freed with the rest). */
static bool bufs_alloc(bufs *b)
{
    size_t tc = (size_t)K_T * K_C;
    size_t big = (size_t)K_T * K_V; /* >= 2 T F and >= the AdamW slice */
    if (big < (size_t)K_ADAM_N)
        big = (size_t)K_ADAM_N;
    size_t rq = (size_t)K_T * (K_NH + 2 * K_NKV) * K_HD;
    b->x = fill_normal(big, 1.0f, 1);
    b->y = fill_normal(tc, 1.0f, 2);
    b->z = fill_normal(tc, 1.0f, 3);
    b->w = fill_normal(big, 0.01f, 4);
    b->big1 = fill_normal(big, 1.0f, 5);
    b->big2 = fill_normal(big, 0.01f, 6);
    b->adam_m = fill(K_ADAM_N, 0.0f);
    b->adam_v = fill(K_ADAM_N, 0.0f);
    b->qkv = fill_normal(rq, 1.0f, 7);
    b->dqkv = fill_normal(rq, 0.01f, 8);
    b->stat1 = fill(K_T, 1.0f);
    b->stat2 = fill(K_T, 1.0f);
    b->stat3 = fill(K_T, 1.0f);
    b->wt = fill(K_C, 1.0f);
    b->dwt = fill(K_C, 0.0f);
    b->bias = fill(K_C, 0.0f);
    b->tok = malloc(K_T * sizeof *b->tok);
    return b->adam_m && b->adam_v && b->x && b->y && b->z && b->w && b->big1 && b->big2 &&
           b->qkv && b->dqkv && b->stat1 && b->stat2 && b->stat3 && b->wt && b->dwt &&
           b->bias && b->tok;
}

px_status px_calib_kernels_run(const px_calib_opts *o, px_calib_kernels_result *r,
                               px_error *err)
{
    memset(r, 0, sizeof *r);
    bufs b = {0};
    px_status st = PX_OK;
    if (!bufs_alloc(&b))
        st = PX_FAIL(err, PX_ERR_NOMEM, "kernel timing: out of memory");
    if (st == PX_OK) {
        for (int i = 0; i < K_T; i++)
            b.tok[i] = (int32_t)((i * 7919) % K_V);
        struct {
            const char *name;
            group_fn fn;
            px_mem_class cls;
            double *bw;
            bool in_layer; /* part of the per-layer mix behind mem_bound_eff */
        } groups[] = {
            {"norm (rmsnorm + layernorm)", norm_fb, PX_MEM_NORM, &r->norm_bw, true},
            {"residual", residual_fb, PX_MEM_RESIDUAL, &r->residual_bw, true},
            {"gelu", gelu_fb, PX_MEM_GELU, &r->gelu_bw, true},
            {"swiglu", swiglu_fb, PX_MEM_SWIGLU, &r->swiglu_bw, true},
            {"rope", rope_fb, PX_MEM_ROPE, &r->rope_bw, true},
            {"cross-entropy", xent_fb, PX_MEM_XENT, &r->xent_bw, false},
            {"adamw", adamw_fb, PX_MEM_ADAMW, &r->adamw_bw, false},
            {"embedding", embed_fb, PX_MEM_EMBED, &r->embed_bw, false},
        };
        px_calib_ew_shape shape = px_calib_kernels_shape();
        double bytes = 0.0, secs = 0.0;
        for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
            double t = time_group(o, groups[g].fn, &b);
            double gb = px_calib_class_bytes(groups[g].cls, &shape, 4);
            *groups[g].bw = gb / t;
            if (groups[g].in_layer) {
                bytes += gb;
                secs += t;
            }
            px_calib_say(o, "kernels: %-28s %8.2f GB/s in cost-model bytes (%.3f ms fwd+bwd)",
                         groups[g].name, *groups[g].bw / 1e9, 1e3 * t);
        }
        r->elementwise_bw = bytes / secs;
    }
    free(b.x);
    free(b.y);
    free(b.z);
    free(b.w);
    free(b.big1);
    free(b.big2);
    free(b.adam_m);
    free(b.adam_v);
    free(b.qkv);
    free(b.dqkv);
    free(b.stat1);
    free(b.stat2);
    free(b.stat3);
    free(b.wt);
    free(b.dwt);
    free(b.bias);
    free(b.tok);
    if (st != PX_OK)
        return st;

    /* Attention: sequence lengths of the tiny-to-small models, head 32..64. */
    static const int64_t shapes[][3] = {{128, 4, 32}, {256, 4, 64}, {512, 4, 64}};
    int n_shapes = o->quick ? 2 : 3;
    double flops = 0.0, secs = 0.0;
    for (int i = 0; i < n_shapes; i++) {
        double f = 0.0;
        double t = time_attention(o, shapes[i][0], shapes[i][1], shapes[i][2], &f, err);
        if (!isfinite(t))
            return err ? err->code : PX_ERR_NOMEM;
        flops += f;
        secs += t;
        px_calib_say(o, "kernels: attention s=%-4lld heads=%lld d=%-3lld fwd+bwd %8.3f ms, "
                     "%6.2f GFLOP/s (cost-model FLOPs)", (long long)shapes[i][0],
                     (long long)shapes[i][1], (long long)shapes[i][2], 1e3 * t, f / t / 1e9);
    }
    r->attn_flops = flops / secs;
    return PX_OK;
}
