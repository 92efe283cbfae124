/* test_hw.c — every hardware profile loads and validates with the lecture's
 * numbers where it states them; save -> load round-trips every field
 * (calibrated points included); bad profiles give named errors. */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"
#include "px_hw.h"
#include "px_test.h"

/* Field by field: struct padding is not part of the value. */
static int same_hw(const px_hw *a, const px_hw *b)
{
#define EQ(f) (a->f == b->f)
    int same = !strcmp(a->name, b->name) && !strcmp(a->description, b->description) &&
               EQ(peak_flops) && EQ(hbm_bytes) && EQ(hbm_bw) && EQ(mem_reserve_bytes) &&
               EQ(dtype_bytes) && EQ(gemm_eff_max) && EQ(gemm_eff_half_dim) &&
               EQ(n_gemm_points) && EQ(mem_bound_eff) && EQ(gpus_per_node) && EQ(torus) &&
               EQ(intra_bw) && EQ(intra_lat_s) && EQ(inter_bw) && EQ(inter_lat_s) &&
               EQ(intra_bw_eff) && EQ(inter_bw_eff) && EQ(n_coll_points) && EQ(gpu_mtbf_hours) && EQ(ckpt_write_bw) && EQ(restart_s) &&
               EQ(power_w) && EQ(price_per_gpu_hour);
    for (int i = 0; same && i < a->n_gemm_points; i++)
        same = EQ(gemm_points[i].m) && EQ(gemm_points[i].n) && EQ(gemm_points[i].k) &&
               EQ(gemm_points[i].flops);
#define SAME_COLL(arr, cnt)                                                               \
    same = same && EQ(cnt);                                                                \
    for (int i = 0; same && i < a->cnt; i++)                                               \
        same = EQ(arr[i].n_ranks) && EQ(arr[i].lat_s) && EQ(arr[i].bw);
    SAME_COLL(allreduce_points, n_coll_points)
    SAME_COLL(allgather_points, n_allgather_points)
    SAME_COLL(reduce_scatter_points, n_reduce_scatter_points)
    SAME_COLL(alltoall_points, n_alltoall_points)
#undef SAME_COLL
#undef EQ
    return same;
}

