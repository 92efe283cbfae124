/* px_plan_io.c — the plan file: a versioned JSON document (docs/plan-schema.md,
 * docs/plan.schema.json) with the model, the hardware profile, the parallel
 * layout, the rank order, the batch and the cost model's prediction.
 *
 * Every struct is described by one field table below; a new field of
 * px_prediction (or any other) is one line in its table plus one line in
 * docs/plan.schema.json (the schema test catches a forgotten one). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "px_checked.h"
#include "px_io.h"
#include "px_jfield.h"
#include "px_plan.h"
#include "px_plan_json.h"
#include "px_plan_check.h"
#include "px_plan_finetune.h"
#include "px_plan_rc_modules.h"
#include "px_plan_offload.h"
#include "px_plan_predict.h"

static const char *const sched_names[] = {"gpipe", "1f1b", "interleaved", "zb-h1", "zb-h2"};
static const char *const rc_names[] = {"none", "selective", "full"};
static const char *const prec_names[] = {"bf16",        "fp16",      "fp8",   "fp8-cs",
                                         "fp8-rowwise", "fp8-block", "mxfp8", "nvfp4"};

/* Degrees and batch counts: at most 2^24 (16M GPUs, micro-batches, tokens). */
#define MAX_COUNT (1 << 24)
#define PI(key, field, mn) \
    {key, PX_JF_INT, offsetof(px_parallel, field), 0, true, mn, NULL, 0, MAX_COUNT}
#define PL(key, field, mn) \
    {key, PX_JF_I64, offsetof(px_parallel, field), 0, true, mn, NULL, 0, MAX_COUNT}
#define PB(key, field) {key, PX_JF_BOOL, offsetof(px_parallel, field), 0, true, 0, NULL, 0, 0}

static const px_jfield parallel_fields[] = {
    PI("tp", tp, 1), PI("cp", cp, 1), PI("pp", pp, 1), PI("vpp", vpp, 1), PI("dp", dp, 1),
    PI("ep", ep, 1), PI("etp", etp, 1),
    PB("sp", sp),
    PI("zero", zero, 0),
    PB("flash_attention", flash_attention),
    PB("dp_overlap", dp_overlap),
    PB("tp_overlap", tp_overlap),
    {"schedule", PX_JF_ENUM, offsetof(px_parallel, schedule), 0, true, 0, sched_names, 5, 0},
    {"recompute", PX_JF_ENUM, offsetof(px_parallel, recompute), 0, true, 0, rc_names, 3, 0},
    PL("micro_batch", micro_batch, 1),
    PL("num_microbatches", n_micro, 1),
    PL("seq_len", seq_len, 0),
    /* optional: plans written before these fields read as bf16 and ring CP */
    {"precision", PX_JF_ENUM, offsetof(px_parallel, precision), 0, false, 0, prec_names,
     PX_PREC_COUNT, 0},
    {"cp_comm", PX_JF_ENUM, offsetof(px_parallel, cp_comm), 0, false, 0, px_cp_comm_names,
     PX_CPC_COUNT, 0},
    {"quantized_params", PX_JF_BOOL, offsetof(px_parallel, quantized_params), 0, false, 0, NULL,
     0, 0},
    /* optional: plans written before these read as the all-to-all dispatcher, each
     * layer waiting for its all-to-all */
    {"moe_dispatcher", PX_JF_ENUM, offsetof(px_parallel, moe_dispatcher), 0, false, 0,
     px_moe_dispatch_names, PX_MOE_DISPATCH_COUNT, 0},
    {"moe_a2a_overlap", PX_JF_BOOL, offsetof(px_parallel, moe_a2a_overlap), 0, false, 0, NULL, 0,
     0},
    /* optional: plans written before it read as the forward's TP collectives exposed */
    {"tp_comm_overlap", PX_JF_BOOL, offsetof(px_parallel, tp_comm_overlap), 0, false, 0, NULL, 0,
     0},
    /* optional: plans written before it read as the framework's kernel */
    {"attention_kernel", PX_JF_ENUM, offsetof(px_parallel, attn_kernel), 0, false, 0,
     px_attn_kernel_names, PX_AK_COUNT, 0},
    {"order", PX_JF_STR, offsetof(px_parallel, order), sizeof(((px_parallel *)0)->order), true,
     0, NULL, 0, 0},
    {"shard_group", PX_JF_INT, offsetof(px_parallel, shard_group), 0, false, 0, NULL, 0,
     1 << 20},
};
static const char *const parallel_extra[] = {"layers_per_chunk", "layer_recompute",
                                             "grad_dtype", "finetune", "offload",
                                             "recompute_modules", NULL};

