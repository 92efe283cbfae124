/* test_calibrated_model.c — what `calibrate` writes reaches the cost model:
 * the calibrated fields survive a profile's save/load, and each one changes
 * exactly the time it stands for (element-wise classes, the attention
 * efficiency, every measured collective, the p2p link), while a datasheet
 * profile without them keeps its old answers. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "px_cost.h"
#include "px_efficiency.h"
#include "px_hw.h"
#include "px_model.h"
#include "px_test.h"

/* A calibrated-looking CPU profile, every number distinct. */
static void cpu_profile(px_hw *hw)
{
    px_hw_init(hw);
    snprintf(hw->name, sizeof hw->name, "test-cpu");
    hw->peak_flops = 1.2e11;
    hw->hbm_bytes = 8000000000;
    hw->hbm_bw = 3.0e10;
    hw->mem_reserve_bytes = 300000000;
    hw->dtype_bytes = 4;
    hw->gemm_eff_max = 1.0;
    hw->gemm_eff_half_dim = 20.0;
    hw->mem_bound_eff = 0.1;
    hw->attn_eff = 0.05;
    hw->norm_bw = 1.2e10;
    hw->residual_bw = 1.3e11;
    hw->gelu_bw = 1.0e9;
    hw->swiglu_bw = 7.5e9;
    hw->rope_bw = 4.0e9;
    hw->xent_bw = 2.5e9;
    hw->adamw_bw = 7.0e9;
    hw->embed_bw = 1.5e11;
    hw->gpus_per_node = 2;
    hw->intra_bw = hw->inter_bw = 1.5e10;
    hw->intra_lat_s = hw->inter_lat_s = 2e-6;
    int64_t d[3] = {16, 256, 4096};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++) {
                px_gemm_point *p = &hw->gemm_points[hw->n_gemm_points++];
                p->m = d[i];
                p->n = d[j];
                p->k = d[k];
                p->flops = 1.2e11 * (0.5 + 0.05 * (i + j + k));
            }
    hw->n_coll_points = hw->n_allgather_points = 1;
    hw->n_reduce_scatter_points = hw->n_alltoall_points = 1;
    hw->allreduce_points[0] = (px_coll_point){2, 4e-6, 4.5e9, 0};
    hw->allgather_points[0] = (px_coll_point){2, 3e-6, 2.0e10, 0};
    hw->reduce_scatter_points[0] = (px_coll_point){2, 2.5e-6, 6.0e9, 0};
    hw->alltoall_points[0] = (px_coll_point){2, 3.5e-6, 1.9e10, 0};
}

static void test_round_trip(void)
{
    px_hw a, b;
    cpu_profile(&a);
    char path[] = "/tmp/px-calibrated-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    px_error err;
    CHECK(px_hw_save(&a, path, &err) == PX_OK);
    CHECK(px_hw_load(path, NULL, &b, &err) == PX_OK);
    unlink(path);
    CHECK(b.attn_eff == a.attn_eff);
    CHECK(b.norm_bw == a.norm_bw && b.residual_bw == a.residual_bw);
    CHECK(b.gelu_bw == a.gelu_bw && b.swiglu_bw == a.swiglu_bw && b.rope_bw == a.rope_bw);
    CHECK(b.xent_bw == a.xent_bw && b.adamw_bw == a.adamw_bw && b.embed_bw == a.embed_bw);
    CHECK(b.n_gemm_points == a.n_gemm_points);
    CHECK(b.n_allgather_points == 1 && b.allgather_points[0].bw == a.allgather_points[0].bw);
    CHECK(b.n_reduce_scatter_points == 1 &&
          b.reduce_scatter_points[0].lat_s == a.reduce_scatter_points[0].lat_s);
    CHECK(b.n_alltoall_points == 1 && b.alltoall_points[0].n_ranks == 2);
}

static void test_efficiency(void)
{
    px_hw hw;
    cpu_profile(&hw);
    double bytes = 1e8;
    CHECK_CLOSE(px_time_mem_class_s(&hw, PX_MEM_GELU, bytes), bytes / hw.gelu_bw, 1e-12, 0);
    CHECK_CLOSE(px_time_mem_class_s(&hw, PX_MEM_RESIDUAL, bytes), bytes / hw.residual_bw,
                1e-12, 0);
    CHECK_CLOSE(px_time_mem_class_s(&hw, PX_MEM_ADAMW, bytes), bytes / hw.adamw_bw, 1e-12, 0);
    /* a class without a rate: the one element-wise rate */
    hw.rope_bw = 0.0;
    CHECK_CLOSE(px_time_mem_class_s(&hw, PX_MEM_ROPE, bytes),
                bytes / (hw.hbm_bw * hw.mem_bound_eff), 1e-12, 0);
    CHECK_CLOSE(px_time_attn_s(&hw, 1e9), 1e9 / (hw.peak_flops * hw.attn_eff), 1e-12, 0);

    /* each collective at a measured group size: lat + bytes / its own bw */
    double m = 4e6;
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLREDUCE, 2, m, false), 4e-6 + m / 4.5e9, 1e-9, 0);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLGATHER, 2, m, false), 3e-6 + m / 2.0e10, 1e-9, 0);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, m, false), 2.5e-6 + m / 6.0e9,
                1e-9, 0);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLTOALL, 2, m, false), 3.5e-6 + m / 1.9e10, 1e-9,
                0);
    /* pipeline sends: the measured ping-pong */
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_P2P, 2, m, false), 2e-6 + m / 1.5e10, 1e-9, 0);
    /* beyond the measured sizes: the bus bandwidth carried to n = 4 */
    double t4 = px_time_coll_s(&hw, PX_COLL_ALLGATHER, 4, m, false);
    CHECK_CLOSE(t4, 3e-6 + 0.75 * m / (2.0e10 * 0.5), 1e-9, 0);
}

