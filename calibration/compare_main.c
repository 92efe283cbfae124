/* compare — predicted vs measured for one or more `execute --report` runs:
 *
 *   compare [--max-time-err F] [--max-mem-err F] [--breakdown] [--json | --csv] report.json ...
 *
 * Prints one fixed-column row per run (step time, tokens/s, MFU, peak
 * memory: predicted, measured, relative error = (pred - meas) / meas, and
 * whether it is within or outside the limits), then, for reports that carry
 * per-stage predictions, a row per rank against its own pipeline stage, and
 * a summary with the count outside.  A limit not given is its default
 * (PX_COMPARE_DEFAULT_*); exits 1 when any run's |step-time error|,
 * |peak-memory error| (worst stage vs worst rank) or any rank's |error
 * against its own stage| exceeds a limit given on the command line (the
 * table is printed either way).  --breakdown adds each run's step time by
 * class, predicted against measured (px_breakdown.h).  --json prints the
 * same content as JSON (sorted keys), --csv the table as CSV.  Exit 2: bad
 * arguments (a limit outside (0, 1], --csv with --json or --breakdown) or an
 * unreadable report (also one whose step time or peak memory is negative).
 * Warnings on stderr: a report whose plan file cannot be opened (the run is
 * then labelled by its file name), runs of one plan that disagree beyond
 * their noise (px_compare_repeat_warnings). */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "px_args.h"
#include "px_compare.h"
#include "px_error.h"
#include "px_io.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: compare [--max-time-err F] [--max-mem-err F] [--breakdown] "
               "[--json | --csv] [--html FILE] report.json ...\n"
               "  --max-time-err F  fail (exit 1) when |predicted/measured - 1| of the step\n"
               "                    time exceeds F for any run; F a fraction in (0, 1]\n"
               "                    (0.25 for 25 %%)\n"
               "  Without limits the defaults, step time 25 %% and memory 10 %%, mark the runs\n"
               "  outside them (\"outside\" and the count); only a limit given sets exit 1.\n"
               "  --max-mem-err F   the same for the peak memory (e.g. 0.10): the worst\n"
               "                    stage against the worst rank, and every rank against\n"
               "                    its own pipeline stage where the report has them\n"
               "  --breakdown       also the step time by class (GEMM, attention, element-wise,\n"
               "                    exposed communication, bubble + p2p, optimizer, other),\n"
               "                    predicted vs measured, from the report's *_class_s\n"
               "  --json            the table as JSON on stdout\n"
               "  --csv             the table as CSV on stdout: a header row (units in the\n"
               "                    column names), a row per report; not with --json\n"
               "  --html FILE       also write a self-contained HTML report: predicted vs\n"
               "                    measured, and each run's pipeline timeline, per-stage\n"
               "                    memory and time breakdown from its plan file\n"
               "  --version         the Parallax version\n"
               "Runs of the same plan are told apart by their report's file name.\n"
               "Every option takes its value as `--flag value` or `--flag=value`, once.\n");
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

typedef struct {
    double max_time, max_mem; /* -1: no limit */
    bool as_json, as_csv, breakdown;
    const char *html_path;
} compare_cli;

/* --max-time-err / --max-mem-err: a fraction in (0, 1]. */
static px_status read_limit(const char *flag, const char *v, double *out, const char *example,
                            px_error *err)
{
    if (!parse_fraction(v, out))
        return PX_FAIL(err, PX_ERR_USAGE, "%s %s: a fraction in (0, 1], e.g. %s", flag, v,
                       example);
    return PX_OK;
}

static px_status read_max_time(void *s, const char *flag, const char *v, px_error *err)
{
    return read_limit(flag, v, &((compare_cli *)s)->max_time, "0.25 for 25 %", err);
}

static px_status read_max_mem(void *s, const char *flag, const char *v, px_error *err)
{
    return read_limit(flag, v, &((compare_cli *)s)->max_mem, "0.10 for 10 %", err);
}

