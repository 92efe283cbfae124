/* px_trace.c — the tracing backend wrapper: class sums for the report and,
 * with events kept, a Chrome trace-event file gathered from every rank
 * (px_trace.h, docs/executor.md "Trace"). */
#include "px_trace.h"

#include "px_io.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One span.  t0, t1: host clock, seconds; for the file, nanoseconds from
 * the common origin (integers, so a child never ends after its parent). */
struct px_trace_event {
    double t0, t1;
    int32_t name; /* N_* (leaf) or N_SPAN_BASE + px_trace_span_kind */
    int32_t pad;
    int64_t step;
    int64_t a[3];
};

/* The process's active tracer: kernels take no context (px_trace.h). */
static px_trace *g_active;

enum {
    N_EMBEDDING_FWD,
    N_EMBEDDING_BWD,
    N_POSITIONS_FWD,
    N_POSITIONS_BWD,
    N_RMSNORM_FWD,
    N_RMSNORM_BWD,
    N_LAYERNORM_FWD,
    N_LAYERNORM_BWD,
    N_MATMUL_FWD,
    N_MATMUL_BWD,
    N_BIAS_ADD_FWD,
    N_BIAS_ADD_BWD,
    N_RESIDUAL_FWD,
    N_RESIDUAL_BWD,
    N_ROPE_FWD,
    N_ROPE_BWD,
    N_ATTENTION_FWD,
    N_ATTENTION_BWD,
    N_ATTENTION_KV_FWD,
    N_ATTENTION_KV_BWD,
    N_SWIGLU_FWD,
    N_SWIGLU_BWD,
    N_GELU_FWD,
    N_GELU_BWD,
    N_XENT_MAX_FWD,
    N_XENT_SUMEXP_FWD,
    N_XENT_LOSS_FWD,
    N_XENT_BWD,
    N_ADAMW_STEP,
    N_ADD_F32,
    N_MOE_ROUTER_FWD,
    N_MOE_ROUTER_BWD,
    N_MOE_PERMUTE,
    N_MOE_UNPERMUTE,
    N_MOE_GATE_BWD,
    N_ALL_REDUCE,
    N_ALL_GATHER,
    N_REDUCE_SCATTER,
    N_ALL_TO_ALL_V,
    N_P2P_BATCH,
    N_COPY,
    N_ZERO,
    N_ALLOC,
    N_FREE,
    N_SPAN_BASE
};

/* Leaf names, their class and what their three numbers mean. */
typedef struct {
    const char *name;
    px_trace_class cls;
} leaf_info;

