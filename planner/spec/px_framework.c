/* px_framework.c — framework profiles: loading (strict, table-driven like
 * px_plan_io.c) and the capability test the search applies; see
 * px_framework.h and docs/framework-schema.md. */
#include "px_framework.h"
#include "px_datadir.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "px_hw.h"
#include "px_jfield.h"
#include "px_offload.h"
#include "px_release.h"

const char *px_framework_dir_default(void)
{
    const char *env = getenv("PARALLAX_FRAMEWORK_DIR");
    if (env && env[0])
        return env;
    return px_datadir_pick(PX_SOURCE_ROOT "/frameworks", PX_DATA_DIR "/frameworks");
}

/* ------------------------------------------------------------------ */
/* Name sets: a JSON array of names -> a bit mask                      */

/* Each table sized by its entries, asserted equal to its enumeration's count
 * (a new schedule, format or feature without a name fails to compile). */
#define N_NAMES(t) (sizeof t / sizeof t[0])
static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2"};
_Static_assert(N_NAMES(sched_names) == PX_SCHED_COUNT, "a name per px_schedule");
static const char *const rc_names[] = {"none", "selective", "full"};
_Static_assert(N_NAMES(rc_names) == PX_RECOMPUTE_COUNT, "a name per px_recompute");
static const char *const zero_names[] = {"0", "1", "2", "3"};
_Static_assert(N_NAMES(zero_names) == PX_ZERO_STAGES, "a name per ZeRO stage");
static const char *const cp_names[] = {"ring_p2p", "all_gather", "all_to_all"};
_Static_assert(N_NAMES(cp_names) == PX_CP_FLAVOUR_COUNT, "a name per px_cp_flavour");
/* px_precision's spellings (px_precision.h), index = px_precision */
static const char *const prec_names[] = {"bf16",   "fp16",        "fp8",       "fp8-cs",
                                         "fp8-rowwise", "fp8-block", "mxfp8", "nvfp4"};
_Static_assert(N_NAMES(prec_names) == PX_PREC_COUNT, "a name per px_precision");
/* bit i = px_model_feature 1 << i */
static const char *const feat_names[] = {"mla", "qk_norm", "shared_experts", "dense_first",
                                         "mtp", "moe", "gpt_block",      "llama_block",
                                         "mamba"};
_Static_assert(N_NAMES(feat_names) == PX_FEAT_COUNT, "a name per px_model_feature bit");

/* Reads root[key] (an array of names from names[0..n), integers allowed
 * when integers is true: "zero": [0, 1]) into a bit mask; *first (may be
 * NULL) gets the index of the first listed, -1 for an empty array. */
static px_status read_set(json_t *obj, const char *key, const char *const *names, int n,
                          bool integers, const char *file, unsigned *mask, int *first,
                          px_error *err)
{
    char allowed[256] = "";
    for (int i = 0; i < n; i++) {
        size_t u = strlen(allowed);
        snprintf(allowed + u, sizeof allowed - u, "%s%s", i ? ", " : "", names[i]);
    }
    json_t *a = json_object_get(obj, key);
    if (!a)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "capabilities.%s: missing (an array of: %s)", key, allowed);
    if (!json_is_array(a))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "capabilities.%s: expected an array of names (%s), got %s", key,
                            allowed, px_jf_type_name(a));
    *mask = 0;
    if (first)
        *first = -1;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        char buf[32];
        if (integers && json_is_integer(v))
            snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(v));
        else if (json_is_string(v))
            snprintf(buf, sizeof buf, "%s", json_string_value(v));
        else
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "capabilities.%s[%zu]: expected one of %s, got %s", key, i,
                                allowed, px_jf_type_name(v));
        int k = 0;
        while (k < n && strcmp(buf, names[k]) != 0)
            k++;
        if (k == n)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "capabilities.%s[%zu]: \"%s\" is not one of: %s", key, i, buf,
                                allowed);
        *mask |= 1u << k;
        if (first && *first < 0)
            *first = k;
    }
    return PX_OK;
}

/* ------------------------------------------------------------------ */
/* Field tables                                                        */

