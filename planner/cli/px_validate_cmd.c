/* px_validate_cmd.c — the `validate` command as a library call: predicts
 * every published run of a file and prints predicted vs measured, as
 * build/validate and `plan --validate` (docs/validation.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_args.h"
#include "px_plan_cmd.h"
#include "px_validate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: validate [FILE] [--json | --explain ID] [--check] [--check-families]\n"
            "                [--hw-dir DIR]\n"
            "  FILE        published runs (JSON array); default: the shared data file; each row is\n"
            "              planned as `plan` plans the call shared/data/README.md maps it to\n"
            "  --json      write the report as JSON (sorted keys) instead of the table\n"
            "  --explain   the cost model's breakdown of row ID's predicted configuration\n"
            "  --check     exit 1 when the fidelity bounds do not hold (throughput MAE <= %.0f%%,\n"
            "              every group <= %.0f%%, full/selective ratios within %.0f%%)\n"
            "  --check-families\n"
            "              exit 1 when the families of the usable rows break the bounds kept on\n"
            "              published-runs.json: the usable rows mean |error| <= %.0f%%, every\n"
            "              family <= %.0f%%, at most %.0f%% refused; fp8 or MoE rows mean <= %.0f%%,\n"
            "              every family of theirs <= %.0f%% (families of 3 rows or more), at most\n"
            "              %.0f%% refused\n"
            "  --hw-dir    directory of hardware profiles (default: hw_profiles/)\n"
            "  --version   the Parallax version\n",
            100.0 * PX_VALIDATE_MAX_MAE, 100.0 * PX_VALIDATE_MAX_GROUP_MAE,
            100.0 * PX_VALIDATE_MAX_RATIO_ERR, 100.0 * PX_VALIDATE_RUNS_MAX_MEAN,
            100.0 * PX_VALIDATE_RUNS_MAX_FAMILY, 100.0 * PX_VALIDATE_RUNS_MAX_REFUSED,
            100.0 * PX_VALIDATE_LOWP_MAX_MEAN, 100.0 * PX_VALIDATE_LOWP_MAX_FAMILY,
            100.0 * PX_VALIDATE_LOWP_MAX_REFUSED);
}

typedef struct {
    const char *hw_dir, *explain;
    bool json, check, check_families;
} validate_cli;

static const px_arg validate_rows[] = {
    PX_ARG_SWITCH("--json", validate_cli, json),
    PX_ARG_SWITCH("--check", validate_cli, check),
    PX_ARG_SWITCH("--check-families", validate_cli, check_families),
    PX_ARG_STR("--explain", validate_cli, explain),
    PX_ARG_STR("--hw-dir", validate_cli, hw_dir),
};
enum { N_VALIDATE_ROWS = sizeof validate_rows / sizeof validate_rows[0] };

int px_validate_option_takes_value(const char *name)
{
    return px_args_takes_value(validate_rows, N_VALIDATE_ROWS, name);
}

/* Prints the report of rep as asked for by c. */
static px_status report(FILE *out, const validate_cli *c, px_val_report *rep, px_error *err)
{
    px_status st = PX_OK;
    if (c->explain) {
        st = px_validate_explain(rep, c->explain, out, err);
        if (st != PX_OK && err)
            err->code = st = PX_ERR_USAGE; /* an id that is not in the file: a bad argument */
    }
    else if (c->json)
        st = px_validate_write_json(rep, out, err);
    else
        px_validate_write_table(rep, out);
    if (st == PX_OK && c->check && !px_validate_within_bounds(rep, NULL, 0))
        st = PX_FAIL(err, PX_ERR_INFEASIBLE,
                     "--check: the predictions are outside the fidelity bounds "
                     "(docs/validation.md)");
    char why[512];
    if (st == PX_OK && c->check_families &&
        !px_validate_family_bounds(rep, PX_VALIDATE_RUNS_MAX_MEAN, PX_VALIDATE_RUNS_MAX_FAMILY,
                                   PX_VALIDATE_RUNS_MAX_REFUSED, why, sizeof why))
        st = PX_FAIL(err, PX_ERR_INFEASIBLE, "--check-families: family bounds: %s", why);
    if (st == PX_OK && c->check_families &&
        !px_validate_lowp_moe_bounds(rep, PX_VALIDATE_LOWP_MAX_MEAN, PX_VALIDATE_LOWP_MAX_FAMILY,
                                     PX_VALIDATE_LOWP_MAX_REFUSED, why, sizeof why))
        st = PX_FAIL(err, PX_ERR_INFEASIBLE, "--check-families: fp8 or MoE family bounds: %s",
                     why);
    return st;
}

px_status px_validate_command(int argc, char **argv, FILE *out, px_error *err)
{
    px_error_clear(err);
    validate_cli c;
    memset(&c, 0, sizeof c);
    px_args_result args;
    px_status st =
        px_args_parse(validate_rows, N_VALIDATE_ROWS, argc, argv, &c, 1, &args, err);
    if (st != PX_OK)
        return st;
    if (args.action != PX_ARGS_RUN) {
        if (args.action == PX_ARGS_HELP)
            usage(out);
        else
            fprintf(out, "validate (parallax) %s\n", px_version());
        px_args_free(&args);
        return PX_OK;
    }
    if (c.json && c.explain) {
        px_args_free(&args);
        return PX_FAIL(err, PX_ERR_USAGE, "--json and --explain: give one of them");
    }
    char def[1024];
    const char *path = args.n_positional ? args.positional[0] : NULL;
    if (!path) {
        px_validate_default_path(def, sizeof def);
        path = def;
    }
    px_val_report *rep = calloc(1, sizeof *rep);
    st = rep ? px_validate_load(path, c.hw_dir, rep, err)
             : PX_FAIL(err, PX_ERR_NOMEM, "out of memory for the report");
    px_args_free(&args);
    if (st != PX_OK) {
        free(rep);
        return st;
    }
    st = px_validate_run(rep, err);
    if (st == PX_OK)
        st = report(out, &c, rep, err);
    px_validate_free(rep);
    free(rep);
    return st;
}