static const leaf_info LEAVES[N_SPAN_BASE] = {
    [N_EMBEDDING_FWD] = {"embedding_fwd", PX_TRACE_ELEMENTWISE},
    [N_EMBEDDING_BWD] = {"embedding_bwd", PX_TRACE_ELEMENTWISE},
    [N_POSITIONS_FWD] = {"positions_fwd", PX_TRACE_ELEMENTWISE},
    [N_POSITIONS_BWD] = {"positions_bwd", PX_TRACE_ELEMENTWISE},
    [N_RMSNORM_FWD] = {"rmsnorm_fwd", PX_TRACE_ELEMENTWISE},
    [N_RMSNORM_BWD] = {"rmsnorm_bwd", PX_TRACE_ELEMENTWISE},
    [N_LAYERNORM_FWD] = {"layernorm_fwd", PX_TRACE_ELEMENTWISE},
    [N_LAYERNORM_BWD] = {"layernorm_bwd", PX_TRACE_ELEMENTWISE},
    [N_MATMUL_FWD] = {"matmul_fwd", PX_TRACE_GEMM},
    [N_MATMUL_BWD] = {"matmul_bwd", PX_TRACE_GEMM},
    [N_BIAS_ADD_FWD] = {"bias_add_fwd", PX_TRACE_ELEMENTWISE},
    [N_BIAS_ADD_BWD] = {"bias_add_bwd", PX_TRACE_ELEMENTWISE},
    [N_RESIDUAL_FWD] = {"residual_fwd", PX_TRACE_ELEMENTWISE},
    [N_RESIDUAL_BWD] = {"residual_bwd", PX_TRACE_ELEMENTWISE},
    [N_ROPE_FWD] = {"rope_fwd", PX_TRACE_ELEMENTWISE},
    [N_ROPE_BWD] = {"rope_bwd", PX_TRACE_ELEMENTWISE},
    [N_ATTENTION_FWD] = {"attention_fwd", PX_TRACE_ATTENTION},
    [N_ATTENTION_BWD] = {"attention_bwd", PX_TRACE_ATTENTION},
    [N_ATTENTION_KV_FWD] = {"attention_kv_fwd", PX_TRACE_ATTENTION},
    [N_ATTENTION_KV_BWD] = {"attention_kv_bwd", PX_TRACE_ATTENTION},
    [N_SWIGLU_FWD] = {"swiglu_fwd", PX_TRACE_ELEMENTWISE},
    [N_SWIGLU_BWD] = {"swiglu_bwd", PX_TRACE_ELEMENTWISE},
    [N_GELU_FWD] = {"gelu_fwd", PX_TRACE_ELEMENTWISE},
    [N_GELU_BWD] = {"gelu_bwd", PX_TRACE_ELEMENTWISE},
    [N_XENT_MAX_FWD] = {"xent_max_fwd", PX_TRACE_ELEMENTWISE},
    [N_XENT_SUMEXP_FWD] = {"xent_sumexp_fwd", PX_TRACE_ELEMENTWISE},
    [N_XENT_LOSS_FWD] = {"xent_loss_fwd", PX_TRACE_ELEMENTWISE},
    [N_XENT_BWD] = {"xent_bwd", PX_TRACE_ELEMENTWISE},
    [N_ADAMW_STEP] = {"adamw_step", PX_TRACE_OPTIMIZER},
    [N_ADD_F32] = {"add_f32", PX_TRACE_ELEMENTWISE},
    [N_MOE_ROUTER_FWD] = {"moe_router_fwd", PX_TRACE_ELEMENTWISE},
    [N_MOE_ROUTER_BWD] = {"moe_router_bwd", PX_TRACE_ELEMENTWISE},
    [N_MOE_PERMUTE] = {"moe_permute", PX_TRACE_ELEMENTWISE},
    [N_MOE_UNPERMUTE] = {"moe_unpermute", PX_TRACE_ELEMENTWISE},
    [N_MOE_GATE_BWD] = {"moe_gate_bwd", PX_TRACE_ELEMENTWISE},
    [N_ALL_REDUCE] = {"all_reduce", PX_TRACE_COMM},
    [N_ALL_GATHER] = {"all_gather", PX_TRACE_COMM},
    [N_REDUCE_SCATTER] = {"reduce_scatter", PX_TRACE_COMM},
    [N_ALL_TO_ALL_V] = {"all_to_all_v", PX_TRACE_COMM},
    [N_P2P_BATCH] = {"p2p_batch", PX_TRACE_P2P},
    [N_COPY] = {"copy", PX_TRACE_ELEMENTWISE},
    [N_ZERO] = {"zero", PX_TRACE_ELEMENTWISE},
    /* allocation: the CPU backend's zeroed buffers are written once more */
    [N_ALLOC] = {"alloc", PX_TRACE_ELEMENTWISE},
    [N_FREE] = {"free", PX_TRACE_ELEMENTWISE},
};

static const char *const SPAN_NAMES[PX_SPAN_COUNT] = {
    [PX_SPAN_STEP] = "step",           [PX_SPAN_FWD] = "F",
    [PX_SPAN_BWD] = "B",               [PX_SPAN_WGRAD] = "W",
    [PX_SPAN_REDUCE] = "reduce_grads", [PX_SPAN_OPTIMIZER] = "optimizer_step",
};

static const char *const CLASS_NAMES[PX_TRACE_N_CLASSES] = {
    "gemm", "attention", "elementwise", "comm", "p2p", "optimizer",
};

const char *px_trace_class_name(px_trace_class c)
{
    return c >= 0 && c < PX_TRACE_N_CLASSES ? CLASS_NAMES[c] : "?";
}

static double clock_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void store(px_trace *tr, int name, double t0, double t1, int64_t a0, int64_t a1,
                  int64_t a2)
{
    if (!tr->keep_events || tr->ev_failed || tr->step < 0)
        return;
    if (tr->n_ev == tr->cap_ev) {
        int64_t cap = tr->cap_ev ? 2 * tr->cap_ev : 4096;
        px_trace_event *ev = realloc(tr->ev, (size_t)cap * sizeof *ev);
        if (!ev) {
            tr->ev_failed = true;
            return;
        }
        tr->ev = ev;
        tr->cap_ev = cap;
    }
    tr->ev[tr->n_ev++] = (px_trace_event){t0, t1, name, 0, tr->step, {a0, a1, a2}};
}

static void leaf(int name, double t0, int64_t a0, int64_t a1, int64_t a2)
{
    px_trace *tr = g_active;
    double t1 = clock_s();
    if (tr->timed && tr->step >= 0)
        tr->class_s[LEAVES[name].cls] += t1 - t0;
    store(tr, name, t0, t1, a0, a1, a2);
}

/* one wrapper per kernel: time it, forward the call */
static void w_embedding_fwd(void *o, const int32_t *tok, const void *w, int64_t a, int64_t b, int64_t c, int64_t d)
{
    double t0 = clock_s();
    g_active->inner_k->embedding_fwd(o, tok, w, a, b, c, d);
    leaf(N_EMBEDDING_FWD, t0, a, b, 0);
}

