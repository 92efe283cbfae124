/* px_hw.c — hardware profiles: load, save, validate, list (schema:
 * docs/hw-schema.md). */
#include "px_hw.h"

#include <dirent.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "px_io.h"
#include "px_datadir.h"
#include "px_jfield.h"
#include "px_plan_json.h"

#define HD(key, field, req, mn, mx) \
    {key, PX_JF_DBL, offsetof(px_hw, field), 0, req, mn, NULL, 0, mx}
#define HI(key, field, req, mn, mx) \
    {key, PX_JF_INT, offsetof(px_hw, field), 0, req, mn, NULL, 0, mx}

/* Bounds: a rate is finite and positive, from a slow CPU core's (MFLOP/s,
 * kB/s) to 1000x today's fastest device, so every time the cost model
 * divides by one is finite.  Optional rates that 0 means "not measured"
 * are checked again in px_hw_validate (0, or at least the minimum). */
#define MIN_FLOPS 1e6   /* FLOP/s */
#define MAX_FLOPS 1e19
#define MIN_BW 1e3      /* bytes/s */
#define MAX_BW 1e16
#define MAX_LAT_S 10.0  /* seconds: a collective's fixed latency */
#define MAX_BYTES 1125899906842624.0 /* 2^50 bytes of memory a device */

/* One line a field; optional ones keep px_hw_init's defaults. */
static const px_jfield hw_fields[] = {
    {"name", PX_JF_STR, offsetof(px_hw, name), sizeof(((px_hw *)0)->name), true, 0, NULL, 0,
     0},
    {"description", PX_JF_STR, offsetof(px_hw, description),
     sizeof(((px_hw *)0)->description), false, 0, NULL, 0, 0},
    HD("peak_flops", peak_flops, true, MIN_FLOPS, MAX_FLOPS),
    {"hbm_bytes", PX_JF_I64, offsetof(px_hw, hbm_bytes), 0, true, 1, NULL, 0, MAX_BYTES},
    HD("hbm_bw", hbm_bw, true, MIN_BW, MAX_BW),
    {"mem_reserve_bytes", PX_JF_I64, offsetof(px_hw, mem_reserve_bytes), 0, false, 0, NULL, 0,
     MAX_BYTES},
    HD("hbm_visible_ratio", hbm_visible_ratio, false, 0.5, 1.2),
    {"runtime_context_bytes", PX_JF_I64, offsetof(px_hw, runtime_context_bytes), 0, false, 0,
     NULL, 0, 1e11},
    {"nccl_comm_bytes", PX_JF_I64, offsetof(px_hw, nccl_comm_bytes), 0, false, 0, NULL, 0,
     1e11},
    HI("dtype_bytes", dtype_bytes, true, 1, 8),
    HD("gemm_eff_max", gemm_eff_max, false, 1e-3, 1),
    HD("gemm_eff_half_dim", gemm_eff_half_dim, false, 0, 1e6),
    HD("mem_bound_eff", mem_bound_eff, false, 1e-3, 1),
    HD("attn_eff", attn_eff, false, 0, 1),
    HI("attn_native_version", attn_native_version, false, 0, 4),
    HD("exp_rate", exp_rate, false, 0, MAX_FLOPS),
    HD("sustained_frac", sustained_frac, false, 0, 1),
    HD("sync_wait_s", sync_wait_s, false, 0, 1),
    HD("sync_interval_s", sync_interval_s, false, 0, 1e3),
    HD("comm_overlap_cost", comm_overlap_cost, false, 0, 1),
    HD("norm_bw", norm_bw, false, 0, MAX_BW),
    HD("residual_bw", residual_bw, false, 0, MAX_BW),
    HD("gelu_bw", gelu_bw, false, 0, MAX_BW),
    HD("swiglu_bw", swiglu_bw, false, 0, MAX_BW),
    HD("rope_bw", rope_bw, false, 0, MAX_BW),
    HD("xent_bw", xent_bw, false, 0, MAX_BW),
    HD("adamw_bw", adamw_bw, false, 0, MAX_BW),
    HD("embed_bw", embed_bw, false, 0, MAX_BW),
    HI("gpus_per_node", gpus_per_node, true, 1, 1 << 16),
    {"torus", PX_JF_BOOL, offsetof(px_hw, torus), 0, false, 0, NULL, 0, 0},
    HD("intra_bw", intra_bw, true, MIN_BW, MAX_BW),
    HD("intra_lat_s", intra_lat_s, true, 0, MAX_LAT_S),
    HD("inter_bw", inter_bw, true, MIN_BW, MAX_BW),
    HD("inter_lat_s", inter_lat_s, true, 0, MAX_LAT_S),
    HD("intra_bw_eff", intra_bw_eff, false, 1e-2, 1),
    HD("inter_bw_eff", inter_bw_eff, false, 1e-2, 1),
    HD("gpu_mtbf_hours", gpu_mtbf_hours, false, 1e-3, 1e9),
    HD("ckpt_write_bw", ckpt_write_bw, false, MIN_BW, MAX_BW),
    HD("restart_s", restart_s, false, 0, 1e7),
    HD("power_w", power_w, false, 0, 1e5),
    HD("price_per_gpu_hour", price_per_gpu_hour, false, 0, 1e5),
    HD("fp8_flops", fp8_flops, false, 0, MAX_FLOPS),
    HD("mxfp8_flops", mxfp8_flops, false, 0, MAX_FLOPS),
    HD("fp4_flops", fp4_flops, false, 0, MAX_FLOPS),
    {"fp16_only", PX_JF_BOOL, offsetof(px_hw, fp16_only), 0, false, 0, NULL, 0, 0},
    HI("gpus_per_host", gpus_per_host, false, 0, 1 << 16),
    HD("host_link_bw", host_link_bw, false, 0, MAX_BW),
    {"host_mem_bytes", PX_JF_I64, offsetof(px_hw, host_mem_bytes), 0, false, 0, NULL, 0,
     MAX_BYTES},
    HD("host_mem_bw", host_mem_bw, false, 0, MAX_BW),
};
#define N_HW_FIELDS ((int)(sizeof hw_fields / sizeof hw_fields[0]))