#define CB(key) {#key, PX_JF_BOOL, offsetof(px_caps, key), 0, true, 0, NULL, 0, 0}
static const px_jfield caps_fields[] = {
    CB(per_layer_recompute), CB(uneven_stages), CB(uneven_virtual_chunks), CB(hybrid_shard),
    CB(sp),  CB(tp_without_sp), CB(ep), CB(etp), CB(grad_bf16), CB(pads_vocab),
    {"vocab_pad_multiple", PX_JF_INT, offsetof(px_caps, vocab_pad_multiple), 0, true, 1, NULL,
     0, 1 << 16},
    CB(needs_flash_attention),
    {"max_pp", PX_JF_INT, offsetof(px_caps, max_pp), 0, true, 0, NULL, 0, 1 << 20},
    /* optional: zb-h1 over virtual chunks (default false), experts in GPT
     * blocks (default true: every framework's MoE layer takes either block) */
    {"zb_virtual_chunks", PX_JF_BOOL, offsetof(px_caps, zb_virtual_chunks), 0, false, 0, NULL, 0,
     0},
    {"moe_gpt_block", PX_JF_BOOL, offsetof(px_caps, moe_gpt_block), 0, false, 0, NULL, 0, 0},
    /* optional, default 3 (any stage with a pipeline) */
    {"max_zero_with_pp", PX_JF_INT, offsetof(px_caps, max_zero_with_pp), 0, false, 0, NULL, 0,
     3},
    /* optional, default false: ZeRO-0 only without other dimensions */
    {"ddp_1d_only", PX_JF_BOOL, offsetof(px_caps, ddp_1d_only), 0, false, 0, NULL, 0, 0},
    /* optional, default true: TP and PP together */
    {"tp_with_pp", PX_JF_BOOL, offsetof(px_caps, tp_with_pp), 0, false, 0, NULL, 0, 0},
    /* optional, default false: Megatron's --recompute-method block */
    {"block_recompute", PX_JF_BOOL, offsetof(px_caps, block_recompute), 0, false, 0, NULL, 0,
     0},
    /* optional, default false */
    {"empty_end_chunks", PX_JF_BOOL, offsetof(px_caps, empty_end_chunks), 0, false, 0, NULL, 0,
     0},
    /* optional, default false: optimizer offload, and of a fraction */
    {"offload_optimizer", PX_JF_BOOL, offsetof(px_caps, offload_optimizer), 0, false, 0, NULL, 0,
     0},
    {"offload_fraction", PX_JF_BOOL, offsetof(px_caps, offload_fraction), 0, false, 0, NULL, 0,
     0},
    {"offload_params", PX_JF_BOOL, offsetof(px_caps, offload_params), 0, false, 0, NULL, 0, 0},
    {"offload_params_sharded", PX_JF_BOOL, offsetof(px_caps, offload_params_sharded), 0, false,
     0, NULL, 0, 0},
    /* optional, default false: the flex dispatcher's backends */
    {"moe_deepep", PX_JF_BOOL, offsetof(px_caps, moe_deepep), 0, false, 0, NULL, 0, 0},
    {"moe_hybridep", PX_JF_BOOL, offsetof(px_caps, moe_hybridep), 0, false, 0, NULL, 0, 0},
    /* optional, default false: selective recompute by module */
    {"recompute_modules", PX_JF_BOOL, offsetof(px_caps, recompute_modules), 0, false, 0, NULL, 0,
     0},
    {"recompute_modules_quantized", PX_JF_BOOL, offsetof(px_caps, recompute_modules_quantized), 0,
     false, 0, NULL, 0, 0},
    /* optional, default false: the forward's TP collectives under their GEMMs */
    {"tp_comm_overlap", PX_JF_BOOL, offsetof(px_caps, tp_comm_overlap), 0, false, 0, NULL, 0, 0},
    /* optional, default false: EP all-to-all under another micro-batch */
    {"moe_a2a_overlap", PX_JF_BOOL, offsetof(px_caps, moe_a2a_overlap), 0, false, 0, NULL, 0, 0},
    /* optional, default none: activation offload (px_offload.h) */
    {"offload_activations", PX_JF_ENUM, offsetof(px_caps, offload_activations), 0, false, 0,
     px_act_offload_mode_names, PX_ACT_OFFLOAD_COUNT, 0},
    /* optional: the recipe a plain "fp8" request runs as (default fp8 itself) */
    {"fp8_runs_as", PX_JF_ENUM, offsetof(px_caps, fp8_runs_as), 0, false, 0, prec_names,
     PX_PREC_COUNT, 0},
};
static const char *const caps_sets[] = {"schedules", "recompute", "zero", "cp_flavours",
                                        "precisions", "model_features", "finetune", NULL};