static void w_embedding_bwd(float *o, const void *d, const int32_t *tok, int64_t a, int64_t b, int64_t c, int64_t e)
{
    double t0 = clock_s();
    g_active->inner_k->embedding_bwd(o, d, tok, a, b, c, e);
    leaf(N_EMBEDDING_BWD, t0, a, b, 0);
}

static void w_positions_fwd(void *x, const void *w, int64_t a, int64_t b, int64_t c, int64_t d)
{
    double t0 = clock_s();
    g_active->inner_k->positions_fwd(x, w, a, b, c, d);
    leaf(N_POSITIONS_FWD, t0, a, b, c);
}

static void w_positions_bwd(float *g, const void *d, int64_t a, int64_t b, int64_t c, int64_t e)
{
    double t0 = clock_s();
    g_active->inner_k->positions_bwd(g, d, a, b, c, e);
    leaf(N_POSITIONS_BWD, t0, a, b, c);
}

static void w_rmsnorm_fwd(void *o, float *r, const void *x, const void *w, int64_t T, int64_t C, float eps)
{
    double t0 = clock_s();
    g_active->inner_k->rmsnorm_fwd(o, r, x, w, T, C, eps);
    leaf(N_RMSNORM_FWD, t0, T, C, 0);
}

static void w_rmsnorm_bwd(void *dx, float *dw, const void *d, const void *x, const void *w, const float *r, int64_t T, int64_t C)
{
    double t0 = clock_s();
    g_active->inner_k->rmsnorm_bwd(dx, dw, d, x, w, r, T, C);
    leaf(N_RMSNORM_BWD, t0, T, C, 0);
}

static void w_layernorm_fwd(void *o, float *mu, float *r, const void *x, const void *w, const void *b, int64_t T, int64_t C, float eps)
{
    double t0 = clock_s();
    g_active->inner_k->layernorm_fwd(o, mu, r, x, w, b, T, C, eps);
    leaf(N_LAYERNORM_FWD, t0, T, C, 0);
}

static void w_layernorm_bwd(void *dx, float *dw, float *db, const void *d, const void *x, const void *w, const float *mu, const float *r, int64_t T, int64_t C)
{
    double t0 = clock_s();
    g_active->inner_k->layernorm_bwd(dx, dw, db, d, x, w, mu, r, T, C);
    leaf(N_LAYERNORM_BWD, t0, T, C, 0);
}

static void w_matmul_fwd(void *o, const void *x, const void *w, const void *b, int64_t T, int64_t K, int64_t N)
{
    double t0 = clock_s();
    g_active->inner_k->matmul_fwd(o, x, w, b, T, K, N);
    leaf(N_MATMUL_FWD, t0, T, K, N);
}

static void w_matmul_bwd(void *dx, float *dw, float *db, const void *d, const void *x, const void *w, int64_t T, int64_t K, int64_t N)
{
    double t0 = clock_s();
    g_active->inner_k->matmul_bwd(dx, dw, db, d, x, w, T, K, N);
    leaf(N_MATMUL_BWD, t0, T, K, N);
}

static void w_bias_add_fwd(void *x, const void *b, int64_t T, int64_t N)
{
    double t0 = clock_s();
    g_active->inner_k->bias_add_fwd(x, b, T, N);
    leaf(N_BIAS_ADD_FWD, t0, T, N, 0);
}

static void w_bias_add_bwd(float *db, const void *d, int64_t T, int64_t N)
{
    double t0 = clock_s();
    g_active->inner_k->bias_add_bwd(db, d, T, N);
    leaf(N_BIAS_ADD_BWD, t0, T, N, 0);
}

static void w_residual_fwd(void *o, const void *a, const void *b, int64_t n)
{
    double t0 = clock_s();
    g_active->inner_k->residual_fwd(o, a, b, n);
    leaf(N_RESIDUAL_FWD, t0, n, 0, 0);
}

static void w_residual_bwd(void *da, void *db, const void *d, int64_t n)
{
    double t0 = clock_s();
    g_active->inner_k->residual_bwd(da, db, d, n);
    leaf(N_RESIDUAL_BWD, t0, n, 0, 0);
}

static void w_rope_fwd(void *x, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, int64_t f,
                       const px_rope *th)
{
    double t0 = clock_s();
    g_active->inner_k->rope_fwd(x, a, b, c, d, e, f, th);
    leaf(N_ROPE_FWD, t0, a, b, c);
}

static void w_rope_bwd(void *x, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, int64_t f,
                       const px_rope *th)
{
    double t0 = clock_s();
    g_active->inner_k->rope_bwd(x, a, b, c, d, e, f, th);
    leaf(N_ROPE_BWD, t0, a, b, c);
}

