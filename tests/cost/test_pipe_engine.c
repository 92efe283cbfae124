/* test_pipe_engine.c — DeepSpeed's pipeline engine (px_pipe_engine.h):
 * the transfers and gathers its blocking schedule puts on the critical
 * path, the tied embedding's gradient all-reduced after the schedule, and
 * its BF16 optimizer's cast copy (px_grad_accum_cast_bytes); each adds
 * exactly its own term to the step and nothing without its trait. */
#include <string.h>

#include "px_cost.h"
#include "px_efficiency.h"
#include "px_framework.h"
#include "px_grad_accum.h"
#include "px_pipe_engine.h"
#include "px_test.h"

static void layout(px_parallel *par, int pp, int64_t n_micro)
{
    px_parallel_init(par);
    par->tp = 8; /* one node: the TP gathers stay on NVLink, the stages cross */
    par->pp = pp;
    par->dp = 1;
    par->vpp = 1;
    par->schedule = PX_SCHED_1F1B;
    par->micro_batch = 1;
    par->n_micro = n_micro;
    par->seq_len = 2048;
    par->zero = 0;
    par->recompute = PX_RECOMPUTE_FULL;
    par->dp_overlap = false;
}

static double eval_step(px_cost_ctx *ctx, const px_parallel *par, px_prediction *pred)
{
    px_error err;
    CHECK(px_cost_eval(ctx, par, 0, 0, pred, NULL, &err) == PX_OK);
    return pred->time.step_s;
}

int main(void)
{
    /* the critical path of the schedule: one transfer a stage of the fill
     * and of the drain, four a further micro-batch; three gathers on each
     * of the m + p - 1 stage-slots */
    CHECK(px_pipe_serial_transfers(1, 64) == 0.0 && px_pipe_serial_gathers(1, 64) == 0.0);
    CHECK(px_pipe_serial_transfers(12, 1) == 22.0);
    CHECK(px_pipe_serial_transfers(35, 240) == 2.0 * 34 + 4.0 * 239);
    CHECK(px_pipe_serial_gathers(12, 1) == 36.0);
    CHECK_CLOSE(px_pipe_serial_s(4, 16, 1e-3, 1e-4), 66 * 1e-3 + 57 * 1e-4, 1e-12, 0);
    /* the cast copy: an fp32 temporary written and read */
    CHECK_CLOSE(px_grad_accum_cast_bytes(1e9, 4), 8e9, 1e-12, 0);

    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load("gpt3-175b", NULL, &m, &err) == PX_OK);
    CHECK(m.tied_embeddings);
    CHECK(px_hw_load("a100-80g", NULL, &hw, &err) == PX_OK);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    px_fw_runtime run;
    memset(&run, 0, sizeof run);
    ctx.run = &run;

    px_parallel par;
    layout(&par, 4, 16);
    px_prediction base, blk, tied;
    double t0 = eval_step(&ctx, &par, &base);

    /* blocking transfers: the pipeline term becomes the serial one, the
     * rest of the step is unchanged */
    run.pp_blocking_p2p = true;
    double t1 = eval_step(&ctx, &par, &blk);
    double msg = 2.0 * par.micro_batch * par.seq_len * (double)m.hidden; /* bf16 */
    double p2p = px_time_coll_s(&hw, PX_COLL_P2P, 2, msg / par.tp, true);
    double gather = px_time_coll_s(&hw, PX_COLL_ALLGATHER, par.tp, msg, false);
    CHECK_CLOSE(blk.time.pp_comm_s, px_pipe_serial_s(par.pp, par.n_micro, p2p, gather), 1e-9, 0);
    CHECK_CLOSE(t1 - t0, blk.time.pp_comm_s - base.time.pp_comm_s, 1e-9, 1e-12);
    CHECK(blk.time.pp_comm_s > base.time.pp_comm_s);
    /* no pipeline: nothing */
    layout(&par, 1, 16);
    run.pp_blocking_p2p = false;
    double s0 = eval_step(&ctx, &par, &base);
    run.pp_blocking_p2p = true;
    run.tied_grad_allreduce = true;
    CHECK_CLOSE(eval_step(&ctx, &par, &blk), s0, 1e-12, 0);

    /* the tied embedding's fp32 gradient over the first and the last stage */
    layout(&par, 4, 16);
    run.tied_grad_allreduce = false;
    t1 = eval_step(&ctx, &par, &blk);
    run.tied_grad_allreduce = true;
    double t2 = eval_step(&ctx, &par, &tied);
    double elems = (double)m.vocab * (double)m.hidden / par.tp;
    CHECK_CLOSE(px_pipe_tied_grad_elems(&m, &par), elems, 1e-12, 0);
    CHECK_CLOSE(t2 - t1, px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 2, elems * 4, true), 1e-9, 0);
    /* untied embeddings: nothing to reduce */
    px_model untied = m;
    untied.tied_embeddings = false;
    CHECK(px_pipe_tied_grad_elems(&untied, &par) == 0.0);

    /* the BF16 optimizer's cast copy joins every micro-batch's separate
     * accumulation, bubble included; nothing when the accumulation is fused */
    run.tied_grad_allreduce = false;
    run.pp_blocking_p2p = false;
    run.grad_accum_cast_copy = true;
    px_prediction fused, sep, cast;
    double f = eval_step(&ctx, &par, &fused);
    run.grad_accum_cast_copy = false;
    CHECK_CLOSE(eval_step(&ctx, &par, &fused), f, 1e-12, 0);
    run.grad_accum_separate = true;
    double s = eval_step(&ctx, &par, &sep);
    run.grad_accum_cast_copy = true;
    double c = eval_step(&ctx, &par, &cast);
    static px_cost_detail d;
    CHECK(px_cost_eval(&ctx, &par, 0, 0, &cast, &d, &err) == PX_OK);
    double params = (double)d.params_per_gpu;
    double extra = px_grad_accum_cast_s(&hw, &par, true, params, 4);
    CHECK_CLOSE(extra, params * 8 / (hw.hbm_bw * hw.mem_bound_eff), 1e-12, 0);
    double mm = (double)par.n_micro, bubble = (par.pp - 1) / mm;
    /* within 1 %: the accumulation counts the worst stage's parameters,
     * params_per_gpu the reported stage's */
    CHECK_CLOSE(c - s, mm * (1 + bubble) * extra, 1e-2, 0);
    CHECK(c > s && s > f);
    par.zero = 2;
    CHECK(px_grad_accum_cast_s(&hw, &par, true, params, 4) == 0.0);
    return px_test_result("pipe_engine");
}
