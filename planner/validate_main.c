/* validate_main.c — `validate [FILE]`: predicts every published run of FILE
 * (default: shared/data/published-megatron.json beside the source tree) and
 * prints predicted vs measured with the errors per row, per group and
 * overall.  See docs/validation.md. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_validate.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: validate [FILE] [--json | --explain ID] [--check] [--max-vpp N] [--hw-dir DIR]\n"
            "  FILE        published runs (JSON array); default: the shared data file\n"
            "  --json      write the report as JSON (sorted keys) instead of the table\n"
            "  --explain   the cost model's breakdown of row ID's predicted configuration\n"
            "  --check     exit 1 when the validation bounds do not hold (throughput MAE <= %.0f%%,\n"
            "              every group <= %.0f%%, full/selective ratios within %.0f%%)\n"
            "  --max-vpp   search interleaving up to N chunks a stage where a row leaves it\n"
            "              unpublished (default %d; 1: plain 1F1B)\n"
            "  --hw-dir    directory of hardware profiles (default: hw_profiles/)\n",
            100.0 * PX_VALIDATE_MAX_MAE, 100.0 * PX_VALIDATE_MAX_GROUP_MAE,
            100.0 * PX_VALIDATE_MAX_RATIO_ERR, PX_VALIDATE_MAX_VPP);
}

/* The whole string a decimal integer >= 1: atoi() read "abc" and "0" as a
 * request for the default, which silently ignored a typo. */
static bool parse_count(const char *s, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno == ERANGE || v < 1 || v > INT_MAX)
        return false;
    *out = (int)v;
    return true;
}

int main(int argc, char **argv)
{
    const char *path = NULL, *hw_dir = NULL, *explain = NULL;
    bool json = false, check = false;
    int max_vpp = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (strcmp(argv[i], "--check") == 0)
            check = true;
        else if (strcmp(argv[i], "--explain") == 0 && i + 1 < argc)
            explain = argv[++i];
        else if (strcmp(argv[i], "--max-vpp") == 0 && i + 1 < argc) {
            if (!parse_count(argv[++i], &max_vpp)) {
                fprintf(stderr, "validate: --max-vpp %s: an integer >= 1 (1: plain 1F1B)\n",
                        argv[i]);
                return 2;
            }
        }
        else if (strcmp(argv[i], "--hw-dir") == 0 && i + 1 < argc)
            hw_dir = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "validate: unknown option %s\n", argv[i]);
            usage(stderr);
            return 2;
        } else if (!path)
            path = argv[i];
        else {
            fprintf(stderr, "validate: one FILE only (got %s and %s)\n", path, argv[i]);
            return 2;
        }
    }
    char def[1024];
    if (!path) {
        px_validate_default_path(def, sizeof def);
        path = def;
    }
    px_val_report rep;
    px_error err;
    px_error_clear(&err);
    px_status st = px_validate_load(path, hw_dir, &rep, &err);
    if (st == PX_OK) {
        rep.max_vpp = max_vpp;
        st = px_validate_run(&rep, &err);
        if (st != PX_OK)
            px_validate_free(&rep);
    }
    if (st != PX_OK) {
        char msg[2048];
        px_error_format(&err, msg, sizeof msg);
        fprintf(stderr, "validate: %s\n", msg);
        /* a missing or malformed FILE is a library error, as for plan --validate;
         * 2 stays for usage errors */
        return 1;
    }
    int rc = 0;
    if (explain) {
        if (px_validate_explain(&rep, explain, stdout, &err) != PX_OK) {
            fprintf(stderr, "validate: %s\n", err.msg);
            rc = 2;
        }
    } else if (json) {
        if (px_validate_write_json(&rep, stdout, &err) != PX_OK) {
            fprintf(stderr, "validate: %s\n", err.msg);
            rc = 2;
        }
    } else {
        px_validate_write_table(&rep, stdout);
    }
    if (rc == 0 && check && !px_validate_within_bounds(&rep, NULL, 0))
        rc = 1;
    px_validate_free(&rep);
    return rc;
}
