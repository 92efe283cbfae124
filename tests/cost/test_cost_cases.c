/* test_cost_cases.c — end-to-end golden cases: each folder of
 * tests/cost/cases/ holds input.json (a model preset, a hardware profile and
 * a fully fixed parallel configuration) and expected.json (quantities and a
 * relative tolerance).  The model comes from its preset, so the spec's
 * numbers (computed with N = 70e9) are matched within 5 %. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "px_cost.h"
#include "px_test.h"

static int get_int(json_t *o, const char *k, int dflt)
{
    json_t *v = json_object_get(o, k);
    return v ? (int)json_integer_value(v) : dflt;
}

static double quantity(const char *key, const px_prediction *p, const px_cost_detail *d,
                       const px_parallel *par, int64_t seq, bool *known)
{
    *known = true;
    if (!strcmp(key, "weights_bytes")) return (double)p->mem.weights;
    if (!strcmp(key, "grads_bytes")) return (double)p->mem.grads;
    if (!strcmp(key, "optimizer_bytes")) return (double)p->mem.optimizer;
    if (!strcmp(key, "activations_bytes")) return (double)p->mem.activations;
    if (!strcmp(key, "static_plus_activations_bytes"))
        return (double)(p->mem.weights + p->mem.grads + p->mem.optimizer + p->mem.activations);
    if (!strcmp(key, "total_bytes")) return (double)p->mem.total;
    if (!strcmp(key, "layer_activation_bytes")) return d->layer_act_bytes;
    if (!strcmp(key, "bubble_fraction")) return p->bubble_fraction;
    if (!strcmp(key, "tokens_per_step"))
        return (double)px_parallel_global_batch(par) * (double)seq;
    if (!strcmp(key, "tp_bytes_per_layer")) return d->tp_bytes_per_layer;
    if (!strcmp(key, "mfu")) return p->mfu;
    *known = false;
    return 0.0;
}

static void run_case(const char *dir, const char *name)
{
    char path[1024];
    json_error_t jerr;
    snprintf(path, sizeof path, "%s/%s/input.json", dir, name);
    json_t *in = json_load_file(path, 0, &jerr);
    snprintf(path, sizeof path, "%s/%s/expected.json", dir, name);
    json_t *ex = json_load_file(path, 0, &jerr);
    CHECK_MSG(in && ex, "case %s: cannot read input/expected: %s", name, jerr.text);
    if (!in || !ex)
        return;
    px_model m;
    px_hw hw;
    px_error err;
    CHECK(px_model_load(json_string_value(json_object_get(in, "model")), NULL, &m, &err) ==
          PX_OK);
    CHECK(px_hw_load(json_string_value(json_object_get(in, "hw")), NULL, &hw, &err) == PX_OK);
    json_t *pj = json_object_get(in, "parallel");
    px_parallel par;
    px_parallel_init(&par);
    par.tp = get_int(pj, "tp", 1);
    par.cp = get_int(pj, "cp", 1);
    par.pp = get_int(pj, "pp", 1);
    par.vpp = get_int(pj, "vpp", 1);
    par.dp = get_int(pj, "dp", 1);
    par.ep = get_int(pj, "ep", 1);
    par.etp = get_int(pj, "etp", 1);
    par.zero = get_int(pj, "zero", 0);
    par.sp = get_int(pj, "sp", 0) != 0;
    par.grad_fp32 = get_int(pj, "grad_fp32", 1) != 0;
    par.micro_batch = get_int(pj, "micro_batch", 1);
    par.n_micro = get_int(pj, "n_micro", 1);
    const char *sched = json_string_value(json_object_get(pj, "schedule"));
    if (sched)
        CHECK(px_schedule_parse(sched, &par.schedule, &err) == PX_OK);
    const char *rc = json_string_value(json_object_get(pj, "recompute"));
    if (rc)
        CHECK(px_recompute_parse(rc, &par.recompute, &err) == PX_OK);
    CHECK_MSG(px_cost_check(&m, &par, &err) == PX_OK, "case %s: %s", name, err.msg);
    static px_cost_ctx ctx;
    CHECK(px_cost_ctx_init(&ctx, &m, &hw, &err) == PX_OK);
    px_prediction pred;
    px_cost_detail det;
    CHECK(px_cost_eval(&ctx, &par, 0, 0, &pred, &det, &err) == PX_OK);
    double rtol = json_real_value(json_object_get(ex, "rtol"));
    const char *key;
    json_t *val;
    int64_t seq = par.seq_len ? par.seq_len : m.seq_len;
    json_object_foreach(ex, key, val)
    {
        if (!strcmp(key, "rtol") || !strcmp(key, "note"))
            continue;
        bool known;
        double got = quantity(key, &pred, &det, &par, seq, &known);
        double want = json_number_value(val);
        CHECK_MSG(known, "case %s: unknown quantity %s", name, key);
        CHECK_MSG(fabs(got - want) <= rtol * fabs(want), "case %s: %s = %.6g, want %.6g (rtol %g)",
                  name, key, got, want, rtol);
        fprintf(stderr, "  %-28s %-30s got %.6g want %.6g (%+.2f %%)\n", name, key, got, want,
                100.0 * (got - want) / want);
    }
    json_decref(in);
    json_decref(ex);
}

int main(void)
{
    const char *dir = PX_SOURCE_ROOT "/tests/cost/cases";
    DIR *d = opendir(dir);
    CHECK_MSG(d != NULL, "cannot open %s", dir);
    int n = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            run_case(dir, e->d_name);
            n++;
        }
        closedir(d);
    }
    CHECK_MSG(n >= 3, "only %d cases found", n);
    return px_test_result("cost_cases");
}
