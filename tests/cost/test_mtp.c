/* test_mtp.c — multi-token prediction (docs/cost-model.md, "Multi-token
 * prediction") against its closed forms and its invariants: the FLOPs of D
 * modules, the last stage's parameters (their sum over the TP ranks is the
 * model's MTP count), its extra time and memory growing linearly in D, and
 * no other stage changing. */
#include <string.h>

#include "px_cost.h"
#include "px_flops.h"
#include "px_test.h"

/* The same model with d MTP modules. */
static px_model with_mtp(const px_model *m, int64_t d)
{
    px_model x = *m;
    x.n_mtp_modules = d;
    return x;
}

static void check_flops(const px_model *base)
{
    const int64_t s = 4096;
    px_model z = with_mtp(base, 0), m1 = with_mtp(base, 1), m2 = with_mtp(base, 2);
    const px_model *m0 = &z;
    double h = (double)m0->hidden;
    /* one module: the layer shaped like layer L, the projection and norms,
     * the head again (Megatron's num_floating_point_operations) */
    double one = px_flops_layer_fwd_per_token(m0, m0->n_layers, s) + 2.0 * (2.0 * h * h + 3.0 * h) +
                 px_flops_head_fwd_per_token(m0);
    CHECK(px_flops_mtp_fwd_per_token(m0, s) == 0.0);
    CHECK_CLOSE(px_flops_mtp_fwd_per_token(&m1, s), one, 1e-12, 0);
    CHECK_CLOSE(px_flops_model_per_token(&m1, s) - px_flops_model_per_token(m0, s), 3.0 * one,
                1e-12, 0);
    CHECK_CLOSE(px_flops_model_per_token(&m2, s) - px_flops_model_per_token(m0, s), 6.0 * one,
                1e-12, 0);
    /* full recompute reruns the module's layer forward too */
    double rc0 = px_flops_hw_per_token(m0, s, PX_RECOMPUTE_FULL) - px_flops_model_per_token(m0, s);
    double rc1 = px_flops_hw_per_token(&m1, s, PX_RECOMPUTE_FULL) -
                 px_flops_model_per_token(&m1, s);
    CHECK_CLOSE(rc1 - rc0, px_flops_layer_fwd_per_token(m0, m0->n_layers, s), 1e-12, 0);
    /* as executed, its attention core is causal like the others' */
    double core = px_flops_attn_core_fwd_per_token(&m1, s) - px_flops_attn_core_fwd_per_token(m0, s);
    double drop = 3.0 * core * (1.0 - px_flops_causal_keys(s) / (double)s);
    CHECK_CLOSE(px_flops_model_causal_per_token(&m1, s),
                px_flops_model_per_token(&m1, s) -
                    (px_flops_model_per_token(m0, s) - px_flops_model_causal_per_token(m0, s)) -
                    drop,
                1e-12, 0);
}

/* A plan of deepseek-v3's shapes, shortened to `layers` layers. */
static void plan_of(px_parallel *par, int tp, int pp, int ep)
{
    px_parallel_init(par);
    par->tp = tp;
    par->pp = pp;
    par->ep = ep;
    par->dp = ep; /* experts over the data-parallel ranks */
    par->sp = tp > 1;
    par->micro_batch = 1;
    par->n_micro = 8;
    par->seq_len = 4096;
    par->zero = 1;
    par->recompute = PX_RECOMPUTE_FULL;
    par->schedule = PX_SCHED_1F1B;
}

