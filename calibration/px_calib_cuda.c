/* px_calib_cuda.c — GPU calibration (see header).  Every time is taken with
 * CUDA events around repeated launches after warm-up launches; every CUDA,
 * cuBLAS and NCCL status goes through px_cuda_status.h. */
#include "px_calib_cuda.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "px_calib_coll.h" /* the message sizes and names of the CPU sweep */
#include "px_calib_fit.h"  /* the lat/bw fit */
#include "px_calib_kernels.h" /* the element-wise classes' shapes and bytes */
#include "px_comm_cuda.h"
#include "px_cuda_gemm.h"
#include "px_cuda_status.h"
#include "px_error_mpi.h"
#include "px_kernels_cuda.h"

typedef struct {
    cudaStream_t stream;
    cudaEvent_t t0, t1;
    px_cuda_blas *blas;
    float *a, *b, *c; /* big enough for every shape (a 1 GiB, b and c 2 GiB) */
    FILE *log;
} cal;

#define CAL_A_BYTES ((size_t)1 << 30)
#define CAL_BC_BYTES ((size_t)1 << 31)

/* Milliseconds between the two events, after waiting for the second. */
static px_status elapsed_ms(cal *k, float *ms, px_error *err)
{
    PX_CUDA_TRY(err, cudaEventSynchronize(k->t1));
    PX_CUDA_TRY(err, cudaEventElapsedTime(ms, k->t0, k->t1));
    return PX_OK;
}

/* ---- operands ------------------------------------------------------------------------ */

/* Fills a, b and c with pseudo-random bf16 words whose exponents keep every
 * value in [2^-3, 2^2): read as bf16 pairs (the bf16 GEMMs) or as fp32 (the
 * fp32-storage GEMMs: the high word is the value, the low word extra
 * mantissa bits) the data is finite and ordinary.  Zeros would flatter the
 * tensor cores: an H100/H200 draws less power on them and clocks higher
 * than on a real step's activations. */
static px_status fill_random(cal *k, px_error *err)
{
    const size_t chunk = (size_t)64 << 20;
    uint16_t *host = malloc(chunk);
    if (!host)
        return PX_FAIL(err, PX_ERR_NOMEM, "calibrate-cuda: %zu bytes of random operands", chunk);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < chunk / sizeof *host; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        uint16_t sign = (uint16_t)((s >> 20) & 1u) << 15;
        uint16_t expo = (uint16_t)(124u + (s >> 32) % 5u) << 7; /* 2^-3 .. 2^1 */
        host[i] = (uint16_t)(sign | expo | (uint16_t)(s & 0x7Fu));
    }
    cudaError_t e = cudaMemcpy(k->a, host, chunk, cudaMemcpyHostToDevice);
    free(host);
    if (e != cudaSuccess)
        return px_cuda_status(e, "cudaMemcpy (random operands)", __FILE__, __LINE__, err);
    /* Doubling device copies fill the rest of a, then b and c from a. */
    char *a = (char *)k->a;
    for (size_t have = chunk; have < CAL_A_BYTES; have *= 2)
        PX_CUDA_TRY(err, cudaMemcpy(a + have, a, have, cudaMemcpyDeviceToDevice));
    for (size_t off = 0; off < CAL_BC_BYTES; off += CAL_A_BYTES) {
        PX_CUDA_TRY(err, cudaMemcpy((char *)k->b + off, a, CAL_A_BYTES, cudaMemcpyDeviceToDevice));
        PX_CUDA_TRY(err, cudaMemcpy((char *)k->c + off, a, CAL_A_BYTES, cudaMemcpyDeviceToDevice));
    }
    PX_CUDA_TRY(err, cudaDeviceSynchronize());
    return PX_OK;
}

/* ---- GEMMs --------------------------------------------------------------------------- */

/* The three forms of a linear layer's GEMMs in a step, for a point
 * C[m,n] = A[m,k] B[k,n] (row-major, cblas-style transposes as the engine
 * calls px_cuda_gemm): forward out = in W^T, input gradient dX = dY W and
 * weight gradient dW = dY^T X.  Same operand sizes in each, so the same
 * buffers serve. */
enum { GEMM_FWD, GEMM_DGRAD, GEMM_WGRAD, GEMM_FORMS };

static px_status gemm_once(cal *k, bool bf16, int form, int64_t m, int64_t n, int64_t kk,
                           px_error *err)
{
    bool ta = form == GEMM_WGRAD, tb = form == GEMM_FWD;
    int64_t lda = ta ? m : kk, ldb = tb ? kk : n;
    if (bf16)
        return px_cuda_gemm(k->blas, ta, tb, m, n, kk, 1.0f, k->a, lda, k->b, ldb, 0.0f, k->c, n,
                            PX_CUDA_BF16, err);
    return px_cuda_gemm_f32(k->blas, ta, tb, m, n, kk, 1.0f, k->a, lda, k->b, ldb, 0.0f, k->c, n,
                            PX_CUDA_F32_BF16_TC, err);
}

/* FLOP/s of one shape as a step runs it: each form timed over `reps`
 * launches after 2 warm-ups, combined as the harmonic mean (the rate of
 * doing all three, equal FLOPs each) — what the CPU calibration stores. */
static px_status time_gemm(cal *k, bool bf16, int64_t m, int64_t n, int64_t kk, int reps,
                           double *flops, px_error *err)
{
    double total_s = 0.0;
    for (int form = 0; form < GEMM_FORMS; form++) {
        for (int i = 0; i < 2; i++)
            PX_TRY(gemm_once(k, bf16, form, m, n, kk, err));
        PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
        for (int i = 0; i < reps; i++)
            PX_TRY(gemm_once(k, bf16, form, m, n, kk, err));
        PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
        float ms = 0.0f;
        PX_TRY(elapsed_ms(k, &ms, err));
        total_s += ms * 1e-3 / reps;
    }
    *flops = 2.0 * (double)m * (double)n * (double)kk * GEMM_FORMS / total_s;
    return PX_OK;
}