static const px_jfield gemm_fields[] = {
    {"m", PX_JF_I64, offsetof(px_gemm_point, m), 0, true, 1, NULL, 0, 1 << 24},
    {"n", PX_JF_I64, offsetof(px_gemm_point, n), 0, true, 1, NULL, 0, 1 << 24},
    {"k", PX_JF_I64, offsetof(px_gemm_point, k), 0, true, 1, NULL, 0, 1 << 24},
    {"flops", PX_JF_DBL, offsetof(px_gemm_point, flops), 0, true, MIN_FLOPS, NULL, 0,
     MAX_FLOPS},
};
static const px_jfield coll_fields[] = {
    {"n_ranks", PX_JF_INT, offsetof(px_coll_point, n_ranks), 0, true, 1, NULL, 0, 1 << 20},
    {"lat_s", PX_JF_DBL, offsetof(px_coll_point, lat_s), 0, true, 0, NULL, 0, MAX_LAT_S},
    {"bw", PX_JF_DBL, offsetof(px_coll_point, bw), 0, true, MIN_BW, NULL, 0, MAX_BW},
    {"min_bytes", PX_JF_I64, offsetof(px_coll_point, min_bytes), 0, false, 0, NULL, 0,
     (int64_t)1 << 50},
};
#define N_COLL_FIELDS ((int)(sizeof coll_fields / sizeof coll_fields[0]))
/* The calibrated collective arrays: key, array, count (one line each). */
typedef struct {
    const char *key;
    size_t array_offset, count_offset;
} coll_array;
#define CA(name) {#name "_points", offsetof(px_hw, name##_points), offsetof(px_hw, n_##name##_points)}
static const coll_array coll_arrays[] = {
    {"allreduce_points", offsetof(px_hw, allreduce_points), offsetof(px_hw, n_coll_points)},
    CA(allgather),
    CA(reduce_scatter),
    CA(alltoall),
};
#define N_COLL_ARRAYS ((int)(sizeof coll_arrays / sizeof coll_arrays[0]))
static const char *const hw_extra_keys[] = {"gemm_points",    "allreduce_points",
                                            "allgather_points", "reduce_scatter_points",
                                            "alltoall_points",  "sources",       "gemm_eff_scale",
                                            "attn_eff_scale",   "fitted",        NULL};

