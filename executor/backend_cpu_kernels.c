/* backend_cpu_kernels.c — the CPU backend's kernel tables (fp32 and bf16
 * storage) over the px_cpu_* kernels, and the failure a bf16 wrapper leaves
 * for the next sync or collective (backend_cpu_kernels.h).  Below
 * backend_cpu.c, which holds host memory, MPI and the backend itself. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu_kernels.h"
#include "px_bf16.h"
#include "px_kernels_cpu.h"

/* ---- kernel tables -------------------------------------------------------------------
 * fp32 storage: thin wrappers that give the px_cpu_* kernels the table's
 * void * signatures.  bf16 storage: each wrapper widens its bf16 inputs into
 * fp32 scratch, runs the same px_cpu_* kernel, and rounds its bf16 outputs
 * back (round to nearest even); an accumulating (+=) bf16 output is widened
 * first, so the sum is rounded once, as a GPU kernel that reads, adds in
 * fp32 and stores would.  fp32 arguments (gradients, statistics) are passed
 * through.  This is mixed precision as CPU autocast runs it: slow, but with
 * the GPU path's rounding points, so the engine's bf16 path is tested here.
 *
 * The scratch is untracked host memory (backend internals, like cuBLAS'
 * workspace).  The kernels return nothing, so an allocation failure is kept
 * and returned by the next sync or collective (the engine ends every step
 * with sync). */

/* Process-wide by design: the kernels take no context to carry a failure
 * in, and the process runs one backend (one MPI rank a process). */
static px_status cpu_sticky = PX_OK;

/* Scratch buffers of one wrapper call (the most any kernel wrapper widens). */
#define SCRATCH_MAX 8
typedef struct {
    float *p[SCRATCH_MAX];
    int n;
    int bad;
} tmp_set;

static float *tmp_new(tmp_set *t, int64_t n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
    if (!p || t->n == SCRATCH_MAX) {
        free(p);
        t->bad = 1;
        return NULL;
    }
    t->p[t->n++] = p;
    return p;
}

/* A widened copy of bf16 src[n] (NULL stays NULL). */
static float *tmp_in(tmp_set *t, const void *src, int64_t n)
{
    if (!src)
        return NULL;
    float *p = tmp_new(t, n);
    if (p)
        px_bf16_widen(p, src, n);
    return p;
}

/* A zeroed fp32 output for an optional bf16 dst (NULL stays NULL). */
static float *tmp_out(tmp_set *t, const void *dst, int64_t n)
{
    return dst ? tmp_new(t, n) : NULL;
}

/* True when every scratch buffer exists; else records the failure. */
static int tmp_ok(tmp_set *t)
{
    if (t->bad && cpu_sticky == PX_OK)
        cpu_sticky = PX_ERR_NOMEM;
    return !t->bad;
}

static void tmp_put(void *dst, const float *src, int64_t n)
{
    if (dst && src)
        px_bf16_round(dst, src, n);
}

static void tmp_done(tmp_set *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->p[i]);
}

/* Rows a permutation addresses: max(rows) + 1. */
static int64_t rows_span(const int32_t *rows, int64_t n)
{
    int64_t m = 0;
    for (int64_t i = 0; i < n; i++)
        if (rows[i] + 1 > m)
            m = rows[i] + 1;
    return m;
}

/* -- fp32 -- */

