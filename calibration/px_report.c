/* px_report.c — reading execute's report JSON (see px_report.h). */
#include "px_report.h"

#include "px_plan.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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
    int nm = get_int(par, "num_microbatches", 1), zero = get_int(par, "zero", 0);
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
        char alt[2048];
        const char *slash = strrchr(report_path, '/');
        int dir_len = slash ? (int)(slash - report_path) : 1;
        snprintf(alt, sizeof alt, "%.*s/%s", dir_len, slash ? report_path : ".", plan_path);
        st = px_plan_read(alt, plan, err);
    }
    return st;
}

px_status px_report_read_plan(const char *report_path, px_plan *plan, px_error *err)
{
    px_report_file f;
    px_status st = px_report_file_read(report_path, &f, err);
    if (st == PX_OK && !f.plan[0])
        st = px_error_set(err, PX_ERR_NOT_FOUND, report_path, 0, 0,
                          "the report names no plan file (\"plan\": a path)");
    if (st == PX_OK)
        st = read_plan_of(f.plan, report_path, plan, err);
    px_report_file_free(&f);
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
    px_status st = px_report_file_read(path, &out->file, err);
    if (st != PX_OK)
        return st;
    out->measured = out->file.measured;
    out->predicted = out->file.predicted;
    out->n_losses = out->file.n_losses;
    out->world = out->file.world;
    label_from_parallel(out->file.root, out->label, sizeof out->label);
    if (!out->label[0] && out->file.plan[0])
        label_from_plan_file(out->file.plan, path, out->label, sizeof out->label);
    if (!out->label[0]) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        snprintf(out->label, sizeof out->label, "%s", base);
        char *dot = strrchr(out->label, '.');
        if (dot && dot != out->label)
            *dot = '\0';
    }
    return PX_OK;
}

void px_report_free(px_report *r)
{
    px_report_file_free(&r->file);
}

double px_report_rel_err(double predicted, double measured)
{
    if (measured == 0.0)
        return predicted == 0.0 ? 0.0 : INFINITY;
    return (predicted - measured) / measured;
}