static px_status gemms(cal *k, px_hw *hw, bool quick, px_calib_cuda_result *res, px_error *err)
{
    /* The shapes of a transformer step: tokens x (qkv, proj, MLP up/down,
     * LM head) and the weight-gradient form with k = tokens. */
    static const int64_t hs_full[] = {1024, 2048, 4096, 8192}, hs_quick[] = {2048, 4096};
    static const int64_t ts_full[] = {1024, 4096, 8192}, ts_quick[] = {4096};
    const int64_t *hs = quick ? hs_quick : hs_full, *ts = quick ? ts_quick : ts_full;
    int nh = quick ? 2 : 4, nt = quick ? 1 : 3, reps = quick ? 3 : 10;
    hw->n_gemm_points = 0;
    double best16 = 0.0, best32 = 0.0;
    if (k->log)
        fprintf(k->log, "calibrate-cuda: GEMM C[m,n] = A[m,k] B[k,n], fp32 accumulation, the "
                        "rate of its forward, input- and weight-gradient forms together\n"
                        "calibrate-cuda: %6s %6s %6s  %12s  %12s  %6s\n",
                "m", "n", "k", "bf16 TFLOP/s", "fp32 TFLOP/s", "ratio");
    for (int i = 0; i < nh; i++)
        for (int j = 0; j < nt; j++) {
            int64_t h = hs[i], t = ts[j];
            int64_t shapes[][3] = {{t, h, h},     {t, 3 * h, h}, {t, 8 * h, h},
                                   {t, h, 4 * h}, {h, h, t},     {t, 32000, h}};
            for (int s = 0; s < 6 && hw->n_gemm_points < PX_HW_MAX_GEMM_POINTS; s++) {
                if (s == 4 && h == t) /* {h, h, t} is {t, h, h}: one point, not two */
                    continue;
                double f16 = 0.0, f32 = 0.0;
                PX_TRY(time_gemm(k, true, shapes[s][0], shapes[s][1], shapes[s][2], reps, &f16,
                                 err));
                PX_TRY(time_gemm(k, false, shapes[s][0], shapes[s][1], shapes[s][2], reps, &f32,
                                 err));
                px_gemm_point *p = &hw->gemm_points[hw->n_gemm_points++];
                p->m = shapes[s][0];
                p->n = shapes[s][1];
                p->k = shapes[s][2];
                p->flops = f16;
                best16 = fmax(best16, f16);
                best32 = fmax(best32, f32);
                if (k->log)
                    fprintf(k->log, "calibrate-cuda: %6lld %6lld %6lld  %12.1f  %12.1f  %6.2f\n",
                            (long long)p->m, (long long)p->n, (long long)p->k, f16 / 1e12,
                            f32 / 1e12, f32 > 0.0 ? f16 / f32 : 0.0);
            }
        }
    if (k->log)
        fprintf(k->log, "calibrate-cuda: best bf16 %.1f TFLOP/s (kept as gemm_points), fp32 "
                        "storage %.1f TFLOP/s (printed only)\n", best16 / 1e12, best32 / 1e12);
    if (hw->peak_flops <= 0.0)
        hw->peak_flops = best16; /* no datasheet peak: the best measured one */
    if (best16 > hw->peak_flops) {
        /* a datasheet for another part (--base): a profile needs
         * gemm_eff_max <= 1, so the measured best becomes the peak */
        if (k->log)
            fprintf(k->log, "calibrate-cuda: warning: best GEMM %.1f TFLOP/s exceeds the "
                            "datasheet peak %.1f: peak_flops set to the measured best\n",
                    best16 / 1e12, hw->peak_flops / 1e12);
        hw->peak_flops = best16;
    }
    hw->gemm_eff_max = best16 / hw->peak_flops;
    res->gemm_bf16_best_flops = best16;
    res->gemm_f32_best_flops = best32;
    return PX_OK;
}

/* ---- HBM ----------------------------------------------------------------------------- */

/* Bytes/s of `reps` launches of a device copy (copy = true: cudaMemcpyAsync
 * of `bytes` from b to c) or of the residual-add kernel c = a + b over
 * bytes / 4 floats (each launch reads 2x and writes 1x that). */
static px_status time_stream(cal *k, bool copy, size_t bytes, int reps, double *bw,
                             px_error *err)
{
    int64_t n = (int64_t)(bytes / sizeof(float));
    for (int i = 0; i < reps + 2; i++) {
        if (i == 2)
            PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
        if (copy)
            PX_CUDA_TRY(err, cudaMemcpyAsync(k->c, k->b, bytes, cudaMemcpyDeviceToDevice,
                                             k->stream));
        else
            PX_TRY(px_cuda_residual_fwd_f32(k->c, k->a, k->b, n, k->stream, err));
    }
    PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
    float ms = 0.0f;
    PX_TRY(elapsed_ms(k, &ms, err));
    double moved = (copy ? 2.0 : 3.0) * (double)bytes * reps;
    *bw = moved / (ms * 1e-3);
    return PX_OK;
}

static px_status hbm(cal *k, px_hw *hw, bool quick, px_calib_cuda_result *res, px_error *err)
{
    /* Far beyond the 50-60 MB L2 of a Hopper part. */
    size_t bytes = quick ? (size_t)1 << 29 : CAL_A_BYTES;
    int reps = quick ? 5 : 20;
    double copy = 0.0, kern = 0.0;
    PX_TRY(time_stream(k, true, bytes, reps, &copy, err));
    PX_TRY(time_stream(k, false, bytes, reps, &kern, err));
    res->copy_bw = copy;
    res->kernel_bw = kern;
    bool kernel_wins = kern > copy;
    hw->hbm_bw = kernel_wins ? kern : copy;
    res->hbm_source = kernel_wins ? "element-wise kernel" : "cudaMemcpy D2D";
    /* The engine's element-wise work runs kernels like the residual add:
     * their rate against the best stream is what the cost model's
     * mem_bound_eff means (1 when the kernel is the faster). */
    hw->mem_bound_eff = kern / hw->hbm_bw;
    if (k->log)
        fprintf(k->log, "calibrate-cuda: HBM: cudaMemcpy D2D %.0f GB/s, residual-add kernel "
                        "%.0f GB/s (reads + writes, %.0f MiB); hbm_bw = %s, mem_bound_eff %.3f\n",
                copy / 1e9, kern / 1e9, (double)bytes / 1048576.0, res->hbm_source,
                hw->mem_bound_eff);
    return PX_OK;
}

/* ---- attention ------------------------------------------------------------------------ */

/* The engine's own attention core (bf16 storage, MHA, one sequence), forward
 * + backward at the sequence lengths of 1B-8B Llama training, in the cost
 * model's FLOPs (the causal half of the s x s products, forward once and
 * backward 2.5 times: px_hw.h attn_eff) per second: against the peak, that
 * is the profile's attn_eff, as the CPU calibration measures its kernel.
 * Without it the cost model would assume FlashAttention-class speed. */