static void w_attention_fwd(void *o, float *l, float *p, const void *q, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e)
{
    double t0 = clock_s();
    g_active->inner_k->attention_fwd(o, l, p, q, a, b, c, d, e);
    leaf(N_ATTENTION_FWD, t0, a, b, c);
}

static void w_attention_bwd(void *dq, const void *d, const void *q, const float *l, const float *p, const void *o, int64_t a, int64_t b, int64_t c, int64_t e, int64_t f)
{
    double t0 = clock_s();
    g_active->inner_k->attention_bwd(dq, d, q, l, p, o, a, b, c, e, f);
    leaf(N_ATTENTION_BWD, t0, a, b, c);
}

static void w_attention_kv_fwd(void *o, float *l, const void *q, const int32_t *qp, const void *kv, int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, int64_t f)
{
    double t0 = clock_s();
    g_active->inner_k->attention_kv_fwd(o, l, q, qp, kv, a, b, c, d, e, f);
    leaf(N_ATTENTION_KV_FWD, t0, a, b, c);
}

static void w_attention_kv_bwd(void *dq, void *dkv, const void *d, const void *q, const float *l, const void *o, const int32_t *qp, const void *kv, int64_t a, int64_t b, int64_t c, int64_t e, int64_t f, int64_t g)
{
    double t0 = clock_s();
    g_active->inner_k->attention_kv_bwd(dq, dkv, d, q, l, o, qp, kv, a, b, c, e, f, g);
    leaf(N_ATTENTION_KV_BWD, t0, a, b, c);
}

static void w_swiglu_fwd(void *o, const void *x, int64_t T, int64_t F)
{
    double t0 = clock_s();
    g_active->inner_k->swiglu_fwd(o, x, T, F);
    leaf(N_SWIGLU_FWD, t0, T, F, 0);
}

static void w_swiglu_bwd(void *dx, const void *d, const void *x, int64_t T, int64_t F)
{
    double t0 = clock_s();
    g_active->inner_k->swiglu_bwd(dx, d, x, T, F);
    leaf(N_SWIGLU_BWD, t0, T, F, 0);
}

static void w_gelu_fwd(void *o, const void *x, int64_t n)
{
    double t0 = clock_s();
    g_active->inner_k->gelu_fwd(o, x, n);
    leaf(N_GELU_FWD, t0, n, 0, 0);
}

static void w_gelu_bwd(void *dx, const void *x, const void *d, int64_t n)
{
    double t0 = clock_s();
    g_active->inner_k->gelu_bwd(dx, x, d, n);
    leaf(N_GELU_BWD, t0, n, 0, 0);
}

static void w_xent_max_fwd(float *m, const void *l, int64_t T, int64_t V)
{
    double t0 = clock_s();
    g_active->inner_k->xent_max_fwd(m, l, T, V);
    leaf(N_XENT_MAX_FWD, t0, T, V, 0);
}

static void w_xent_sumexp_fwd(float *s, float *t, const void *l, const float *m, const int32_t *y, int64_t T, int64_t V, int64_t v0)
{
    double t0 = clock_s();
    g_active->inner_k->xent_sumexp_fwd(s, t, l, m, y, T, V, v0);
    leaf(N_XENT_SUMEXP_FWD, t0, T, V, 0);
}

static void w_xent_loss_fwd(float *o, const float *m, const float *s, const float *t, int64_t T)
{
    double t0 = clock_s();
    g_active->inner_k->xent_loss_fwd(o, m, s, t, T);
    leaf(N_XENT_LOSS_FWD, t0, T, 0, 0);
}

static void w_xent_bwd(void *dl, const void *l, const float *m, const float *s, const int32_t *y, float sc, int64_t T, int64_t V, int64_t v0)
{
    double t0 = clock_s();
    g_active->inner_k->xent_bwd(dl, l, m, s, y, sc, T, V, v0);
    leaf(N_XENT_BWD, t0, T, V, 0);
}

static void w_adamw_step(float *w, const float *g, float *m, float *v, int64_t n, float lr, float b1, float b2, float eps, float wd, int64_t step, void *copy)
{
    double t0 = clock_s();
    g_active->inner_k->adamw_step(w, g, m, v, n, lr, b1, b2, eps, wd, step, copy);
    leaf(N_ADAMW_STEP, t0, n, 0, 0);
}

static void w_add_f32(float *o, const float *a, const float *b, int64_t n)
{
    double t0 = clock_s();
    g_active->inner_k->add_f32(o, a, b, n);
    leaf(N_ADD_F32, t0, n, 0, 0);
}

static void w_moe_router_fwd(float *p, int32_t *e, float *g, const void *l, int64_t T, int64_t E,
                             int64_t k, const px_router *r)
{
    double t0 = clock_s();
    g_active->inner_k->moe_router_fwd(p, e, g, l, T, E, k, r);
    leaf(N_MOE_ROUTER_FWD, t0, T, E, k);
}