#define RB(key) {#key, PX_JF_BOOL, offsetof(px_fw_runtime, key), 0, true, 0, NULL, 0, 0}
static const px_jfield runtime_fields[] = {
    RB(dp_overlap), RB(tp_overlap),
    {"fsdp_prefetch_layers", PX_JF_INT, offsetof(px_fw_runtime, fsdp_prefetch_layers), 0, true,
     0, NULL, 0, 1 << 10},
    RB(fsdp_reshard_after_forward), RB(fused_attention), RB(fused_cross_entropy),
    RB(fused_norm), RB(fused_rope), RB(grouped_gemm), RB(fsdp_flat_collectives),
    {"flash_attention_version", PX_JF_INT, offsetof(px_fw_runtime, flash_attention_version), 0,
     true, 1, NULL, 0, 4},
    {"attention_kernel", PX_JF_ENUM, offsetof(px_fw_runtime, attn_kernel), 0, false, 0,
     px_attn_kernel_names, PX_AK_COUNT, 0},
    {"attn_native_max_head_dim", PX_JF_INT, offsetof(px_fw_runtime, attn_native_max_head_dim), 0,
     false, 0, NULL, 0, 1 << 12},
    {"quantized_params", PX_JF_BOOL, offsetof(px_fw_runtime, quantized_params), 0, false, 0,
     NULL, 0, 0},
    {"dropout_off", PX_JF_BOOL, offsetof(px_fw_runtime, dropout_off), 0, false, 0, NULL, 0, 0},
    {"grad_accum_separate", PX_JF_BOOL, offsetof(px_fw_runtime, grad_accum_separate), 0, false,
     0, NULL, 0, 0},
    {"zero1_grad_allreduce", PX_JF_BOOL, offsetof(px_fw_runtime, zero1_grad_allreduce), 0, false,
     0, NULL, 0, 0},
    {"pp_outermost", PX_JF_BOOL, offsetof(px_fw_runtime, pp_outermost), 0, false, 0, NULL, 0,
     0},
    /* optional, default true */
    {"fused_swiglu", PX_JF_BOOL, offsetof(px_fw_runtime, fused_swiglu), 0, false, 0, NULL, 0, 0},
    {"fused_qkv", PX_JF_BOOL, offsetof(px_fw_runtime, fused_qkv), 0, false, 0, NULL, 0, 0},
    {"fused_gate_up", PX_JF_BOOL, offsetof(px_fw_runtime, fused_gate_up), 0, false, 0, NULL, 0,
     0},
    {"fused_moe_permute", PX_JF_BOOL, offsetof(px_fw_runtime, fused_moe_permute), 0, false, 0,
     NULL, 0, 0},
    {"moe_a2a_overlap", PX_JF_BOOL, offsetof(px_fw_runtime, moe_a2a_overlap), 0, false, 0, NULL,
     0, 0},
    /* optional, default false: DeepSpeed's pipeline engine and BF16 optimizer */
    {"grad_accum_cast_copy", PX_JF_BOOL, offsetof(px_fw_runtime, grad_accum_cast_copy), 0, false,
     0, NULL, 0, 0},
    {"pp_blocking_p2p", PX_JF_BOOL, offsetof(px_fw_runtime, pp_blocking_p2p), 0, false, 0, NULL,
     0, 0},
    {"tied_grad_allreduce", PX_JF_BOOL, offsetof(px_fw_runtime, tied_grad_allreduce), 0, false,
     0, NULL, 0, 0},
    {"blocking_engine", PX_JF_BOOL, offsetof(px_fw_runtime, blocking_engine), 0, false, 0, NULL,
     0, 0},
    {"cp_gather_qkv", PX_JF_BOOL, offsetof(px_fw_runtime, cp_gather_qkv), 0, false, 0, NULL, 0,
     0},
    {"zero_16bit_partitions", PX_JF_BOOL, offsetof(px_fw_runtime, zero_16bit_partitions), 0,
     false, 0, NULL, 0, 0},
    {"fsdp_head_kept_gathered", PX_JF_BOOL, offsetof(px_fw_runtime, fsdp_head_kept_gathered), 0,
     false, 0, NULL, 0, 0},
    {"fsdp_pp_grad_bytes", PX_JF_INT, offsetof(px_fw_runtime, fsdp_pp_grad_bytes), 0, false, 0,
     NULL, 0, 8},
    {"pp_buffers_per_micro", PX_JF_BOOL, offsetof(px_fw_runtime, pp_buffers_per_micro), 0,
     false, 0, NULL, 0, 0},
    {"cp_allgather_overlap", PX_JF_BOOL, offsetof(px_fw_runtime, cp_allgather_overlap), 0,
     false, 0, NULL, 0, 0},
    {"cp_kv_repeated", PX_JF_BOOL, offsetof(px_fw_runtime, cp_kv_repeated), 0, false, 0, NULL,
     0, 0},
    {"sp_keeps_gathered_input", PX_JF_BOOL, offsetof(px_fw_runtime, sp_keeps_gathered_input), 0,
     false, 0, NULL, 0, 0},
    {"quant_keeps_hp_input", PX_JF_BOOL, offsetof(px_fw_runtime, quant_keeps_hp_input), 0,
     false, 0, NULL, 0, 0},
    {"selective_op_policy", PX_JF_BOOL, offsetof(px_fw_runtime, selective_op_policy), 0, false,
     0, NULL, 0, 0},
    {"act_offload_async", PX_JF_BOOL, offsetof(px_fw_runtime, act_offload_async), 0, false, 0,
     NULL, 0, 0},
    {"act_offload_prefetch", PX_JF_BOOL, offsetof(px_fw_runtime, act_offload_prefetch), 0, false,
     0, NULL, 0, 0},
    /* optional, 0 = the default rule; at most three fp32 copies and a 16-bit one */
    {"loss_logit_bytes", PX_JF_INT, offsetof(px_fw_runtime, loss_logit_bytes), 0, false, 0, NULL,
     0, 16},
    {"loss_parallel_logit_bytes", PX_JF_INT, offsetof(px_fw_runtime, loss_parallel_logit_bytes),
     0, false, 0, NULL, 0, 16},
    {"loss_chunks", PX_JF_INT, offsetof(px_fw_runtime, loss_chunks), 0, false, 0, NULL, 0, 1024},
    /* optional, default 0: the runtime's memory (px_cost_runtime.h) */
    {"allocator_cache_fraction", PX_JF_DBL, offsetof(px_fw_runtime, allocator_cache_fraction),
     0, false, 0, NULL, 0, 0.5},
    {"workspace_bytes", PX_JF_I64, offsetof(px_fw_runtime, workspace_bytes), 0, false, 0, NULL,
     0, 1e10},
    /* optional, default 0: fitted overheads (seconds) */
    {"step_overhead_s", PX_JF_DBL, offsetof(px_fw_runtime, step_overhead_s), 0, false, 0, NULL,
     0, 60},
    {"microbatch_overhead_s", PX_JF_DBL, offsetof(px_fw_runtime, microbatch_overhead_s), 0, false,
     0, NULL, 0, 10},
};