static void f_embedding_fwd(void *o, const int32_t *t, const void *w, int64_t T, int64_t C,
                            int64_t v0, int64_t v1)
{
    px_cpu_embedding_fwd(o, t, w, T, C, v0, v1);
}
static void f_embedding_bwd(float *dw, const void *g, const int32_t *t, int64_t T, int64_t C,
                            int64_t v0, int64_t v1)
{
    px_cpu_embedding_bwd(dw, g, t, T, C, v0, v1);
}
static void f_positions_fwd(void *x, const void *p, int64_t S, int64_t B, int64_t C,
                            int64_t pos0)
{
    px_cpu_positions_fwd(x, p, S, B, C, pos0);
}
static void f_positions_bwd(float *dp, const void *g, int64_t S, int64_t B, int64_t C,
                            int64_t pos0)
{
    px_cpu_positions_bwd(dp, g, S, B, C, pos0);
}
static void f_rmsnorm_fwd(void *o, float *r, const void *x, const void *w, int64_t T,
                          int64_t C, float eps)
{
    px_cpu_rmsnorm_fwd(o, r, x, w, T, C, eps);
}
static void f_rmsnorm_bwd(void *dx, float *dw, const void *g, const void *x, const void *w,
                          const float *r, int64_t T, int64_t C)
{
    px_cpu_rmsnorm_bwd(dx, dw, g, x, w, r, T, C);
}
static void f_layernorm_fwd(void *o, float *mu, float *r, const void *x, const void *w,
                            const void *b, int64_t T, int64_t C, float eps)
{
    px_cpu_layernorm_fwd(o, mu, r, x, w, b, T, C, eps);
}
static void f_layernorm_bwd(void *dx, float *dw, float *db, const void *g, const void *x,
                            const void *w, const float *mu, const float *r, int64_t T,
                            int64_t C)
{
    px_cpu_layernorm_bwd(dx, dw, db, g, x, w, mu, r, T, C);
}
static void f_matmul_fwd(void *o, const void *x, const void *w, const void *b, int64_t T,
                         int64_t K, int64_t N)
{
    px_cpu_matmul_fwd(o, x, w, b, T, K, N);
}
static void f_matmul_bwd(void *dx, float *dw, float *db, const void *g, const void *x,
                         const void *w, int64_t T, int64_t K, int64_t N)
{
    px_cpu_matmul_bwd(dx, dw, db, g, x, w, T, K, N);
}
static void f_bias_add_fwd(void *x, const void *b, int64_t T, int64_t N)
{
    px_cpu_bias_add_fwd(x, b, T, N);
}
static void f_bias_add_bwd(float *db, const void *g, int64_t T, int64_t N)
{
    px_cpu_bias_add_bwd(db, g, T, N);
}
static void f_residual_fwd(void *o, const void *a, const void *b, int64_t n)
{
    px_cpu_residual_fwd(o, a, b, n);
}
static void f_residual_bwd(void *da, void *db, const void *g, int64_t n)
{
    px_cpu_residual_bwd(da, db, g, n);
}
static void f_rope_fwd(void *q, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t pos0, const px_rope *rope)
{
    px_cpu_rope_fwd(q, S, B, NH, NKV, HD, pos0, rope);
}
static void f_rope_bwd(void *q, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t pos0, const px_rope *rope)
{
    px_cpu_rope_bwd(q, S, B, NH, NKV, HD, pos0, rope);
}
static void f_attention_fwd(void *o, float *lse, float *pr, const void *q, int64_t S,
                            int64_t B, int64_t NH, int64_t NKV, int64_t HD)
{
    px_cpu_attention_fwd(o, lse, pr, q, S, B, NH, NKV, HD);
}
static void f_attention_bwd(void *dq, const void *g, const void *o, const float *lse,
                            const float *pr, const void *q, int64_t S, int64_t B, int64_t NH,
                            int64_t NKV, int64_t HD)
{
    px_cpu_attention_bwd(dq, g, o, lse, pr, q, S, B, NH, NKV, HD);
}
static void f_attention_kv_fwd(void *o, float *lse, const void *q, const int32_t *qp,
                               const void *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                               int64_t NKV, int64_t HD)
{
    px_cpu_attention_kv_fwd(o, lse, q, qp, kv, Sq, Skv, B, NH, NKV, HD);
}
static void f_attention_kv_bwd(void *dq, void *dkv, const void *g, const void *o,
                               const float *lse, const void *q, const int32_t *qp,
                               const void *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                               int64_t NKV, int64_t HD)
{
    px_cpu_attention_kv_bwd(dq, dkv, g, o, lse, q, qp, kv, Sq, Skv, B, NH, NKV, HD);
}
static void f_swiglu_fwd(void *o, const void *gu, int64_t T, int64_t F)
{
    px_cpu_swiglu_fwd(o, gu, T, F);
}
static void f_swiglu_bwd(void *dgu, const void *g, const void *gu, int64_t T, int64_t F)
{
    px_cpu_swiglu_bwd(dgu, g, gu, T, F);
}
static void f_gelu_fwd(void *o, const void *x, int64_t n)
{
    px_cpu_gelu_fwd(o, x, n);
}
static void f_gelu_bwd(void *dx, const void *g, const void *x, int64_t n)
{
    px_cpu_gelu_bwd(dx, g, x, n);
}
static void f_xent_max_fwd(float *mx, const void *l, int64_t T, int64_t Vl)
{
    px_cpu_xent_max_fwd(mx, l, T, Vl);
}
static void f_xent_sumexp_fwd(float *se, float *tl, const void *l, const float *mx,
                              const int32_t *tg, int64_t T, int64_t Vl, int64_t v0)
{
    px_cpu_xent_sumexp_fwd(se, tl, l, mx, tg, T, Vl, v0);
}
static void f_xent_bwd(void *dl, const void *l, const float *mx, const float *se,
                       const int32_t *tg, float dloss, int64_t T, int64_t Vl, int64_t v0)
{
    px_cpu_xent_bwd(dl, l, mx, se, tg, dloss, T, Vl, v0);
}
static void f_adamw_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                         float b1, float b2, float eps, float wd, int64_t step, void *copy)
{
    px_cpu_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, step);
    if (copy && copy != p) /* fp32 storage: a separate fp32 copy, if asked for */
        memcpy(copy, p, (size_t)n * sizeof *p);
}
static void f_moe_router_fwd(float *pr, int32_t *idx, float *gate, const void *l, int64_t T,
                             int64_t E, int64_t k, const px_router *r)
{
    px_cpu_moe_router_fwd(pr, idx, gate, l, T, E, k, r);
}
static void f_moe_router_bwd(void *dl, const float *pr, const int32_t *idx, const float *dg,
                             int64_t T, int64_t E, int64_t k, const px_router *r)
{
    px_cpu_moe_router_bwd(dl, pr, idx, dg, T, E, k, r);
}
static void f_moe_permute(void *o, const void *x, const int32_t *rows, const float *gate,
                          const int32_t *slots, int64_t n, int64_t C)
{
    px_cpu_moe_permute(o, x, rows, gate, slots, n, C);
}
static void f_moe_unpermute(void *o, const void *y, const int32_t *rows, const float *gate,
                            const int32_t *slots, int64_t n, int64_t C)
{
    px_cpu_moe_unpermute(o, y, rows, gate, slots, n, C);
}
static void f_moe_gate_bwd(float *dg, const void *g, const void *y, const int32_t *rows,
                           const int32_t *slots, int64_t n, int64_t C)
{
    px_cpu_moe_gate_bwd(dg, g, y, rows, slots, n, C);
}