static void w_moe_router_bwd(void *dl, const float *p, const int32_t *e, const float *dg,
                             int64_t T, int64_t E, int64_t k, const px_router *r)
{
    double t0 = clock_s();
    g_active->inner_k->moe_router_bwd(dl, p, e, dg, T, E, k, r);
    leaf(N_MOE_ROUTER_BWD, t0, T, E, k);
}

static void w_moe_permute(void *o, const void *x, const int32_t *a, const float *g, const int32_t *b, int64_t n, int64_t h)
{
    double t0 = clock_s();
    g_active->inner_k->moe_permute(o, x, a, g, b, n, h);
    leaf(N_MOE_PERMUTE, t0, n, h, 0);
}

static void w_moe_unpermute(void *o, const void *x, const int32_t *a, const float *g, const int32_t *b, int64_t n, int64_t h)
{
    double t0 = clock_s();
    g_active->inner_k->moe_unpermute(o, x, a, g, b, n, h);
    leaf(N_MOE_UNPERMUTE, t0, n, h, 0);
}

static void w_moe_gate_bwd(float *dg, const void *d, const void *y, const int32_t *a, const int32_t *b, int64_t n, int64_t h)
{
    double t0 = clock_s();
    g_active->inner_k->moe_gate_bwd(dg, d, y, a, b, n, h);
    leaf(N_MOE_GATE_BWD, t0, n, h, 0);
}

static void wrap_kernels(px_trace *tr)
{
    const px_kernels *in = tr->inner_k;
    memset(&tr->k, 0, sizeof tr->k);
    tr->k.embedding_fwd = in->embedding_fwd ? w_embedding_fwd : NULL;
    tr->k.embedding_bwd = in->embedding_bwd ? w_embedding_bwd : NULL;
    tr->k.positions_fwd = in->positions_fwd ? w_positions_fwd : NULL;
    tr->k.positions_bwd = in->positions_bwd ? w_positions_bwd : NULL;
    tr->k.rmsnorm_fwd = in->rmsnorm_fwd ? w_rmsnorm_fwd : NULL;
    tr->k.rmsnorm_bwd = in->rmsnorm_bwd ? w_rmsnorm_bwd : NULL;
    tr->k.layernorm_fwd = in->layernorm_fwd ? w_layernorm_fwd : NULL;
    tr->k.layernorm_bwd = in->layernorm_bwd ? w_layernorm_bwd : NULL;
    tr->k.matmul_fwd = in->matmul_fwd ? w_matmul_fwd : NULL;
    tr->k.matmul_bwd = in->matmul_bwd ? w_matmul_bwd : NULL;
    tr->k.bias_add_fwd = in->bias_add_fwd ? w_bias_add_fwd : NULL;
    tr->k.bias_add_bwd = in->bias_add_bwd ? w_bias_add_bwd : NULL;
    tr->k.residual_fwd = in->residual_fwd ? w_residual_fwd : NULL;
    tr->k.residual_bwd = in->residual_bwd ? w_residual_bwd : NULL;
    tr->k.rope_fwd = in->rope_fwd ? w_rope_fwd : NULL;
    tr->k.rope_bwd = in->rope_bwd ? w_rope_bwd : NULL;
    tr->k.attention_fwd = in->attention_fwd ? w_attention_fwd : NULL;
    tr->k.attention_bwd = in->attention_bwd ? w_attention_bwd : NULL;
    tr->k.attention_kv_fwd = in->attention_kv_fwd ? w_attention_kv_fwd : NULL;
    tr->k.attention_kv_bwd = in->attention_kv_bwd ? w_attention_kv_bwd : NULL;
    tr->k.swiglu_fwd = in->swiglu_fwd ? w_swiglu_fwd : NULL;
    tr->k.swiglu_bwd = in->swiglu_bwd ? w_swiglu_bwd : NULL;
    tr->k.gelu_fwd = in->gelu_fwd ? w_gelu_fwd : NULL;
    tr->k.gelu_bwd = in->gelu_bwd ? w_gelu_bwd : NULL;
    tr->k.xent_max_fwd = in->xent_max_fwd ? w_xent_max_fwd : NULL;
    tr->k.xent_sumexp_fwd = in->xent_sumexp_fwd ? w_xent_sumexp_fwd : NULL;
    tr->k.xent_loss_fwd = in->xent_loss_fwd ? w_xent_loss_fwd : NULL;
    tr->k.xent_bwd = in->xent_bwd ? w_xent_bwd : NULL;
    tr->k.adamw_step = in->adamw_step ? w_adamw_step : NULL;
    tr->k.add_f32 = in->add_f32 ? w_add_f32 : NULL;
    tr->k.moe_router_fwd = in->moe_router_fwd ? w_moe_router_fwd : NULL;
    tr->k.moe_router_bwd = in->moe_router_bwd ? w_moe_router_bwd : NULL;
    tr->k.moe_permute = in->moe_permute ? w_moe_permute : NULL;
    tr->k.moe_unpermute = in->moe_unpermute ? w_moe_unpermute : NULL;
    tr->k.moe_gate_bwd = in->moe_gate_bwd ? w_moe_gate_bwd : NULL;
}