const char *const px_framework_fit_fields[] = {"step_overhead_s", "microbatch_overhead_s", NULL};

static double *fit_field(px_framework *fw, const char *field)
{
    if (strcmp(field, "step_overhead_s") == 0)
        return &fw->run.step_overhead_s;
    if (strcmp(field, "microbatch_overhead_s") == 0)
        return &fw->run.microbatch_overhead_s;
    return NULL;
}

double px_framework_fit_value(const void *fw, const char *field)
{
    const double *x = fit_field((px_framework *)fw, field);
    return x ? *x : 0.0;
}

bool px_framework_fit_set(px_framework *fw, const char *field, double value)
{
    double *x = fit_field(fw, field);
    if (x)
        *x = value;
    return x != NULL;
}

static const px_jfield root_fields[] = {
    {"name", PX_JF_STR, offsetof(px_framework, name), sizeof(((px_framework *)0)->name), true, 0,
     NULL, 0, 0},
    {"description", PX_JF_STR, offsetof(px_framework, description),
     sizeof(((px_framework *)0)->description), true, 0, NULL, 0, 0},
};
static const char *const root_extra[] = {"capabilities", "runtime", "sources", "releases",
                                         "fitted", "as_of", NULL};

#define NF(t) ((int)(sizeof t / sizeof t[0]))

