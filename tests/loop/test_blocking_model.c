/* test_blocking_model.c — the cost model's terms for the executor's own
 * conditions (docs/cost-model.md, "The executor's conditions"):
 *  - sustained_frac divides every compute time (GEMM, attention,
 *    element-wise) and nothing else, and a profile without it (0) keeps
 *    its answers;
 *  - with --overlap off (dp_overlap false) ZeRO-3's gathers and
 *    reduce-scatters are exposed in full, with it on they hide;
 *  - sync_wait_s adds one wait per blocking collective, counted per layer,
 *    micro-batch and step as the executor issues them (px_blocking.h), and
 *    the step grows by exactly that; measured after a longer interval
 *    (sync_interval_s) than the model's, the per-micro-batch waits shrink;
 *  - the executor's GEMMs stream their weights every micro-batch. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "px_blocking.h"
#include "px_cost.h"
#include "px_efficiency.h"
#include "px_framework.h"
#include "px_grad_accum.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_pipe_sim.h"
#include "px_test.h"

static void cpu_profile(px_hw *hw)
{
    px_hw_init(hw);
    snprintf(hw->name, sizeof hw->name, "test-cpu");
    hw->peak_flops = 3e10;
    hw->hbm_bytes = 8000000000;
    hw->hbm_bw = 1e10;
    hw->mem_reserve_bytes = 300000000;
    hw->dtype_bytes = 4;
    hw->gemm_eff_max = 1.0;
    hw->gemm_eff_half_dim = 20.0;
    hw->mem_bound_eff = 0.1;
    hw->attn_eff = 0.5;
    hw->norm_bw = 8e9;
    hw->swiglu_bw = 3e9;
    hw->adamw_bw = 3e9;
    hw->gpus_per_node = 2;
    hw->intra_bw = hw->inter_bw = 1.5e10;
    hw->intra_lat_s = hw->inter_lat_s = 2e-6;
    hw->n_coll_points = hw->n_allgather_points = hw->n_reduce_scatter_points = 1;
    hw->allreduce_points[0] = (px_coll_point){2, 2e-6, 5e9, 0};
    hw->allgather_points[0] = (px_coll_point){2, 1e-6, 1.7e10, 0};
    hw->reduce_scatter_points[0] = (px_coll_point){2, 1e-6, 4.5e9, 0};
}

static px_prediction eval(const px_model *m, const px_hw *hw, const px_parallel *par)
{
    px_prediction pred;
    px_error err;
    memset(&pred, 0, sizeof pred);
    px_status st = px_cost_evaluate(m, hw, par, &pred, &err);
    CHECK_MSG(st == PX_OK, "%s", err.msg);
    return pred;
}

static px_parallel layout(int tp, int dp, int zero, bool overlap)
{
    px_parallel p;
    px_parallel_init(&p);
    p.tp = tp;
    p.dp = dp;
    p.sp = tp > 1;
    p.zero = zero;
    p.micro_batch = 2;
    p.n_micro = 4;
    p.seq_len = 32;
    p.dp_overlap = p.tp_overlap = overlap;
    return p;
}

static void test_sustained(const px_model *m)
{
    px_hw hw;
    cpu_profile(&hw);
    px_parallel p = layout(1, 1, 0, false);
    px_prediction a = eval(m, &hw, &p);
    CHECK_CLOSE(px_eff_sustained(&hw), 1.0, 0, 0); /* 0: not measured */
    double g = px_time_gemm_s(&hw, 512, 1024, 512), at = px_time_attn_s(&hw, 1e9);
    double mem = px_time_mem_class_s(&hw, PX_MEM_NORM, 1e8);
    double coll = px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 2, 1e6, false);
    hw.sustained_frac = 0.8;
    px_prediction b = eval(m, &hw, &p);
    CHECK_CLOSE(px_time_gemm_s(&hw, 512, 1024, 512), g / 0.8, 1e-12, 0);
    CHECK_CLOSE(px_time_attn_s(&hw, 1e9), at / 0.8, 1e-12, 0);
    CHECK_CLOSE(px_time_mem_class_s(&hw, PX_MEM_NORM, 1e8), mem / 0.8, 1e-12, 0);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 2, 1e6, false), coll, 1e-12, 0);
    /* one rank, no communication: the whole step is compute */
    CHECK_CLOSE(b.time.step_s, a.time.step_s / 0.8, 1e-9, 0);
    CHECK_CLOSE(b.time.compute_s, a.time.compute_s / 0.8, 1e-9, 0);
    hw.sustained_frac = 1.5;
    px_error err;
    CHECK(px_hw_validate(&hw, &err) != PX_OK);
}