/* ---- collectives and memory operations ----------------------------------------- */

static px_status w_all_reduce(px_backend *be, void *buf, int64_t n, px_dtype t, px_reduce_op op,
                              px_comm *c, px_error *err)
{
    double t0 = clock_s();
    px_status st = g_active->inner.all_reduce(be, buf, n, t, op, c, err);
    leaf(N_ALL_REDUCE, t0, n * px_dtype_bytes(t), c->size, 0);
    return st;
}

static px_status w_all_gather(px_backend *be, void *out, const void *in, int64_t n, px_dtype t,
                              px_comm *c, px_error *err)
{
    double t0 = clock_s();
    px_status st = g_active->inner.all_gather(be, out, in, n, t, c, err);
    leaf(N_ALL_GATHER, t0, n * c->size * px_dtype_bytes(t), c->size, 0);
    return st;
}

static px_status w_reduce_scatter(px_backend *be, void *out, const void *in, int64_t n,
                                  px_dtype t, px_comm *c, px_error *err)
{
    double t0 = clock_s();
    px_status st = g_active->inner.reduce_scatter(be, out, in, n, t, c, err);
    leaf(N_REDUCE_SCATTER, t0, n * c->size * px_dtype_bytes(t), c->size, 0);
    return st;
}

static px_status w_all_to_all_v(px_backend *be, void *out, const int64_t *recv_n, const void *in,
                                const int64_t *send_n, px_dtype t, px_comm *c, px_error *err)
{
    double t0 = clock_s();
    px_status st = g_active->inner.all_to_all_v(be, out, recv_n, in, send_n, t, c, err);
    int64_t n = 0;
    for (int j = 0; j < c->size; j++)
        n += send_n[j];
    leaf(N_ALL_TO_ALL_V, t0, n * px_dtype_bytes(t), c->size, 0);
    return st;
}

static px_status w_p2p_batch(px_backend *be, const px_p2p_op *ops, int n_ops, px_comm *c,
                             px_error *err)
{
    double t0 = clock_s();
    px_status st = g_active->inner.p2p_batch(be, ops, n_ops, c, err);
    int64_t sent = 0, recv = 0;
    for (int i = 0; i < n_ops; i++)
        *(ops[i].send ? &sent : &recv) += ops[i].n * px_dtype_bytes(ops[i].dtype);
    leaf(N_P2P_BATCH, t0, sent, recv, n_ops);
    return st;
}

static void w_copy(px_backend *be, void *dst, const void *src, int64_t bytes)
{
    double t0 = clock_s();
    g_active->inner.copy(be, dst, src, bytes);
    leaf(N_COPY, t0, bytes, 0, 0);
}

static void w_copy_2d(px_backend *be, void *dst, int64_t dpitch, const void *src,
                      int64_t spitch, int64_t width, int64_t rows)
{
    double t0 = clock_s();
    g_active->inner.copy_2d(be, dst, dpitch, src, spitch, width, rows);
    leaf(N_COPY, t0, width * rows, 0, 0);
}

static void w_zero(px_backend *be, void *p, int64_t bytes)
{
    double t0 = clock_s();
    g_active->inner.zero(be, p, bytes);
    leaf(N_ZERO, t0, bytes, 0, 0);
}

static px_status w_alloc(px_backend *be, int64_t bytes, void **out, px_error *err)
{
    double t0 = clock_s();
    px_status st = g_active->inner.alloc(be, bytes, out, err);
    leaf(N_ALLOC, t0, bytes, 0, 0);
    return st;
}

static void w_free(px_backend *be, void *p)
{
    double t0 = clock_s();
    g_active->inner.free(be, p);
    leaf(N_FREE, t0, 0, 0, 0);
}

/* The engine installs the kernels of its storage dtype: wrap those. */
static px_status w_set_dtype(px_backend *be, px_dtype t, px_error *err)
{
    px_status st = g_active->inner.set_dtype(be, t, err);
    g_active->inner_k = be->k;
    wrap_kernels(g_active);
    be->k = &g_active->k;
    return st;
}