static const px_arg compare_rows[] = {
    PX_ARG_CUSTOM("--max-time-err", read_max_time),
    PX_ARG_CUSTOM("--max-mem-err", read_max_mem),
    PX_ARG_SWITCH("--json", compare_cli, as_json),
    PX_ARG_SWITCH("--csv", compare_cli, as_csv),
    PX_ARG_SWITCH("--breakdown", compare_cli, breakdown),
    PX_ARG_STR("--html", compare_cli, html_path),
};

static void say_error(const char *what, const px_error *err)
{
    char buf[1400];
    px_error_format(err, buf, sizeof buf);
    fprintf(stderr, "compare: %s%s\n", what, buf);
}

int main(int argc, char **argv)
{
    compare_cli cl = {-1.0, -1.0, false, false, false, NULL};
    px_args_result args;
    px_error aerr;
    if (px_args_parse(compare_rows, (int)(sizeof compare_rows / sizeof compare_rows[0]), argc,
                      argv, &cl, -1, &args, &aerr) != PX_OK) {
        char msg[2048];
        px_args_error_text("compare", &aerr, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
        return 2;
    }
    if (args.action == PX_ARGS_HELP) {
        usage(stdout);
        return 0;
    }
    if (args.action == PX_ARGS_VERSION) {
        printf("compare (parallax) %s\n", px_version());
        return 0;
    }
    if (args.n_positional == 0) {
        fprintf(stderr, "compare: no report given\n");
        usage(stderr);
        return 2;
    }
    if (cl.as_json && cl.as_csv) {
        fprintf(stderr, "compare: --csv and --json both given: they are exclusive, choose one "
                        "(--csv for a spreadsheet, --json for the full content)\n");
        return 2;
    }
    if (cl.as_csv && cl.breakdown) {
        fprintf(stderr, "compare: --csv holds the table only, not --breakdown's rows: use "
                        "--breakdown with the table or with --json\n");
        return 2;
    }
    px_error oerr;
    if (cl.html_path && px_io_check_option("--html", cl.html_path, false, &oerr) != PX_OK) {
        say_error("", &oerr);
        return 2;
    }
    px_compare_set set = {
        .n = args.n_positional,
        .max_time = cl.max_time >= 0.0 ? cl.max_time : PX_COMPARE_DEFAULT_MAX_TIME_ERR,
        .max_mem = cl.max_mem >= 0.0 ? cl.max_mem : PX_COMPARE_DEFAULT_MAX_MEM_ERR,
        .time_given = cl.max_time >= 0.0,
        .mem_given = cl.max_mem >= 0.0, .breakdown = cl.breakdown};
    set.runs = calloc((size_t)set.n, sizeof *set.runs);
    if (!set.runs)
        return 2;
    for (int i = 0; i < set.n; i++) {
        px_error err;
        px_error_clear(&err);
        if (px_compare_read(args.positional[i], cl.breakdown, &set.runs[i], &err) != PX_OK) {
            say_error("", &err);
            px_compare_free(&set);
            return 2;
        }
        char warning[2400];
        if (px_compare_plan_warning(&set.runs[i], args.positional[i], warning, sizeof warning))
            fprintf(stderr, "compare: warning: %s\n", warning);
    }
    px_compare_score(&set);
    px_compare_repeat_warnings(stderr, &set);
    px_error err;
    px_error_clear(&err);
    if (cl.html_path && px_compare_html(cl.html_path, &set, &err) != PX_OK) {
        say_error("--html: ", &err);
        return 2;
    }
    if (cl.as_json) {
        json_t *root = px_compare_json(&set);
        char *s = json_dumps(root, JSON_SORT_KEYS | JSON_INDENT(2));
        if (s) {
            puts(s);
            free(s);
        }
        json_decref(root);
    } else if (cl.as_csv) {
        px_compare_csv(stdout, &set);
    } else {
        px_compare_print(stdout, &set);
    }
    int n_fail = set.n_fail;
    px_compare_free(&set);
    free(args.positional);
    px_error out_err;
    if (px_io_flush_stdout(&out_err) != PX_OK) {
        fprintf(stderr, "compare: error: %s\n", out_err.msg);
        return 1;
    }
    return n_fail ? 1 : 0;
}
