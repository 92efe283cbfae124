/* compare — predicted vs measured for one or more `execute --report` runs:
 *
 *   compare [--max-time-err F] [--max-mem-err F] [--json] report.json ...
 *
 * Prints one fixed-column row per run (step time, tokens/s, MFU, peak
 * memory: predicted, measured, relative error = (pred - meas) / meas) and a
 * summary; with the limits, exits 1 when any run's |step-time error| or
 * |peak-memory error| exceeds them (the table is printed either way).
 * --json prints the same content as JSON (sorted keys).  Exit 2: bad
 * arguments (a limit outside (0, 1]) or an unreadable report (also one whose
 * step time or peak memory is negative).  A report whose plan file cannot be
 * opened is a warning on stderr: the run is then labelled by its file name. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "px_error.h"
#include "px_report.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: compare [--max-time-err F] [--max-mem-err F] [--json] report.json ...\n"
               "  --max-time-err F  fail (exit 1) when |predicted/measured - 1| of the step\n"
               "                    time exceeds F for any run; F a fraction in (0, 1]\n"
               "                    (0.25 for 25 %%)\n"
               "  --max-mem-err F   the same for the peak memory (e.g. 0.10)\n"
               "  --json            the table as JSON on stdout\n");
}

/* A limit is a fraction in (0, 1]: "25" meant 25 % would otherwise pass as
 * 2500 % and every run would be within it. */
static bool parse_fraction(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (!*s || *end || !isfinite(v) || !(v > 0.0) || v > 1.0)
        return false;
    *out = v;
    return true;
}

/* Step time and peak memory must be finite and >= 0 on both sides: a
 * negative value (a sign bug in the writer) would give a meaningless error
 * that may still fall within the limits. */
static bool check_side(const char *path, const char *side, const px_report_side *s)
{
    if (!isfinite(s->step_time_s) || s->step_time_s < 0.0) {
        fprintf(stderr, "compare: %s: %s.step_time_s is %g: a time in seconds >= 0\n", path,
                side, s->step_time_s);
        return false;
    }
    if (s->peak_memory_bytes < 0) {
        fprintf(stderr, "compare: %s: %s.peak_memory_bytes is %lld: a byte count >= 0\n",
                path, side, (long long)s->peak_memory_bytes);
        return false;
    }
    return true;
}

/* execute's reports name their plan file and px_report_read labels the run
 * from it; when that file cannot be read the label silently becomes the
 * report's file name.  Say so, with the reason, so that a moved plan is
 * noticed. */
static void warn_unread_plan(const char *path)
{
    json_t *root = json_load_file(path, 0, NULL);
    json_t *plan = json_object_get(root, "plan");
    bool has_par = json_is_object(json_object_get(root, "parallel")) ||
                   json_is_object(json_object_get(plan, "parallel"));
    if (!json_is_string(plan) || has_par) {
        json_decref(root);
        return;
    }
    const char *pp = json_string_value(plan);
    FILE *f = pp[0] ? fopen(pp, "r") : NULL;
    char alt[1100] = "";
    if (!f && pp[0] && pp[0] != '/') { /* px_report_read also looks beside the report */
        const char *slash = strrchr(path, '/');
        snprintf(alt, sizeof alt, "%.*s/%s", slash ? (int)(slash - path) : 1,
                 slash ? path : ".", pp);
        f = fopen(alt, "r");
    }
    if (f)
        fclose(f);
    else if (!pp[0])
        fprintf(stderr, "compare: warning: %s: \"plan\" is empty: the run is labelled by "
                        "the report's file name\n", path);
    else
        fprintf(stderr, "compare: warning: %s: plan \"%s\"%s%s%s cannot be opened (%s): "
                        "the run is labelled by the report's file name\n", path, pp,
                alt[0] ? " (nor " : "", alt[0] ? alt : "", alt[0] ? ")" : "", strerror(errno));
    json_decref(root);
}

static void pct(char *buf, size_t n, double e)
{
    if (isinf(e))
        snprintf(buf, n, "inf");
    else
        snprintf(buf, n, "%+.1f%%", 100.0 * e);
}