px_status px_trace_attach(px_trace *tr, px_backend *be, bool keep_events, px_error *err)
{
    if (g_active)
        return PX_FAIL(err, PX_ERR_INTERNAL, "trace: a backend is already traced in this process");
    memset(tr, 0, sizeof *tr);
    tr->inner = *be;
    tr->inner_k = be->k;
    tr->keep_events = keep_events;
    tr->step = -1;
    tr->t_origin = clock_s();
    g_active = tr;
    wrap_kernels(tr);
    be->k = &tr->k;
    if (be->all_reduce)
        be->all_reduce = w_all_reduce;
    if (be->all_gather)
        be->all_gather = w_all_gather;
    if (be->reduce_scatter)
        be->reduce_scatter = w_reduce_scatter;
    if (be->all_to_all_v)
        be->all_to_all_v = w_all_to_all_v;
    if (be->p2p_batch)
        be->p2p_batch = w_p2p_batch;
    if (be->copy)
        be->copy = w_copy;
    if (be->copy_2d)
        be->copy_2d = w_copy_2d;
    if (be->zero)
        be->zero = w_zero;
    if (be->alloc)
        be->alloc = w_alloc;
    if (be->free)
        be->free = w_free;
    if (be->set_dtype)
        be->set_dtype = w_set_dtype;
    return PX_OK;
}

void px_trace_start(px_trace *tr)
{
    tr->t_origin = clock_s();
}

void px_trace_step_begin(px_trace *tr, int64_t step, bool timed)
{
    tr->step = step;
    tr->timed = timed;
    tr->step_t0 = clock_s();
}

void px_trace_step_end(px_trace *tr)
{
    double t1 = clock_s();
    if (tr->timed) {
        tr->step_s += t1 - tr->step_t0;
        tr->timed_steps++;
    }
    store(tr, N_SPAN_BASE + PX_SPAN_STEP, tr->step_t0, t1, tr->timed, 0, 0);
    tr->step = -1;
    tr->timed = false;
}

double px_trace_now(void)
{
    return g_active ? clock_s() : 0.0;
}

void px_trace_span(px_trace_span_kind kind, double t0, int64_t a0, int64_t a1)
{
    if (g_active)
        store(g_active, N_SPAN_BASE + (int)kind, t0, clock_s(), a0, a1, 0);
}

void px_trace_class_means(const px_trace *tr, double *out)
{
    for (int c = 0; c < PX_TRACE_N_CLASSES; c++)
        out[c] = tr->timed_steps ? tr->class_s[c] / (double)tr->timed_steps : 0.0;
}

/* ---- the Chrome trace-event file ------------------------------------------------- */

/* What the numbers of a span mean, for its "args". */
static void print_args(FILE *f, const px_trace_event *e)
{
    fprintf(f, "\"args\":{\"step\":%" PRId64, e->step);
    int n = e->name;
    const char *k[3] = {NULL, NULL, NULL};
    if (n >= N_SPAN_BASE) {
        int s = n - N_SPAN_BASE;
        if (s == PX_SPAN_STEP)
            k[0] = "timed";
        else if (s == PX_SPAN_FWD || s == PX_SPAN_BWD || s == PX_SPAN_WGRAD)
            k[0] = "chunk", k[1] = "micro_batch";
    } else if (n == N_MATMUL_FWD || n == N_MATMUL_BWD) {
        k[0] = "T", k[1] = "K", k[2] = "N";
    } else if (n == N_ALL_REDUCE || n == N_ALL_GATHER || n == N_REDUCE_SCATTER ||
               n == N_ALL_TO_ALL_V) {
        k[0] = "bytes", k[1] = "group_size";
    } else if (n == N_P2P_BATCH) {
        k[0] = "bytes_sent", k[1] = "bytes_received", k[2] = "messages";
    } else if (n == N_COPY || n == N_ZERO || n == N_ALLOC) {
        k[0] = "bytes";
    } else {
        k[0] = "d0", k[1] = "d1", k[2] = "d2"; /* the kernel's leading sizes */
    }
    for (int i = 0; i < 3; i++)
        if (k[i])
            fprintf(f, ",\"%s\":%" PRId64, k[i], e->a[i]);
    fprintf(f, "}");
}

static void print_event(FILE *f, const px_trace_event *e, int rank, bool *first)
{
    const char *name, *cat;
    if (e->name >= N_SPAN_BASE) {
        name = SPAN_NAMES[e->name - N_SPAN_BASE];
        cat = e->name == N_SPAN_BASE + PX_SPAN_STEP ? "step" : "engine";
    } else {
        name = LEAVES[e->name].name;
        cat = CLASS_NAMES[LEAVES[e->name].cls];
    }
    /* integer nanoseconds from the origin: nesting survives the rounding */
    long long ns0 = (long long)(e->t0 * 1e9 + 0.5), ns1 = (long long)(e->t1 * 1e9 + 0.5);
    fprintf(f, "%s\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,"
               "\"ts\":%lld.%03lld,\"dur\":%lld.%03lld,",
            *first ? "" : ",", name, cat, rank, ns0 / 1000, ns0 % 1000, (ns1 - ns0) / 1000,
            (ns1 - ns0) % 1000);
    print_args(f, e);
    fprintf(f, "}");
    *first = false;
}