/* The optional "sources" object: for a field of the profile, where its value
 * comes from (a datasheet, a published kernel or collective measurement);
 * every key names a field the profile sets and every value is a non-empty
 * string.  The cost model never reads it. */
static px_status check_sources(json_t *obj, const char *file, px_error *err)
{
    json_t *src = json_object_get(obj, "sources");
    if (!src)
        return PX_OK;
    if (!json_is_object(src))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "sources: expected an object of field -> string, got %s",
                            px_jf_type_name(src));
    const char *k;
    json_t *v;
    json_object_foreach(src, k, v) {
        if (!json_object_get(obj, k) || !strcmp(k, "sources"))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "sources.%s: not a field this profile sets", k);
        if (!json_is_string(v) || !json_string_value(v)[0])
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "sources.%s: expected a non-empty string naming where the "
                                "value comes from",
                                k);
    }
    return PX_OK;
}

/* The fitted scales: outside hw_fields because a profile holds them only when
 * fitted (written only then, so an unfitted profile reads and writes as it
 * always did).  Bounds: a stack between 1/20 and 4x of the profile's model. */
#define MIN_SCALE 0.05
#define MAX_SCALE 4.0
static const px_jfield hw_scale_fields[] = {
    HD("gemm_eff_scale", gemm_eff_scale, false, MIN_SCALE, MAX_SCALE),
    HD("attn_eff_scale", attn_eff_scale, false, MIN_SCALE, MAX_SCALE),
};

const char *const px_hw_fit_fields[] = {"gemm_eff_scale", "attn_eff_scale", "intra_bw",
                                        "inter_bw", NULL};

static double *fit_field(px_hw *hw, const char *field)
{
    if (strcmp(field, "gemm_eff_scale") == 0)
        return &hw->gemm_eff_scale;
    if (strcmp(field, "attn_eff_scale") == 0)
        return &hw->attn_eff_scale;
    if (strcmp(field, "intra_bw") == 0)
        return &hw->intra_bw;
    if (strcmp(field, "inter_bw") == 0)
        return &hw->inter_bw;
    return NULL;
}

double px_hw_fit_value(const void *hw, const char *field)
{
    const double *x = fit_field((px_hw *)hw, field);
    if (!x)
        return 0.0;
    bool scale = x == &((const px_hw *)hw)->gemm_eff_scale ||
                 x == &((const px_hw *)hw)->attn_eff_scale;
    return scale && *x == 0.0 ? 1.0 : *x;
}

bool px_hw_fit_set(px_hw *hw, const char *field, double value)
{
    double *x = fit_field(hw, field);
    if (x)
        *x = value;
    return x != NULL;
}

/* Reads the fitted scales and the provenance object (both optional). */
static px_status read_fitted(json_t *obj, const char *file, const char *path, px_hw *out,
                             px_error *err)
{
    json_t *sub = json_object();
    if (!sub)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    for (int i = 0; i < 2; i++) {
        json_t *v = json_object_get(obj, hw_scale_fields[i].key);
        if (v)
            json_object_set(sub, hw_scale_fields[i].key, v);
    }
    px_status st = px_jf_read(hw_scale_fields, 2, sub, out, file, path, NULL, err);
    json_decref(sub);
    json_t *f = json_object_get(obj, "fitted");
    if (st == PX_OK && f)
        st = px_fitted_read(f, file, px_hw_fit_fields, &out->fitted, err);
    if (st == PX_OK)
        st = px_fitted_check(&out->fitted, file, px_hw_fit_value, out, err);
    return st;
}

