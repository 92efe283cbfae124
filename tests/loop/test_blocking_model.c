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
 *    (sync_interval_s) than the model's, the per-micro-batch waits shrink. */
#include <stdio.h>
#include <string.h>

#include "px_blocking.h"
#include "px_cost.h"
#include "px_efficiency.h"
#include "px_framework.h"
#include "px_hw.h"
#include "px_model.h"
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
    double layer_bytes = (double)ctx.dense_layer_params * hw.dtype_bytes;
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
         * model's: the per-micro-batch waits shrink with the interval, the
         * per-step ones (after the whole backward) stay */
        hw.sync_interval_s = 1e3;
        px_prediction c = eval(m, &hw, &p);
        hw.sync_interval_s = 0.0;
        CHECK(c.time.tp_comm_s - a.time.tp_comm_s <= 1e-3 * w * cases[i].tp_waits + 1e-15);
        if (cases[i].zero < 2)
            CHECK_CLOSE(c.time.dp_comm_s - a.time.dp_comm_s, w * cases[i].dp_waits, 1e-9, 1e-15);
        else
            CHECK(c.time.dp_comm_s - a.time.dp_comm_s < b.time.dp_comm_s - a.time.dp_comm_s);
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
    return px_test_result("test_blocking_model");
}