static void test_zero3_blocking(const px_model *m)
{
    px_hw hw;
    cpu_profile(&hw);
    px_parallel off = layout(1, 2, 3, false), on = layout(1, 2, 3, true);
    px_prediction a = eval(m, &hw, &off), b = eval(m, &hw, &on);
    CHECK(a.time.dp_comm_total_s > 0.0);
    CHECK_CLOSE(a.time.dp_comm_s, a.time.dp_comm_total_s, 1e-12, 0);
    CHECK_MSG(b.time.dp_comm_s < 0.5 * b.time.dp_comm_total_s,
              "overlapped ZeRO-3: exposed %g of %g s", b.time.dp_comm_s, b.time.dp_comm_total_s);
}

/* ZeRO-3's gathered layers in memory: a framework that prefetches one
 * layer holds two while the DP collectives overlap; blocking (--overlap
 * off, the CPU executor) none can be gathered ahead: one layer fewer. */
static void test_zero3_gathered_layers(const px_model *m)
{
    px_hw hw;
    cpu_profile(&hw);
    px_framework fw;
    px_error err;
    CHECK_MSG(px_framework_load(NULL, NULL, &fw, &err) == PX_OK, "%s", err.msg);
    fw.run.fsdp_prefetch_layers = 1;
    fw.run.fsdp_reshard_after_forward = true;
    px_cost_ctx ctx;
    CHECK_MSG(px_cost_ctx_init(&ctx, m, &hw, &err) == PX_OK, "%s", err.msg);
    ctx.run = &fw.run;
    px_parallel off = layout(1, 2, 3, false), on = layout(1, 2, 3, true);
    px_prediction a, b;
    CHECK(px_cost_eval(&ctx, &off, 0.0, 0.0, &a, NULL, &err) == PX_OK);
    CHECK(px_cost_eval(&ctx, &on, 0.0, 0.0, &b, NULL, &err) == PX_OK);
    double layer_bytes = (double)ctx.kind_params[PX_LAYER_DENSE] * hw.dtype_bytes;
    CHECK_CLOSE((double)(b.mem.total - a.mem.total), layer_bytes, 0, 1.0);
}