static px_status attention(cal *k, px_hw *hw, bool quick, px_calib_cuda_result *res,
                           px_error *err)
{
    static const int64_t shapes[][2] = {{4096, 16}, {8192, 16}}; /* S, heads; HD 128 */
    const int64_t HD = 128;
    int n_shapes = quick ? 1 : 2, reps = quick ? 3 : 10;
    double flops = 0.0, secs = 0.0;
    for (int i = 0; i < n_shapes; i++) {
        int64_t S = shapes[i][0], NH = shapes[i][1], row = 3 * NH * HD;
        /* random bf16 operands from fill_random: qkv in a; out, dout in c;
         * dqkv and lse in b (all far inside the buffers) */
        const px_bf16 *qkv = (const px_bf16 *)k->a;
        px_bf16 *out = (px_bf16 *)k->c, *dout = out + S * NH * HD;
        px_bf16 *dqkv = (px_bf16 *)k->b;
        float *lse = (float *)(dqkv + S * row);
        for (int r = 0; r < reps + 1; r++) {
            if (r == 1)
                PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
            PX_TRY(px_cuda_attention_fwd(out, lse, NULL, qkv, S, 1, NH, NH, HD, k->stream,
                                         err));
            PX_TRY(px_cuda_attention_bwd(dqkv, dout, out, lse, NULL, qkv, S, 1, NH, NH, HD,
                                         k->stream, err));
        }
        PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
        float ms = 0.0f;
        PX_TRY(elapsed_ms(k, &ms, err));
        double t = ms * 1e-3 / reps;
        double f = 3.5 * 0.5 * 2.0 * (double)S * (double)S * (double)NH * 2.0 * (double)HD;
        flops += f;
        secs += t;
        if (k->log)
            fprintf(k->log, "calibrate-cuda: attention s=%-5lld heads=%lld d=%lld fwd+bwd %8.3f "
                            "ms, %6.1f TFLOP/s (cost-model FLOPs)\n",
                    (long long)S, (long long)NH, (long long)HD, 1e3 * t, f / t / 1e12);
    }
    res->attn_flops = flops / secs;
    hw->attn_eff = res->attn_flops / hw->peak_flops;
    if (k->log)
        fprintf(k->log, "calibrate-cuda: attention %.1f TFLOP/s = attn_eff %.3f of the peak\n",
                res->attn_flops / 1e12, hw->attn_eff);
    return PX_OK;
}

/* ---- element-wise kernel classes ------------------------------------------------------ */

/* The executor's bf16 element-wise kernels, class by class (px_hw norm_bw ...
 * embed_bw), at the shape of one layer of a 1B-8B Llama step: 8192 tokens,
 * hidden 4096, SwiGLU ffn 14336 (GeLU 4 x hidden, GPT's), 32 query heads and 8
 * kv heads of 128, a 32000-entry vocabulary shard (a 128k vocabulary over TP
 * 4) and AdamW over 64M parameters.  Each class's rate is the bytes the cost
 * model charges for the work in bf16 storage (px_calib_class_bytes, the
 * count the CPU calibration divides in fp32) over the measured time, so the
 * model's time for the class is the measured one: the norms' block
 * reductions, the loss's passes over a vocabulary and AdamW over its fp32
 * state each get their own rate instead of the residual add's. */
static const px_calib_ew_shape ew_shape = PX_CALIB_GPU_SHAPE;

/* Carves the calibration's buffers: a holds the random operands and is only
 * read; outputs go to b and c. */
typedef struct {
    char *base;
    size_t used, cap;
} arena;

static void *take(arena *r, size_t bytes)
{
    size_t at = (r->used + 255) & ~(size_t)255;
    if (at > r->cap || bytes > r->cap - at)
        return NULL;
    r->used = at + bytes;
    return r->base + at;
}

/* Operands of one class (each class uses some). */
typedef struct {
    const px_bf16 *x, *x2, *dy, *w, *bias; /* random inputs, in a */
    px_bf16 *y, *dx, *dx2;                 /* bf16 outputs */
    float *s1, *s2, *s3, *s4;              /* fp32 row statistics */
    float *dw, *db;                        /* fp32 parameter gradients (+=) */
    const float *grad;                     /* AdamW: fp32 gradient (random) */
    float *param, *m, *v;                  /* AdamW: fp32 master weights and moments */
    const int32_t *tok;                    /* [tokens] ids in [0, vocab) */
    int64_t step;
} ew_args;

typedef px_status (*ew_fn)(cal *k, ew_args *p, px_error *err);

static px_status ew_norm(cal *k, ew_args *p, px_error *err)
{
    const int64_t T = ew_shape.tokens, C = ew_shape.hidden;
    PX_TRY(px_cuda_rmsnorm_fwd(p->y, p->s1, p->x, p->w, T, C, 1e-5f, k->stream, err));
    PX_TRY(px_cuda_rmsnorm_bwd(p->dx, p->dw, p->dy, p->x, p->w, p->s1, T, C, k->stream, err));
    PX_TRY(px_cuda_layernorm_fwd(p->y, p->s1, p->s2, p->x, p->w, p->bias, T, C, 1e-5f,
                                 k->stream, err));
    return px_cuda_layernorm_bwd(p->dx, p->dw, p->db, p->dy, p->x, p->w, p->s1, p->s2, T, C,
                                 k->stream, err);
}

static px_status ew_residual(cal *k, ew_args *p, px_error *err)
{
    const int64_t n = ew_shape.tokens * ew_shape.hidden;
    PX_TRY(px_cuda_residual_fwd(p->y, p->x, p->x2, n, k->stream, err));
    return px_cuda_residual_bwd(p->dx, p->dx2, p->dy, n, k->stream, err);
}

static px_status ew_gelu(cal *k, ew_args *p, px_error *err)
{
    const int64_t n = ew_shape.tokens * ew_shape.ffn_gelu;
    PX_TRY(px_cuda_gelu_fwd(p->y, p->x, n, k->stream, err));
    return px_cuda_gelu_bwd(p->dx, p->dy, p->x, n, k->stream, err);
}

static px_status ew_swiglu(cal *k, ew_args *p, px_error *err)
{
    const int64_t T = ew_shape.tokens, F = ew_shape.ffn_swiglu;
    PX_TRY(px_cuda_swiglu_fwd(p->y, p->x, T, F, k->stream, err));
    return px_cuda_swiglu_bwd(p->dx, p->dy, p->x, T, F, k->stream, err);
}

