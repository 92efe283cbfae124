/* test_hybrid.c — hybrid Mamba-2 / attention layer patterns (docs/cost-model.md,
 * "Hybrid Mamba-2 models"):
 *  - a pattern of alternating attention and MLP (or expert) layers is the
 *    transformer-block model of half as many layers: the same parameters,
 *    FLOPs, memory and step time on a split whose stages cut between pairs;
 *    under full recompute each sublayer is a checkpoint of its own;
 *  - a Mamba-2 layer's parameters, FLOPs and saved activations in the closed
 *    forms of Megatron-Core's MambaMixer, its TP traffic (one block's) and its
 *    context-parallel all-to-alls;
 *  - the TP and CP rules of the mixer. */
#include <math.h>
#include <string.h>

#include "px_cost.h"
#include "px_flops.h"
#include "px_hybrid.h"
#include "px_plan_check.h"
#include "px_test.h"

/* The block model m as a hybrid: every layer as attention followed by its
 * MLP ("*-") or experts ("*E"). */
static px_model as_pairs(const px_model *m)
{
    px_model x = *m;
    x.n_layers = 2 * m->n_layers;
    char mlp = m->n_experts > 0 ? 'E' : '-';
    for (int64_t l = 0; l < m->n_layers; l++) {
        x.layer_pattern[2 * l] = '*';
        x.layer_pattern[2 * l + 1] = mlp;
    }
    x.layer_pattern[x.n_layers] = '\0';
    return x;
}

static void plan_of(px_parallel *par, int tp, int pp, int dp, int ep, px_recompute rc)
{
    px_parallel_init(par);
    par->tp = tp;
    par->pp = pp;
    par->dp = dp;
    par->ep = ep;
    par->sp = tp > 1;
    par->micro_batch = 1;
    par->n_micro = 8;
    par->seq_len = 4096;
    par->zero = 1;
    par->recompute = rc;
    par->schedule = PX_SCHED_1F1B;
}

static void check_pairs(const px_model *block, const px_hw *hw, int ep)
{
    static px_cost_ctx cb, ch;
    px_error err;
    px_model hyb = as_pairs(block);
    CHECK_MSG(px_model_validate(&hyb, &err) == PX_OK, "%s", err.msg);
    px_param_count pb, ph;
    px_model_count_params(block, &pb);
    px_model_count_params(&hyb, &ph);
    CHECK(pb.total == ph.total && pb.active == ph.active && pb.norms == ph.norms);
    const int64_t s = 4096;
    CHECK_CLOSE(px_flops_model_per_token(&hyb, s), px_flops_model_per_token(block, s), 1e-12, 0);
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++)
        CHECK_CLOSE(px_flops_hw_per_token(&hyb, s, (px_recompute)r),
                    px_flops_hw_per_token(block, s, (px_recompute)r), 1e-12, 0);
    CHECK(px_cost_ctx_init(&cb, block, hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&ch, &hyb, hw, &err) == PX_OK);
    for (int r = 0; r < PX_RECOMPUTE_COUNT; r++) {
        px_parallel par;
        plan_of(&par, 2, 2, 4, ep, (px_recompute)r);
        CHECK_MSG(px_cost_check(&hyb, &par, &err) == PX_OK, "%s", err.msg);
        px_prediction a, b;
        px_cost_detail da, db;
        CHECK(px_cost_eval(&cb, &par, 0.0, 0.0, &a, &da, &err) == PX_OK);
        CHECK(px_cost_eval(&ch, &par, 0.0, 0.0, &b, &db, &err) == PX_OK);
        CHECK_MSG(fabs(a.time.step_s - b.time.step_s) <= 1e-9 * a.time.step_s,
                  "%s, recompute %d: step %.9g s as blocks, %.9g s as pairs", block->name, r,
                  a.time.step_s, b.time.step_s);
        CHECK(a.mem.weights == b.mem.weights && a.mem.grads == b.mem.grads &&
              a.mem.optimizer == b.mem.optimizer);
        double act_a = da.act_attention + da.act_mlp + da.act_norm,
               act_b = db.act_attention + db.act_mlp + db.act_norm;
        if (r == PX_RECOMPUTE_FULL) {
            /* each hybrid layer is a checkpoint: two inputs kept a pair, one
             * sublayer rerun at a time */
            CHECK_CLOSE(act_b, 2.0 * act_a, 1e-12, 0);
            CHECK(db.buf_recompute < da.buf_recompute);
        } else {
            CHECK_CLOSE(act_b, act_a, 1e-12, 0);
            CHECK(a.mem.total == b.mem.total);
        }
    }
}