static void test_sync_wait(const px_model *m)
{
    px_hw hw;
    cpu_profile(&hw);
    double L = (double)m->n_layers, mm = 4.0, w = 1e-3;
    struct {
        int tp, dp, zero;
        double tp_waits, dp_waits; /* per step */
    } cases[] = {
        {2, 1, 0, mm * (10.0 * L + 2.0), 2.0 * L + 1.0 + 1.0}, /* TP 2 + SP; loss */
        {1, 2, 3, 0.0, mm * 3.0 * L + L + 1.0},               /* ZeRO-3 */
        {1, 2, 1, 0.0, 2.0 + 1.0},                             /* ZeRO-1 */
        {1, 1, 0, 0.0, 1.0},                                   /* the loss only */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        px_parallel p = layout(cases[i].tp, cases[i].dp, cases[i].zero, false);
        hw.sync_wait_s = 0.0;
        px_prediction a = eval(m, &hw, &p);
        hw.sync_wait_s = w;
        px_prediction b = eval(m, &hw, &p);
        CHECK_CLOSE(b.time.tp_comm_s - a.time.tp_comm_s, w * cases[i].tp_waits, 1e-9, 1e-15);
        CHECK_CLOSE(b.time.dp_comm_s - a.time.dp_comm_s, w * cases[i].dp_waits, 1e-9, 1e-15);
        CHECK_CLOSE(b.time.step_s - a.time.step_s, w * (cases[i].tp_waits + cases[i].dp_waits),
                    1e-9, 1e-15);
        /* measured after a much longer compute interval than this tiny
         * model's: the per-micro-batch waits shrink with the interval, and
         * so does the step's first one after the backward; the later
         * per-step ones (right after it) stay */
        hw.sync_interval_s = 1e3;
        px_prediction c = eval(m, &hw, &p);
        hw.sync_interval_s = 0.0;
        CHECK(c.time.tp_comm_s - a.time.tp_comm_s <= 1e-3 * w * cases[i].tp_waits + 1e-15);
        double dc = c.time.dp_comm_s - a.time.dp_comm_s;
        if (cases[i].zero < 2)
            CHECK_MSG(dc >= w * (cases[i].dp_waits - 1.0) - 1e-12 &&
                          dc <= w * (cases[i].dp_waits - 1.0) + 1e-3 * w,
                      "case %zu: per-step waits %g s, want %g (+ a thousandth of one)", i, dc,
                      w * (cases[i].dp_waits - 1.0));
        else
            CHECK(dc < b.time.dp_comm_s - a.time.dp_comm_s);
    }
}

/* A wait measured after sync_interval_s of compute scales linearly below
 * it and as the square root above it (a random walk of interruptions):
 * DP 2 with ZeRO-1 synchronises nothing until the step's end, so its first
 * per-step wait is w x sqrt(m x stage_mb / sync_interval_s). */
static void test_wait_scale(const px_model *m)
{
    CHECK_CLOSE(px_blocking_wait_scale(0.5, 1.0), 0.5, 1e-12, 0);
    CHECK_CLOSE(px_blocking_wait_scale(4.0, 1.0), 2.0, 1e-12, 0);
    CHECK_CLOSE(px_blocking_wait_scale(4.0, 0.0), 1.0, 0, 0);
    px_hw hw;
    cpu_profile(&hw);
    px_parallel p = layout(1, 2, 1, false);
    px_cost_ctx ctx;
    px_error err;
    CHECK_MSG(px_cost_ctx_init(&ctx, m, &hw, &err) == PX_OK, "%s", err.msg);
    px_prediction a, b;
    px_cost_detail d;
    CHECK(px_cost_eval(&ctx, &p, 0.0, 0.0, &a, &d, &err) == PX_OK);
    double w = 1e-3, i0 = 1e-6;
    hw.sync_wait_s = w;
    hw.sync_interval_s = i0;
    CHECK(px_cost_eval(&ctx, &p, 0.0, 0.0, &b, NULL, &err) == PX_OK);
    double first = w * sqrt((double)p.n_micro * d.stage_mb_s / i0);
    CHECK_CLOSE(b.time.dp_comm_s - a.time.dp_comm_s, first + 2.0 * w, 1e-9, 0);
}

/* The pipeline on the executor's timeline (px_pipe_sim.h): with equal ops
 * it is the closed form, m + p - 1 passes of F + B for 1F1B and GPipe;
 * a stage twice as slow sets the pace, the other waits at every phase. */
