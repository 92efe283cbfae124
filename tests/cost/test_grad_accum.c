/* test_grad_accum.c — a framework that accumulates each micro-batch's
 * gradients with a kernel of its own (px_grad_accum.h) pays that pass on
 * every micro-batch of the stage, bubble included, in place of the fused
 * accumulation's read of the main gradient; none under ZeRO 2/3; DeepSpeed's
 * BF16 ZeRO-1 all-reduces the whole gradient where Megatron reduce-scatters
 * it. */
#include <string.h>

#include "px_cost.h"
#include "px_efficiency.h"
#include "px_framework.h"
#include "px_grad_accum.h"
#include "px_test.h"

static void layout(px_parallel *par, int dp, int zero)
{
    px_parallel_init(par);
    par->tp = 8;
    par->pp = 4;
    par->dp = dp;
    par->vpp = 1;
    par->schedule = PX_SCHED_1F1B;
    par->micro_batch = 1;
    par->n_micro = 16;
    par->seq_len = 4096;
    par->zero = zero;
    par->recompute = PX_RECOMPUTE_FULL;
    par->dp_overlap = false; /* every DP byte exposed: the difference is exact */
}

int main(void)
{
    /* bf16 gradient read, fp32 main gradient read and written */
    CHECK_CLOSE(px_grad_accum_bytes(1e9, 2, 4), 1e10, 1e-12, 0);
    CHECK_CLOSE(px_grad_accum_bytes(1e9, 2, 2), 6e9, 1e-12, 0);
    /* fused: the GEMM reads the main gradient once */
    CHECK_CLOSE(px_grad_accum_fused_bytes(1e9, 4), 4e9, 1e-12, 0);
    CHECK_CLOSE(px_grad_accum_fused_bytes(1e9, 2), 2e9, 1e-12, 0);
    /* the embedding table: its dense gradient written and read, the main
     * gradient read and written */
    CHECK_CLOSE(px_grad_accum_embed_bytes(1e9, 2, 4), 1.2e10, 1e-12, 0);

    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("llama3-70b", NULL, &m, &err) == PX_OK);
    CHECK(px_hw_load("a100-80g", NULL, &hw, &err) == PX_OK);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    run.fused_attention = true;
    ctx.run = &run;

    px_parallel par;
    layout(&par, 1, 0);
    double bw = hw.hbm_bw * hw.mem_bound_eff;
    /* a layer's backward reads its main gradient once a micro-batch: fp32
     * main gradients cost 2 bytes a weight more than bf16 ones, and nothing
     * else in a layer's time depends on their dtype */
    px_layer_cost l32, l16;
    par.grad_fp32 = true;
    px_cost_layer(&ctx, &par, 0, &l32);
    par.grad_fp32 = false;
    px_cost_layer(&ctx, &par, 0, &l16);
    CHECK_CLOSE(l32.bwd_s - l16.bwd_s, (double)l32.params * 2 / bw, 1e-9, 0);
    CHECK(l32.fwd_s == l16.fwd_s);
    /* the first stage's embedding table (V·h / t): 2·(4 - 2) bytes more */
    px_stage_extras x32, x16;
    par.grad_fp32 = true;
    px_cost_stage_extras(&ctx, &par, &x32);
    par.grad_fp32 = false;
    px_cost_stage_extras(&ctx, &par, &x16);
    CHECK_CLOSE(x32.first_s - x16.first_s, (double)ctx.pc.embedding / par.tp * 4 / bw, 1e-9, 0);
    par.grad_fp32 = true;

    px_prediction fused, sep;
    static px_cost_detail d;
    CHECK(px_cost_eval(&ctx, &par, 0, 0, &fused, &d, &err) == PX_OK);
    run.grad_accum_separate = true;
    CHECK(px_cost_eval(&ctx, &par, 0, 0, &sep, NULL, &err) == PX_OK);
    double acc = px_grad_accum_s(&hw, &par, true, 1e9, 2, 4);
    CHECK_CLOSE(acc, 1e9 * 10 / bw, 1e-12, 0);
    CHECK(px_grad_accum_fused_s(&hw, &par, true, 1e9, 4) == 0.0);
    CHECK_CLOSE(px_grad_accum_fused_s(&hw, &par, false, 1e9, 4), 1e9 * 4 / bw, 1e-12, 0);
    /* every micro-batch, and the bubble's (p - 1) slots of the same length:
     * the slowest stage (the last: 20 layers, the LM head and the loss)
     * pays the separate pass over its layers' and head's weights where the
     * fused run read their main gradients */
    double stage = 20.0 * (double)l32.params + (double)ctx.head_params / par.tp;
    double m_mb = (double)par.n_micro, bubble = (par.pp - 1) / m_mb;
    CHECK_CLOSE(sep.time.step_s - fused.time.step_s,
                m_mb * (1 + bubble) * stage * (10.0 - 4.0) / bw, 1e-6, 0);
    CHECK(sep.time.step_s > fused.time.step_s);
    /* sharded gradients (ZeRO 2, 3) accumulate only their shard: not charged */
    par.zero = 2;
    CHECK(px_grad_accum_s(&hw, &par, true, 1e9, 2, 4) == 0.0);
    CHECK(px_grad_accum_s(&hw, &par, false, 1e9, 2, 4) == 0.0);
    CHECK(px_grad_accum_fused_s(&hw, &par, false, 1e9, 4) == 0.0);

    /* ZeRO-1: an all-reduce of the fp32 gradients instead of their
     * reduce-scatter (the weights' all-gather is the same) */
    run.grad_accum_separate = false;
    layout(&par, 2, 1);
    px_prediction rs, ar;
    CHECK(px_cost_eval(&ctx, &par, 0, 0, &rs, &d, &err) == PX_OK);
    run.zero1_grad_allreduce = true;
    CHECK(px_cost_eval(&ctx, &par, 0, 0, &ar, NULL, &err) == PX_OK);
    double grads = (double)d.params_per_gpu * 4; /* tp 8 pp 4: dp 2 crosses nodes */
    double more = px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 2, grads, true) -
                  px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, grads, true);
    CHECK(more > 0);
    /* within 0.1 %: the count the DP reduction uses and the one --explain
     * reports (params_per_gpu) differ by the stage's replicated extras */
    CHECK_CLOSE(ar.time.step_s - rs.time.step_s, more, 1e-3, 0);
    return px_test_result("grad_accum");
}