/* Nemotron-H 8B's shapes (Megatron-Bridge's nemotronh recipes), cut to
 * `layers` layers of `pattern`. */
static px_model nemotron_like(const char *pattern)
{
    px_model m;
    px_model_defaults(&m);
    snprintf(m.name, sizeof m.name, "hybrid-test");
    m.hidden = 4096;
    m.n_heads = 32;
    m.n_kv_heads = 8;
    m.head_dim = 128;
    m.ffn = 21504;
    m.vocab = 131072;
    m.seq_len = 8192;
    m.mlp_act = PX_ACT_RELU2;
    m.rope_fraction = 0.0;
    m.n_layers = (int64_t)strlen(pattern);
    snprintf(m.layer_pattern, sizeof m.layer_pattern, "%s", pattern);
    m.mamba_heads = 128;
    m.mamba_head_dim = 64;
    m.mamba_state = 128;
    m.mamba_groups = 8;
    m.mamba_conv = 4;
    return m;
}

static void check_mamba_layer(const px_hw *hw)
{
    px_model m = nemotron_like("M*-M-M-M");
    px_error err;
    CHECK_MSG(px_model_validate(&m, &err) == PX_OK, "%s", err.msg);
    double h = 4096, di = 128 * 64, G = 8, N = 128, H = 128, conv = 4, e = 2;
    /* Megatron-Core's MambaMixer: in_proj h -> 2 di + 2 G N + H, the conv's
     * weights and biases over x|B|C, dt_bias, A_log, D, the gated norm, out_proj */
    double in = 2.0 * di + 2.0 * G * N + H;
    double mixer = h * in + (di + 2.0 * G * N) * (conv + 1.0) + 3.0 * H + di + di * h;
    CHECK(px_mamba_params(&m) == (int64_t)mixer);
    CHECK(px_model_layer_params(&m, 0) == (int64_t)(mixer + h));
    CHECK(px_model_layer_params(&m, 2) == (int64_t)(2.0 * h * 21504 + h)); /* relu2: 2 matrices */
    /* FLOPs: the two projections and Megatron's scan count 7 di N */
    CHECK_CLOSE(px_flops_layer_fwd_per_token(&m, 0, 8192), 2.0 * (h * in + di * h) + 7.0 * di * N,
                1e-12, 0);
    CHECK(px_flops_layer_fwd_per_token(&m, 0, 8192) < px_flops_layer_fwd_per_token(&m, 2, 8192));

    static px_cost_ctx c;
    CHECK(px_cost_ctx_init(&c, &m, hw, &err) == PX_OK);
    px_parallel par;
    plan_of(&par, 2, 1, 4, 1, PX_RECOMPUTE_NONE);
    par.seq_len = 8192;
    CHECK_MSG(px_cost_check(&m, &par, &err) == PX_OK, "%s", err.msg);
    px_layer_cost lc;
    px_cost_layer(&c, &par, 0, &lc);
    /* its pre-norm's input (the SP shard), in_proj's input, its output
     * z|x|B|C|dt, the scan's output, the gated norm's and out_proj's inputs
     * over TP, the norm's fp32 reciprocal RMS a group */
    double t = 2, T = 8192;
    double want = e * T * h / t + e * T * h / t + e * T * (in + 3.0 * di) / t + 4.0 * T * G / t;
    CHECK_CLOSE(lc.act_bytes[PX_RECOMPUTE_NONE], want, 1e-12, 0);
    CHECK(lc.act_bytes[PX_RECOMPUTE_SELECTIVE] == lc.act_bytes[PX_RECOMPUTE_NONE]);
    CHECK(lc.recompute_s[PX_RECOMPUTE_SELECTIVE] == 0.0); /* no selective option */
    CHECK_CLOSE(lc.act_bytes[PX_RECOMPUTE_FULL], e * T * h / t, 1e-12, 0);
    CHECK(lc.fwd_s > 0.0 && lc.bwd_s > lc.fwd_s);
    /* its weights on a GPU: the mixer over TP, the pre-norm whole */
    CHECK_CLOSE((double)lc.params, mixer / t + h, 1e-9, 0);
    /* TP: one block's collectives, an MLP's; the first layer is a Mamba layer */
    px_prediction p;
    px_cost_detail d;
    CHECK(px_cost_eval(&c, &par, 0.0, 0.0, &p, &d, &err) == PX_OK);
    CHECK_CLOSE(d.tp_bytes_per_layer, px_cost_tp_bytes_per_layer(T, 1, h, 2, 2) / 2.0, 1e-12, 0);
    /* the attention layer keeps its core for selective recompute to rerun */
    px_cost_layer(&c, &par, 1, &lc);
    CHECK(lc.recompute_s[PX_RECOMPUTE_SELECTIVE] > 0.0);
    CHECK(lc.act_bytes[PX_RECOMPUTE_SELECTIVE] < lc.act_bytes[PX_RECOMPUTE_NONE]);
}