static void test_pipe_sim(void)
{
    double f[4] = {1.0, 1.0, 1.0, 1.0}, b[4] = {2.0, 2.0, 2.0, 2.0}, w[4] = {1.0, 1.0, 1.0, 1.0};
    double step = 0.0;
    px_error err;
    px_schedule sch[2] = {PX_SCHED_1F1B, PX_SCHED_GPIPE};
    for (int i = 0; i < 2; i++) {
        CHECK(px_pipe_sim_step(sch[i], 2, 1, 4, f, b, w, 0.0, &step, &err) == PX_OK);
        CHECK_CLOSE(step, (4 + 2 - 1) * 3.0, 1e-12, 0);
        double x = px_cost_bubble_over_ideal(sch[i], 2, 1, 4);
        CHECK_CLOSE(step, 4 * 3.0 * (1.0 + x), 1e-12, 0);
    }
    /* each message phase adds its transfer to the stages in it */
    double step_msg = 0.0;
    CHECK(px_pipe_sim_step(PX_SCHED_1F1B, 2, 1, 4, f, b, w, 0.1, &step_msg, &err) == PX_OK);
    CHECK(step_msg > step);
    /* stage 1 twice as slow: m of its passes, plus stage 0's first forward
     * and last backward */
    double f2[2] = {1.0, 2.0}, b2[2] = {2.0, 4.0};
    CHECK(px_pipe_sim_step(PX_SCHED_1F1B, 2, 1, 4, f2, b2, w, 0.0, &step, &err) == PX_OK);
    CHECK_CLOSE(step, 4 * 6.0 + 3.0, 1e-12, 0);
    /* interleaved: ops of one length (the timeline's unit) keep the closed
     * form; a backward twice its forward waits at phases the unit-time
     * order placed for equal ops: never less than the closed form */
    double x = px_cost_bubble_over_ideal(PX_SCHED_INTERLEAVED, 2, 2, 4);
    double fv[4] = {1.0, 1.0, 1.0, 1.0}, bv[4] = {2.0, 2.0, 2.0, 2.0};
    CHECK(px_pipe_sim_step(PX_SCHED_INTERLEAVED, 2, 2, 4, fv, fv, w, 0.0, &step, &err) == PX_OK);
    CHECK_CLOSE(step, 4 * 2 * 2.0 * (1.0 + x), 1e-12, 0);
    CHECK(px_pipe_sim_step(PX_SCHED_INTERLEAVED, 2, 2, 4, fv, bv, w, 0.0, &step, &err) == PX_OK);
    CHECK(step >= 4 * 2 * 3.0 * (1.0 + x) - 1e-12);
}

/* The executor's CP (cp_gather_qkv) gathers the whole q|k|v rows twice and
 * reduce-scatters them once per layer and micro-batch; ZeRO-3 under the
 * blocking engine streams its fresh buffers and copies per micro-batch. */
static void test_executor_terms(const px_model *m)
{
    px_hw hw;
    cpu_profile(&hw);
    px_framework fw;
    px_error err;
    CHECK_MSG(px_framework_load(NULL, NULL, &fw, &err) == PX_OK, "%s", err.msg);
    CHECK(fw.run.cp_gather_qkv && fw.run.blocking_engine); /* parallax, the executor */
    px_cost_ctx ctx;
    CHECK_MSG(px_cost_ctx_init(&ctx, m, &hw, &err) == PX_OK, "%s", err.msg);
    ctx.run = &fw.run;
    px_parallel p = layout(1, 1, 0, false);
    p.cp = 2;
    px_prediction a;
    CHECK(px_cost_eval(&ctx, &p, 0.0, 0.0, &a, NULL, &err) == PX_OK);
    double T = (double)p.micro_batch * p.seq_len / p.cp, hd = (double)m->hidden / m->n_heads;
    double rows = 4.0 * T * ((double)m->n_heads + 2.0 * (double)m->n_kv_heads) * hd;
    double one = 2.0 * px_time_coll_s(&hw, PX_COLL_ALLGATHER, 2, 2.0 * rows, false) +
                 px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, 2.0 * rows, false);
    CHECK_CLOSE(a.time.cp_comm_s, (double)p.n_micro * (double)m->n_layers * one, 1e-9, 0);

    px_parallel z = layout(1, 2, 3, false);
    px_prediction on, off;
    px_cost_detail don, doff;
    CHECK(px_cost_eval(&ctx, &z, 0.0, 0.0, &on, &don, &err) == PX_OK);
    fw.run.blocking_engine = false;
    CHECK(px_cost_eval(&ctx, &z, 0.0, 0.0, &off, &doff, &err) == PX_OK);
    double fwd, bytes = px_blocking_zero3_stream_bytes(&z, (double)ctx.pc.total, 4.0, &fwd);
    CHECK(bytes > fwd && fwd > 0.0);
    /* the blocking engine: no layer's gather hidden by a prefetch, and the
     * buffers and copies streamed; a prefetching framework hides some */
    CHECK(don.dp_exposed_s > doff.dp_exposed_s);
    double weights = (double)m->n_layers * (double)ctx.kind_params[PX_LAYER_DENSE] +
                     (double)ctx.head_params;
    double wfwd, wbytes = px_blocking_weight_stream_bytes(weights, 4.0, 4.0, &wfwd);
    CHECK_CLOSE(on.time.step_s - off.time.step_s,
                (double)z.n_micro * (px_time_stream_s(&hw, fwd) +
                                     px_time_stream_s(&hw, bytes - fwd) +
                                     px_time_stream_s(&hw, wbytes)) +
                    (don.dp_exposed_s - doff.dp_exposed_s),
                1e-9, 0);
}