/* parallel.grad_dtype: the dtype of the main gradients, index = grad_fp32 */
static const char *const grad_dtype_names[] = {"bf16", "fp32"};
static const px_jfield grad_dtype_field[] = {
    {"grad_dtype", PX_JF_ENUM, 0, 0, true, 0, grad_dtype_names, 2, 0},
};

#define MB(key, field) {key, PX_JF_I64, offsetof(px_memory, field), 0, true, 0, NULL, 0, 0}
static const px_jfield memory_fields[] = {
    MB("weights_bytes", weights),
    MB("grads_bytes", grads),
    MB("optimizer_bytes", optimizer),
    MB("activations_bytes", activations),
    MB("act_attention_bytes", act_attention),
    MB("act_mlp_bytes", act_mlp),
    MB("act_norm_bytes", act_norm),
    MB("buffers_bytes", buffers),
    MB("total_bytes", total),
    /* optional (0): the runtime's parts beside the tensors (px_cost_runtime.h) */
    {"allocated_bytes", PX_JF_I64, offsetof(px_memory, allocated), 0, false, 0, NULL, 0, 0},
    {"workspace_bytes", PX_JF_I64, offsetof(px_memory, workspace), 0, false, 0, NULL, 0, 0},
    {"allocator_cache_bytes", PX_JF_I64, offsetof(px_memory, allocator_cache), 0, false, 0, NULL,
     0, 0},
    {"runtime_context_bytes", PX_JF_I64, offsetof(px_memory, runtime_context), 0, false, 0, NULL,
     0, 0},
    {"nccl_bytes", PX_JF_I64, offsetof(px_memory, nccl), 0, false, 0, NULL, 0, 0},
    {"nccl_comms", PX_JF_INT, offsetof(px_memory, nccl_comms), 0, false, 0, NULL, 0, 1 << 10},
    {"worst_stage", PX_JF_INT, offsetof(px_memory, worst_stage), 0, true, 0, NULL, 0, 0},
    /* optional, written only when the plan offloads (drop_zero) */
    {"host_bytes", PX_JF_I64, offsetof(px_memory, host), 0, false, 0, NULL, 0, (int64_t)1 << 50},
    {"host_activation_bytes", PX_JF_I64, offsetof(px_memory, host_activations), 0, false, 0,
     NULL, 0, (int64_t)1 << 50},
};

#define TS(field) {#field, PX_JF_DBL, offsetof(px_time, field), 0, true, 0, NULL, 0, 0}
static const px_jfield time_fields[] = {
    TS(step_s), TS(compute_s), TS(recompute_s), TS(tp_comm_s), TS(cp_comm_s),
    TS(cp_comm_total_s), TS(ep_comm_s), TS(pp_comm_s), TS(dp_comm_s), TS(dp_comm_total_s),
    TS(bubble_s), TS(optimizer_s),
    /* optional, written only when the plan offloads (drop_zero) */
    {"offload_s", PX_JF_DBL, offsetof(px_time, offload_s), 0, false, 0, NULL, 0, 0},
    {"act_offload_s", PX_JF_DBL, offsetof(px_time, act_offload_s), 0, false, 0, NULL, 0, 0},
};

#define PD(field) {#field, PX_JF_DBL, offsetof(px_prediction, field), 0, true, 0, NULL, 0, 0}
static const px_jfield prediction_fields[] = {
    PD(model_flops_per_step), PD(hw_flops_per_step), PD(tokens_per_s), PD(mfu), PD(hfu),
    {"mfu_causal", PX_JF_DBL, offsetof(px_prediction, mfu_causal), 0, false, 0, NULL, 0, 0},
    PD(bubble_fraction),
};
static const px_jfield goodput_fields[] = {
    PD(train_tokens), PD(days_to_train),
    {"ckpt_bytes_per_gpu", PX_JF_DBYTES, offsetof(px_prediction, ckpt_bytes_per_gpu), 0, true,
     0, NULL, 0, 0},
    PD(ckpt_write_s), PD(ckpt_interval_s), PD(job_mtbf_s), PD(lost_fraction), PD(goodput_days),
};
static const char *const prediction_extra[] = {"memory", "time", "goodput", "stages",
                                               "time_by_class", NULL};

