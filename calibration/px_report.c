/* px_report.c — reading execute's report JSON (see px_report.h). */
#include "px_report.h"

#include "px_plan.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static px_status get_number(json_t *obj, const char *side, const char *key, double *out,
                            const char *path, px_error *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0, "%s.%s: missing (a number)",
                            side, key);
    if (!json_is_number(v))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0, "%s.%s: not a number", side,
                            key);
    *out = json_number_value(v);
    return PX_OK;
}

static px_status read_side(json_t *root, const char *side, px_report_side *out,
                           const char *path, px_error *err)
{
    json_t *obj = json_object_get(root, side);
    if (!json_is_object(obj))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s: missing or not an object (step_time_s, tokens_per_s, mfu, "
                            "hfu, peak_memory_bytes)", side);
    px_status st = get_number(obj, side, "step_time_s", &out->step_time_s, path, err);
    if (st == PX_OK)
        st = get_number(obj, side, "tokens_per_s", &out->tokens_per_s, path, err);
    if (st == PX_OK)
        st = get_number(obj, side, "mfu", &out->mfu, path, err);
    if (st == PX_OK)
        st = get_number(obj, side, "hfu", &out->hfu, path, err);
    if (st != PX_OK)
        return st;
    json_t *mem = json_object_get(obj, "peak_memory_bytes");
    if (!json_is_integer(mem))
        return px_error_set(err, PX_ERR_INVALID, path, 0, 0,
                            "%s.peak_memory_bytes: missing or not an integer (bytes)", side);
    out->peak_memory_bytes = (int64_t)json_integer_value(mem);
    return PX_OK;
}

static int get_int(json_t *obj, const char *key, int dflt)
{
    json_t *v = json_object_get(obj, key);
    return json_is_integer(v) ? (int)json_integer_value(v) : dflt;
}

/* "tp2 pp2 dp1 mb1x4 1f1b" from a parallel object, when the report has one
 * (at "parallel" or "plan.parallel"). */
static void label_from_parallel(json_t *root, char *label, size_t n)
{
    json_t *par = json_object_get(root, "parallel");
    if (!json_is_object(par))
        par = json_object_get(json_object_get(root, "plan"), "parallel");
    if (!json_is_object(par))
        return;
    int tp = get_int(par, "tp", 1), pp = get_int(par, "pp", 1), dp = get_int(par, "dp", 1);
    int vpp = get_int(par, "vpp", 1), mb = get_int(par, "micro_batch", 1);
    int nm = get_int(par, "n_micro", 1), zero = get_int(par, "zero", 0);
    json_t *sp = json_object_get(par, "sp"), *sched = json_object_get(par, "schedule");
    json_t *rc = json_object_get(par, "recompute");
    char extra[64] = "", z[16] = "";
    if (vpp > 1)
        snprintf(extra, sizeof extra, " v%d", vpp);
    if (zero > 0)
        snprintf(z, sizeof z, "/z%d", zero);
    snprintf(label, n, "tp%d%s pp%d%s dp%d%s mb%dx%d %s%s%s", tp,
             json_is_true(sp) && tp > 1 ? "+sp" : "", pp, extra, dp, z, mb, nm,
             json_is_string(sched) ? json_string_value(sched) : "",
             json_is_string(rc) && strcmp(json_string_value(rc), "none") ? " rc:" : "",
             json_is_string(rc) && strcmp(json_string_value(rc), "none")
                 ? json_string_value(rc)
                 : "");
}

/* The plan file a report names: as given, else beside the report. */
static px_status read_plan_of(const char *plan_path, const char *report_path, px_plan *plan,
                              px_error *err)
{
    px_status st = px_plan_read(plan_path, plan, err);
    if (st != PX_OK && plan_path[0] != '/') {
        char alt[1024];
        const char *slash = strrchr(report_path, '/');
        int dir_len = slash ? (int)(slash - report_path) : 1;
        snprintf(alt, sizeof alt, "%.*s/%s", dir_len, slash ? report_path : ".", plan_path);
        st = px_plan_read(alt, plan, err);
    }
    return st;
}

px_status px_report_read_plan(const char *report_path, px_plan *plan, px_error *err)
{
    json_t *root = json_load_file(report_path, 0, NULL);
    json_t *pp = json_object_get(root, "plan");
    px_status st;
    if (!json_is_string(pp))
        st = px_error_set(err, PX_ERR_NOT_FOUND, report_path, 0, 0,
                          "the report names no plan file (\"plan\": a path)");
    else
        st = read_plan_of(json_string_value(pp), report_path, plan, err);
    json_decref(root);
    return st;
}

/* Runs of one plan share a label: the report's file name (without its
 * folder and extension) tells them apart, and a count where that is shared
 * too. */