static json_t *section(json_t *root, const char *key, const char *file, px_error *err)
{
    json_t *o = json_object_get(root, key);
    if (!o || !json_is_object(o)) {
        px_error_set(err, PX_ERR_INVALID, file, 0, 0, "%s: %s (expected an object)", key,
                     o ? "not an object" : "missing");
        return NULL;
    }
    return o;
}

/* Every trait of capabilities and runtime names its source, and sources
 * holds nothing else: a trait without a citation is an error. */
static px_status check_sources(json_t *root, const char *file, px_error *err)
{
    json_t *src = section(root, "sources", file, err);
    if (!src)
        return PX_ERR_INVALID;
    const char *secs[2] = {"capabilities", "runtime"};
    for (int s = 0; s < 2; s++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(root, secs[s]), k, v) {
            json_t *c = json_object_get(src, k);
            if (!c || !json_is_string(c) || !json_string_value(c)[0])
                return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                    "sources.%s: missing: every trait of %s cites the "
                                    "framework's documentation or code it comes from",
                                    k, secs[s]);
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach(src, k, v) {
        if (!json_object_get(json_object_get(root, "capabilities"), k) &&
            !json_object_get(json_object_get(root, "runtime"), k))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "sources.%s: not a trait of capabilities or runtime", k);
    }
    return PX_OK;
}

static px_status from_json(json_t *root, const char *file, px_framework *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%.511s", file);
    if (!json_is_object(root))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "top level: expected an object");
    px_status st = px_jf_read(root_fields, NF(root_fields), root, out, file, "", root_extra, err);
    if (st != PX_OK)
        return st;
    json_t *jc = section(root, "capabilities", file, err);
    json_t *jr = jc ? section(root, "runtime", file, err) : NULL;
    if (!jc || !jr)
        return PX_ERR_INVALID;
    px_caps *c = &out->caps;
    snprintf(c->name, sizeof c->name, "%s", out->name);
    c->moe_gpt_block = true;
    c->max_zero_with_pp = 3;
    c->tp_with_pp = true;
    c->fp8_runs_as = PX_PREC_FP8;
    st = px_jf_read(caps_fields, NF(caps_fields), jc, c, file, "capabilities", caps_sets, err);
    if (st != PX_OK)
        return st;
    unsigned sched = 0, rc = 0, zero = 0, cp = 0, prec = 0, feat = 0;
    int cp_first = -1;
    if ((st = read_set(jc, "schedules", sched_names, PX_SCHED_COUNT, false, file, &sched, NULL,
                       err)) ||
        (st = read_set(jc, "recompute", rc_names, PX_RECOMPUTE_COUNT, false, file, &rc, NULL,
                       err)) ||
        (st = read_set(jc, "zero", zero_names, PX_ZERO_STAGES, true, file, &zero, NULL, err)) ||
        (st = read_set(jc, "cp_flavours", cp_names, PX_CP_FLAVOUR_COUNT, false, file, &cp,
                       &cp_first, err)) ||
        (st = read_set(jc, "precisions", prec_names, PX_PREC_COUNT, false, file, &prec, NULL,
                       err)) ||
        (st = read_set(jc, "model_features", feat_names, PX_FEAT_COUNT, false, file, &feat,
                        NULL, err)))
        return st;
    for (int i = 0; i < PX_SCHED_COUNT; i++)
        c->schedules[i] = sched >> i & 1u;
    for (int i = 0; i < PX_RECOMPUTE_COUNT; i++)
        c->recompute[i] = rc >> i & 1u;
    for (int i = 0; i < PX_ZERO_STAGES; i++)
        c->zero[i] = zero >> i & 1u;
    c->cp_flavours = cp;
    c->cp_default = cp_first >= 0 ? cp_first : 0; /* none listed: no CP to run */
    c->precisions = prec;
    c->model_features = feat;
    if (!sched)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "capabilities.schedules: empty (give 1f1b for a framework without "
                            "pipeline parallelism: one micro-batch after another)");
    if (!rc || !(zero & 1u) || !prec)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "capabilities.%s: must hold %s",
                            !rc ? "recompute" : !(zero & 1u) ? "zero" : "precisions",
                            !rc ? "at least one mode" : !(zero & 1u) ? "0 (plain data parallelism)"
                                                                     : "at least one format");
    /* optional: the fine-tuning it runs beside pre-training (absent: none) */
    static const char *const ft_names[] = {"full", "lora"};
    unsigned ft = 0;
    if (json_object_get(jc, "finetune") &&
        (st = read_set(jc, "finetune", ft_names, 2, false, file, &ft, NULL, err)))
        return st;
    c->finetune = 1u << PX_FT_NONE | ft << 1;
    out->run.fused_swiglu = out->run.fused_qkv = out->run.fused_gate_up = true;
    st = px_jf_read(runtime_fields, NF(runtime_fields), jr, &out->run, file, "runtime", NULL, err);
    if (st != PX_OK)
        return st;
    out->run.vocab_rows_multiple =
        c->pads_vocab ? (c->vocab_pad_multiple > 0 ? c->vocab_pad_multiple : 1) : 0;
    json_t *jf = json_object_get(root, "fitted");
    if (jf && (st = px_fitted_read(jf, file, px_framework_fit_fields, &out->fitted, err)) != PX_OK)
        return st;
    if ((st = px_fitted_check(&out->fitted, file, px_framework_fit_value, out, err)) != PX_OK)
        return st;
    return check_sources(root, file, err);
}