int main(void)
{
    px_hw hw, back;
    px_error err;
    static const char *const names[] = {"h100-sxm", "h200",    "a100-80g", "h800",    "b200",
                                        "gb200-nvl72", "tpu-v5p", "v100",   "a100-40g",
                                        "jean-zay-a100", "h100-500w"};
    char list[2048];
    px_hw_list_profiles(NULL, list, sizeof list);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        px_error_clear(&err);
        CHECK_MSG(px_hw_load(names[i], NULL, &hw, &err) == PX_OK, "%s: %s", names[i], err.msg);
        CHECK(strcmp(hw.name, names[i]) == 0);
        CHECK(px_hw_validate(&hw, &err) == PX_OK);
        CHECK(hw.dtype_bytes == 2);
        CHECK(hw.intra_lat_s < hw.inter_lat_s || hw.torus);
        /* the runtime's share is its own fields: a few percent of the memory,
         * and what the device reports within a tenth of the marketed figure */
        CHECK(hw.mem_reserve_bytes == 0);
        CHECK(hw.runtime_context_bytes + hw.nccl_comm_bytes < hw.hbm_bytes / 20);
        CHECK(hw.hbm_visible_ratio >= 1.0 && hw.hbm_visible_ratio < 1.1);
        CHECK_MSG(strstr(list, names[i]) != NULL, "list lacks %s", names[i]);
        /* round trip through a file */
        char path[512];
        snprintf(path, sizeof path, "%s/%s.json", data_tmp(), names[i]);
        CHECK(px_hw_save(&hw, path, &err) == PX_OK);
        CHECK(px_hw_load(path, NULL, &back, &err) == PX_OK);
        CHECK_MSG(same_hw(&hw, &back), "%s round trip", names[i]);
    }

    /* The default profile is the lecture's cluster. */
    CHECK(px_hw_load(PX_HW_DEFAULT, NULL, &hw, &err) == PX_OK);
    CHECK(hw.gpus_per_node == 8 && !hw.torus);
    CHECK(hw.hbm_bytes == INT64_C(80000000000));
    CHECK_CLOSE(hw.intra_bw, 450e9, 0, 0);
    CHECK_CLOSE(hw.inter_bw, 50e9, 0, 0);
    CHECK_CLOSE(hw.peak_flops, 989e12, 0, 0);
    CHECK_CLOSE(hw.hbm_bw, 3.35e12, 0, 0);
    /* NCCL's bus bandwidth: 20.6 of an NVLink's 25 GB/s, 47 of NDR's 50 */
    CHECK_CLOSE(hw.intra_bw * hw.intra_bw_eff, 18 * 20.6e9, 1e-3, 0);
    CHECK_CLOSE(hw.inter_bw * hw.inter_bw_eff, 47e9, 1e-3, 0);
    /* Llama 3's failure statistics: 16384 GPUs x 54 days / 419 interruptions. */
    CHECK_CLOSE(hw.gpu_mtbf_hours, 16384.0 * 54 * 24 / 419, 0.001, 0);
    CHECK(px_hw_load("", NULL, &back, &err) == PX_OK && same_hw(&hw, &back));

    px_hw tpu;
    CHECK(px_hw_load("tpu-v5p", NULL, &tpu, &err) == PX_OK);
    CHECK(tpu.torus && tpu.gpus_per_node == 4);
    px_hw a100;
    CHECK(px_hw_load("a100-80g", NULL, &a100, &err) == PX_OK);
    CHECK_CLOSE(a100.inter_bw, 25e9, 0, 0);
    CHECK_CLOSE(a100.peak_flops, 312e12, 0, 0);
    /* Jean Zay's A100 nodes: the same GPU, 4 x 100 Gb/s Omni-Path a node of 8 */
    px_hw jz;
    CHECK(px_hw_load("jean-zay-a100", NULL, &jz, &err) == PX_OK);
    CHECK_CLOSE(jz.inter_bw, 4 * 100e9 / 8 / 8, 0, 0);
    CHECK(jz.peak_flops == a100.peak_flops && jz.hbm_bytes == a100.hbm_bytes &&
          jz.intra_bw == a100.intra_bw && jz.gpus_per_node == 8);

    /* Calibrated points round-trip, and a CPU-style fp32 profile. */
    hw.dtype_bytes = 4;
    snprintf(hw.name, sizeof hw.name, "cpu-calibrated");
    hw.n_gemm_points = 3;
    for (int i = 0; i < 3; i++) {
        hw.gemm_points[i].m = 64 << i;
        hw.gemm_points[i].n = 96 << i;
        hw.gemm_points[i].k = 128 << i;
        hw.gemm_points[i].flops = 1.234567891e10 * (i + 1) / 3.0;
    }
    hw.n_coll_points = 2;
    hw.allreduce_points[0] = (px_coll_point){2, 1.7e-6, 3.3e9 / 7, 0};
    hw.allreduce_points[1] = (px_coll_point){4, 2.9e-6, 2.1e9 / 3, 0};
    hw.n_allgather_points = 1;
    hw.allgather_points[0] = (px_coll_point){2, 1.1e-6, 1.9e9 / 7, 0};
    hw.n_reduce_scatter_points = 2;
    hw.reduce_scatter_points[0] = (px_coll_point){2, 1.3e-6, 1.7e9 / 7, 0};
    hw.reduce_scatter_points[1] = (px_coll_point){8, 5.3e-6, 1.1e9 / 7, 0};
    hw.n_alltoall_points = 1;
    hw.alltoall_points[0] = (px_coll_point){4, 2.3e-6, 0.9e9 / 7, 0};
    char cpath[512];
    snprintf(cpath, sizeof cpath, "%s/cpu.json", data_tmp());
    CHECK(px_hw_save(&hw, cpath, &err) == PX_OK);
    CHECK(px_hw_load(cpath, NULL, &back, &err) == PX_OK);
    CHECK(same_hw(&hw, &back));
    CHECK(back.n_gemm_points == 3 && back.n_coll_points == 2 && back.n_allgather_points == 1 &&
          back.n_reduce_scatter_points == 2 && back.n_alltoall_points == 1);
    CHECK_CLOSE(back.reduce_scatter_points[1].bw, 1.1e9 / 7, 0, 0);

    /* Errors: unknown name lists the profiles. */
    px_error_clear(&err);
    CHECK(px_hw_load("h1000", NULL, &hw, &err) == PX_ERR_NOT_FOUND);
    CHECK_MSG(strstr(err.msg, "h1000") && strstr(err.msg, "h100-sxm") &&
                  strstr(err.msg, "tpu-v5p"),
              "%s", err.msg);

    /* dtype_bytes is required: no silent default. */
    char path[512];
    const char *base = "\"name\": \"x\", \"peak_flops\": 1e12, \"hbm_bytes\": 16000000000,\n"
                       "\"hbm_bw\": 1e12, \"gpus_per_node\": 8, \"intra_bw\": 1e11,\n"
                       "\"intra_lat_s\": 3e-6, \"inter_bw\": 1e10, \"inter_lat_s\": 1e-5";
    char text[1024];
    snprintf(text, sizeof text, "{%s}\n", base);
    data_write("nodtype.json", text, path, sizeof path);
    px_error_clear(&err);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "dtype_bytes: missing required field") != NULL, "%s", err.msg);
    CHECK(strcmp(err.file, path) == 0);
    /* With it, optional fields take their documented defaults. */
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 4}\n", base);
    data_write("ok.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_OK);
    CHECK(hw.mem_reserve_bytes == PX_HW_DEFAULT_MEM_RESERVE_BYTES);
    CHECK(hw.hbm_visible_ratio == 1.0 && hw.runtime_context_bytes == 0 &&
          hw.nccl_comm_bytes == 0);
    CHECK(px_hw_usable_bytes(&hw) == hw.hbm_bytes);
    CHECK_CLOSE(hw.gemm_eff_max, PX_HW_DEFAULT_GEMM_EFF_MAX, 0, 0);
    CHECK_CLOSE(hw.restart_s, PX_HW_DEFAULT_RESTART_S, 0, 0);
    CHECK(hw.intra_bw_eff == 1.0 && hw.inter_bw_eff == 1.0); /* the line rate */
    CHECK(!hw.torus && hw.n_gemm_points == 0);
    /* bad dtype, bad value, unknown key, bytes as a real, malformed */
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 3}\n", base);
    data_write("d3.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "dtype_bytes 3") && strstr(err.msg, "2 (bf16)"), "%s", err.msg);
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 2, \"gemm_eff_max\": 1.5}\n", base);
    data_write("eff.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "gemm_eff_max") != NULL, "%s", err.msg);
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 2, \"inter_bw_eff\": 1.2}\n", base);
    data_write("bweff.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "inter_bw_eff") && strstr(err.msg, "1.2"), "%s", err.msg);
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 2, \"hbm_visible_ratio\": 2}\n", base);
    data_write("vis.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "hbm_visible_ratio") && strstr(err.msg, "1.2"), "%s", err.msg);
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 2, \"nvlink_bw\": 1}\n", base);
    data_write("unk.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "unknown key \"nvlink_bw\"") && strstr(err.msg, "intra_bw"), "%s",
              err.msg);
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 2, \"mem_reserve_bytes\": 4e9}\n", base);
    data_write("real.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "mem_reserve_bytes: expected an integer") != NULL, "%s", err.msg);
    snprintf(text, sizeof text,
             "{%s, \"dtype_bytes\": 2, \"gemm_points\": [{\"m\": 1, \"n\": 2}]}\n", base);
    data_write("pts.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "gemm_points[0].k: missing") != NULL, "%s", err.msg);
    /* sources: each names a field the profile sets, with a non-empty string */
    snprintf(text, sizeof text,
             "{%s, \"dtype_bytes\": 2, \"sources\": {\"hbm_bw\": \"datasheet\"}}\n", base);
    data_write("src.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_OK);
    snprintf(text, sizeof text,
             "{%s, \"dtype_bytes\": 2, \"sources\": {\"fp8_flops\": \"datasheet\"}}\n", base);
    data_write("src2.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "sources.fp8_flops: not a field this profile sets") != NULL, "%s",
              err.msg);
    snprintf(text, sizeof text, "{%s, \"dtype_bytes\": 2, \"sources\": {\"hbm_bw\": \"\"}}\n",
             base);
    data_write("src3.json", text, path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "sources.hbm_bw: expected a non-empty string") != NULL, "%s",
              err.msg);
    data_write("mal.json", "{\n\"name\": \"x\"\n\"peak\": 1}\n", path, sizeof path);
    CHECK(px_hw_load(path, NULL, &hw, &err) == PX_ERR_PARSE);
    CHECK(err.line == 3 && err.column > 0);

    /* PARALLAX_HW_DIR overrides the folder. */
    setenv("PARALLAX_HW_DIR", data_tmp(), 1);
    CHECK(strcmp(px_hw_profiles_dir_default(), data_tmp()) == 0);
    CHECK(px_hw_load("cpu", NULL, &hw, &err) == PX_OK && hw.dtype_bytes == 4);
    unsetenv("PARALLAX_HW_DIR");

    data_cleanup();
    return px_test_result("hw_profiles");
}