/* CP over Mamba layers: the all-to-alls of z|x|B|C|dt (B and C repeated to
 * cp groups where a rank has fewer) and of the output, forward and
 * backward, on every micro-batch. */
static void check_mamba_cp(const px_hw *hw)
{
    px_model m = nemotron_like("MMMM");
    static px_cost_ctx c;
    px_error err;
    CHECK(px_cost_ctx_init(&c, &m, hw, &err) == PX_OK);
    const int tps[2] = {2, 8}, cps[2] = {2, 2};
    for (int i = 0; i < 2; i++) {
        px_parallel par;
        plan_of(&par, tps[i], 1, 1, 1, PX_RECOMPUTE_NONE);
        par.cp = cps[i];
        par.seq_len = 8192;
        CHECK_MSG(px_cost_check(&m, &par, &err) == PX_OK, "%s", err.msg);
        px_prediction p;
        px_cost_detail d;
        CHECK(px_cost_eval(&c, &par, 0.0, 0.0, &p, &d, &err) == PX_OK);
        double t = tps[i], cp = cps[i], T = 8192 / cp, e = 2, N = 128;
        double gl = 8 / t, gp = gl < cp ? cp : gl;
        double in = e * T * (2.0 * 8192 / t + 2.0 * gp * N + 128 / t), out = e * T * 8192 / t;
        double per = 2.0 * (px_coll_wire_bytes(PX_COLL_ALLTOALL, (int)cp, in) +
                            px_coll_wire_bytes(PX_COLL_ALLTOALL, (int)cp, out));
        CHECK_CLOSE(d.cp_bytes_per_step, 4.0 * 8.0 * per, 1e-9, 0);
        CHECK(d.cp_exposed_s > 0.0 && d.cp_exposed_s == d.cp_total_s);
    }
}

static void check_rules(void)
{
    px_model m = nemotron_like("M*-M");
    px_error err;
    px_parallel par;
    plan_of(&par, 16, 1, 1, 1, PX_RECOMPUTE_NONE);
    m.n_heads = m.n_kv_heads = 16; /* attention allows tp 16; the 8 groups do not */
    m.head_dim = 256;
    CHECK(px_cost_check(&m, &par, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "Mamba-2 heads") && strstr(err.msg, "groups"));
    m = nemotron_like("M*-M");
    plan_of(&par, 8, 1, 1, 1, PX_RECOMPUTE_NONE);
    par.cp = 32; /* 16 heads a TP rank */
    par.seq_len = 8192;
    CHECK(px_rule_mamba_cp(&m, 8, 32, &err) == PX_ERR_INVALID);
    CHECK(strstr(err.msg, "cp = 32") != NULL);
    CHECK(px_rule_mamba_cp(&m, 2, 8, &err) == PX_OK);  /* 64 heads, 4 groups repeated twice */
    CHECK(px_rule_mamba_cp(&m, 1, 16, &err) == PX_OK); /* 8 groups, each repeated twice */
    m.mamba_groups = 4;
    m.mamba_heads = 96;
    CHECK(px_rule_mamba_cp(&m, 1, 6, &err) == PX_ERR_INVALID); /* 4 groups, cp 6 */
    /* LoRA is not priced on hybrid layers */
    m = nemotron_like("M*-M");
    plan_of(&par, 1, 1, 1, 1, PX_RECOMPUTE_NONE);
    par.finetune.mode = PX_FT_LORA; /* px_parallel_init: the LoRA defaults */
    CHECK(px_cost_check(&m, &par, &err) == PX_ERR_UNSUPPORTED);
}

int main(void)
{
    px_model dense, moe;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("llama3-8b", NULL, &dense, &err) == PX_OK);
    CHECK(px_model_load("qwen3-235b-a22b", NULL, &moe, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    dense.n_layers = 8;
    moe.n_layers = 8;
    check_pairs(&dense, &hw, 1);
    check_pairs(&moe, &hw, 4);
    check_mamba_layer(&hw);
    check_mamba_cp(&hw);
    check_rules();
    return px_test_result("hybrid");
}
