#include "px_args.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_io.h"

#ifndef PX_VERSION
#error "PX_VERSION must be defined by the build (meson's project version)"
#endif

const char *px_version(void) { return PX_VERSION; }

/* getopt_long's val for row i; the built-in options sit past the rows */
enum { VAL_BASE = 0x1000 };

static bool is_long(const char *name) { return name[0] == '-' && name[1] == '-'; }

/* Index of the row spelled name (with dashes), or -1. */
static int row_index(const px_arg *rows, int n_rows, const char *name)
{
    for (int i = 0; i < n_rows; i++)
        if (!strcmp(rows[i].name, name))
            return i;
    return -1;
}

/* The row an alias stands for (aliases of aliases are followed). */
static int target_row(const px_arg *rows, int n_rows, int i)
{
    for (int hops = 0; i >= 0 && rows[i].kind == PX_ARGK_ALIAS && hops < n_rows; hops++)
        i = row_index(rows, n_rows, rows[i].same_as);
    return i;
}

static bool row_takes_value(const px_arg *r)
{
    switch (r->kind) {
    case PX_ARGK_SWITCH: return false;
    case PX_ARGK_CUSTOM: return r->takes_value;
    case PX_ARGK_ALIAS: return r->implied == NULL; /* resolved by the caller otherwise */
    default: return true;
    }
}

px_status px_args_read_int(const char *flag, const char *s, double lo, double hi,
                           long long *out, px_error *err)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || (double)v < lo || (double)v > hi)
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": expected an integer in %lld..%lld", flag,
                       s, (long long)lo, (long long)hi);
    *out = v;
    return PX_OK;
}

px_status px_args_read_amount(const char *flag, const char *s, double *out, px_error *err)
{
    char *end;
    errno = 0;
    /* decimal only: strtod would also read hex ("0x10"), "inf" and "nan" */
    if (strpbrk(s, "xXpP") || !strpbrk(s, "0123456789"))
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s \"%s\": expected a positive decimal number (suffix K, M, B, T)",
                       flag, s);
    double v = strtod(s, &end);
    double mult = 1.0;
    if (end != s && *end && !end[1]) {
        switch (*end) {
        case 'K': case 'k': mult = 1e3; end++; break;
        case 'M': case 'm': mult = 1e6; end++; break;
        case 'B': case 'b': case 'G': case 'g': mult = 1e9; end++; break;
        case 'T': case 't': mult = 1e12; end++; break;
        default: break;
        }
    }
    if (errno || end == s || *end || !(v > 0) || !isfinite(v))
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s \"%s\": expected a positive number (suffix K, M, B, T)", flag, s);
    *out = v * mult;
    return PX_OK;
}

px_status px_args_read_on_off(const char *flag, const char *s, int *out, px_error *err)
{
    if (!strcmp(s, "on"))
        *out = 1;
    else if (!strcmp(s, "off"))
        *out = 0;
    else
        return PX_FAIL(err, PX_ERR_USAGE, "%s \"%s\": allowed values are on, off", flag, s);
    return PX_OK;
}

/* Stores value into settings by row r (already resolved from aliases). */
static px_status store(const px_arg *r, const char *flag, const char *value, void *settings,
                       px_error *err)
{
    char *field = (char *)settings + r->offset;
    long long v;
    px_status st = PX_OK;
    switch (r->kind) {
    case PX_ARGK_SWITCH:
        *(bool *)field = true;
        break;
    case PX_ARGK_STR:
        *(const char **)field = value;
        break;
    case PX_ARGK_INT:
        st = px_args_read_int(flag, value, r->lo, r->hi, &v, err);
        if (st == PX_OK)
            *(int *)field = (int)v;
        break;
    case PX_ARGK_I64:
        st = px_args_read_int(flag, value, r->lo, r->hi, &v, err);
        if (st == PX_OK)
            *(int64_t *)field = (int64_t)v;
        break;
    case PX_ARGK_AMOUNT:
        st = px_args_read_amount(flag, value, (double *)field, err);
        break;
    case PX_ARGK_CUSTOM:
        st = r->read(settings, flag, value, err);
        break;
    case PX_ARGK_ALIAS:
        st = PX_FAIL(err, PX_ERR_INTERNAL, "%s: alias of an unknown option", flag);
        break;
    }
    return st;
}

/* "--seq given more than once (--seq and --seq-len are one option): give it once" */
static px_status repeated(const px_arg *rows, int n_rows, int target, const char *flag,
                          px_error *err)
{
    const char *alias = NULL;
    for (int i = 0; i < n_rows && !alias; i++)
        if (i != target && target_row(rows, n_rows, i) == target)
            alias = rows[i].name;
    if (alias)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s given more than once (%s and %s are one option): give it once", flag,
                       rows[target].name, alias);
    return PX_FAIL(err, PX_ERR_USAGE, "%s given more than once: give it once", flag);
}

