/* test_sandwich_norms.c — Gemma 2 / 3's sandwich norms (the model field
 * sandwich_norms: an RMSNorm on the attention's and on the MLP's output):
 * read from gemma2 configs, counted as 2h parameters a layer, and costed as
 * two more norm passes over the layer's tokens x h, forward and backward,
 * each keeping its input for the backward (and the backward adding the 2h
 * weights' gradients into the main gradients).  The layer with the field less
 * the layer without it must be exactly those two norms. */
#include <string.h>

#include "px_cost.h"
#include "px_efficiency.h"
#include "px_grad_accum.h"
#include "px_test.h"

/* The two extra norms of one layer, one micro-batch of T tokens on a GPU
 * holding T·h/tsp of them: time forward and backward (the NORM class's
 * bytes, px_cost_class_fwd_bytes; a measured class's backward is twice its
 * forward, the datasheet's read x and dy, write dx), and the bytes kept. */
static void two_norms(const px_hw *hw, double T, double h, double tsp, double e, double *fwd,
                      double *bwd, double *kept)
{
    double elems = 2.0 * T * h / tsp;
    *fwd = px_time_mem_class_s(hw, PX_MEM_NORM, px_cost_class_fwd_bytes(PX_MEM_NORM, elems,
                                                                         (int)e));
    *bwd = px_hw_class_bw_of(hw, PX_MEM_NORM) > 0.0
               ? 2.0 * *fwd
               : px_time_mem_class_s(hw, PX_MEM_NORM, 3.0 * e * elems);
    *kept = e * elems;
}

static void check_layer(px_cost_ctx *with, px_cost_ctx *without, const px_hw *hw, int tp,
                        bool sp)
{
    px_parallel par;
    px_parallel_init(&par);
    par.tp = tp;
    par.sp = sp;
    par.micro_batch = 2;
    par.n_micro = 4;
    par.seq_len = 4096;
    par.recompute = PX_RECOMPUTE_NONE;
    px_layer_cost a, b;
    px_cost_layer(with, &par, 0, &a);
    px_cost_layer(without, &par, 0, &b);
    double T = 2.0 * 4096.0, h = (double)with->model->hidden;
    double tsp = sp && tp > 1 ? tp : 1.0, e = 2.0; /* bf16 activations on the profile */
    double f, bw, kept;
    two_norms(hw, T, h, tsp, e, &f, &bw, &kept);
    CHECK(f > 0.0 && bw > 0.0);
    CHECK_CLOSE(a.fwd_s - b.fwd_s, f, 1e-9, 0);
    /* and the backward adds the 2h weights' gradients into the main ones */
    double g = px_cost_bytes_per_param((int)e, par.grad_fp32).grads;
    double acc = px_grad_accum_fused_s(hw, &par, false, (double)a.params, g) -
                 px_grad_accum_fused_s(hw, &par, false, (double)b.params, g);
    CHECK(acc > 0.0 && acc < 1e-3 * bw);
    CHECK_CLOSE(a.bwd_s - b.bwd_s, bw + acc, 1e-9, 0);
    /* kept under no and selective recompute; full keeps the layer input */
    CHECK(a.act_bytes[PX_RECOMPUTE_NONE] - b.act_bytes[PX_RECOMPUTE_NONE] == kept);
    CHECK(a.act_bytes[PX_RECOMPUTE_SELECTIVE] - b.act_bytes[PX_RECOMPUTE_SELECTIVE] == kept);
    CHECK(a.act_bytes[PX_RECOMPUTE_FULL] == b.act_bytes[PX_RECOMPUTE_FULL]);
    /* full recompute reruns the forward passes, selective only the core */
    CHECK_CLOSE(a.recompute_s[PX_RECOMPUTE_FULL] - b.recompute_s[PX_RECOMPUTE_FULL], f, 1e-9, 0);
    CHECK(a.recompute_s[PX_RECOMPUTE_SELECTIVE] == b.recompute_s[PX_RECOMPUTE_SELECTIVE]);
    /* the norm parameters: 2h more, whole on every TP rank */
    CHECK(a.params - b.params == 2 * with->model->hidden);
}

int main(void)
{
    static px_model m, plain;
    px_hw hw;
    px_error err;
    CHECK(px_model_load(PX_SOURCE_ROOT "/tests/spec/hf/gemma-2-9b/config.json", NULL, &m,
                        &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    CHECK(m.sandwich_norms && px_model_layer_norms(&m) == 4);
    plain = m;
    plain.sandwich_norms = false;
    CHECK(px_model_layer_norms(&plain) == 2);
    px_param_count pw, pp;
    px_model_count_params(&m, &pw);
    px_model_count_params(&plain, &pp);
    CHECK(pw.norms == m.n_layers * 4 * m.hidden && pp.norms == m.n_layers * 2 * m.hidden);
    CHECK(pw.total - pp.total == m.n_layers * 2 * m.hidden);

    static px_cost_ctx with, without;
    CHECK(px_cost_ctx_init(&with, &m, &hw, &err) == PX_OK);
    CHECK(px_cost_ctx_init(&without, &plain, &hw, &err) == PX_OK);
    check_layer(&with, &without, &hw, 1, false);
    check_layer(&with, &without, &hw, 2, true);  /* SP shards the norms' tokens */
    check_layer(&with, &without, &hw, 2, false); /* without SP every rank runs them whole */
    return px_test_result("test_sandwich_norms");
}