/* prediction.stages[i]: one pipeline stage (px_stage_prediction) */
#define SB(key, field) \
    {key, PX_JF_I64, offsetof(px_stage_prediction, field), 0, true, 0, NULL, 0, 0}
static const px_jfield stage_fields[] = {
    {"layers", PX_JF_INT, offsetof(px_stage_prediction, layers), 0, true, 0, NULL, 0,
     PX_MAX_LAYERS},
    SB("weights_bytes", weights),
    SB("grads_bytes", grads),
    SB("optimizer_bytes", optimizer),
    SB("activations_bytes", activations),
    SB("buffers_bytes", buffers),
    SB("total_bytes", total),
    {"runtime_bytes", PX_JF_I64, offsetof(px_stage_prediction, runtime), 0, false, 0, NULL, 0, 0},
    {"microbatch_s", PX_JF_DBL, offsetof(px_stage_prediction, microbatch_s), 0, true, 0, NULL,
     0, 0},
};
static const char *const stage_extra[] = {"stage", NULL};

#define CT(field) {#field, PX_JF_DBL, offsetof(px_class_time, field), 0, true, 0, NULL, 0, 0}
static const px_jfield class_time_fields[] = {
    CT(gemm_s), CT(attention_s), CT(elementwise_s), CT(comm_s), CT(p2p_s), CT(optimizer_s),
};

typedef struct {
    char order[32];
    int world_size;
} rank_order;
static const px_jfield rank_order_fields[] = {
    {"order", PX_JF_STR, offsetof(rank_order, order), 32, true, 0, NULL, 0, 0},
    {"world_size", PX_JF_INT, offsetof(rank_order, world_size), 0, true, 1, NULL, 0,
     MAX_COUNT},
};

typedef struct {
    int64_t global_batch_sequences;
    int64_t tokens_per_step;
} batch_info;
static const px_jfield batch_fields[] = {
    {"global_batch_sequences", PX_JF_I64, offsetof(batch_info, global_batch_sequences), 0,
     true, 1, NULL, 0, (double)(INT64_C(1) << 40)},
    {"tokens_per_step", PX_JF_I64, offsetof(batch_info, tokens_per_step), 0, true, 1, NULL, 0,
     (double)(INT64_C(1) << 50)},
};

#define NF(t) ((int)(sizeof t / sizeof t[0]))
static const char *const root_keys[] = {"schema_version", "kind",       "model", "hw",
                                        "parallel",       "rank_order", "batch", "prediction",
                                        "framework",      NULL};
#define PX_PLAN_KIND "parallax-plan"

static int64_t plan_seq_len(const px_plan *p)
{
    return px_plan_seq_len(&p->model, &p->par);
}

/* Adds a sub-object written from a table. */
static px_status add_section(json_t *parent, const char *key, const px_jfield *f, int n,
                             const void *base, json_t **made, px_error *err)
{
    json_t *o = json_object();
    if (!o)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    px_status st = px_jf_write(f, n, base, o, key, err);
    if (st != PX_OK) {
        json_decref(o);
        return st;
    }
    json_object_set_new(parent, key, o);
    if (made)
        *made = o;
    return PX_OK;
}

/* Removes obj's key when it holds 0: an optional field of one feature
 * (offload), so that plans without it keep their bytes. */
static void drop_zero(json_t *obj, const char *key)
{
    json_t *v = json_object_get(obj, key);
    if (v && json_is_number(v) && json_number_value(v) == 0.0)
        json_object_del(obj, key);
}

/* prediction.stages: one object per pipeline stage, in stage order. */
static px_status write_stages(const px_plan *plan, json_t *pred, px_error *err)
{
    if (plan->n_stages != 0 && plan->n_stages != plan->par.pp)
        return PX_FAIL(err, PX_ERR_INVALID,
                       "prediction.stages: %d entries; the plan has pp = %d stages (or 0 "
                       "entries for a plan without a prediction)", plan->n_stages,
                       plan->par.pp);
    json_t *a = json_array();
    if (!a)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    json_object_set_new(pred, "stages", a);
    for (int s = 0; s < plan->n_stages; s++) {
        json_t *o = json_object();
        if (!o)
            return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
        json_array_append_new(a, o);
        json_object_set_new(o, "stage", json_integer(s));
        char path[48];
        snprintf(path, sizeof path, "prediction.stages[%d]", s);
        PX_TRY(px_jf_write(stage_fields, NF(stage_fields), &plan->stages[s], o, path, err));
    }
    return PX_OK;
}