static px_status ew_rope(cal *k, ew_args *p, px_error *err)
{
    const px_calib_ew_shape *s = &ew_shape;
    px_rope rope = px_rope_plain(10000.0);
    PX_TRY(px_cuda_rope_fwd(p->y, s->tokens, 1, s->heads, s->kv_heads, s->head_dim, 0, &rope,
                            k->stream, err));
    return px_cuda_rope_bwd(p->dx, s->tokens, 1, s->heads, s->kv_heads, s->head_dim, 0, &rope,
                            k->stream, err);
}

static px_status ew_xent(cal *k, ew_args *p, px_error *err)
{
    const int64_t T = ew_shape.tokens, V = ew_shape.vocab;
    PX_TRY(px_cuda_xent_max_fwd(p->s1, p->x, T, V, k->stream, err));
    PX_TRY(px_cuda_xent_sumexp_fwd(p->s2, p->s3, p->x, p->s1, p->tok, T, V, 0, k->stream, err));
    PX_TRY(px_cuda_xent_loss_fwd(p->s4, p->s1, p->s2, p->s3, T, k->stream, err));
    return px_cuda_xent_bwd(p->dx, p->x, p->s1, p->s2, p->tok, 1.0f / (float)T, T, V, 0,
                            k->stream, err);
}

static px_status ew_adamw(cal *k, ew_args *p, px_error *err)
{
    /* with the bf16 copy the GEMMs read, as the executor steps */
    return px_cuda_adamw_step(p->param, p->grad, p->m, p->v, ew_shape.adam_params, 1e-4f, 0.9f,
                              0.95f, 1e-8f, 0.1f, ++p->step, p->y, k->stream, err);
}

static px_status ew_embed(cal *k, ew_args *p, px_error *err)
{
    const int64_t T = ew_shape.tokens, C = ew_shape.hidden, V = ew_shape.vocab;
    PX_TRY(px_cuda_embedding_fwd(p->y, p->tok, p->x, T, C, 0, V, k->stream, err));
    return px_cuda_embedding_bwd(p->dw, p->dy, p->tok, T, C, 0, V, k->stream, err);
}

/* Operands of class c carved from the buffers; fp32 accumulators zeroed,
 * AdamW's master weights copied from the random operands (finite) and its
 * moments zeroed (v >= 0), the token ids written: untimed. */
static px_status ew_setup(cal *k, px_mem_class c, const int32_t *tok_host, ew_args *p,
                          px_error *err)
{
    const px_calib_ew_shape *s = &ew_shape;
    const size_t bf = sizeof(px_bf16), f4 = sizeof(float);
    const size_t T = (size_t)s->tokens, C = (size_t)s->hidden;
    arena a = {(char *)k->a, 0, CAL_A_BYTES}, b = {(char *)k->b, 0, CAL_BC_BYTES},
          cc = {(char *)k->c, 0, CAL_BC_BYTES};
    memset(p, 0, sizeof *p);
    bool ok = true;
#define EW_TAKE(dst, ar, bytes) ok = ok && ((dst) = take(&(ar), (bytes))) != NULL
    size_t n_in = 0, n_out = 0, n_dy = 0; /* elements of x (and x2), of y/dx, of dy */
    switch (c) {
    case PX_MEM_NORM: n_in = n_out = n_dy = T * C; break;
    case PX_MEM_RESIDUAL: n_in = n_out = n_dy = T * C; break;
    case PX_MEM_GELU: n_in = n_out = n_dy = T * (size_t)s->ffn_gelu; break;
    case PX_MEM_SWIGLU:
        n_in = 2 * T * (size_t)s->ffn_swiglu; /* gate and up */
        n_out = n_in;                         /* y uses half; dx is [T, 2F] */
        n_dy = T * (size_t)s->ffn_swiglu;
        break;
    case PX_MEM_ROPE: n_out = T * (size_t)(s->heads + 2 * s->kv_heads) * (size_t)s->head_dim; break;
    case PX_MEM_XENT: n_in = n_out = T * (size_t)s->vocab; break;
    case PX_MEM_ADAMW: n_out = (size_t)s->adam_params; break;
    case PX_MEM_EMBED:
        n_in = (size_t)s->vocab * C; /* the table shard */
        n_out = n_dy = T * C;
        break;
    default:
        return PX_FAIL(err, PX_ERR_INTERNAL, "calibrate-cuda: element-wise class %d", (int)c);
    }
    const px_bf16 *x = NULL, *x2 = NULL, *dy = NULL;
    if (n_in)
        EW_TAKE(x, a, n_in * bf);
    if (c == PX_MEM_RESIDUAL)
        EW_TAKE(x2, a, n_in * bf);
    if (n_dy)
        EW_TAKE(dy, a, n_dy * bf);
    p->x = x;
    p->x2 = x2;
    p->dy = dy;
    EW_TAKE(p->w, a, C * bf);
    EW_TAKE(p->bias, a, C * bf);
    EW_TAKE(p->y, b, n_out * bf);
    EW_TAKE(p->dx, b, n_out * bf);
    if (c == PX_MEM_RESIDUAL)
        EW_TAKE(p->dx2, b, n_out * bf);
    EW_TAKE(p->s1, cc, T * f4);
    EW_TAKE(p->s2, cc, T * f4);
    EW_TAKE(p->s3, cc, T * f4);
    EW_TAKE(p->s4, cc, T * f4);
    int32_t *tok = NULL;
    EW_TAKE(tok, cc, T * sizeof *tok);
    p->tok = tok;
    size_t n_dw = c == PX_MEM_EMBED ? (size_t)s->vocab * C : C;
    EW_TAKE(p->dw, cc, n_dw * f4);
    EW_TAKE(p->db, cc, C * f4);
    if (c == PX_MEM_ADAMW) {
        size_t n = (size_t)s->adam_params;
        const float *grad = NULL;
        EW_TAKE(grad, a, n * f4);
        p->grad = grad;
        EW_TAKE(p->param, b, n * f4);
        EW_TAKE(p->m, cc, n * f4);
        EW_TAKE(p->v, cc, n * f4);
    }
#undef EW_TAKE
    if (!ok)
        return PX_FAIL(err, PX_ERR_INTERNAL, "calibrate-cuda: element-wise class %d does not fit "
                       "the calibration buffers", (int)c);
    PX_CUDA_TRY(err, cudaMemcpyAsync(tok, tok_host, T * sizeof *tok, cudaMemcpyHostToDevice,
                                     k->stream));
    PX_TRY(px_cuda_fill_f32(p->dw, 0.0f, (int64_t)n_dw, k->stream, err));
    PX_TRY(px_cuda_fill_f32(p->db, 0.0f, (int64_t)C, k->stream, err));
    if (c == PX_MEM_ADAMW) {
        size_t n = (size_t)s->adam_params;
        PX_CUDA_TRY(err, cudaMemcpyAsync(p->param, k->a, n * f4, cudaMemcpyDeviceToDevice,
                                         k->stream));
        PX_TRY(px_cuda_fill_f32(p->m, 0.0f, (int64_t)n, k->stream, err));
        PX_TRY(px_cuda_fill_f32(p->v, 0.0f, (int64_t)n, k->stream, err));
    }
    /* the host ids must outlive the copy */
    PX_CUDA_TRY(err, cudaStreamSynchronize(k->stream));
    return PX_OK;
}