px_precision px_caps_precision(const px_caps *caps, px_precision requested)
{
    if (!caps || requested != PX_PREC_FP8 || (caps->precisions & PX_PREC_BIT(PX_PREC_FP8)))
        return requested;
    px_precision as = (px_precision)caps->fp8_runs_as;
    return as > PX_PREC_FP16 && as < PX_PREC_COUNT && as != PX_PREC_FP8 ? as : requested;
}

px_cp_comm px_caps_cp_comm(const px_caps *caps, px_cp_comm requested, bool given)
{
    if (given || !caps || !(caps->cp_flavours & (1u << caps->cp_default)))
        return requested;
    return (px_cp_comm)caps->cp_default;
}

static bool is_path(const char *s)
{
    return strchr(s, '/') != NULL || strstr(s, ".json") != NULL;
}

/* The profile file of name_or_path (a name in dir, or a path) into path. */
static px_status profile_path(const char *name_or_path, const char *dir, char *path,
                              size_t path_len, px_error *err)
{
    struct stat sb;
    if (is_path(name_or_path)) {
        snprintf(path, path_len, "%s", name_or_path);
        return PX_OK;
    }
    const char *d = dir ? dir : px_framework_dir_default();
    snprintf(path, path_len, "%s/%s.json", d, name_or_path);
    if (stat(path, &sb) == 0)
        return PX_OK;
    char known[1024];
    px_hw_list_profiles(d, known, sizeof known); /* the *.json names of a folder */
    return PX_FAIL(err, PX_ERR_NOT_FOUND,
                   "--framework \"%s\": unknown; allowed values (frameworks in %s): %s; "
                   "or a path to a framework profile",
                   name_or_path, d, known[0] ? known : "(none)");
}

px_status px_framework_path(const char *name_or_path, const char *dir, char *path,
                            int path_len, px_error *err)
{
    if (!name_or_path || !name_or_path[0])
        name_or_path = PX_FRAMEWORK_DEFAULT;
    return profile_path(name_or_path, dir, path, (size_t)path_len, err);
}

/* "none, a, b" of the release names of root into buf. */
static void release_names(json_t *root, char *buf, size_t n)
{
    snprintf(buf, n, "none");
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(root, "releases"), k, v) {
        size_t u = strlen(buf);
        snprintf(buf + u, n - u, ", %s", k);
    }
}

/* root with the release's capabilities, runtime and sources laid over its
 * own; every trait a release sets cites its source (the merged profile is
 * then read as strictly as any). */
static px_status apply_release(json_t *root, const char *release, const char *file,
                               px_error *err)
{
    /* resolve_release named an entry the profile has */
    json_t *rel = json_object_get(json_object_get(root, "releases"), release);
    if (!json_is_object(rel))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "releases.%s: expected an object (description, capabilities, "
                            "runtime, sources)",
                            release);
    const char *secs[2] = {"capabilities", "runtime"};
    json_t *src = json_object_get(rel, "sources");
    for (int s = 0; s < 2; s++) {
        const char *k;
        json_t *v;
        json_t *base = json_object_get(root, secs[s]);
        json_object_foreach(json_object_get(rel, secs[s]), k, v) {
            json_t *c = src ? json_object_get(src, k) : NULL;
            if (!base)
                return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "%s: missing", secs[s]);
            if (!json_is_string(c) || !json_string_value(c)[0])
                return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                    "releases.%s.sources.%s: missing: every trait a release "
                                    "changes cites where the release says so",
                                    release, k);
            json_object_set(base, k, v);
            json_object_set(json_object_get(root, "sources"), k, c);
        }
    }
    return PX_OK;
}