int main(int argc, char **argv)
{
    double max_time = -1.0, max_mem = -1.0;
    bool as_json = false;
    int n_paths = 0;
    const char **paths = calloc((size_t)argc, sizeof *paths);
    if (!paths)
        return 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-time-err") || !strcmp(argv[i], "--max-mem-err")) {
            double *dst = argv[i][6] == 't' ? &max_time : &max_mem;
            if (i + 1 >= argc || !parse_fraction(argv[i + 1], dst)) {
                fprintf(stderr, "compare: %s %s: a fraction in (0, 1], e.g. %s\n", argv[i],
                        i + 1 < argc ? argv[i + 1] : "(missing)",
                        dst == &max_time ? "0.25 for 25 %" : "0.10 for 10 %");
                return 2;
            }
            i++;
        } else if (!strcmp(argv[i], "--json")) {
            as_json = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "compare: unknown option \"%s\"\n", argv[i]);
            usage(stderr);
            return 2;
        } else {
            paths[n_paths++] = argv[i];
        }
    }
    if (n_paths == 0) {
        fprintf(stderr, "compare: no report given\n");
        usage(stderr);
        return 2;
    }
    px_report *runs = calloc((size_t)n_paths, sizeof *runs);
    if (!runs)
        return 2;
    for (int i = 0; i < n_paths; i++) {
        px_error err;
        px_error_clear(&err);
        if (px_report_read(paths[i], &runs[i], &err) != PX_OK) {
            char buf[1400];
            px_error_format(&err, buf, sizeof buf);
            fprintf(stderr, "compare: %s\n", buf);
            return 2;
        }
        if (!check_side(paths[i], "measured", &runs[i].measured) ||
            !check_side(paths[i], "predicted", &runs[i].predicted))
            return 2;
        warn_unread_plan(paths[i]);
    }

    int n_bad = 0;
    double worst_time = 0.0, worst_mem = 0.0;
    json_t *jruns = json_array();
    if (!as_json) {
        printf("# compare: predicted (cost model) vs measured (execute), "
               "err = (predicted - measured) / measured\n");
        if (max_time >= 0.0 || max_mem >= 0.0)
            printf("# limits: |step time err| <= %.0f%%, |peak memory err| <= %.0f%%\n",
                   max_time >= 0.0 ? 100.0 * max_time : INFINITY,
                   max_mem >= 0.0 ? 100.0 * max_mem : INFINITY);
        printf("%-44s %5s | %9s %9s %7s | %9s %9s %7s | %6s %6s %7s | %9s %9s %7s | %s\n",
               "run", "ranks", "step_s", "step_s", "err", "tok/s", "tok/s", "err", "MFU%",
               "MFU%", "err", "mem_MB", "mem_MB", "err", "ok");
        printf("%-44s %5s | %9s %9s %7s | %9s %9s %7s | %6s %6s %7s | %9s %9s %7s |\n", "",
               "", "pred", "meas", "", "pred", "meas", "", "pred", "meas", "", "pred", "meas",
               "");
    }
    for (int i = 0; i < n_paths; i++) {
        const px_report *r = &runs[i];
        const px_report_side *p = &r->predicted, *m = &r->measured;
        double e_time = px_report_rel_err(p->step_time_s, m->step_time_s);
        double e_tok = px_report_rel_err(p->tokens_per_s, m->tokens_per_s);
        double e_mfu = px_report_rel_err(p->mfu, m->mfu);
        double e_mem = px_report_rel_err((double)p->peak_memory_bytes,
                                         (double)m->peak_memory_bytes);
        bool ok = (max_time < 0.0 || fabs(e_time) <= max_time) &&
                  (max_mem < 0.0 || fabs(e_mem) <= max_mem);
        n_bad += !ok;
        worst_time = fmax(worst_time, fabs(e_time));
        worst_mem = fmax(worst_mem, fabs(e_mem));
        if (as_json) {
            json_t *o = json_pack(
                "{s:s, s:s, s:i, s:b, s:{s:f, s:f, s:f, s:f, s:I}, s:{s:f, s:f, s:f, s:f, s:I}}",
                "report", r->path, "run", r->label, "ranks", r->world, "ok", ok,
                "predicted", "step_time_s", p->step_time_s, "tokens_per_s", p->tokens_per_s,
                "mfu", p->mfu, "hfu", p->hfu, "peak_memory_bytes",
                (json_int_t)p->peak_memory_bytes, "measured", "step_time_s", m->step_time_s,
                "tokens_per_s", m->tokens_per_s, "mfu", m->mfu, "hfu", m->hfu,
                "peak_memory_bytes", (json_int_t)m->peak_memory_bytes);
            /* an infinite error (measured 0) is null: JSON has no infinity */
            json_t *rel = json_object();
            const char *keys[4] = {"step_time_s", "tokens_per_s", "mfu", "peak_memory_bytes"};
            const double errs[4] = {e_time, e_tok, e_mfu, e_mem};
            for (int k = 0; k < 4; k++)
                json_object_set_new(rel, keys[k], isfinite(errs[k]) ? json_real(errs[k])
                                                                    : json_null());
            json_object_set_new(o, "relative_error", rel);
            json_array_append_new(jruns, o);
            continue;
        }
        char et[16], ek[16], ef[16], em[16], ranks[16];
        pct(et, sizeof et, e_time);
        pct(ek, sizeof ek, e_tok);
        pct(ef, sizeof ef, e_mfu);
        pct(em, sizeof em, e_mem);
        if (r->world > 0)
            snprintf(ranks, sizeof ranks, "%d", r->world);
        else
            snprintf(ranks, sizeof ranks, "?");
        printf("%-44.44s %5s | %9.4f %9.4f %7s | %9.0f %9.0f %7s | %6.1f %6.1f %7s | "
               "%9.2f %9.2f %7s | %s\n",
               r->label, ranks, p->step_time_s, m->step_time_s, et, p->tokens_per_s,
               m->tokens_per_s, ek, 100.0 * p->mfu, 100.0 * m->mfu, ef,
               (double)p->peak_memory_bytes / 1e6, (double)m->peak_memory_bytes / 1e6, em,
               ok ? "yes" : "NO");
    }
    if (as_json) {
        json_t *root = json_pack("{s:o, s:o, s:o, s:i, s:i}", "runs", jruns,
                                 "worst_step_time_err",
                                 isfinite(worst_time) ? json_real(worst_time) : json_null(),
                                 "worst_peak_memory_err",
                                 isfinite(worst_mem) ? json_real(worst_mem) : json_null(),
                                 "n_runs", n_paths, "n_failed", n_bad);
        if (max_time >= 0.0)
            json_object_set_new(root, "max_time_err", json_real(max_time));
        if (max_mem >= 0.0)
            json_object_set_new(root, "max_mem_err", json_real(max_mem));
        char *s = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
        if (s) {
            puts(s);
            free(s);
        }
        json_decref(root);
    } else {
        json_decref(jruns);
        printf("# %d run(s); worst |step time err| %.1f%%, worst |peak memory err| %.1f%%; "
               "%d outside the limits\n",
               n_paths, 100.0 * worst_time, 100.0 * worst_mem, n_bad);
    }
    free(runs);
    free(paths);
    return n_bad ? 1 : 0;
}