/* Seconds of one call of fn: a warm-up call, one timed call that sizes the
 * batches (a window of 5 ms quick, 25 ms full), the fastest of 3 batches. */
static px_status ew_time(cal *k, ew_fn fn, ew_args *p, bool quick, double *secs, px_error *err)
{
    PX_TRY(fn(k, p, err));
    PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
    PX_TRY(fn(k, p, err));
    PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
    float ms = 0.0f;
    PX_TRY(elapsed_ms(k, &ms, err));
    double window_s = quick ? 5e-3 : 25e-3;
    long reps = (long)ceil(window_s / fmax(ms * 1e-3, 1e-6));
    reps = reps < 1 ? 1 : reps > 1000 ? 1000 : reps;
    double best = INFINITY;
    for (int batch = 0; batch < 3; batch++) {
        PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
        for (long r = 0; r < reps; r++)
            PX_TRY(fn(k, p, err));
        PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
        PX_TRY(elapsed_ms(k, &ms, err));
        best = fmin(best, ms * 1e-3 / (double)reps);
    }
    *secs = best;
    return PX_OK;
}

static px_status elementwise(cal *k, px_hw *hw, bool quick, px_calib_cuda_result *res,
                             px_error *err)
{
    struct {
        const char *name;
        px_mem_class cls;
        ew_fn fn;
        double *bw;
    } classes[] = {
        {"norm (rmsnorm + layernorm)", PX_MEM_NORM, ew_norm, &hw->norm_bw},
        {"residual", PX_MEM_RESIDUAL, ew_residual, &hw->residual_bw},
        {"gelu", PX_MEM_GELU, ew_gelu, &hw->gelu_bw},
        {"swiglu", PX_MEM_SWIGLU, ew_swiglu, &hw->swiglu_bw},
        {"rope", PX_MEM_ROPE, ew_rope, &hw->rope_bw},
        {"cross-entropy", PX_MEM_XENT, ew_xent, &hw->xent_bw},
        {"adamw (+ bf16 copy)", PX_MEM_ADAMW, ew_adamw, &hw->adamw_bw},
        {"embedding", PX_MEM_EMBED, ew_embed, &hw->embed_bw},
    };
    int32_t *tok = malloc((size_t)ew_shape.tokens * sizeof *tok);
    if (!tok)
        return PX_FAIL(err, PX_ERR_NOMEM, "calibrate-cuda: %lld token ids",
                       (long long)ew_shape.tokens);
    for (int64_t i = 0; i < ew_shape.tokens; i++)
        tok[i] = (int32_t)((i * 7919) % ew_shape.vocab);
    if (k->log)
        fprintf(k->log, "calibrate-cuda: element-wise kernels (bf16), %lld tokens, hidden %lld, "
                        "ffn %lld, vocab shard %lld, AdamW over %lld parameters\n",
                (long long)ew_shape.tokens, (long long)ew_shape.hidden,
                (long long)ew_shape.ffn_swiglu, (long long)ew_shape.vocab,
                (long long)ew_shape.adam_params);
    px_status st = PX_OK;
    res->n_classes = 0;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0] && st == PX_OK; i++) {
        ew_args p;
        double t = 0.0;
        st = ew_setup(k, classes[i].cls, tok, &p, err);
        if (st == PX_OK)
            st = ew_time(k, classes[i].fn, &p, quick, &t, err);
        if (st != PX_OK)
            break;
        double bytes = px_calib_class_bytes(classes[i].cls, &ew_shape, 2);
        *classes[i].bw = bytes / t;
        res->class_bw[classes[i].cls] = *classes[i].bw;
        res->n_classes++;
        if (k->log)
            fprintf(k->log, "calibrate-cuda: kernels: %-28s %8.1f GB/s in cost-model bytes "
                            "(%.3f ms fwd+bwd)\n", classes[i].name, *classes[i].bw / 1e9,
                    1e3 * t);
    }
    free(tok);
    return st;
}

/* ---- NCCL ---------------------------------------------------------------------------- */

/* One call of `kind` on nc (g ranks, this one `rank`) with per_rank floats
 * per rank (p2p: the message), from b into c. */
static px_status nccl_call(cal *k, ncclComm_t nc, px_calib_coll_kind kind, int rank, int g,
                           size_t per_rank, px_error *err)
{
    float *send = k->b, *recv = k->c;
    switch (kind) {
    case PX_CALIB_P2P:
        /* ping-pong between ranks 0 and 1: each half is its own operation */
        if (rank == 0) {
            PX_NCCL_TRY(err, nc, ncclSend(send, per_rank, ncclFloat32, 1, nc, k->stream));
            PX_NCCL_TRY(err, nc, ncclRecv(recv, per_rank, ncclFloat32, 1, nc, k->stream));
        } else {
            PX_NCCL_TRY(err, nc, ncclRecv(recv, per_rank, ncclFloat32, 0, nc, k->stream));
            PX_NCCL_TRY(err, nc, ncclSend(send, per_rank, ncclFloat32, 0, nc, k->stream));
        }
        return PX_OK;
    case PX_CALIB_ALLREDUCE:
        PX_NCCL_TRY(err, nc, ncclAllReduce(send, recv, per_rank * (size_t)g, ncclFloat32, ncclSum,
                                           nc, k->stream));
        return PX_OK;
    case PX_CALIB_ALLGATHER:
        PX_NCCL_TRY(err, nc, ncclAllGather(send, recv, per_rank, ncclFloat32, nc, k->stream));
        return PX_OK;
    case PX_CALIB_REDUCE_SCATTER:
        PX_NCCL_TRY(err, nc, ncclReduceScatter(send, recv, per_rank, ncclFloat32, ncclSum, nc,
                                               k->stream));
        return PX_OK;
    case PX_CALIB_ALLTOALL: {
        /* The engine's own all-to-all (the MoE dispatch): grouped
         * ncclSend/ncclRecv to every peer, this rank's chunk a device copy;
         * chunk p of the send buffer goes to rank p. */
        int64_t counts[PX_HW_MAX_COLL_POINTS + 2];
        if (g > (int)(sizeof counts / sizeof counts[0]))
            return PX_FAIL(err, PX_ERR_INVALID, "calibrate-cuda: all-to-all over %d ranks", g);
        for (int p = 0; p < g; p++)
            counts[p] = (int64_t)per_rank;
        return px_nccl_all_to_all_v(nc, k->stream, recv, counts, send, counts, ncclFloat32, err);
    }
    case PX_CALIB_COLL_COUNT:
        break;
    }
    return PX_FAIL(err, PX_ERR_INTERNAL, "calibrate-cuda: collective kind %d", (int)kind);
}

