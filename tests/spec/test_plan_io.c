/* test_plan_io.c — the plan file: write -> read gives back every field;
 * px_plan_to_json is what the file holds; strict reading rejects unknown
 * keys, wrong types, bad enums and inconsistent sections with the file and
 * the JSON path.  With an argument, also leaves a written plan at that path
 * (the schema test validates it). */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"
#include "px_plan.h"
#include "px_plan_json.h"
#include "px_plan_predict.h"
#include "px_test.h"

/* Per-stage predictions that agree with the split and with pred.mem (the
 * worst stage's parts), distinct on every stage. */
static void fill_stages(px_plan *p)
{
    int layers[PX_MAX_CHUNKS];
    px_plan_stage_layers(&p->par, p->model.n_layers, layers);
    const px_memory *m = &p->pred.mem;
    p->n_stages = p->par.pp;
    for (int s = 0; s < p->par.pp; s++) {
        int64_t less = s == m->worst_stage ? 0 : 1000 + s;
        p->stages[s] = (px_stage_prediction){
            .layers = layers[s], .weights = m->weights, .grads = m->grads - less,
            .optimizer = m->optimizer, .activations = m->activations,
            .buffers = m->total - m->weights - m->grads - m->optimizer - m->activations,
            .total = m->total - less, .microbatch_s = 0.1 + 1.0 / (7 + s)};
    }
}

static void make_plan(px_plan *p)
{
    px_error err;
    memset(p, 0, sizeof *p);
    p->version = PX_PLAN_VERSION;
    CHECK(px_model_load("seed-70b", NULL, &p->model, &err) == PX_OK);
    CHECK(px_hw_load("h100-sxm", NULL, &p->hw, &err) == PX_OK);
    px_parallel *q = &p->par;
    px_parallel_init(q);
    q->tp = 8; q->cp = 2; q->pp = 4; q->vpp = 2; q->dp = 16; q->ep = 1; q->etp = 1;
    q->sp = true; q->zero = 1; q->grad_fp32 = false; q->flash_attention = true;
    q->schedule = PX_SCHED_INTERLEAVED; q->recompute = PX_RECOMPUTE_SELECTIVE;
    q->micro_batch = 1; q->n_micro = 64; q->seq_len = 8192;
    snprintf(q->order, sizeof q->order, "tp-cp-pp-dp");
    q->n_chunks = 8;
    for (int i = 0; i < 8; i++)
        q->layers_per_chunk[i] = i == 0 || i == 7 ? 10 : 10 + (i == 3) - (i == 4);
    q->n_layer_recompute = 80;
    for (int i = 0; i < 80; i++)
        q->layer_recompute[i] = (unsigned char)(i % 3);
    /* distinct, non-round values so a swapped field shows */
    px_prediction *r = &p->pred;
    r->mem.weights = 4380000001; r->mem.grads = 4380000002; r->mem.optimizer = 820000003;
    r->mem.activations = 22800000004; r->mem.act_attention = 5; r->mem.act_mlp = 6;
    r->mem.act_norm = 7; r->mem.buffers = 2100000008; r->mem.total = 34480000009;
    r->mem.worst_stage = 3;
    double *t = &r->time.step_s;
    for (int i = 0; i < (int)(sizeof r->time / sizeof(double)); i++)
        t[i] = 1.0 / (3 + i) + 0.1 * i;
    r->model_flops_per_step = 6.3e18 / 7; r->hw_flops_per_step = 8.1e18 / 7;
    r->tokens_per_s = 1234567.25; r->mfu = 0.4512345; r->hfu = 0.5123456;
    r->bubble_fraction = 3.0 / 67; r->train_tokens = 15e12; r->days_to_train = 160.123;
    r->ckpt_bytes_per_gpu = 1093750000; r->ckpt_write_s = 1.09375; r->ckpt_interval_s = 812.5;
    r->job_mtbf_s = 178163.3; r->lost_fraction = 0.0123; r->goodput_days = 162.1;
    fill_stages(p);
    px_class_time *c = &p->class_time;
    c->gemm_s = 1.0 / 3; c->attention_s = 1.0 / 7; c->elementwise_s = 1.0 / 11;
    c->comm_s = 1.0 / 13; c->p2p_s = 1.0 / 17; c->optimizer_s = 1.0 / 19;
}