static px_status write_fitted(const px_hw *hw, json_t *obj, px_error *err)
{
    for (int i = 0; i < 2; i++) {
        double x = *(const double *)((const char *)hw + hw_scale_fields[i].offset);
        if (x != 0.0 && json_object_set_new(obj, hw_scale_fields[i].key, json_real(x)) != 0)
            return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    if (hw->fitted.n_runs > 0) {
        json_t *f = px_fitted_to_json(&hw->fitted);
        if (!f || json_object_set_new(obj, "fitted", f) != 0)
            return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    return PX_OK;
}

void px_hw_init(px_hw *hw)
{
    memset(hw, 0, sizeof *hw);
    hw->mem_reserve_bytes = PX_HW_DEFAULT_MEM_RESERVE_BYTES;
    hw->hbm_visible_ratio = 1.0;
    hw->gemm_eff_max = PX_HW_DEFAULT_GEMM_EFF_MAX;
    hw->gemm_eff_half_dim = PX_HW_DEFAULT_GEMM_EFF_HALF_DIM;
    hw->mem_bound_eff = PX_HW_DEFAULT_MEM_BOUND_EFF;
    hw->comm_overlap_cost = PX_HW_DEFAULT_COMM_OVERLAP_COST;
    hw->intra_bw_eff = PX_HW_DEFAULT_BW_EFF;
    hw->inter_bw_eff = PX_HW_DEFAULT_BW_EFF;
    hw->gpu_mtbf_hours = PX_HW_DEFAULT_GPU_MTBF_HOURS;
    hw->ckpt_write_bw = PX_HW_DEFAULT_CKPT_WRITE_BW;
    hw->restart_s = PX_HW_DEFAULT_RESTART_S;
}

const char *px_hw_profiles_dir_default(void)
{
    const char *env = getenv("PARALLAX_HW_DIR");
    if (env && env[0])
        return env;
    return px_datadir_pick(PX_SOURCE_ROOT "/hw_profiles", PX_DATA_DIR "/hw_profiles");
}

/* Optional fields whose 0 means "absent" (not measured, not modelled, no
 * such tensor-core path): 0, or at least a minimum, so no time divides by a
 * near-zero rate (fp8_flops 1e-300 would give a step of -542 s). */
typedef struct {
    const char *key, *zero_means, *unit;
    double min;
} zero_or_min;
static const zero_or_min zero_or_min_fields[] = {
    {"fp8_flops", "no such tensor-core path", "FLOP/s", MIN_FLOPS},
    {"mxfp8_flops", "no such tensor-core path", "FLOP/s", MIN_FLOPS},
    {"fp4_flops", "no such tensor-core path", "FLOP/s", MIN_FLOPS},
    {"exp_rate", "not modelled", "per second", MIN_FLOPS},
    {"attn_eff", "default", "", 1e-3},
    {"sustained_frac", "not measured", "", 1e-3},
    {"sync_interval_s", "not modelled", "s", 1e-6},
    {"norm_bw", "not measured", "bytes/s", MIN_BW},
    {"residual_bw", "not measured", "bytes/s", MIN_BW},
    {"gelu_bw", "not measured", "bytes/s", MIN_BW},
    {"swiglu_bw", "not measured", "bytes/s", MIN_BW},
    {"rope_bw", "not measured", "bytes/s", MIN_BW},
    {"xent_bw", "not measured", "bytes/s", MIN_BW},
    {"adamw_bw", "not measured", "bytes/s", MIN_BW},
    {"embed_bw", "not measured", "bytes/s", MIN_BW},
    {"host_link_bw", "unknown", "bytes/s", MIN_BW},
    {"host_mem_bw", "unknown", "bytes/s", MIN_BW},
};

static px_status check_optional_rates(const px_hw *hw, px_error *err)
{
    for (size_t z = 0; z < sizeof zero_or_min_fields / sizeof zero_or_min_fields[0]; z++) {
        const zero_or_min *o = &zero_or_min_fields[z];
        for (int i = 0; i < N_HW_FIELDS; i++) {
            const px_jfield *f = &hw_fields[i];
            if (strcmp(f->key, o->key))
                continue;
            double x = *(const double *)((const char *)hw + f->offset);
            if (x != 0 && !(x >= o->min))
                return PX_FAIL(err, PX_ERR_INVALID,
                               "profile %s: %s: %g is out of range (allowed: 0 = %s, or "
                               "%g..%g%s%s)", hw->name, f->key, x, o->zero_means, o->min,
                               f->max, o->unit[0] ? " " : "", o->unit);
        }
    }
    /* the calibrated scales: 0 = absent (1), else their own range */
    for (int i = 0; i < 2; i++) {
        double x = *(const double *)((const char *)hw + hw_scale_fields[i].offset);
        if (x != 0 && !(x >= MIN_SCALE && x <= MAX_SCALE))
            return PX_FAIL(err, PX_ERR_INVALID,
                           "profile %s: %s: %g is out of range (allowed: %g..%g; absent = 1)",
                           hw->name, hw_scale_fields[i].key, x, MIN_SCALE, MAX_SCALE);
    }
    return PX_OK;
}

px_status px_hw_check_field(const char *what, const char *key, double x, px_error *err)
{
    for (int i = 0; i < N_HW_FIELDS; i++) {
        const px_jfield *f = &hw_fields[i];
        if (strcmp(f->key, key))
            continue;
        if (!(x >= f->min && x <= f->max))
            return PX_FAIL(err, PX_ERR_USAGE, "%s %g: out of range (allowed: %g..%g, the "
                           "bounds of the profile field %s)", what, x, f->min, f->max, key);
        return PX_OK;
    }
    return PX_FAIL(err, PX_ERR_INTERNAL, "%s: no profile field %s", what, key);
}

px_status px_hw_validate(const px_hw *hw, px_error *err)
{
    const char *n = hw->name;
    char where[160];
    snprintf(where, sizeof where, "profile %s", n);
    px_status bst = px_jf_check_bounds(hw_fields, N_HW_FIELDS, hw, NULL, where, err);
    if (bst == PX_OK)
        bst = check_optional_rates(hw, err);
    if (bst != PX_OK)
        return bst;
    if (!(hw->peak_flops > 0) || !(hw->hbm_bw > 0) || hw->hbm_bytes <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: peak_flops, hbm_bw and hbm_bytes must be > 0", n);
    if (hw->dtype_bytes != 2 && hw->dtype_bytes != 4)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: dtype_bytes %d: allowed values are 2 (bf16) and 4 (fp32)", n,
                       hw->dtype_bytes);
    if (hw->mem_reserve_bytes < 0 || px_hw_usable_bytes(hw) <= 0)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: mem_reserve_bytes must be in 0..hbm_bytes x "
                       "hbm_visible_ratio - 1", n);
    if (!(hw->gemm_eff_max > 0 && hw->gemm_eff_max <= 1) ||
        !(hw->mem_bound_eff > 0 && hw->mem_bound_eff <= 1))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: gemm_eff_max and mem_bound_eff must be in (0, 1]", n);
    if (!(hw->comm_overlap_cost >= 0 && hw->comm_overlap_cost <= 1))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: comm_overlap_cost = %g must be in [0, 1]", n,
                       hw->comm_overlap_cost);
    if (!(hw->sustained_frac >= 0 && hw->sustained_frac <= 1))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: sustained_frac = %g must be in [0, 1] (0: not measured)",
                       n, hw->sustained_frac);
    if (!(hw->sync_wait_s >= 0 && hw->sync_wait_s < 1))
        return PX_FAIL(err, PX_ERR_INVALID, "profile %s: sync_wait_s = %g must be in [0, 1) s",
                       n, hw->sync_wait_s);
    if (!(hw->gemm_eff_half_dim >= 0))
        return PX_FAIL(err, PX_ERR_INVALID, "profile %s: gemm_eff_half_dim must be >= 0", n);
    if (hw->gpus_per_node < 1)
        return PX_FAIL(err, PX_ERR_INVALID, "profile %s: gpus_per_node must be >= 1", n);
    if (hw->gpus_per_host < 0 || hw->gpus_per_host > hw->gpus_per_node)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: gpus_per_host %d must be in 0..gpus_per_node (%d); 0: one "
                       "host per node", n, hw->gpus_per_host, hw->gpus_per_node);
    if (!(hw->intra_bw > 0) || !(hw->inter_bw > 0) || !(hw->intra_lat_s >= 0) ||
        !(hw->inter_lat_s >= 0))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: intra_bw and inter_bw must be > 0, latencies >= 0", n);
    if (!(hw->intra_bw_eff > 0 && hw->intra_bw_eff <= 1) ||
        !(hw->inter_bw_eff > 0 && hw->inter_bw_eff <= 1))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: intra_bw_eff = %g and inter_bw_eff = %g must be in (0, 1]", n,
                       hw->intra_bw_eff, hw->inter_bw_eff);
    if (!(hw->gpu_mtbf_hours > 0) || !(hw->ckpt_write_bw > 0) || !(hw->restart_s >= 0))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: gpu_mtbf_hours and ckpt_write_bw must be > 0, restart_s >= 0",
                       n);
    if (!(hw->power_w >= 0) || !(hw->price_per_gpu_hour >= 0) || !isfinite(hw->power_w) ||
        !isfinite(hw->price_per_gpu_hour))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: power_w and price_per_gpu_hour must be >= 0 (0: unknown)", n);
    if (!(hw->fp8_flops >= 0) || !(hw->mxfp8_flops >= 0) || !(hw->fp4_flops >= 0))
        return PX_FAIL(err, PX_ERR_INVALID,
                       "profile %s: fp8_flops, mxfp8_flops and fp4_flops must be >= 0 "
                       "(0: no such tensor-core path)", n);
    if (hw->n_gemm_points < 0 || hw->n_gemm_points > PX_HW_MAX_GEMM_POINTS)
        return PX_FAIL(err, PX_ERR_INVALID, "profile %s: at most %d gemm_points", n,
                       PX_HW_MAX_GEMM_POINTS);
    for (int i = 0; i < N_COLL_ARRAYS; i++) {
        int count = *(const int *)((const char *)hw + coll_arrays[i].count_offset);
        if (count < 0 || count > PX_HW_MAX_COLL_POINTS)
            return PX_FAIL(err, PX_ERR_INVALID, "profile %s: at most %d %s", n,
                           PX_HW_MAX_COLL_POINTS, coll_arrays[i].key);
    }
    return PX_OK;
}