/* Slowest rank's time of one operation of `bytes` (px_calib_coll.h's
 * convention: the whole buffer; p2p the message, one way), fastest of 3
 * batches; every rank of comm calls it and gets the same value. */
static px_status coll_time(cal *k, ncclComm_t nc, MPI_Comm comm, px_calib_coll_kind kind,
                           int64_t bytes, bool quick, double *time_s, px_error *err)
{
    int rank = 0, g = 1;
    PX_TRY(px_mpi_check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank", err));
    PX_TRY(px_mpi_check(MPI_Comm_size(comm, &g), "MPI_Comm_size", err));
    int64_t total = (bytes + (int64_t)sizeof(float) - 1) / (int64_t)sizeof(float);
    int64_t per = kind == PX_CALIB_P2P ? total : (total + g - 1) / g;
    if (per < 1)
        per = 1;
    if ((size_t)(per * g) * sizeof(float) > CAL_BC_BYTES)
        return PX_FAIL(err, PX_ERR_INVALID, "calibrate-cuda: %s of %lld bytes exceeds the %zu-byte "
                       "buffers", px_calib_coll_name(kind), (long long)bytes, CAL_BC_BYTES);
    /* Warm-up (NCCL connects peers lazily, on first use), then one timed
     * call sizes the batches; rank 0's count is used everywhere so every
     * rank makes the same calls. */
    for (int w = 0; w < 2; w++)
        PX_TRY(nccl_call(k, nc, kind, rank, g, (size_t)per, err));
    PX_CUDA_TRY(err, cudaStreamSynchronize(k->stream));
    PX_TRY(px_mpi_check(MPI_Barrier(comm), "MPI_Barrier", err));
    PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
    PX_TRY(nccl_call(k, nc, kind, rank, g, (size_t)per, err));
    PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
    float ms = 0.0f;
    PX_TRY(elapsed_ms(k, &ms, err));
    double window_s = quick ? 1e-3 : 3e-3;
    long reps = (long)ceil(window_s / fmax(ms * 1e-3, 1e-6));
    reps = reps < 1 ? 1 : reps > 2000 ? 2000 : reps;
    PX_TRY(px_mpi_check(MPI_Bcast(&reps, 1, MPI_LONG, 0, comm), "MPI_Bcast", err));
    double best = INFINITY;
    for (int batch = 0; batch < 3; batch++) {
        PX_TRY(px_mpi_check(MPI_Barrier(comm), "MPI_Barrier", err));
        PX_CUDA_TRY(err, cudaEventRecord(k->t0, k->stream));
        for (long r = 0; r < reps; r++)
            PX_TRY(nccl_call(k, nc, kind, rank, g, (size_t)per, err));
        PX_CUDA_TRY(err, cudaEventRecord(k->t1, k->stream));
        PX_TRY(elapsed_ms(k, &ms, err));
        double mine = ms * 1e-3 / (double)reps, slowest = mine;
        PX_TRY(px_mpi_check(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm),
                         "MPI_Allreduce", err));
        best = fmin(best, slowest);
    }
    /* A ping-pong's time is a round trip: the one-way time is half. */
    *time_s = kind == PX_CALIB_P2P ? best / 2.0 : best;
    return PX_OK;
}

/* Times every size of the CPU sweep, and larger ones, on comm and fits lat/bw
 * over the sizes the CPU fit uses (>= PX_CALIB_FIT_MIN_BYTES). */
static px_status sweep_fit(cal *k, ncclComm_t nc, MPI_Comm comm, px_calib_coll_kind kind, int g,
                           bool quick, px_coll_point *out, px_error *err)
{
    int64_t sizes[20];
    int ns = px_calib_coll_sizes(quick, sizes, 16);
    /* NVLink reaches its bandwidth only with messages of hundreds of MB (the
     * gradients of a data-parallel step are GBs): extend the CPU sweep, as
     * far as the 2 GiB buffers hold g pieces. */
    for (int64_t b = (int64_t)128 << 20; b <= (quick ? (int64_t)128 << 20 : (int64_t)512 << 20);
         b *= 4)
        if ((size_t)b * (kind == PX_CALIB_P2P ? (size_t)g : 1) <= CAL_BC_BYTES)
            sizes[ns++] = b;
    double x[20], t[20];
    int nfit = 0;
    for (int i = 0; i < ns; i++) {
        double ti = 0.0;
        PX_TRY(coll_time(k, nc, comm, kind, sizes[i], quick, &ti, err));
        if (sizes[i] >= PX_CALIB_FIT_MIN_BYTES) {
            x[nfit] = (double)sizes[i];
            t[nfit++] = ti;
        }
    }
    if (nfit < 1)
        return PX_FAIL(err, PX_ERR_INTERNAL, "calibrate-cuda: no message size >= %d bytes",
                       PX_CALIB_FIT_MIN_BYTES);
    out->n_ranks = g;
    px_error fit_err;
    px_error_clear(&fit_err);
    const char *how = "fit";
    if (px_calib_fit_lat_bw(x, t, nfit, &out->lat_s, &out->bw, &fit_err) != PX_OK) {
        /* Noise can make a sweep non-monotonic: keep a usable point, as the
         * CPU sweep does, rather than fail the calibration. */
        out->lat_s = t[0];
        out->bw = x[nfit - 1] / t[nfit - 1];
        how = "no fit (time not growing with size): lat = smallest size's time, bw = largest's";
    }
    double worst = 0.0;
    for (int i = 0; i < nfit; i++)
        worst = fmax(worst, fabs(out->lat_s + x[i] / out->bw - t[i]) / t[i]);
    if (k->log)
        fprintf(k->log, "calibrate-cuda: nccl %-14s n=%-2d lat %7.2f us  bw %8.2f GB/s  (%s over "
                        "%d sizes %.0f B..%.0f B, max err %.0f%%)\n", px_calib_coll_name(kind), g,
                out->lat_s * 1e6, out->bw / 1e9, how, nfit, x[0], x[nfit - 1], 100.0 * worst);
    return PX_OK;
}