/* Per-size points (calibrate's upper range, min_bytes > 0): a message is
 * priced by the point of the largest min_bytes at or below its size (its
 * rate interpolated in log size toward the next point's), in any order of
 * the array, a message below every range by the smallest;
 * the all-reduce's ranges carry over to the collectives it stands in for. */
static void test_size_ranges(void)
{
    px_hw hw;
    cpu_profile(&hw);
    hw.n_reduce_scatter_points = 3;
    hw.reduce_scatter_points[0] = (px_coll_point){2, 0.0, 1.0e9, (int64_t)16 << 20};
    hw.reduce_scatter_points[1] = (px_coll_point){2, 2.5e-6, 6.0e9, 0};
    hw.reduce_scatter_points[2] = (px_coll_point){2, 0.0, 2.0e9, (int64_t)4 << 20};
    double small = 1e6, mid = 8e6, big = 6.4e7;
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, small, false),
                2.5e-6 + small / 6.0e9, 1e-9, 0);
    double r_mid = exp(log(2.0e9) + log(mid / (4 << 20)) / log(4.0) * log(0.5));
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, mid, false), mid / r_mid, 1e-9, 0);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, big, false), big / 1.0e9, 1e-9, 0);
    /* between two per-size points: the rate interpolated in log size (8 MB
     * is half-way from 4 MiB to 16 MiB in log size when measured in MiB) */
    double mid8 = (double)((int64_t)8 << 20);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, mid8, false),
                mid8 / sqrt(2.0e9 * 1.0e9), 1e-9, 0);
    /* exactly at a point, its own rate */
    double at4 = (double)((int64_t)4 << 20);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, at4, false), at4 / 2.0e9, 1e-9, 0);
    /* no range from 0: the smallest range prices what lies below it */
    hw.reduce_scatter_points[1].min_bytes = (int64_t)2 << 20;
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_REDUCE_SCATTER, 2, small, false),
                2.5e-6 + small / 6.0e9, 1e-9, 0);
    /* a profile without all-gather points prices it from the all-reduce's
     * range of the same message: the 32 MiB range's bus bandwidth */
    hw.n_allgather_points = 0;
    hw.n_coll_points = 2;
    hw.allreduce_points[1] = (px_coll_point){2, 0.0, 1.5e9, (int64_t)32 << 20};
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLGATHER, 2, big, false), 0.5 * big / 1.5e9, 1e-9,
                0);
    /* min_bytes survives a save and a load */
    char path[] = "/tmp/px-calibrated-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    px_hw b;
    px_error err;
    CHECK(px_hw_save(&hw, path, &err) == PX_OK);
    CHECK(px_hw_load(path, NULL, &b, &err) == PX_OK);
    unlink(path);
    CHECK(b.n_reduce_scatter_points == 3 && b.reduce_scatter_points[0].min_bytes == 16 << 20);
    CHECK(b.n_coll_points == 2 && b.allreduce_points[1].min_bytes == (int64_t)32 << 20);
}

static void test_datasheet_unchanged(void)
{
    /* h100-sxm has none of the calibrated fields: the parametric paths */
    px_hw hw;
    px_error err;
    CHECK(px_hw_load("h100-sxm", NULL, &hw, &err) == PX_OK);
    CHECK(hw.attn_eff == 0.0 && hw.gelu_bw == 0.0 && hw.n_allgather_points == 0);
    double m = 1e8;
    CHECK_CLOSE(px_time_mem_class_s(&hw, PX_MEM_GELU, m), px_time_mem_s(&hw, m), 1e-12, 0);
    CHECK_CLOSE(px_time_coll_s(&hw, PX_COLL_ALLGATHER, 8, m, false),
                7 * hw.intra_lat_s + 0.875 * m / (hw.intra_bw * hw.intra_bw_eff), 1e-9, 0);
}

static double step_s(const px_model *m, const px_hw *hw)
{
    px_parallel par;
    px_parallel_init(&par);
    par.micro_batch = 4;
    par.n_micro = 2;
    par.seq_len = 64; /* tiny-gpt's learned positions: max_positions 64 */
    px_prediction pred;
    px_error err;
    if (px_cost_evaluate(m, hw, &par, &pred, &err) != PX_OK) {
        fprintf(stderr, "px_cost_evaluate: %s\n", err.msg);
        return NAN;
    }
    return pred.time.step_s;
}

static void test_cost_model_uses_rates(void)
{
    px_model llama, gpt;
    px_error err;
    CHECK(px_model_load("tiny-llama", NULL, &llama, &err) == PX_OK);
    CHECK(px_model_load("tiny-gpt", NULL, &gpt, &err) == PX_OK);
    px_hw hw, slow_gelu, slow_attn;
    cpu_profile(&hw);
    slow_gelu = hw;
    slow_gelu.gelu_bw /= 2.0;
    slow_attn = hw;
    slow_attn.attn_eff /= 2.0;
    double g0 = step_s(&gpt, &hw), l0 = step_s(&llama, &hw);
    CHECK(isfinite(g0) && isfinite(l0) && g0 > 0 && l0 > 0);
    CHECK_MSG(step_s(&gpt, &slow_gelu) > g0, "a slower GeLU does not slow the GPT step");
    CHECK_CLOSE(step_s(&llama, &slow_gelu), l0, 1e-12, 0); /* Llama has no GeLU */
    CHECK_MSG(step_s(&llama, &slow_attn) > l0, "a slower attention does not slow the step");
}

int main(void)
{
    test_round_trip();
    test_efficiency();
    test_size_ranges();
    test_datasheet_unchanged();
    test_cost_model_uses_rates();
    return px_test_result("test_calibrated_model");
}