/* Reads an optional array of point objects into dst (count into *n). */
static px_status read_points(json_t *obj, const char *key, const px_jfield *fields,
                             int n_fields, void *dst, size_t elem_size, int max, int *n,
                             const char *file, const char *path, px_error *err)
{
    *n = 0;
    json_t *arr = json_object_get(obj, key);
    if (!arr)
        return PX_OK;
    char apath[256];
    px_jf_join(apath, sizeof apath, path, key);
    if (!json_is_array(arr))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "%s: expected an array, got %s",
                            apath, px_jf_type_name(arr));
    if (json_array_size(arr) > (size_t)max)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "%s: %zu points, at most %d",
                            apath, json_array_size(arr), max);
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        char epath[300];
        snprintf(epath, sizeof epath, "%s[%zu]", apath, i);
        px_status st = px_jf_read(fields, n_fields, v, (char *)dst + i * elem_size, file,
                                  epath, NULL, err);
        if (st != PX_OK)
            return st;
    }
    *n = (int)json_array_size(arr);
    return PX_OK;
}

px_status px_hw_from_json(json_t *obj, const char *file, const char *path, px_hw *out,
                          px_error *err)
{
    px_hw_init(out);
    px_status st =
        px_jf_read(hw_fields, N_HW_FIELDS, obj, out, file, path, hw_extra_keys, err);
    if (st == PX_OK)
        st = check_sources(obj, file, err);
    if (st == PX_OK)
        st = read_fitted(obj, file, path, out, err);
    if (st == PX_OK)
        st = read_points(obj, "gemm_points", gemm_fields, 4, out->gemm_points,
                         sizeof(px_gemm_point), PX_HW_MAX_GEMM_POINTS, &out->n_gemm_points,
                         file, path, err);
    for (int i = 0; i < N_COLL_ARRAYS && st == PX_OK; i++)
        st = read_points(obj, coll_arrays[i].key, coll_fields, N_COLL_FIELDS,
                         (char *)out + coll_arrays[i].array_offset, sizeof(px_coll_point),
                         PX_HW_MAX_COLL_POINTS, (int *)((char *)out + coll_arrays[i].count_offset),
                         file, path, err);
    if (st == PX_OK) {
        st = px_hw_validate(out, err);
        if (st != PX_OK && err && !err->file[0] && file)
            snprintf(err->file, sizeof err->file, "%s", file);
    }
    return st;
}

