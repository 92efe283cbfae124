/* px_sweep.c — one search per GPU count; see px_sweep.h. */
#include "px_sweep.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_GPUS_MAX (1 << 24)

static px_status bad(const char *spec, px_error *err, const char *why)
{
    return PX_FAIL(err, PX_ERR_INVALID,
                   "--sweep-gpus \"%s\": %s; allowed: A..B (A, 2A, 4A, ... up to B) or a "
                   "comma list G1,G2,... of at most %d counts in 1..%d",
                   spec, why, PX_SWEEP_MAX, SWEEP_GPUS_MAX);
}

static bool parse_count(const char *s, const char *end, int *out)
{
    if (s == end)
        return false;
    int64_t v = 0;
    for (const char *c = s; c < end; c++) {
        if (*c < '0' || *c > '9')
            return false;
        v = v * 10 + (*c - '0');
        if (v > SWEEP_GPUS_MAX)
            return false;
    }
    if (v < 1)
        return false;
    *out = (int)v;
    return true;
}

px_status px_sweep_parse(const char *spec, px_sweep_list *list, px_error *err)
{
    list->n = 0;
    const char *dots = strstr(spec, "..");
    if (dots) {
        int a, b;
        if (!parse_count(spec, dots, &a) || !parse_count(dots + 2, dots + strlen(dots), &b))
            return bad(spec, err, "A and B must be whole numbers");
        if (b < a)
            return bad(spec, err, "B is below A");
        for (int64_t g = a; g <= b; g *= 2) {
            if (list->n == PX_SWEEP_MAX)
                return bad(spec, err, "too many counts");
            list->gpus[list->n++] = (int)g;
        }
        return PX_OK;
    }
    const char *s = spec;
    for (;;) {
        const char *comma = strchr(s, ',');
        const char *end = comma ? comma : s + strlen(s);
        int g;
        if (!parse_count(s, end, &g))
            return bad(spec, err, "each count must be a whole number");
        if (list->n == PX_SWEEP_MAX)
            return bad(spec, err, "too many counts");
        list->gpus[list->n++] = g;
        if (!comma)
            break;
        s = comma + 1;
    }
    return PX_OK;
}

px_status px_sweep_run(const px_model *m, const px_hw *hw, const px_sweep_list *list,
                       const px_search_opts *o, px_sweep_row *rows, px_error *err)
{
    px_search_result *res = malloc(sizeof *res);
    if (!res)
        return PX_FAIL(err, PX_ERR_NOMEM, "sweep: out of memory");
    for (int i = 0; i < list->n; i++) {
        px_sweep_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        r->gpus = list->gpus[i];
        px_error e;
        px_error_clear(&e);
        r->st = px_search_run(m, hw, r->gpus, o, res, &e);
        if (r->st == PX_OK)
            r->best = res->top[0];
        else
            px_error_format(&e, r->msg, sizeof r->msg);
        r->n_evaluated = res->n_evaluated;
        r->n_valid = res->n_valid;
        r->elapsed_s = res->elapsed_s;
        r->analytic_s = res->analytic_s;
        r->milp_s = res->milp_s;
        r->seq_len = res->seq_len;
    }
    free(res);
    return PX_OK;
}