/* The release of root that `asked` is planned as, into applied ("" for the
 * framework as it runs today): the entry of that name, else the documented
 * state nearest in time (px_release.h). */
static px_status resolve_release(json_t *root, const char *asked, const char *file,
                                 char *applied, size_t n, px_error *err)
{
    json_t *rels = json_object_get(root, "releases");
    if (rels && json_object_get(rels, asked)) {
        snprintf(applied, n, "%s", asked);
        return PX_OK;
    }
    const char *names[64]; /* a profile documents a handful */
    int count = 0;
    const char *k;
    json_t *v;
    json_object_foreach(rels, k, v) {
        if (count < (int)(sizeof names / sizeof names[0]))
            names[count++] = k;
    }
    double as_of = -1.0;
    px_release_month(json_string_value(json_object_get(root, "as_of")), &as_of);
    int i = px_release_nearest(asked, names, count, as_of);
    if (i == -2) {
        char allowed[512];
        release_names(root, allowed, sizeof allowed);
        return px_error_set(err, PX_ERR_NOT_FOUND, file, 0, 0,
                            "--framework-release \"%s\": unknown; allowed values: %s, or a year "
                            "(2023) or a NeMo container (nemo-YY.MM), planned as the documented "
                            "release nearest in time",
                            asked, allowed);
    }
    snprintf(applied, n, "%s", i >= 0 ? names[i] : "");
    return PX_OK;
}

px_status px_framework_load_release(const char *name_or_path, const char *dir,
                                    const char *release, px_framework *out, px_error *err)
{
    if (!name_or_path || !name_or_path[0])
        name_or_path = PX_FRAMEWORK_DEFAULT;
    char path[1024];
    px_status st = profile_path(name_or_path, dir, path, sizeof path, err);
    json_t *root = NULL;
    if (st == PX_OK)
        st = px_jf_load_file(path, &root, err);
    if (st != PX_OK)
        return st;
    json_t *rels = json_object_get(root, "releases");
    if (rels && !json_is_object(rels))
        st = px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                          "releases: expected an object of release names");
    json_t *as_of = json_object_get(root, "as_of");
    double as_of_years;
    if (st == PX_OK && as_of &&
        (!json_is_string(as_of) || !px_release_month(json_string_value(as_of), &as_of_years)))
        st = px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                          "as_of: expected a month \"YYYY-MM\" (of the framework code and "
                          "documentation the profile's traits were last checked against)");
    bool named = release && release[0] && strcmp(release, "none") != 0;
    char applied[32] = "";
    if (st == PX_OK && named)
        st = resolve_release(root, release, path, applied, sizeof applied, err);
    if (st == PX_OK && applied[0])
        st = apply_release(root, applied, path, err);
    if (st == PX_OK)
        st = from_json(root, path, out, err);
    /* a file given by path is cited by it; a name as frameworks/NAME.json */
    if (st == PX_OK && is_path(name_or_path))
        snprintf(out->caps.source, sizeof out->caps.source, "%.255s", path);
    if (st == PX_OK && named) {
        snprintf(out->release, sizeof out->release, "%s", applied);
        if (strcmp(applied, release) != 0)
            snprintf(out->release_asked, sizeof out->release_asked, "%s", release);
    }
    json_decref(root);
    return st;
}

px_status px_framework_load(const char *name_or_path, const char *dir, px_framework *out,
                            px_error *err)
{
    return px_framework_load_release(name_or_path, dir, NULL, out, err);
}

/* ------------------------------------------------------------------ */
/* The capability test: px_plan_check under the framework's caps       */

/* The framework's verdict is px_plan_check's under its capability set: no
 * rule is restated here. */
bool px_caps_allow(const px_caps *c, const px_model *m, const px_parallel *p, const char **why)
{
    if (!why) /* the verdict alone: no message to format (the search's case) */
        return px_plan_check(m, p, c, NULL) == PX_OK;
    const char *cap = NULL;
    bool ok = px_plan_check_cap(m, p, c, &cap, NULL) == PX_OK;
    *why = ok ? NULL : cap ? cap : "the plan rules";
    return ok;
}