px_status px_plan_to_json(const px_plan *plan, json_t **out, px_error *err)
{
    const px_parallel *par = &plan->par;
    if (par->n_chunks < 0 || par->n_chunks > PX_MAX_CHUNKS || par->n_layer_recompute < 0 ||
        par->n_layer_recompute > PX_MAX_LAYERS)
        return PX_FAIL(err, PX_ERR_INVALID, "parallel: n_chunks or n_layer_recompute out of range");
    json_t *root = json_object();
    if (!root)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    json_object_set_new(root, "schema_version", json_integer(PX_PLAN_VERSION));
    json_object_set_new(root, "kind", json_string(PX_PLAN_KIND));
    if (plan->framework[0])
        json_object_set_new(root, "framework", json_string(plan->framework));

    json_t *m = NULL, *hw = NULL, *po = NULL, *pred = NULL;
    px_status st = px_model_to_json(&plan->model, &m, err);
    if (st == PX_OK) {
        json_object_set_new(root, "model", m);
        st = px_hw_to_json(&plan->hw, &hw, err);
    }
    if (st == PX_OK) {
        json_object_set_new(root, "hw", hw);
        st = add_section(root, "parallel", parallel_fields, NF(parallel_fields), par, &po, err);
    }
    if (st == PX_OK) {
        json_t *lpc = json_array(), *lrc = json_array();
        for (int i = 0; i < par->n_chunks; i++)
            json_array_append_new(lpc, json_integer(par->layers_per_chunk[i]));
        for (int i = 0; i < par->n_layer_recompute; i++) {
            int r = par->layer_recompute[i];
            json_array_append_new(lrc, json_string(r < PX_RECOMPUTE_COUNT ? rc_names[r] : "?"));
        }
        json_object_set_new(po, "layers_per_chunk", lpc);
        json_object_set_new(po, "layer_recompute", lrc);
        int grad_dtype = par->grad_fp32 ? 1 : 0;
        st = px_jf_write(grad_dtype_field, 1, &grad_dtype, po, "parallel", err);
        if (st == PX_OK)
            st = px_plan_finetune_write(&par->finetune, po, err);
        if (st == PX_OK)
            st = px_plan_offload_write(&par->offload, po, err);
        if (st == PX_OK)
            st = px_plan_rc_modules_write(par->recompute_modules, po, err);
    }
    if (st == PX_OK) {
        rank_order ro;
        memset(&ro, 0, sizeof ro);
        snprintf(ro.order, sizeof ro.order, "%s", par->order);
        ro.world_size = px_parallel_gpus(par);
        st = add_section(root, "rank_order", rank_order_fields, NF(rank_order_fields), &ro,
                         NULL, err);
    }
    if (st == PX_OK) {
        batch_info b = {px_parallel_global_batch(par), 0};
        b.tokens_per_step = b.global_batch_sequences * plan_seq_len(plan);
        st = add_section(root, "batch", batch_fields, NF(batch_fields), &b, NULL, err);
    }
    if (st == PX_OK)
        st = add_section(root, "prediction", prediction_fields, NF(prediction_fields),
                         &plan->pred, &pred, err);
    json_t *mem = NULL, *tm = NULL;
    if (st == PX_OK)
        st = add_section(pred, "memory", memory_fields, NF(memory_fields), &plan->pred.mem,
                         &mem, err);
    if (st == PX_OK)
        st = add_section(pred, "time", time_fields, NF(time_fields), &plan->pred.time, &tm,
                         err);
    if (st == PX_OK) {
        drop_zero(mem, "host_bytes");
        drop_zero(mem, "host_activation_bytes");
        drop_zero(tm, "offload_s");
        drop_zero(tm, "act_offload_s");
    }
    if (st == PX_OK)
        st = add_section(pred, "goodput", goodput_fields, NF(goodput_fields), &plan->pred,
                         NULL, err);
    if (st == PX_OK)
        st = add_section(pred, "time_by_class", class_time_fields, NF(class_time_fields),
                         &plan->class_time, NULL, err);
    if (st == PX_OK)
        st = write_stages(plan, pred, err);
    if (st != PX_OK) {
        json_decref(root);
        return st;
    }
    *out = root;
    return PX_OK;
}