static px_status write_points(json_t *obj, const char *key, const px_jfield *fields,
                              int n_fields, const void *src, size_t elem_size, int n,
                              px_error *err)
{
    json_t *arr = json_array();
    if (!arr)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        json_t *o = json_object();
        px_status st = o ? px_jf_write(fields, n_fields, (const char *)src + (size_t)i * elem_size,
                                       o, key, err)
                         : PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
        if (st != PX_OK || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return st != PX_OK ? st : PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
        }
    }
    json_object_set_new(obj, key, arr);
    return PX_OK;
}

px_status px_hw_to_json(const px_hw *hw, json_t **out, px_error *err)
{
    json_t *obj = json_object();
    if (!obj)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    px_status st = px_jf_write(hw_fields, N_HW_FIELDS, hw, obj, "hw", err);
    if (st == PX_OK)
        st = write_fitted(hw, obj, err);
    /* The point arrays are written only when present: datasheet profiles
     * have none, and an empty array would say "calibrated, nothing found". */
    if (st == PX_OK && hw->n_gemm_points > 0)
        st = write_points(obj, "gemm_points", gemm_fields, 4, hw->gemm_points,
                          sizeof(px_gemm_point), hw->n_gemm_points, err);
    for (int i = 0; i < N_COLL_ARRAYS && st == PX_OK; i++) {
        int count = *(const int *)((const char *)hw + coll_arrays[i].count_offset);
        if (count > 0)
            st = write_points(obj, coll_arrays[i].key, coll_fields, N_COLL_FIELDS,
                              (const char *)hw + coll_arrays[i].array_offset,
                              sizeof(px_coll_point), count, err);
    }
    if (st != PX_OK) {
        json_decref(obj);
        return st;
    }
    *out = obj;
    return PX_OK;
}