/* -- bf16 storage -- */

static void b_embedding_fwd(void *o, const int32_t *t, const void *w, int64_t T, int64_t C,
                            int64_t v0, int64_t v1)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, T * C), *w32 = tmp_in(&s, w, (v1 - v0) * C);
    if (tmp_ok(&s)) {
        px_cpu_embedding_fwd(o32, t, w32, T, C, v0, v1);
        tmp_put(o, o32, T * C);
    }
    tmp_done(&s);
}
static void b_embedding_bwd(float *dw, const void *g, const int32_t *t, int64_t T, int64_t C,
                            int64_t v0, int64_t v1)
{
    tmp_set s = {0};
    float *g32 = tmp_in(&s, g, T * C);
    if (tmp_ok(&s))
        px_cpu_embedding_bwd(dw, g32, t, T, C, v0, v1);
    tmp_done(&s);
}
/* Only rows [pos0, pos0 + S) of the table are read: widen those and run the
 * kernel on them from position 0. */
static void b_positions_fwd(void *x, const void *p, int64_t S, int64_t B, int64_t C,
                            int64_t pos0)
{
    tmp_set s = {0};
    float *x32 = tmp_in(&s, x, S * B * C);
    float *p32 = tmp_in(&s, px_dtype_at(p, pos0 * C, PX_BF16), S * C);
    if (tmp_ok(&s)) {
        px_cpu_positions_fwd(x32, p32, S, B, C, 0);
        tmp_put(x, x32, S * B * C);
    }
    tmp_done(&s);
}
static void b_positions_bwd(float *dp, const void *g, int64_t S, int64_t B, int64_t C,
                            int64_t pos0)
{
    tmp_set s = {0};
    float *g32 = tmp_in(&s, g, S * B * C);
    if (tmp_ok(&s))
        px_cpu_positions_bwd(dp, g32, S, B, C, pos0);
    tmp_done(&s);
}
static void b_rmsnorm_fwd(void *o, float *r, const void *x, const void *w, int64_t T,
                          int64_t C, float eps)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, T * C), *x32 = tmp_in(&s, x, T * C), *w32 = tmp_in(&s, w, C);
    if (tmp_ok(&s)) {
        px_cpu_rmsnorm_fwd(o32, r, x32, w32, T, C, eps);
        tmp_put(o, o32, T * C);
    }
    tmp_done(&s);
}
static void b_rmsnorm_bwd(void *dx, float *dw, const void *g, const void *x, const void *w,
                          const float *r, int64_t T, int64_t C)
{
    tmp_set s = {0};
    float *dx32 = tmp_in(&s, dx, T * C), *g32 = tmp_in(&s, g, T * C);
    float *x32 = tmp_in(&s, x, T * C), *w32 = tmp_in(&s, w, C);
    if (tmp_ok(&s)) {
        px_cpu_rmsnorm_bwd(dx32, dw, g32, x32, w32, r, T, C);
        tmp_put(dx, dx32, T * C);
    }
    tmp_done(&s);
}
static void b_layernorm_fwd(void *o, float *mu, float *r, const void *x, const void *w,
                            const void *b, int64_t T, int64_t C, float eps)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, T * C), *x32 = tmp_in(&s, x, T * C);
    float *w32 = tmp_in(&s, w, C), *b32 = tmp_in(&s, b, C);
    if (tmp_ok(&s)) {
        px_cpu_layernorm_fwd(o32, mu, r, x32, w32, b32, T, C, eps);
        tmp_put(o, o32, T * C);
    }
    tmp_done(&s);
}
static void b_layernorm_bwd(void *dx, float *dw, float *db, const void *g, const void *x,
                            const void *w, const float *mu, const float *r, int64_t T,
                            int64_t C)
{
    tmp_set s = {0};
    float *dx32 = tmp_in(&s, dx, T * C), *g32 = tmp_in(&s, g, T * C);
    float *x32 = tmp_in(&s, x, T * C), *w32 = tmp_in(&s, w, C);
    if (tmp_ok(&s)) {
        px_cpu_layernorm_bwd(dx32, dw, db, g32, x32, w32, mu, r, T, C);
        tmp_put(dx, dx32, T * C);
    }
    tmp_done(&s);
}
static void b_matmul_fwd(void *o, const void *x, const void *w, const void *b, int64_t T,
                         int64_t K, int64_t N)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, T * N), *x32 = tmp_in(&s, x, T * K);
    float *w32 = tmp_in(&s, w, N * K), *b32 = tmp_in(&s, b, N);
    if (tmp_ok(&s)) {
        px_cpu_matmul_fwd(o32, x32, w32, b32, T, K, N);
        tmp_put(o, o32, T * N);
    }
    tmp_done(&s);
}
static void b_matmul_bwd(void *dx, float *dw, float *db, const void *g, const void *x,
                         const void *w, int64_t T, int64_t K, int64_t N)
{
    tmp_set s = {0};
    float *dx32 = tmp_out(&s, dx, T * K), *g32 = tmp_in(&s, g, T * N);
    float *x32 = dw ? tmp_in(&s, x, T * K) : NULL; /* only the weight gradient reads x */
    float *w32 = dx ? tmp_in(&s, w, N * K) : NULL; /* only the input gradient reads w */
    if (tmp_ok(&s)) {
        px_cpu_matmul_bwd(dx32, dw, db, g32, x32, w32, T, K, N);
        tmp_put(dx, dx32, T * K);
    }
    tmp_done(&s);
}
static void b_bias_add_fwd(void *x, const void *b, int64_t T, int64_t N)
{
    tmp_set s = {0};
    float *x32 = tmp_in(&s, x, T * N), *b32 = tmp_in(&s, b, N);
    if (tmp_ok(&s)) {
        px_cpu_bias_add_fwd(x32, b32, T, N);
        tmp_put(x, x32, T * N);
    }
    tmp_done(&s);
}
static void b_bias_add_bwd(float *db, const void *g, int64_t T, int64_t N)
{
    tmp_set s = {0};
    float *g32 = tmp_in(&s, g, T * N);
    if (tmp_ok(&s))
        px_cpu_bias_add_bwd(db, g32, T, N);
    tmp_done(&s);
}
static void b_residual_fwd(void *o, const void *a, const void *b, int64_t n)
{
    tmp_set s = {0};
    float *a32 = tmp_in(&s, a, n), *b32 = tmp_in(&s, b, n);
    if (tmp_ok(&s)) {
        px_cpu_residual_fwd(a32, a32, b32, n);
        tmp_put(o, a32, n);
    }
    tmp_done(&s);
}
static void b_residual_bwd(void *da, void *db, const void *g, int64_t n)
{
    tmp_set s = {0};
    float *da32 = tmp_in(&s, da, n), *db32 = tmp_in(&s, db, n), *g32 = tmp_in(&s, g, n);
    if (tmp_ok(&s)) {
        px_cpu_residual_bwd(da32, db32, g32, n);
        tmp_put(da, da32, n);
        tmp_put(db, db32, n);
    }
    tmp_done(&s);
}
static void b_rope(void *q, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                   int64_t pos0, const px_rope *rope, int bwd)
{
    tmp_set s = {0};
    int64_t n = S * B * (NH + 2 * NKV) * HD;
    float *q32 = tmp_in(&s, q, n);
    if (tmp_ok(&s)) {
        if (bwd)
            px_cpu_rope_bwd(q32, S, B, NH, NKV, HD, pos0, rope);
        else
            px_cpu_rope_fwd(q32, S, B, NH, NKV, HD, pos0, rope);
        tmp_put(q, q32, n);
    }
    tmp_done(&s);
}
static void b_rope_fwd(void *q, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t pos0, const px_rope *rope)
{
    b_rope(q, S, B, NH, NKV, HD, pos0, rope, 0);
}
static void b_rope_bwd(void *q, int64_t S, int64_t B, int64_t NH, int64_t NKV, int64_t HD,
                       int64_t pos0, const px_rope *rope)
{
    b_rope(q, S, B, NH, NKV, HD, pos0, rope, 1);
}
static void b_attention_fwd(void *o, float *lse, float *pr, const void *q, int64_t S,
                            int64_t B, int64_t NH, int64_t NKV, int64_t HD)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, S * B * NH * HD), *q32 = tmp_in(&s, q, S * B * (NH + 2 * NKV) * HD);
    if (tmp_ok(&s)) {
        px_cpu_attention_fwd(o32, lse, pr, q32, S, B, NH, NKV, HD);
        tmp_put(o, o32, S * B * NH * HD);
    }
    tmp_done(&s);
}
static void b_attention_bwd(void *dq, const void *g, const void *o, const float *lse,
                            const float *pr, const void *q, int64_t S, int64_t B, int64_t NH,
                            int64_t NKV, int64_t HD)
{
    tmp_set s = {0};
    int64_t nq = S * B * (NH + 2 * NKV) * HD, no = S * B * NH * HD;
    float *dq32 = tmp_new(&s, nq), *g32 = tmp_in(&s, g, no), *o32 = tmp_in(&s, o, no);
    float *q32 = tmp_in(&s, q, nq);
    if (tmp_ok(&s)) {
        px_cpu_attention_bwd(dq32, g32, o32, lse, pr, q32, S, B, NH, NKV, HD);
        tmp_put(dq, dq32, nq);
    }
    tmp_done(&s);
}
static void b_attention_kv_fwd(void *o, float *lse, const void *q, const int32_t *qp,
                               const void *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                               int64_t NKV, int64_t HD)
{
    tmp_set s = {0};
    int64_t row = B * (NH + 2 * NKV) * HD, no = Sq * B * NH * HD;
    float *o32 = tmp_new(&s, no), *q32 = tmp_in(&s, q, Sq * row), *kv32 = tmp_in(&s, kv, Skv * row);
    if (tmp_ok(&s)) {
        px_cpu_attention_kv_fwd(o32, lse, q32, qp, kv32, Sq, Skv, B, NH, NKV, HD);
        tmp_put(o, o32, no);
    }
    tmp_done(&s);
}
static void b_attention_kv_bwd(void *dq, void *dkv, const void *g, const void *o,
                               const float *lse, const void *q, const int32_t *qp,
                               const void *kv, int64_t Sq, int64_t Skv, int64_t B, int64_t NH,
                               int64_t NKV, int64_t HD)
{
    tmp_set s = {0};
    int64_t row = B * (NH + 2 * NKV) * HD, no = Sq * B * NH * HD;
    float *dq32 = tmp_new(&s, Sq * row), *dkv32 = tmp_new(&s, Skv * row);
    float *g32 = tmp_in(&s, g, no), *o32 = tmp_in(&s, o, no);
    float *q32 = tmp_in(&s, q, Sq * row), *kv32 = tmp_in(&s, kv, Skv * row);
    if (tmp_ok(&s)) {
        px_cpu_attention_kv_bwd(dq32, dkv32, g32, o32, lse, q32, qp, kv32, Sq, Skv, B, NH, NKV,
                                HD);
        tmp_put(dq, dq32, Sq * row);
        tmp_put(dkv, dkv32, Skv * row);
    }
    tmp_done(&s);
}
static void b_swiglu_fwd(void *o, const void *gu, int64_t T, int64_t F)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, T * F), *gu32 = tmp_in(&s, gu, 2 * T * F);
    if (tmp_ok(&s)) {
        px_cpu_swiglu_fwd(o32, gu32, T, F);
        tmp_put(o, o32, T * F);
    }
    tmp_done(&s);
}
static void b_swiglu_bwd(void *dgu, const void *g, const void *gu, int64_t T, int64_t F)
{
    tmp_set s = {0};
    float *d32 = tmp_new(&s, 2 * T * F), *g32 = tmp_in(&s, g, T * F);
    float *gu32 = tmp_in(&s, gu, 2 * T * F);
    if (tmp_ok(&s)) {
        px_cpu_swiglu_bwd(d32, g32, gu32, T, F);
        tmp_put(dgu, d32, 2 * T * F);
    }
    tmp_done(&s);
}
static void b_gelu_fwd(void *o, const void *x, int64_t n)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, n), *x32 = tmp_in(&s, x, n);
    if (tmp_ok(&s)) {
        px_cpu_gelu_fwd(o32, x32, n);
        tmp_put(o, o32, n);
    }
    tmp_done(&s);
}
static void b_gelu_bwd(void *dx, const void *g, const void *x, int64_t n)
{
    tmp_set s = {0};
    float *d32 = tmp_new(&s, n), *g32 = tmp_in(&s, g, n), *x32 = tmp_in(&s, x, n);
    if (tmp_ok(&s)) {
        px_cpu_gelu_bwd(d32, g32, x32, n);
        tmp_put(dx, d32, n);
    }
    tmp_done(&s);
}
static void b_xent_max_fwd(float *mx, const void *l, int64_t T, int64_t Vl)
{
    tmp_set s = {0};
    float *l32 = tmp_in(&s, l, T * Vl);
    if (tmp_ok(&s))
        px_cpu_xent_max_fwd(mx, l32, T, Vl);
    tmp_done(&s);
}
static void b_xent_sumexp_fwd(float *se, float *tl, const void *l, const float *mx,
                              const int32_t *tg, int64_t T, int64_t Vl, int64_t v0)
{
    tmp_set s = {0};
    float *l32 = tmp_in(&s, l, T * Vl);
    if (tmp_ok(&s))
        px_cpu_xent_sumexp_fwd(se, tl, l32, mx, tg, T, Vl, v0);
    tmp_done(&s);
}
static void b_xent_bwd(void *dl, const void *l, const float *mx, const float *se,
                       const int32_t *tg, float dloss, int64_t T, int64_t Vl, int64_t v0)
{
    tmp_set s = {0};
    float *d32 = tmp_new(&s, T * Vl), *l32 = tmp_in(&s, l, T * Vl);
    if (tmp_ok(&s)) {
        px_cpu_xent_bwd(d32, l32, mx, se, tg, dloss, T, Vl, v0);
        tmp_put(dl, d32, T * Vl);
    }
    tmp_done(&s);
}
static void b_adamw_step(float *p, const float *g, float *m, float *v, int64_t n, float lr,
                         float b1, float b2, float eps, float wd, int64_t step, void *copy)
{
    px_cpu_adamw_step(p, g, m, v, n, lr, b1, b2, eps, wd, step);
    tmp_put(copy, p, n); /* the bf16 compute copy of the updated master */
}
static void k_add_f32(float *o, const float *a, const float *b, int64_t n)
{
    px_cpu_residual_fwd(o, a, b, n);
}
static void b_moe_router_fwd(float *pr, int32_t *idx, float *gate, const void *l, int64_t T,
                             int64_t E, int64_t k, const px_router *r)
{
    tmp_set s = {0};
    float *l32 = tmp_in(&s, l, T * E);
    if (tmp_ok(&s))
        px_cpu_moe_router_fwd(pr, idx, gate, l32, T, E, k, r);
    tmp_done(&s);
}
static void b_moe_router_bwd(void *dl, const float *pr, const int32_t *idx, const float *dg,
                             int64_t T, int64_t E, int64_t k, const px_router *r)
{
    tmp_set s = {0};
    float *d32 = tmp_new(&s, T * E);
    if (tmp_ok(&s)) {
        px_cpu_moe_router_bwd(d32, pr, idx, dg, T, E, k, r);
        tmp_put(dl, d32, T * E);
    }
    tmp_done(&s);
}
/* The permutations address rows of a [T, C] buffer whose T the table does
 * not pass: widen rows [0, max(rows) + 1), which is all the kernel touches. */