px_status px_plan_write(const px_plan *plan, const char *path, px_error *err)
{
    json_t *root = NULL;
    px_status st = px_plan_to_json(plan, &root, err);
    if (st != PX_OK)
        return st;
    st = px_io_write_json(path, root, JSON_SORT_KEYS | JSON_INDENT(2), err);
    json_decref(root);
    return st;
}

/* Reads a required sub-object by a table. */
static px_status read_section(json_t *parent, const char *ppath, const char *key,
                              const px_jfield *f, int n, void *base, const char *file,
                              const char *const *extra, px_error *err)
{
    char path[128];
    px_jf_join(path, sizeof path, ppath, key);
    json_t *o = json_object_get(parent, key);
    if (!o)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s: missing required field (an object)", path);
    return px_jf_read(f, n, o, base, file, path, extra, err);
}

static px_status read_parallel_arrays(json_t *po, const char *file, px_parallel *par,
                                      px_error *err)
{
    json_t *lpc = json_object_get(po, "layers_per_chunk");
    json_t *lrc = json_object_get(po, "layer_recompute");
    if (!json_is_array(lpc))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.layers_per_chunk: %s (an array of integers, [] for a "
                            "uniform split)", lpc ? "expected an array" : "missing required field");
    if (!json_is_array(lrc))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.layer_recompute: %s (an array of none, selective, full; "
                            "[] for uniform)", lrc ? "expected an array" : "missing required field");
    size_t n = json_array_size(lpc), i;
    json_t *v;
    /* the arrays' bounds here; their agreement with pp, vpp and the layers
     * is px_plan_check's */
    if (n > PX_MAX_CHUNKS)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.layers_per_chunk: %zu entries, at most %d", n,
                            PX_MAX_CHUNKS);
    json_array_foreach(lpc, i, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > PX_MAX_LAYERS)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "parallel.layers_per_chunk[%zu]: expected an integer in 0..%d",
                                i, PX_MAX_LAYERS);
        par->layers_per_chunk[i] = (int)json_integer_value(v);
    }
    par->n_chunks = (int)n;
    n = json_array_size(lrc);
    if (n > PX_MAX_LAYERS)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.layer_recompute: %zu entries, at most %d", n,
                            PX_MAX_LAYERS);
    json_array_foreach(lrc, i, v) {
        int r = -1;
        for (int k = 0; k < PX_RECOMPUTE_COUNT && json_is_string(v); k++)
            if (strcmp(json_string_value(v), rc_names[k]) == 0)
                r = k;
        if (r < 0)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "parallel.layer_recompute[%zu]: expected one of none, selective, "
                                "full", i);
        par->layer_recompute[i] = (unsigned char)r;
    }
    par->n_layer_recompute = (int)n;
    json_t *gd = json_object_get(po, "grad_dtype");
    const char *g = json_is_string(gd) ? json_string_value(gd) : "";
    if (strcmp(g, "fp32") != 0 && strcmp(g, "bf16") != 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.grad_dtype: %s; allowed: fp32 (fp32 main gradients), "
                            "bf16", gd ? "not one of the allowed values" : "missing required field");
    par->grad_fp32 = strcmp(g, "fp32") == 0;
    return px_plan_rc_modules_read(po, file, &par->recompute_modules, err);
}

/* prediction.stages: [] (no prediction) or one object per pipeline stage in
 * stage order, agreeing with the split and with prediction.memory. */
