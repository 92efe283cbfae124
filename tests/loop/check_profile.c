/* check_profile — validates a profile written by `calibrate`:
 *   check_profile PROFILE.json [--ranks N]
 * It must load with px_hw_load, be an fp32 CPU profile, hold a consistent GEMM
 * lattice (every point at or under the peak, small shapes not over 1.5x
 * faster than large ones), a plausible bandwidth, the executor's kernels measured (attention
 * efficiency, every element-wise class, a residual add faster than a GeLU),
 * and with --ranks N, for every collective, one measured point per group
 * size 2..N that prices every size (and per-size points above the L2).  And it must agree with this
 * program's own timing of one GEMM shape and one triad (within a factor of
 * 2 and 3: the machine is shared, the check is for units and mislabelled
 * shapes, not for noise). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_calib.h"
#include "px_calib_gemm.h"
#include "px_calib_mem.h"
#include "px_hw.h"
#include "px_test.h"

static double point_flops(const px_hw *hw, int64_t m, int64_t n, int64_t k)
{
    for (int i = 0; i < hw->n_gemm_points; i++) {
        const px_gemm_point *p = &hw->gemm_points[i];
        if (p->m == m && p->n == n && p->k == k)
            return p->flops;
    }
    return 0.0;
}

/* Every group size 2..ranks has a point that prices every message
 * (min_bytes 0) and may have more, one per size range (docs/calibration.md). */