/* Writes root to <tmp>/name and returns px_plan_read's status. */
static px_status read_json(json_t *root, const char *name, px_plan *out, px_error *err,
                           char *path, size_t path_len)
{
    snprintf(path, path_len, "%s/%s", data_tmp(), name);
    CHECK(json_dump_file(root, path, JSON_SORT_KEYS | JSON_INDENT(2)) == 0);
    px_error_clear(err);
    return px_plan_read(path, out, err);
}

/* Applies a mutation to a copy of the good plan's JSON and expects an
 * INVALID error whose message contains want. */
static void expect_bad(json_t *good, void (*mutate)(json_t *), const char *want)
{
    json_t *bad = json_deep_copy(good);
    mutate(bad);
    px_plan back;
    px_error err;
    char path[512];
    px_status st = read_json(bad, "bad.json", &back, &err, path, sizeof path);
    CHECK_MSG(st == PX_ERR_INVALID, "want %s, got status %d", want, st);
    CHECK_MSG(strstr(err.msg, want) != NULL, "want \"%s\" in \"%s\"", want, err.msg);
    CHECK_MSG(strcmp(err.file, path) == 0, "file \"%s\"", err.file);
    json_decref(bad);
}

static json_t *obj(json_t *root, const char *a, const char *b)
{
    json_t *o = json_object_get(root, a);
    return b ? json_object_get(o, b) : o;
}
static void m_sched(json_t *r) { json_object_set_new(obj(r, "parallel", 0), "schedule", json_string("foo")); }
static void m_unknown(json_t *r) { json_object_set_new(obj(r, "prediction", "memory"), "foo_bytes", json_integer(1)); }
static void m_unknown_root(json_t *r) { json_object_set_new(r, "comment", json_string("x")); }
static void m_tp_type(json_t *r) { json_object_set_new(obj(r, "parallel", 0), "tp", json_string("8")); }
static void m_dtype(json_t *r) { json_object_del(obj(r, "hw", 0), "dtype_bytes"); }
static void m_heads(json_t *r) { json_object_set_new(obj(r, "model", 0), "n_heads", json_real(64.5)); }
static void m_batch(json_t *r) { json_object_set_new(obj(r, "batch", 0), "tokens_per_step", json_integer(1)); }
static void m_world(json_t *r) { json_object_set_new(obj(r, "rank_order", 0), "world_size", json_integer(1000)); }
static void m_version(json_t *r) { json_object_set_new(r, "schema_version", json_integer(1)); }
/* a plan of the first schema: "version": 1 and no schema_version */
static void m_old(json_t *r) { json_object_del(r, "schema_version"); json_object_set_new(r, "version", json_integer(1)); }
static void m_grad_dtype(json_t *r) { json_object_set_new(obj(r, "parallel", 0), "grad_dtype", json_string("fp16")); }
static void m_old_n_micro(json_t *r) { json_object_set_new(obj(r, "parallel", 0), "n_micro", json_integer(64)); }
static void m_stage_count(json_t *r) { json_array_remove(obj(r, "prediction", "stages"), 1); }
static void m_stage_layers(json_t *r) { json_object_set_new(json_array_get(obj(r, "prediction", "stages"), 1), "layers", json_integer(21)); }
/* stage 0 one byte above the worst stage's total, its parts still summing */
static void m_stage_worst(json_t *r)
{
    json_t *s0 = json_array_get(obj(r, "prediction", "stages"), 0);
    json_int_t g = json_integer_value(json_object_get(s0, "grads_bytes"));
    json_int_t t = json_integer_value(json_object_get(s0, "total_bytes"));
    json_object_set_new(s0, "grads_bytes", json_integer(g + 1001));
    json_object_set_new(s0, "total_bytes", json_integer(t + 1001));
}
static void m_stage_sum(json_t *r) { json_object_set_new(json_array_get(obj(r, "prediction", "stages"), 2), "buffers_bytes", json_integer(7)); }
static void m_no_classes(json_t *r) { json_object_del(obj(r, "prediction", 0), "time_by_class"); }
static void m_kind(json_t *r) { json_object_set_new(r, "kind", json_string("other")); }
static void m_zero(json_t *r) { json_object_set_new(obj(r, "parallel", 0), "zero", json_integer(4)); }
static void m_bytes_real(json_t *r) { json_object_set_new(obj(r, "prediction", "memory"), "total_bytes", json_real(1.5e9)); }
static void m_chunks(json_t *r) { json_array_set_new(obj(r, "parallel", "layers_per_chunk"), 0, json_integer(1)); }
static void m_lrc(json_t *r) { json_array_set_new(obj(r, "parallel", "layer_recompute"), 5, json_string("some")); }
static void m_no_time(json_t *r) { json_object_del(obj(r, "prediction", 0), "time"); }
static void m_step(json_t *r) { json_object_del(obj(r, "prediction", "time"), "step_s"); }