/* Every rank of world calls this with its own local status: the outcome of
 * a step some ranks sat out becomes everyone's. */
static px_status agree(MPI_Comm world, px_status mine, const char *what, px_error *err)
{
    int ok = mine == PX_OK, all_ok = 0;
    px_status st = px_mpi_check(MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, world),
                             "MPI_Allreduce", err);
    if (mine != PX_OK)
        return mine;
    if (st == PX_OK && !all_ok)
        st = PX_FAIL(err, PX_ERR_CUDA, "calibrate-cuda: %s failed on another rank", what);
    return st;
}

static px_status bcast_point(MPI_Comm world, px_coll_point *p, px_error *err)
{
    double v[3] = {(double)p->n_ranks, p->lat_s, p->bw};
    PX_TRY(px_mpi_check(MPI_Bcast(v, 3, MPI_DOUBLE, 0, world), "MPI_Bcast", err));
    p->n_ranks = (int)v[0];
    p->lat_s = v[1];
    p->bw = v[2];
    return PX_OK;
}

/* The ranks of world with colour 0 (the others get MPI_COMM_NULL) measure
 * `kinds` on one NCCL communicator; the points are broadcast from world
 * rank 0, which is always a member. */
static px_status group_sweep(cal *k, MPI_Comm world, int rank, bool member, int g,
                             const px_calib_coll_kind *kinds, int n_kinds, bool quick,
                             px_coll_point *pts, px_error *err)
{
    MPI_Comm sub = MPI_COMM_NULL;
    PX_TRY(px_mpi_check(MPI_Comm_split(world, member ? 0 : MPI_UNDEFINED, rank, &sub),
                     "MPI_Comm_split", err));
    ncclComm_t nc = NULL;
    px_status st = PX_OK;
    if (sub != MPI_COMM_NULL)
        st = px_nccl_comm_from_mpi(sub, &nc, err);
    st = agree(world, st, "ncclCommInitRank", err);
    for (int i = 0; i < n_kinds && st == PX_OK; i++) {
        memset(&pts[i], 0, sizeof pts[i]);
        px_status mine = PX_OK;
        if (sub != MPI_COMM_NULL)
            mine = sweep_fit(k, nc, sub, kinds[i], g, quick, &pts[i], err);
        st = agree(world, mine, px_calib_coll_name(kinds[i]), err);
        if (st == PX_OK)
            st = bcast_point(world, &pts[i], err);
    }
    /* after a failure the first error stays the one reported */
    px_error scratch;
    px_error_clear(&scratch);
    if (nc) {
        px_status s = px_nccl_status(ncclCommDestroy(nc), NULL, "ncclCommDestroy", __FILE__,
                                     __LINE__, st == PX_OK ? err : &scratch);
        st = st == PX_OK ? s : st;
    }
    if (sub != MPI_COMM_NULL) {
        px_status s = px_mpi_check(MPI_Comm_free(&sub), "MPI_Comm_free",
                                st == PX_OK ? err : &scratch);
        st = st == PX_OK ? s : st;
    }
    return st;
}

static px_status collectives(cal *k, px_hw *hw, MPI_Comm world, bool quick,
                             px_calib_cuda_result *res, px_error *err)
{
    int rank = 0, size = 1;
    PX_TRY(px_mpi_check(MPI_Comm_rank(world, &rank), "MPI_Comm_rank", err));
    PX_TRY(px_mpi_check(MPI_Comm_size(world, &size), "MPI_Comm_size", err));
    res->n_ranks = size;
    if (size < 2) {
        if (k->log)
            fprintf(k->log, "calibrate-cuda: one rank: no NCCL traffic to measure; the "
                            "datasheet's links (intra/inter lat and bw) and collective costs "
                            "are kept (run one rank per GPU under mpirun to measure them)\n");
        return PX_OK;
    }
    /* Node structure: which ranks share rank 0's node, and the first rank
     * on another node (the inter-node peer). */
    MPI_Comm node = MPI_COMM_NULL;
    PX_TRY(px_mpi_check(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
                     "MPI_Comm_split_type", err));
    int node_size = 1, leader = rank;
    px_status st = px_mpi_check(MPI_Comm_size(node, &node_size), "MPI_Comm_size", err);
    if (st == PX_OK)
        st = px_mpi_check(MPI_Bcast(&leader, 1, MPI_INT, 0, node), "MPI_Bcast", err);
    MPI_Comm_free(&node);
    PX_TRY(st);
    int *leaders = malloc((size_t)size * sizeof *leaders);
    if (!leaders)
        return PX_FAIL(err, PX_ERR_NOMEM, "calibrate-cuda: %d ints", size);
    st = px_mpi_check(MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, world),
                   "MPI_Allgather", err);
    int ppn = node_size, remote = -1;
    if (st == PX_OK)
        st = px_mpi_check(MPI_Bcast(&ppn, 1, MPI_INT, 0, world), "MPI_Bcast", err);
    for (int r = 1; r < size && remote < 0 && st == PX_OK; r++)
        if (leaders[r] != leaders[0])
            remote = r;
    free(leaders);
    PX_TRY(st);
    if (k->log)
        fprintf(k->log, "calibrate-cuda: NCCL over %d ranks, %d on rank 0's node; sizes of the "
                        "CPU sweep, fit over >= %d B\n", size, ppn, PX_CALIB_FIT_MIN_BYTES);

    /* Point-to-point: rank 0 with rank 1 on its node, and with the first
     * rank of another node. */
    const px_calib_coll_kind p2p = PX_CALIB_P2P;
    px_coll_point pt;
    if (ppn >= 2) {
        PX_TRY(group_sweep(k, world, rank, rank == 0 || rank == 1, 2, &p2p, 1, quick, &pt, err));
        hw->intra_lat_s = pt.lat_s;
        hw->intra_bw = pt.bw;
    }
    if (remote > 0) {
        PX_TRY(group_sweep(k, world, rank, rank == 0 || rank == remote, 2, &p2p, 1, quick, &pt,
                           err));
        hw->inter_lat_s = pt.lat_s;
        hw->inter_bw = pt.bw;
        res->inter_measured = true;
        if (ppn < 2) { /* one rank per node: no NVLink pair was measured */
            hw->intra_lat_s = pt.lat_s;
            hw->intra_bw = pt.bw;
        }
    }

    /* Collectives for each group size on ranks 0..g-1 (the executor's
     * innermost groups are consecutive ranks). */
    static const px_calib_coll_kind kinds[4] = {PX_CALIB_ALLREDUCE, PX_CALIB_ALLGATHER,
                                                PX_CALIB_REDUCE_SCATTER, PX_CALIB_ALLTOALL};
    hw->n_coll_points = hw->n_allgather_points = 0;
    hw->n_reduce_scatter_points = hw->n_alltoall_points = 0;
    for (int g = 2; g <= size && g - 2 < PX_HW_MAX_COLL_POINTS; g++) {
        px_coll_point p[4];
        PX_TRY(group_sweep(k, world, rank, rank < g, g, kinds, 4, quick, p, err));
        hw->allreduce_points[hw->n_coll_points++] = p[0];
        hw->allgather_points[hw->n_allgather_points++] = p[1];
        hw->reduce_scatter_points[hw->n_reduce_scatter_points++] = p[2];
        hw->alltoall_points[hw->n_alltoall_points++] = p[3];
    }
    res->comm_measured = true;
    return PX_OK;
}