static px_status read_stages(json_t *pred, const char *file, px_plan *out, px_error *err)
{
    json_t *a = json_object_get(pred, "stages");
    int pp = out->par.pp;
    if (!json_is_array(a))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "prediction.stages: %s (an array: one object per pipeline stage)",
                            a ? "expected an array" : "missing required field");
    size_t n = json_array_size(a);
    if (n == 0 && out->pred.mem.total == 0)
        return PX_OK; /* a plan without a prediction */
    if (n != (size_t)pp)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "prediction.stages: %zu entries; expected pp = %d (one per stage)",
                            n, pp);
    int layers[PX_MAX_CHUNKS];
    px_plan_stage_layers(&out->par, out->model.n_layers, layers);
    int64_t worst = 0;
    for (int s = 0; s < pp; s++) {
        char path[48];
        snprintf(path, sizeof path, "prediction.stages[%d]", s);
        json_t *o = json_array_get(a, (size_t)s);
        px_stage_prediction *sp = &out->stages[s];
        PX_TRY(px_jf_read(stage_fields, NF(stage_fields), o, sp, file, path, stage_extra, err));
        json_t *idx = json_object_get(o, "stage");
        if (!json_is_integer(idx) || json_integer_value(idx) != s)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s.stage: expected %d (stages in order)", path, s);
        if (sp->layers != layers[s])
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s.layers: %d, but parallel's split puts %d layers there",
                                path, sp->layers, layers[s]);
        if (sp->weights + sp->grads + sp->optimizer + sp->activations + sp->buffers +
                sp->runtime !=
            sp->total)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s.total_bytes: %lld is not the sum of its parts", path,
                                (long long)sp->total);
        worst = sp->total > worst ? sp->total : worst;
    }
    int ws = out->pred.mem.worst_stage;
    if (ws < 0 || ws >= pp || out->stages[ws].total != out->pred.mem.total ||
        worst != out->pred.mem.total)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "prediction.memory: total_bytes %lld of worst_stage %d is not the "
                            "largest of prediction.stages[].total_bytes (%lld)",
                            (long long)out->pred.mem.total, ws, (long long)worst);
    out->n_stages = pp;
    return PX_OK;
}

/* Each degree and count is bounded by its field; their products are
 * checked here, before anything multiplies them unchecked. */
static px_status check_products(const px_plan *plan, const char *file, px_error *err)
{
    const px_parallel *p = &plan->par;
    int64_t g = 0, gb = 0, tokens = 0;
    bool ok = px_mul_ok(p->tp, p->cp, &g) && px_mul_ok(g, p->pp, &g) &&
              px_mul_ok(g, p->dp, &g) && g <= MAX_COUNT;
    if (!ok)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel: tp*cp*pp*dp = %d*%d*%d*%d is more than %d GPUs", p->tp,
                            p->cp, p->pp, p->dp, MAX_COUNT);
    ok = px_mul_ok(p->micro_batch, p->n_micro, &gb) && px_mul_ok(gb, p->dp, &gb) &&
         px_mul_ok(gb, plan_seq_len(plan), &tokens) && tokens <= (INT64_C(1) << 50);
    if (!ok)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel: micro_batch*num_microbatches*dp*seq_len = %lld*%lld*%d*%lld is "
                            "more than 2^50 tokens a step", (long long)p->micro_batch,
                            (long long)p->n_micro, p->dp, (long long)plan_seq_len(plan));
    return PX_OK;
}

/* The kind and the schema version, before anything else is read: a plan
 * of an older schema (root key "version", parallel.n_micro / grad_fp32) is
 * refused with what to do, not read under the new spellings. */
static px_status check_schema_version(json_t *root, const char *file, px_error *err)
{
    json_t *kind = json_object_get(root, "kind");
    if (!json_is_string(kind) || strcmp(json_string_value(kind), PX_PLAN_KIND) != 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "kind: must be \"%s\" (is this a Parallax plan?)", PX_PLAN_KIND);
    json_t *ver = json_object_get(root, "schema_version");
    json_t *old = json_object_get(root, "version");
    if (!ver && json_is_integer(old))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "schema_version: missing; the file is a plan of version %lld "
                            "(parallel.n_micro, parallel.grad_fp32, no prediction.stages), this "
                            "build reads schema_version %d only: re-run `plan ... -o FILE` to "
                            "write it again", (long long)json_integer_value(old),
                            PX_PLAN_VERSION);
    if (!json_is_integer(ver) || json_integer_value(ver) != PX_PLAN_VERSION)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "schema_version: %s; this build reads plan schema_version %d only "
                            "(re-run `plan ... -o FILE` to write it)",
                            ver ? "not the supported version" : "missing required field",
                            PX_PLAN_VERSION);
    return PX_OK;
}