static void check_colls(const char *what, const px_coll_point *pts, int n, int ranks)
{
    CHECK_MSG(n >= ranks - 1, "%s: %d points, want at least %d", what, n, ranks - 1);
    for (int g = 2; g <= ranks; g++) {
        int from_zero = 0;
        for (int i = 0; i < n; i++)
            from_zero += pts[i].n_ranks == g && pts[i].min_bytes == 0;
        CHECK_MSG(from_zero == 1, "%s: %d points of %d ranks from 0 bytes, want 1", what,
                  from_zero, g);
    }
    for (int i = 0; i < n; i++) {
        CHECK_MSG(pts[i].n_ranks >= 2 && pts[i].n_ranks <= ranks, "%s[%d].n_ranks = %d", what,
                  i, pts[i].n_ranks);
        CHECK_MSG(pts[i].lat_s >= 0.0 && pts[i].lat_s < 1e-2, "%s[%d].lat_s = %g", what, i,
                  pts[i].lat_s);
        CHECK_MSG(pts[i].bw > 1e7 && pts[i].bw < 1e13, "%s[%d].bw = %g", what, i, pts[i].bw);
        CHECK_MSG(pts[i].min_bytes >= 0, "%s[%d].min_bytes = %lld", what, i,
                  (long long)pts[i].min_bytes);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: check_profile PROFILE.json [--ranks N]\n");
        return 2;
    }
    int ranks = 0;
    if (argc == 4 && !strcmp(argv[2], "--ranks"))
        ranks = atoi(argv[3]);
    px_hw hw;
    px_error err;
    px_error_clear(&err);
    if (px_hw_load(argv[1], NULL, &hw, &err) != PX_OK) {
        char buf[1400];
        px_error_format(&err, buf, sizeof buf);
        fprintf(stderr, "check_profile: %s\n", buf);
        return 1;
    }
    CHECK(hw.dtype_bytes == 4);
    CHECK(hw.peak_flops > 1e9 && hw.peak_flops < 1e14);
    CHECK(hw.gemm_eff_max == 1.0);
    CHECK(hw.gemm_eff_half_dim > 0.0);
    /* --quick: the 80-shape lattice and 4 tall shapes (m = 4096); full: 125 */
    CHECK_MSG(hw.n_gemm_points == 84 || hw.n_gemm_points == 125, "n_gemm_points = %d",
              hw.n_gemm_points);
    double small_best = 0, big_best = 0;
    int small_n = 0, big_n = 0;
    for (int i = 0; i < hw.n_gemm_points; i++) {
        const px_gemm_point *p = &hw.gemm_points[i];
        CHECK_MSG(p->flops > 0.0 && p->flops <= hw.peak_flops * (1 + 1e-9),
                  "point %d flops %g vs peak %g", i, p->flops, hw.peak_flops);
        int64_t mn = p->m < p->n ? p->m : p->n;
        mn = mn < p->k ? mn : p->k;
        /* best of each class: another process can only slow a timing down,
         * so the best is the measurement that load disturbs least */
        if (mn == 16) {
            small_best = p->flops > small_best ? p->flops : small_best;
            small_n++;
        } else if (mn >= 256) {
            big_best = p->flops > big_best ? p->flops : big_best;
            big_n++;
        }
    }
    CHECK(small_n > 0 && big_n > 0);
    /* The sweep measures the two classes seconds apart, and this shared
     * VM's cores change speed in between (the same 256^3 GEMM, on the CPU
     * clock, at 18 and at 30 GFLOP/s within a minute; a 16-wide class only
     * ~15 % below the big one on a quiet machine), so the bound allows the
     * big class to come out 1.5x slow; a FLOP count or shape mixed up for
     * one class is off by 2x or more. */
    if (small_n > 0 && big_n > 0)
        CHECK_MSG(small_best < 1.5 * big_best,
                  "GEMMs with a dimension of 16 (best %.1f GFLOP/s) over 1.5x faster than "
                  ">= 256 (best %.1f)",
                  small_best / 1e9, big_best / 1e9);
    CHECK(hw.hbm_bw > 1e8 && hw.hbm_bw < 1e13);
    /* the executor's element-wise kernels, relative to the triad */
    CHECK_MSG(hw.mem_bound_eff > 0.0 && hw.mem_bound_eff <= 1.0, "mem_bound_eff = %g",
              hw.mem_bound_eff);
    CHECK_MSG(hw.attn_eff > 0.0 && hw.attn_eff <= 1.0, "attn_eff = %g", hw.attn_eff);
    const double rates[8] = {hw.norm_bw, hw.residual_bw, hw.gelu_bw,  hw.swiglu_bw,
                             hw.rope_bw, hw.xent_bw,     hw.adamw_bw, hw.embed_bw};
    for (int i = 0; i < 8; i++)
        CHECK_MSG(rates[i] > 1e6 && rates[i] < 1e13, "element-wise class %d rate %g B/s", i,
                  rates[i]);
    /* a residual add streams; a GeLU computes a tanh per element */
    CHECK_MSG(hw.residual_bw > hw.gelu_bw, "residual %g B/s not faster than gelu %g B/s",
              hw.residual_bw, hw.gelu_bw);
    CHECK(hw.gpus_per_node >= 1);
    CHECK(hw.hbm_bytes > hw.mem_reserve_bytes && hw.mem_reserve_bytes > 0);
    CHECK(hw.intra_bw > 0.0 && hw.inter_bw > 0.0 && hw.intra_lat_s > 0.0);
    CHECK(hw.ckpt_write_bw > 0.0);
    if (ranks >= 2) {
        CHECK(hw.gpus_per_node == ranks); /* one node here */
        check_colls("allreduce_points", hw.allreduce_points, hw.n_coll_points, ranks);
        check_colls("allgather_points", hw.allgather_points, hw.n_allgather_points, ranks);
        check_colls("reduce_scatter_points", hw.reduce_scatter_points,
                    hw.n_reduce_scatter_points, ranks);
        check_colls("alltoall_points", hw.alltoall_points, hw.n_alltoall_points, ranks);
    }

    /* Independent timing of one lattice shape and of the triad. */
    px_calib_opts o;
    px_calib_opts_init(&o, true);
    o.min_time_s = 0.05;
    px_calib_set_blas_threads(o.blas_threads);
    int64_t d = 256;
    size_t bytes = sizeof(float) * (size_t)(d * d);
    float *a = malloc(bytes), *b = malloc(bytes), *c = malloc(bytes);
    if (!a || !b || !c) {
        fprintf(stderr, "check_profile: out of memory\n");
        return 1;
    }
    for (int64_t i = 0; i < d * d; i++) {
        a[i] = (float)(i % 13) * 0.1f;
        b[i] = (float)(i % 7) * 0.1f;
    }
    double mine = px_calib_gemm_time_one(&o, 'N', 'N', d, d, d, a, b, c);
    double theirs = point_flops(&hw, d, d, d);
    free(a);
    free(b);
    free(c);
    fprintf(stderr, "check_profile: gemm 256^3 here %.1f GFLOP/s, profile %.1f GFLOP/s\n",
            mine / 1e9, theirs / 1e9);
    CHECK_MSG(theirs > mine / 2.0 && theirs < mine * 2.0,
              "profile's 256^3 GEMM %.1f GFLOP/s vs %.1f measured now", theirs / 1e9,
              mine / 1e9);
    px_calib_mem_result mem;
    if (px_calib_mem_run(&o, &mem, &err) == PX_OK) {
        fprintf(stderr, "check_profile: triad here %.1f GB/s, profile %.1f GB/s\n",
                mem.triad_bw / 1e9, hw.hbm_bw / 1e9);
        CHECK_MSG(hw.hbm_bw > mem.triad_bw / 3.0 && hw.hbm_bw < mem.triad_bw * 3.0,
                  "profile's bandwidth %.1f GB/s vs %.1f measured now", hw.hbm_bw / 1e9,
                  mem.triad_bw / 1e9);
    } else {
        CHECK_MSG(0, "triad: %s", err.msg);
    }
    return px_test_result("check_profile");
}