/* ---- the whole calibration ----------------------------------------------------------- */

/* Frees what run() made, checking each call; after a failure the first
 * error is the one reported (a later one goes to a scratch record). */
static void release(cal *k, px_status *st, px_error *err)
{
    px_error scratch;
    px_error_clear(&scratch);
    void *bufs[3] = {k->a, k->b, k->c};
    for (int i = 0; i < 3; i++)
        if (bufs[i]) {
            px_status s = px_cuda_status(cudaFree(bufs[i]), "cudaFree", __FILE__, __LINE__,
                                         *st == PX_OK ? err : &scratch);
            *st = *st == PX_OK ? s : *st;
        }
    if (k->blas)
        px_cuda_blas_delete(k->blas);
    cudaEvent_t ev[2] = {k->t0, k->t1};
    for (int i = 0; i < 2; i++)
        if (ev[i]) {
            px_status s = px_cuda_status(cudaEventDestroy(ev[i]), "cudaEventDestroy", __FILE__,
                                         __LINE__, *st == PX_OK ? err : &scratch);
            *st = *st == PX_OK ? s : *st;
        }
    if (k->stream) {
        px_status s = px_cuda_status(cudaStreamDestroy(k->stream), "cudaStreamDestroy", __FILE__,
                                     __LINE__, *st == PX_OK ? err : &scratch);
        *st = *st == PX_OK ? s : *st;
    }
}

static px_status run(cal *k, px_hw *hw, const px_calib_cuda_opts *o, MPI_Comm world,
                     px_calib_cuda_result *res, px_error *err)
{
    PX_CUDA_TRY(err, cudaStreamCreateWithFlags(&k->stream, cudaStreamNonBlocking));
    PX_CUDA_TRY(err, cudaEventCreate(&k->t0));
    PX_CUDA_TRY(err, cudaEventCreate(&k->t1));
    PX_TRY(px_cuda_blas_new(k->stream, &k->blas, err));
    /* Largest operands (h 8192, 8192 tokens, fp32): a = m x k up to
     * 8192 x 32768 (1 GiB), b = n x k up to 65536 x 8192 and c = m x n up
     * to 8192 x 65536 (2 GiB each). */
    PX_CUDA_TRY(err, cudaMalloc((void **)&k->a, CAL_A_BYTES));
    PX_CUDA_TRY(err, cudaMalloc((void **)&k->b, CAL_BC_BYTES));
    PX_CUDA_TRY(err, cudaMalloc((void **)&k->c, CAL_BC_BYTES));
    PX_TRY(fill_random(k, err));
    PX_TRY(gemms(k, hw, o->quick, res, err));
    PX_TRY(hbm(k, hw, o->quick, res, err));
    PX_TRY(attention(k, hw, o->quick, res, err));
    PX_TRY(elementwise(k, hw, o->quick, res, err));
    PX_TRY(collectives(k, hw, world, o->quick, res, err));
    return PX_OK;
}

px_status px_calib_cuda(px_hw *hw, const px_calib_cuda_opts *opts, MPI_Comm world,
                        px_error *err)
{
    px_calib_cuda_opts def = {false, stderr, NULL};
    const px_calib_cuda_opts *o = opts ? opts : &def;
    px_calib_cuda_result res;
    memset(&res, 0, sizeof res);
    cal k;
    memset(&k, 0, sizeof k);
    k.log = o->progress;
    int local = 0, local_size = 0, dev = 0;
    PX_TRY(px_cuda_select_device(world, &local, &local_size, &dev, err));
    struct cudaDeviceProp prop;
    PX_CUDA_TRY(err, cudaGetDeviceProperties(&prop, dev));
    if (k.log)
        fprintf(k.log, "calibrate-cuda: device %d: %s, %.1f GB, sm_%d%d, %s\n", dev, prop.name,
                prop.totalGlobalMem / 1e9, prop.major, prop.minor,
                o->quick ? "quick sweep" : "full sweep");
    hw->hbm_bytes = (int64_t)prop.totalGlobalMem;
    /* bf16 weights and activations: the mixed precision the cost model
     * prices, and the storage execute picks for a plan on this profile
     * (the GEMM points are the bf16 form too). */
    hw->dtype_bytes = 2;
    if (local_size > hw->gpus_per_node)
        hw->gpus_per_node = local_size;

    px_status st = run(&k, hw, o, world, &res, err);
    release(&k, &st, err);
    if (st != PX_OK)
        return st;
    if (res.comm_measured)
        snprintf(res.note, sizeof res.note,
                 "bf16 cuBLAS GEMMs by shape, HBM by %s, %d element-wise classes, NCCL p2p%s + "
                 "4 collectives on %d ranks", res.hbm_source, res.n_classes,
                 res.inter_measured ? " (inter-node too)" : "", res.n_ranks);
    else
        snprintf(res.note, sizeof res.note,
                 "bf16 cuBLAS GEMMs by shape, HBM by %s, %d element-wise classes; 1 rank: NCCL "
                 "not measured (datasheet links)", res.hbm_source, res.n_classes);
    if (o->result)
        *o->result = res;
    return PX_OK;
}