void px_report_label_apart(px_report *runs, int n)
{
    for (int i = 0; i < n; i++) {
        bool shared = false;
        for (int j = 0; j < n && !shared; j++)
            shared = j != i && !strcmp(runs[i].label, runs[j].label);
        runs[i].label_shared = shared;
    }
    for (int i = 0; i < n; i++) {
        if (!runs[i].label_shared)
            continue;
        const char *base = strrchr(runs[i].path, '/');
        base = base ? base + 1 : runs[i].path;
        char stem[128];
        snprintf(stem, sizeof stem, "%s", base);
        char *dot = strrchr(stem, '.');
        if (dot && dot != stem)
            *dot = '\0';
        int k = 1; /* earlier runs of the same label and stem */
        for (int j = 0; j < i; j++)
            k += runs[j].label_shared && !strcmp(runs[j].label_base, runs[i].label) &&
                 !strcmp(runs[j].stem, stem);
        snprintf(runs[i].label_base, sizeof runs[i].label_base, "%s", runs[i].label);
        snprintf(runs[i].stem, sizeof runs[i].stem, "%s", stem);
        char tail[160];
        if (k > 1)
            snprintf(tail, sizeof tail, " [%.60s #%d]", stem, k);
        else
            snprintf(tail, sizeof tail, " [%.60s]", stem);
        /* the tail always fits: the label gives way */
        size_t len = strlen(runs[i].label), room = sizeof runs[i].label - 1 - strlen(tail);
        if (len > room)
            len = room;
        snprintf(runs[i].label + len, sizeof runs[i].label - len, "%s", tail);
    }
}

/* The same label from the plan file the report names (as given, else
 * beside the report), with the model's name in front. */
static void label_from_plan_file(const char *plan_path, const char *report_path, char *label,
                                 size_t n)
{
    px_plan *plan = malloc(sizeof *plan); /* large (profile, per-layer arrays): not on the stack */
    if (!plan)
        return;
    px_error err;
    px_status st = read_plan_of(plan_path, report_path, plan, &err);
    if (st != PX_OK) {
        free(plan);
        return;
    }
    const px_parallel *p = &plan->par;
    char vpp[16] = "", z[16] = "";
    if (p->vpp > 1)
        snprintf(vpp, sizeof vpp, " v%d", p->vpp);
    if (p->zero > 0)
        snprintf(z, sizeof z, "/z%d", p->zero);
    snprintf(label, n, "%.16s tp%d%s pp%d%s dp%d%s mb%lldx%lld %s%s%s", plan->model.name, p->tp,
             p->sp && p->tp > 1 ? "+sp" : "", p->pp, vpp, p->dp, z,
             (long long)p->micro_batch, (long long)p->n_micro, px_schedule_name(p->schedule),
             p->recompute != PX_RECOMPUTE_NONE ? " rc:" : "",
             p->recompute != PX_RECOMPUTE_NONE ? px_recompute_name(p->recompute) : "");
    free(plan);
}

px_status px_report_read(const char *path, px_report *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root) {
        bool missing = jerr.line <= 0;
        return px_error_set(err, missing ? PX_ERR_IO : PX_ERR_PARSE, path, jerr.line,
                            jerr.column, "%s", jerr.text);
    }
    px_status st = PX_OK;
    if (!json_is_object(root))
        st = px_error_set(err, PX_ERR_INVALID, path, 0, 0, "the report is not a JSON object");
    if (st == PX_OK)
        st = read_side(root, "measured", &out->measured, path, err);
    if (st == PX_OK)
        st = read_side(root, "predicted", &out->predicted, path, err);
    if (st == PX_OK) {
        json_t *losses = json_object_get(root, "losses");
        out->n_losses = json_is_array(losses) ? (int)json_array_size(losses) : 0;
        out->world = get_int(root, "world_size", 0);
        if (!out->world)
            out->world = get_int(root, "ranks", 0);
        json_t *pr = json_object_get(root, "per_rank");
        if (!out->world && json_is_array(pr))
            out->world = (int)json_array_size(pr);
        label_from_parallel(root, out->label, sizeof out->label);
        json_t *plan = json_object_get(root, "plan");
        if (!out->label[0] && json_is_string(plan))
            label_from_plan_file(json_string_value(plan), path, out->label, sizeof out->label);
        if (!out->label[0]) {
            const char *base = strrchr(path, '/');
            base = base ? base + 1 : path;
            snprintf(out->label, sizeof out->label, "%s", base);
            char *dot = strrchr(out->label, '.');
            if (dot && dot != out->label)
                *dot = '\0';
        }
    }
    json_decref(root);
    return st;
}

double px_report_rel_err(double predicted, double measured)
{
    if (measured == 0.0)
        return predicted == 0.0 ? 0.0 : INFINITY;
    return (predicted - measured) / measured;
}