px_status px_plan_from_json(json_t *root, const char *file, px_plan *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    px_parallel_init(&out->par);
    if (!json_is_object(root))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "expected an object, got %s",
                            px_jf_type_name(root));
    const char *key;
    json_t *v;
    PX_TRY(check_schema_version(root, file, err));
    json_object_foreach(root, key, v) {
        bool known = false;
        for (int i = 0; root_keys[i]; i++)
            known = known || strcmp(root_keys[i], key) == 0;
        if (!known)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: unknown key \"%s\"; allowed keys: schema_version, kind, model, hw, "
                                "parallel, rank_order, batch, prediction, framework", key, key);
    }
    out->version = PX_PLAN_VERSION;
    json_t *fw = json_object_get(root, "framework");
    if (fw && (!json_is_string(fw) || strlen(json_string_value(fw)) >= sizeof out->framework))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "framework: expected a framework profile name (a string of at most "
                            "%zu characters), got %s",
                            sizeof out->framework - 1, px_jf_type_name(fw));
    snprintf(out->framework, sizeof out->framework, "%s", fw ? json_string_value(fw) : "");

    json_t *m = json_object_get(root, "model"), *hw = json_object_get(root, "hw");
    if (!m || !hw)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s: missing required field (an object)", m ? "hw" : "model");
    px_status st = px_model_from_json(m, file, "model", &out->model, err);
    if (st == PX_OK)
        st = px_hw_from_json(hw, file, "hw", &out->hw, err);
    if (st == PX_OK)
        st = read_section(root, "", "parallel", parallel_fields, NF(parallel_fields), &out->par,
                          file, parallel_extra, err);
    if (st == PX_OK)
        st = read_parallel_arrays(json_object_get(root, "parallel"), file, &out->par, err);
    if (st == PX_OK)
        st = px_plan_finetune_read(json_object_get(root, "parallel"), file, &out->par.finetune,
                                   err);
    if (st == PX_OK)
        st = px_plan_offload_read(json_object_get(root, "parallel"), file, &out->par.offload,
                                  err);
    if (st == PX_OK)
        st = check_products(out, file, err); /* before any rule multiplies them */
    if (st != PX_OK)
        return st;
    /* legal for some consumer; each consumer checks its own capabilities */
    px_caps any;
    px_caps_any(&any);
    px_error e;
    if (px_plan_check(&out->model, &out->par, &any, &e) != PX_OK)
        return px_error_set(err, e.code, file, 0, 0, "parallel: %s", e.msg);

    rank_order ro;
    batch_info b;
    st = read_section(root, "", "rank_order", rank_order_fields, NF(rank_order_fields), &ro,
                      file, NULL, err);
    if (st == PX_OK)
        st = read_section(root, "", "batch", batch_fields, NF(batch_fields), &b, file, NULL,
                          err);
    json_t *pred = json_object_get(root, "prediction");
    if (st == PX_OK)
        st = read_section(root, "", "prediction", prediction_fields, NF(prediction_fields),
                          &out->pred, file, prediction_extra, err);
    if (st == PX_OK)
        st = read_section(pred, "prediction", "memory", memory_fields, NF(memory_fields),
                          &out->pred.mem, file, NULL, err);
    if (st == PX_OK)
        st = read_section(pred, "prediction", "time", time_fields, NF(time_fields),
                          &out->pred.time, file, NULL, err);
    if (st == PX_OK)
        st = read_section(pred, "prediction", "goodput", goodput_fields, NF(goodput_fields),
                          &out->pred, file, NULL, err);
    if (st == PX_OK)
        st = read_section(pred, "prediction", "time_by_class", class_time_fields,
                          NF(class_time_fields), &out->class_time, file, NULL, err);
    if (st == PX_OK)
        st = read_stages(pred, file, out, err);
    if (st != PX_OK)
        return st;
    /* The derived sections restate the layout for readers that do not
     * recompute it; a mismatch means the file was edited inconsistently. */
    if (strcmp(ro.order, out->par.order) != 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "rank_order.order: \"%s\" differs from parallel.order \"%s\"",
                            ro.order, out->par.order);
    if (ro.world_size != px_parallel_gpus(&out->par))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "rank_order.world_size: %d, but tp*cp*pp*dp = %d", ro.world_size,
                            px_parallel_gpus(&out->par));
    int64_t gb = px_parallel_global_batch(&out->par);
    if (b.global_batch_sequences != gb || b.tokens_per_step != gb * plan_seq_len(out))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "batch: global_batch_sequences %lld / tokens_per_step %lld differ "
                            "from micro_batch*num_microbatches*dp = %lld / x seq_len = %lld",
                            (long long)b.global_batch_sequences, (long long)b.tokens_per_step,
                            (long long)gb, (long long)(gb * plan_seq_len(out)));
    return PX_OK;
}

px_status px_plan_read(const char *path, px_plan *out, px_error *err)
{
    json_t *root = NULL;
    px_status st = px_jf_load_file(path, &root, err);
    if (st != PX_OK)
        return st;
    st = px_plan_from_json(root, path, out, err);
    json_decref(root);
    return st;
}