px_status px_hw_save(const px_hw *hw, const char *path, px_error *err)
{
    px_status st = px_hw_validate(hw, err);
    if (st != PX_OK)
        return st;
    json_t *obj = NULL;
    st = px_hw_to_json(hw, &obj, err);
    if (st != PX_OK)
        return st;
    st = px_io_write_json(path, obj, JSON_SORT_KEYS | JSON_INDENT(2), err);
    json_decref(obj);
    return st;
}

static bool is_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && strcmp(s + n - 5, ".json") == 0);
}

static bool file_exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void px_hw_list_profiles(const char *profiles_dir, char *buf, int buf_len)
{
    if (buf_len <= 0)
        return;
    buf[0] = '\0';
    const char *dir = profiles_dir ? profiles_dir : px_hw_profiles_dir_default();
    DIR *d = opendir(dir);
    if (!d)
        return;
    char *names[256];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 256) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".json") == 0) {
            names[n] = strdup(e->d_name);
            if (names[n])
                names[n++][len - 5] = '\0';
        }
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, (size_t)buf_len - used, "%s%s", used ? ", " : "", names[i]);
        free(names[i]);
    }
}

px_status px_hw_load(const char *name_or_path, const char *profiles_dir, px_hw *out,
                     px_error *err)
{
    if (!name_or_path || !name_or_path[0])
        name_or_path = PX_HW_DEFAULT;
    char path[1024];
    if (is_path(name_or_path) || file_exists(name_or_path)) {
        snprintf(path, sizeof path, "%s", name_or_path);
    } else {
        const char *dir = profiles_dir ? profiles_dir : px_hw_profiles_dir_default();
        snprintf(path, sizeof path, "%s/%s.json", dir, name_or_path);
        if (!file_exists(path)) {
            char known[2048];
            px_hw_list_profiles(dir, known, sizeof known);
            return PX_FAIL(err, PX_ERR_NOT_FOUND,
                           "unknown hardware profile \"%s\"; known profiles (in %s): %s; or "
                           "give a path to a profile JSON",
                           name_or_path, dir, known[0] ? known : "(none)");
        }
    }
    json_t *root = NULL;
    px_status st = px_jf_load_file(path, &root, err);
    if (st != PX_OK)
        return st;
    st = px_hw_from_json(root, path, "", out, err);
    json_decref(root);
    return st;
}

int64_t px_hw_usable_bytes(const px_hw *hw)
{
    double ratio = hw->hbm_visible_ratio > 0.0 ? hw->hbm_visible_ratio : 1.0;
    return (int64_t)((double)hw->hbm_bytes * ratio) - hw->mem_reserve_bytes;
}