static void b_moe_permute(void *o, const void *x, const int32_t *rows, const float *gate,
                          const int32_t *slots, int64_t n, int64_t C)
{
    tmp_set s = {0};
    float *o32 = tmp_new(&s, n * C), *x32 = tmp_in(&s, x, rows_span(rows, n) * C);
    if (tmp_ok(&s)) {
        px_cpu_moe_permute(o32, x32, rows, gate, slots, n, C);
        tmp_put(o, o32, n * C);
    }
    tmp_done(&s);
}
static void b_moe_unpermute(void *o, const void *y, const int32_t *rows, const float *gate,
                            const int32_t *slots, int64_t n, int64_t C)
{
    tmp_set s = {0};
    int64_t span = rows_span(rows, n) * C;
    float *o32 = tmp_in(&s, o, span), *y32 = tmp_in(&s, y, n * C);
    if (tmp_ok(&s)) {
        px_cpu_moe_unpermute(o32, y32, rows, gate, slots, n, C);
        tmp_put(o, o32, span);
    }
    tmp_done(&s);
}
static void b_moe_gate_bwd(float *dg, const void *g, const void *y, const int32_t *rows,
                           const int32_t *slots, int64_t n, int64_t C)
{
    tmp_set s = {0};
    float *g32 = tmp_in(&s, g, rows_span(rows, n) * C), *y32 = tmp_in(&s, y, n * C);
    if (tmp_ok(&s))
        px_cpu_moe_gate_bwd(dg, g32, y32, rows, slots, n, C);
    tmp_done(&s);
}

/* Both tables from the one kernel list (px_backend.h). */
#define PX_CPU_SLOT(p, name) .name = p##name,
#define PX_CPU_TABLE(p)                                                                  \
    {                                                                                    \
        PX_KERNEL_LIST(PX_CPU_SLOT, p).xent_loss_fwd = px_cpu_xent_loss_fwd,             \
        .add_f32 = k_add_f32,                                                            \
    }

const px_kernels cpu_kernels_f32 = PX_CPU_TABLE(f_);
const px_kernels cpu_kernels_bf16 = PX_CPU_TABLE(b_);

/* The error a kernel call left (px_status once, then cleared). */
px_status take_sticky(px_error *err)
{
    px_status st = cpu_sticky;
    cpu_sticky = PX_OK;
    if (st)
        return PX_FAIL(err, st, "a bf16 kernel wrapper could not allocate its fp32 scratch");
    return PX_OK;
}