/* The option as written in the argument that getopt_long could not use:
 * "--name" without "=value", or "-x". */
static void written_flag(const char *arg, int optopt_c, char *buf, size_t n)
{
    if (arg && is_long(arg)) {
        const char *eq = strchr(arg, '=');
        snprintf(buf, n, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
    } else if (optopt_c > 0 && optopt_c < 256) {
        snprintf(buf, n, "-%c", optopt_c);
    } else {
        snprintf(buf, n, "%s", arg ? arg : "?");
    }
}

/* getopt_long's tables for rows (+ --help, -h, --version). */
static px_status build_tables(const px_arg *rows, int n_rows, struct option **longs,
                              char *shorts, size_t shorts_len, px_error *err)
{
    *longs = calloc((size_t)n_rows + 3, sizeof **longs);
    if (!*longs)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    /* '-': arguments that are not options come back in order (no reordering
     * of argv); ':': a missing value is told apart from an unknown option */
    snprintf(shorts, shorts_len, "-:h");
    int k = 0;
    for (int i = 0; i < n_rows; i++) {
        int t = target_row(rows, n_rows, i);
        if (t < 0)
            return PX_FAIL(err, PX_ERR_INTERNAL, "%s: alias of an unknown option",
                           rows[i].name);
        bool val = rows[i].kind == PX_ARGK_ALIAS && rows[i].implied ? false
                                                                     : row_takes_value(&rows[t]);
        if (is_long(rows[i].name)) {
            (*longs)[k++] = (struct option){rows[i].name + 2,
                                            val ? required_argument : no_argument, NULL,
                                            VAL_BASE + i};
        } else {
            size_t len = strlen(shorts);
            snprintf(shorts + len, shorts_len - len, "%c%s", rows[i].name[1], val ? ":" : "");
        }
    }
    (*longs)[k++] = (struct option){"help", no_argument, NULL, 'h'};
    (*longs)[k++] = (struct option){"version", no_argument, NULL, VAL_BASE + n_rows};
    return PX_OK;
}

/* The row of the short option c, or -1. */
static int short_row(const px_arg *rows, int n_rows, int c)
{
    for (int i = 0; i < n_rows; i++)
        if (!is_long(rows[i].name) && rows[i].name[1] == c)
            return i;
    return -1;
}

/* Applies one option occurrence: row i as written in arg, value (or NULL). */
static px_status apply(const px_arg *rows, int n_rows, int i, const char *value,
                       void *settings, bool *seen, px_error *err)
{
    int t = target_row(rows, n_rows, i);
    const char *flag = rows[i].name;
    if (seen[t] && !rows[t].repeatable)
        return repeated(rows, n_rows, t, flag, err);
    seen[t] = true;
    if (rows[i].kind == PX_ARGK_ALIAS && rows[i].implied)
        value = rows[i].implied;
    return store(&rows[t], flag, value, settings, err);
}

/* An abbreviation getopt_long accepted ("--mod" for "--model") is refused. */
static px_status check_spelling(const px_arg *rows, int i, const char *arg, px_error *err)
{
    if (!arg || !is_long(rows[i].name) || !is_long(arg))
        return PX_OK;
    size_t len = strcspn(arg, "=");
    if (len == strlen(rows[i].name) && !strncmp(arg, rows[i].name, len))
        return PX_OK;
    return PX_FAIL(err, PX_ERR_USAGE, "unknown option \"%.*s\" (did you mean %s?)", (int)len,
                   arg, rows[i].name);
}

px_status px_args_parse(const px_arg *rows, int n_rows, int argc, char **argv,
                        void *settings, int max_positional, px_args_result *res,
                        px_error *err)
{
    memset(res, 0, sizeof *res);
    struct option *longs = NULL;
    char shorts[256];
    bool *seen = calloc((size_t)n_rows + 1, sizeof *seen);
    res->positional = calloc((size_t)argc + 1, sizeof *res->positional);
    px_status st = seen && res->positional ? PX_OK : PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    if (st == PX_OK)
        st = build_tables(rows, n_rows, &longs, shorts, sizeof shorts, err);
    optind = 0; /* glibc: start over (the parser may run several times in a process) */
    opterr = 0;
    while (st == PX_OK && res->action == PX_ARGS_RUN) {
        int at = optind ? optind : 1; /* the argument being read */
        int c = getopt_long(argc, argv, shorts, longs, NULL);
        if (c == -1)
            break;
        const char *arg = at < argc ? argv[at] : NULL;
        char flag[128];
        if (c == 1) { /* not an option */
            if (max_positional >= 0 && res->n_positional >= max_positional)
                st = PX_FAIL(err, PX_ERR_USAGE, "unexpected argument \"%s\"", optarg);
            else
                res->positional[res->n_positional++] = optarg;
        } else if (c == 'h') {
            res->action = PX_ARGS_HELP;
        } else if (c == VAL_BASE + n_rows) {
            res->action = PX_ARGS_VERSION;
        } else if (c == ':') {
            written_flag(arg, optopt, flag, sizeof flag);
            st = PX_FAIL(err, PX_ERR_USAGE, "%s needs a value", flag);
        } else if (c == '?') {
            written_flag(arg, optopt, flag, sizeof flag);
            int i = row_index(rows, n_rows, flag);
            if (i >= 0 && arg && strchr(arg, '='))
                st = PX_FAIL(err, PX_ERR_USAGE, "%s takes no value (got \"%s\")", flag, arg);
            else
                st = PX_FAIL(err, PX_ERR_USAGE, "unknown option \"%s\"", flag);
        } else {
            int i = c >= VAL_BASE ? c - VAL_BASE : short_row(rows, n_rows, c);
            st = check_spelling(rows, i, arg, err);
            if (st == PX_OK)
                st = apply(rows, n_rows, i, optarg, settings, seen, err);
        }
    }
    /* after "--" every argument is positional */
    for (int i = optind; st == PX_OK && res->action == PX_ARGS_RUN && i < argc; i++) {
        if (max_positional >= 0 && res->n_positional >= max_positional)
            st = PX_FAIL(err, PX_ERR_USAGE, "unexpected argument \"%s\"", argv[i]);
        else
            res->positional[res->n_positional++] = argv[i];
    }
    free(longs);
    free(seen);
    if (st != PX_OK)
        px_args_free(res);
    return st;
}

void px_args_free(px_args_result *res)
{
    free(res->positional);
    res->positional = NULL;
    res->n_positional = 0;
}

void px_args_names_json(const px_arg *rows, int n_rows, char *buf, size_t buf_len)
{
    if (!buf_len)
        return;
    snprintf(buf, buf_len, "[");
    bool first = true;
    for (int i = 0; i < n_rows; i++) {
        if (!is_long(rows[i].name))
            continue; /* "-o" has a long spelling too */
        size_t len = strlen(buf);
        snprintf(buf + len, buf_len - len, "%s\"%s\"", first ? "" : ", ", rows[i].name + 2);
        first = false;
    }
    size_t len = strlen(buf);
    snprintf(buf + len, buf_len - len, "]");
}

void px_args_error_text(const char *tool, const px_error *err, char *buf, size_t buf_len)
{
    char msg[2048];
    px_error_format(err, msg, (int)sizeof msg);
    if (err->code == PX_ERR_USAGE)
        snprintf(buf, buf_len, "%s: %s\n(%s --help lists the options)", tool, msg, tool);
    else
        snprintf(buf, buf_len, "%s: error: %s", tool, msg);
}

int px_args_exit_status(px_status st)
{
    return st == PX_OK ? 0 : st == PX_ERR_USAGE ? 2 : 1;
}

int px_args_run_command(const char *tool, px_command_fn command, int argc, char **argv)
{
    px_error err;
    px_status st = command(argc, argv, stdout, &err);
    px_error out_err;
    if (px_io_flush_stdout(&out_err) != PX_OK && st == PX_OK) {
        err = out_err;
        st = PX_ERR_IO;
    }
    if (st != PX_OK) {
        char msg[4096];
        px_args_error_text(tool, &err, msg, sizeof msg);
        fprintf(stderr, "%s\n", msg);
    }
    return px_args_exit_status(st);
}

int px_args_takes_value(const px_arg *rows, int n_rows, const char *name)
{
    int i = row_index(rows, n_rows, name);
    if (i < 0)
        return -1;
    if (rows[i].kind == PX_ARGK_ALIAS && rows[i].implied)
        return 0;
    int t = target_row(rows, n_rows, i);
    return t >= 0 && row_takes_value(&rows[t]) ? 1 : 0;
}

const char *px_args_canonical(const px_arg *rows, int n_rows, const char *name)
{
    int i = row_index(rows, n_rows, name);
    int t = i < 0 ? -1 : target_row(rows, n_rows, i);
    return t < 0 ? NULL : rows[t].name;
}