static void check_stages(const px_model *base, const px_hw *hw)
{
    static px_cost_ctx c0, c1, c2;
    px_error err;
    px_model m0 = with_mtp(base, 0), m1 = with_mtp(base, 1), m2 = with_mtp(base, 2);
    CHECK(px_cost_ctx_init(&c0, &m0, hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&c1, &m1, hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&c2, &m2, hw, &err) == PX_OK);
    px_parallel par;
    plan_of(&par, 2, 4, 8);
    px_stage_extras x0, x1, x2;
    px_cost_stage_extras(&c0, &par, &x0);
    px_cost_stage_extras(&c1, &par, &x1);
    px_cost_stage_extras(&c2, &par, &x2);
    /* the last stage's extra time and parameters: linear in D, the first
     * stage's unchanged */
    double dt = x1.last_s - x0.last_s;
    CHECK(dt > 0.0);
    CHECK_CLOSE(x2.last_s - x0.last_s, 2.0 * dt, 1e-9, 0);
    CHECK(x1.first_s == x0.first_s && x1.first_static_bytes == x0.first_static_bytes);
    double db = x1.last_static_bytes - x0.last_static_bytes;
    CHECK(db > 0.0);
    CHECK_CLOSE(x2.last_static_bytes - x0.last_static_bytes, 2.0 * db, 1e-9, 0);
    /* a module costs more than one MoE layer of the model, and less than one
     * layer with two heads and losses more */
    px_layer_cost lc;
    px_cost_layer(&c0, &par, m0.n_layers - 1, &lc);
    double layer_s = lc.fwd_s + lc.bwd_s + lc.recompute_s[PX_RECOMPUTE_FULL];
    CHECK_MSG(dt > layer_s && dt < layer_s + 2.0 * (x0.last_s + x0.first_s),
              "module %.4g s, layer %.4g s, head %.4g s", dt, layer_s, x0.last_s);
    /* every stage but the last keeps its time and memory */
    double t0[4], t1[4];
    int64_t b0[4], b1[4];
    px_cost_stages(&c0, &par, t0, b0);
    px_cost_stages(&c1, &par, t1, b1);
    for (int st = 0; st < 3; st++)
        CHECK_MSG(t0[st] == t1[st] && b0[st] == b1[st], "stage %d changed", st);
    CHECK(t1[3] > t0[3] && b1[3] > b0[3]);
    /* the memory breakdown names it; 1F1B's last stage holds one micro-batch */
    px_prediction p0, p1;
    px_cost_detail d0, d1;
    CHECK(px_cost_eval(&c0, &par, 0.0, 0.0, &p0, &d0, &err) == PX_OK);
    CHECK(px_cost_eval(&c1, &par, 0.0, 0.0, &p1, &d1, &err) == PX_OK);
    CHECK(d0.buf_mtp == 0.0 && d1.buf_mtp > 0.0);
    CHECK(p1.time.step_s > p0.time.step_s);
}

/* Over the TP ranks and EP groups, the last stage holds the model's MTP
 * parameters: on one GPU exactly px_param_count.mtp more than without. */
static void check_params(const px_model *base, const px_hw *hw)
{
    static px_cost_ctx c0, c1;
    px_error err;
    px_model m0 = with_mtp(base, 0), m1 = with_mtp(base, 1);
    CHECK(px_cost_ctx_init(&c0, &m0, hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&c1, &m1, hw, &err) == PX_OK);
    px_param_count pc;
    px_model_count_params(&m1, &pc);
    px_parallel par;
    plan_of(&par, 1, 1, 1);
    par.zero = 0;
    par.grad_fp32 = true;
    px_memory a, b;
    px_cost_memory(&c0, &par, &a, NULL);
    px_cost_memory(&c1, &par, &b, NULL);
    /* bf16 weights, 2 bytes a parameter */
    CHECK_CLOSE((double)(b.weights - a.weights), 2.0 * (double)pc.mtp, 1e-9, 0);
}

int main(void)
{
    px_model ds, dense;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("deepseek-v3", NULL, &ds, &err) == PX_OK);
    CHECK(px_model_load("llama3-8b", NULL, &dense, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    check_flops(&ds);
    check_flops(&dense);
    ds.n_layers = 8; /* 3 dense, 5 MoE: quick, and the module's layer is MoE */
    check_stages(&ds, &hw);
    check_params(&dense, &hw);
    return px_test_result("mtp");
}