/* The trace as JSON text, built in memory and written with px_io_write_atomic
 * (the output rules of every file a tool writes). */
static px_status write_file(const char *path, const px_trace_event *ev, const int64_t *counts,
                            int world, px_error *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return px_error_set(err, PX_ERR_NOMEM, path, 0, 0, "cannot build the trace: %s",
                            strerror(errno));
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"producer\":\"parallax execute "
               "--trace\",\"clock\":\"host monotonic clock of each rank, origin at a barrier "
               "before the first step\",\"classes\":\"cat: gemm, attention, elementwise, "
               "comm, p2p, optimizer (leaves); engine, step (spans around them)\"},\n"
               "\"traceEvents\":[");
    bool first = true;
    for (int r = 0; r < world; r++) {
        fprintf(f, "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"name\":\"rank %d\"}}",
                first ? "" : ",", r, r);
        fprintf(f, ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                   "\"args\":{\"sort_index\":%d}}",
                r, r);
        first = false;
    }
    int64_t at = 0;
    for (int r = 0; r < world; r++)
        for (int64_t i = 0; i < counts[r]; i++)
            print_event(f, &ev[at++], r, &first);
    fprintf(f, "\n]}\n");
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        free(text);
        return px_error_set(err, PX_ERR_NOMEM, path, 0, 0, "out of memory building the trace");
    }
    px_status st = px_io_write_atomic(path, text, len, err);
    free(text);
    return st;
}

px_status px_trace_write(px_trace *tr, const char *path, MPI_Comm world, px_error *err)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &size);
    /* times relative to this rank's origin (set after a common barrier) */
    for (int64_t i = 0; i < tr->n_ev; i++) {
        tr->ev[i].t0 -= tr->t_origin;
        tr->ev[i].t1 -= tr->t_origin;
    }
    int64_t mine = tr->ev_failed ? -1 : tr->n_ev;
    int64_t *counts = rank == 0 ? calloc((size_t)size, sizeof *counts) : NULL;
    int *bytes = rank == 0 ? calloc((size_t)size, sizeof *bytes) : NULL;
    int *displ = rank == 0 ? calloc((size_t)size, sizeof *displ) : NULL;
    int fail = rank == 0 && (!counts || !bytes || !displ);
    if (MPI_Gather(&mine, 1, MPI_INT64_T, counts, 1, MPI_INT64_T, 0, world) != MPI_SUCCESS)
        fail = 1;
    px_trace_event *all = NULL;
    int64_t total = 0;
    const int64_t ev_bytes = (int64_t)sizeof(px_trace_event);
    if (rank == 0 && !fail) {
        for (int r = 0; r < size; r++) {
            if (counts[r] < 0 || (total + counts[r]) * ev_bytes > INT32_MAX)
                fail = 2; /* a rank lost events, or the file would pass 2 GB */
            else {
                displ[r] = (int)(total * ev_bytes);
                bytes[r] = (int)(counts[r] * ev_bytes);
                total += counts[r];
            }
        }
        if (!fail && !(all = malloc((size_t)(total > 0 ? total : 1) * sizeof *all)))
            fail = 1;
    }
    MPI_Bcast(&fail, 1, MPI_INT, 0, world);
    int io = 0;
    px_error io_err = {0};
    if (!fail) {
        int n_mine = (int)(tr->n_ev * ev_bytes);
        if (MPI_Gatherv(tr->ev, n_mine, MPI_BYTE, all, bytes, displ, MPI_BYTE, 0, world) !=
            MPI_SUCCESS)
            fail = 1;
        else if (rank == 0)
            io = write_file(path, all, counts, size, &io_err) != PX_OK;
    }
    MPI_Bcast(&io, 1, MPI_INT, 0, world);
    free(all);
    free(counts);
    free(bytes);
    free(displ);
    if (fail == 2)
        return PX_FAIL(err, PX_ERR_NOMEM,
                       "trace %s: a rank ran out of memory for its spans, or the spans pass 2 GB "
                       "(trace fewer steps)",
                       path);
    if (fail)
        return PX_FAIL(err, PX_ERR_MPI, "trace %s: gathering the spans failed", path);
    if (io && rank == 0) {
        if (err)
            *err = io_err;
        return io_err.code;
    }
    if (io)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "rank 0 could not write the trace");
    return PX_OK;
}

void px_trace_free(px_trace *tr)
{
    if (g_active == tr)
        g_active = NULL;
    free(tr->ev);
    tr->ev = NULL;
    tr->n_ev = tr->cap_ev = 0;
}