/* The executor's GEMMs read their weights from memory every micro-batch:
 * forward e bytes a weight, backward e again (input gradients) and the
 * gradient read and written (weight gradients accumulate), so one rank's
 * step grows by m x P x (2e + 2g) bytes at the triad's rate, and a full
 * recompute's second forward reads the layers' weights once more; in place
 * of the accumulation a framework's GEMMs pay (their read of the main
 * gradient) and the embedding table's dense gradient, which its calibrated
 * embedding class counts. */
static void test_weight_stream(const px_model *m)
{
    double f, all = px_blocking_weight_stream_bytes(1000.0, 2.0, 4.0, &f);
    CHECK_CLOSE(f, 2000.0, 0, 0);
    CHECK_CLOSE(all, 1000.0 * (2.0 * 2.0 + 2.0 * 4.0), 0, 0);
    px_hw hw;
    cpu_profile(&hw);
    hw.sustained_frac = 0.8;
    px_framework fw;
    px_error err;
    CHECK_MSG(px_framework_load(NULL, NULL, &fw, &err) == PX_OK, "%s", err.msg);
    px_cost_ctx ctx;
    CHECK_MSG(px_cost_ctx_init(&ctx, m, &hw, &err) == PX_OK, "%s", err.msg);
    ctx.run = &fw.run;
    double layers = (double)m->n_layers * (double)ctx.kind_params[PX_LAYER_DENSE];
    double P = layers + (double)ctx.head_params;
    px_recompute rc[2] = {PX_RECOMPUTE_NONE, PX_RECOMPUTE_FULL};
    for (int i = 0; i < 2; i++) {
        px_parallel p = layout(1, 1, 0, false);
        p.recompute = rc[i];
        px_prediction on, off;
        fw.run.blocking_engine = true;
        CHECK(px_cost_eval(&ctx, &p, 0.0, 0.0, &on, NULL, &err) == PX_OK);
        fw.run.blocking_engine = false;
        CHECK(px_cost_eval(&ctx, &p, 0.0, 0.0, &off, NULL, &err) == PX_OK);
        double bytes = P * (2.0 * 4.0 + 2.0 * 4.0) + (i ? layers * 4.0 : 0.0);
        double accum = px_grad_accum_fused_s(&hw, &p, false, P, 4.0) +
                       px_grad_accum_embed_s(&hw, &p, (double)ctx.pc.embedding / p.tp, 4.0, 4.0);
        CHECK(accum > 0.0);
        CHECK_CLOSE(on.time.step_s - off.time.step_s,
                    (double)p.n_micro * (bytes / (hw.hbm_bw * 0.8) - accum), 1e-9, 0);
    }
}

int main(void)
{
    px_model m;
    px_error err;
    if (px_model_load("tiny-llama", NULL, &m, &err) != PX_OK) {
        fprintf(stderr, "tiny-llama: %s\n", err.msg);
        return 1;
    }
    test_sustained(&m);
    test_zero3_blocking(&m);
    test_zero3_gathered_layers(&m);
    test_sync_wait(&m);
    test_wait_scale(&m);
    test_pipe_sim();
    test_executor_terms(&m);
    test_weight_stream(&m);
    return px_test_result("test_blocking_model");
}