int main(int argc, char **argv)
{
    px_plan plan, back;
    px_error err;
    make_plan(&plan);

    char path[512];
    snprintf(path, sizeof path, "%s/plan.json", data_tmp());
    px_error_clear(&err);
    CHECK_MSG(px_plan_write(&plan, path, &err) == PX_OK, "%s", err.msg);
    px_error_clear(&err);
    CHECK_MSG(px_plan_read(path, &back, &err) == PX_OK, "%s", err.msg);
    /* Every field, padding aside (both sides start from zeroed memory). */
    CHECK(memcmp(&plan, &back, sizeof plan) == 0);
    CHECK(memcmp(&plan.model, &back.model, sizeof plan.model) == 0);
    CHECK(memcmp(&plan.hw, &back.hw, sizeof plan.hw) == 0);
    CHECK(memcmp(&plan.par, &back.par, sizeof plan.par) == 0);
    CHECK(memcmp(&plan.pred, &back.pred, sizeof plan.pred) == 0);
    CHECK(memcmp(plan.stages, back.stages, sizeof plan.stages) == 0 && back.n_stages == 4);
    CHECK(back.stages[3].layers == 21 && back.stages[0].layers == 19);
    CHECK(memcmp(&plan.class_time, &back.class_time, sizeof plan.class_time) == 0);
    CHECK(back.par.schedule == PX_SCHED_INTERLEAVED && back.par.layer_recompute[5] == 2);
    CHECK(back.pred.mem.total == 34480000009 && back.pred.time.optimizer_s == plan.pred.time.optimizer_s);

    /* px_plan_to_json is what the file holds. */
    json_t *mine = NULL;
    CHECK(px_plan_to_json(&plan, &mine, &err) == PX_OK);
    json_t *file = json_load_file(path, 0, NULL);
    CHECK(file && json_equal(mine, file));
    /* The derived sections say what they should. */
    CHECK(json_integer_value(obj(file, "batch", "global_batch_sequences")) == 16 * 64);
    CHECK(json_integer_value(obj(file, "batch", "tokens_per_step")) == 16 * 64 * 8192);
    CHECK(json_integer_value(obj(file, "rank_order", "world_size")) == 8 * 2 * 4 * 16);
    CHECK(json_is_integer(obj(obj(file, "prediction", 0), "memory", "total_bytes")));
    CHECK(json_is_integer(obj(obj(file, "prediction", 0), "goodput", "ckpt_bytes_per_gpu")));
    CHECK(strcmp(json_string_value(obj(file, "kind", 0)), "parallax-plan") == 0);

    /* Uniform split and recompute (empty arrays) and seq_len 0 round-trip too. */
    px_plan u = plan;
    u.par.n_chunks = 0;
    u.par.n_layer_recompute = 0;
    memset(u.par.layers_per_chunk, 0, sizeof u.par.layers_per_chunk);
    memset(u.par.layer_recompute, 0, sizeof u.par.layer_recompute);
    u.par.seq_len = 0;
    fill_stages(&u); /* the default split's layers per stage */
    CHECK(px_plan_write(&u, path, &err) == PX_OK);
    CHECK(px_plan_read(path, &back, &err) == PX_OK);
    CHECK(memcmp(&u, &back, sizeof u) == 0);

    /* Strict reading. */
    expect_bad(file, m_sched,
               "parallel.schedule: \"foo\" is not one of gpipe, 1f1b, interleaved, zb-h1, zb-h2");
    expect_bad(file, m_unknown, "prediction.memory.foo_bytes: unknown key \"foo_bytes\"");
    expect_bad(file, m_unknown_root, "unknown key \"comment\"");
    expect_bad(file, m_tp_type, "parallel.tp: expected an integer");
    expect_bad(file, m_dtype, "hw.dtype_bytes: missing required field");
    expect_bad(file, m_heads, "model.n_heads: expected an integer");
    expect_bad(file, m_batch, "batch:");
    expect_bad(file, m_world, "rank_order.world_size");
    expect_bad(file, m_version, "schema_version: not the supported version");
    expect_bad(file, m_old, "schema_version: missing; the file is a plan of version 1");
    expect_bad(file, m_old, "re-run `plan");
    expect_bad(file, m_grad_dtype, "parallel.grad_dtype");
    expect_bad(file, m_old_n_micro, "parallel.n_micro: unknown key");
    expect_bad(file, m_stage_count, "prediction.stages: 3 entries; expected pp = 4");
    expect_bad(file, m_stage_layers, "prediction.stages[1].layers: 21, but parallel's split");
    expect_bad(file, m_stage_worst, "is not the largest of prediction.stages");
    expect_bad(file, m_stage_sum, "prediction.stages[2].total_bytes");
    expect_bad(file, m_no_classes, "prediction.time_by_class: missing required field");
    expect_bad(file, m_kind, "kind");
    expect_bad(file, m_zero, "parallel: zero = 4: allowed 0, 1, 2, 3");
    expect_bad(file, m_bytes_real, "prediction.memory.total_bytes: expected an integer");
    expect_bad(file, m_chunks, "parallel: layers_per_chunk sums to");
    expect_bad(file, m_lrc, "parallel.layer_recompute[5]");
    expect_bad(file, m_no_time, "prediction.time: missing required field");
    expect_bad(file, m_step, "prediction.time.step_s: missing required field");

    /* Malformed JSON: file:line:col. */
    data_write("mal.json", "{\n  \"schema_version\": 2,\n  \"kind\": \"parallax-plan\"\n  \"model\": {}\n}\n",
               path, sizeof path);
    px_error_clear(&err);
    CHECK(px_plan_read(path, &back, &err) == PX_ERR_PARSE);
    CHECK_MSG(err.line == 4 && err.column > 0 && strcmp(err.file, path) == 0, "%d:%d %s",
              err.line, err.column, err.file);
    /* A non-finite prediction cannot be written. */
    px_plan inf = plan;
    inf.pred.mfu = 1.0 / 0.0;
    snprintf(path, sizeof path, "%s/inf.json", data_tmp());
    px_error_clear(&err);
    CHECK(px_plan_write(&inf, path, &err) == PX_ERR_INVALID);
    CHECK_MSG(strstr(err.msg, "mfu") != NULL, "%s", err.msg);

    if (argc > 1) {
        CHECK(px_plan_write(&plan, argv[1], &err) == PX_OK);
    }
    json_decref(mine);
    json_decref(file);
    data_cleanup();
    return px_test_result("plan_io");
}
