/* px_sweep.c — one search per point of a product of lists; see px_sweep.h. */
#include "px_sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "px_framework.h"
#include "px_hw.h"
#include "px_precision.h"
#include "px_search_plan.h"

/* each number key's bounds: the plan option's (px_plan_options.c) */
static const struct {
    const char *name;
    bool number;
    int64_t lo, hi;
} keys[PX_SWEEP_N_KEYS] = {
    [PX_SWEEP_GPUS] = {"gpus", true, 1, 1 << 24},
    [PX_SWEEP_SEQ] = {"seq", true, 1, 1LL << 40},
    [PX_SWEEP_GLOBAL_BATCH] = {"global-batch", true, 1, 1LL << 40},
    [PX_SWEEP_HW] = {"hw", false, 0, 0},
    [PX_SWEEP_FRAMEWORK] = {"framework", false, 0, 0},
    [PX_SWEEP_PRECISION] = {"precision", false, 0, 0},
};

const char *px_sweep_key_name(px_sweep_key k)
{
    return k >= 0 && k < PX_SWEEP_N_KEYS ? keys[k].name : "?";
}

bool px_sweep_key_is_number(px_sweep_key k)
{
    return k >= 0 && k < PX_SWEEP_N_KEYS && keys[k].number;
}

static px_status bad(const char *flag, px_sweep_key k, const char *list, px_error *err,
                     const char *why)
{
    if (keys[k].number)
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s %s=\"%s\": %s; allowed: A..B (A, 2A, 4A, ... up to B) or a comma "
                       "list V1,V2,... of at most %d whole numbers in %lld..%lld",
                       flag, keys[k].name, list, why, PX_SWEEP_MAX, (long long)keys[k].lo,
                       (long long)keys[k].hi);
    return PX_FAIL(err, PX_ERR_USAGE, "%s %s=\"%s\": %s; allowed: a comma list of at most %d %s",
                   flag, keys[k].name, list, why, PX_SWEEP_MAX,
                   k == PX_SWEEP_PRECISION ? "precisions (bf16, fp16, fp8, fp8-cs, fp8-rowwise, "
                                             "fp8-block, mxfp8, nvfp4)"
                                           : "profile names or files");
}

static bool parse_number(const char *s, const char *end, px_sweep_key k, int64_t *out)
{
    if (s == end)
        return false;
    int64_t v = 0;
    for (const char *c = s; c < end; c++) {
        if (*c < '0' || *c > '9')
            return false;
        v = v * 10 + (*c - '0');
        if (v > keys[k].hi)
            return false;
    }
    if (v < keys[k].lo)
        return false;
    *out = v;
    return true;
}

static px_status add_value(px_sweep_axis *ax, const char *flag, const char *list,
                           const char *s, const char *end, px_error *err)
{
    px_sweep_key k = ax->key;
    if (ax->n == PX_SWEEP_MAX)
        return bad(flag, k, list, err, "too many values");
    if (keys[k].number) {
        if (!parse_number(s, end, k, &ax->num[ax->n]))
            return bad(flag, k, list, err, "each value must be a whole number in range");
    } else {
        size_t len = (size_t)(end - s);
        if (len == 0 || len >= PX_SWEEP_WORD_LEN)
            return bad(flag, k, list, err, "an empty or over-long value");
        memcpy(ax->word[ax->n], s, len);
        ax->word[ax->n][len] = '\0';
        px_precision p;
        px_error e;
        if (k == PX_SWEEP_PRECISION && px_precision_parse(ax->word[ax->n], &p, &e) != PX_OK)
            return bad(flag, k, list, err, "an unknown precision");
    }
    ax->n++;
    return PX_OK;
}

/* "A..B": A, 2A, 4A, ... up to B */
static px_status add_range(px_sweep_axis *ax, const char *flag, const char *list,
                           const char *dots, px_error *err)
{
    px_sweep_key k = ax->key;
    int64_t a, b;
    if (!parse_number(list, dots, k, &a) || !parse_number(dots + 2, dots + strlen(dots), k, &b))
        return bad(flag, k, list, err, "A and B must be whole numbers in range");
    if (b < a)
        return bad(flag, k, list, err, "B is below A");
    for (int64_t v = a; v <= b; v *= 2) {
        if (ax->n == PX_SWEEP_MAX)
            return bad(flag, k, list, err, "too many values");
        ax->num[ax->n++] = v;
    }
    return PX_OK;
}

px_status px_sweep_add_list(px_sweep_spec *s, const char *flag, px_sweep_key k,
                            const char *list, px_error *err)
{
    if (px_sweep_find(s, k))
        return PX_FAIL(err, PX_ERR_USAGE, "%s %s given twice: give one list per key", flag,
                       keys[k].name);
    px_sweep_axis *ax = &s->axis[s->n_axes];
    memset(ax, 0, sizeof *ax);
    ax->key = k;
    const char *dots = strstr(list, "..");
    if (dots && !keys[k].number)
        return bad(flag, k, list, err, "A..B is for numbers");
    if (dots) {
        PX_TRY(add_range(ax, flag, list, dots, err));
    } else {
        for (const char *p = list;;) {
            const char *comma = strchr(p, ',');
            const char *end = comma ? comma : p + strlen(p);
            PX_TRY(add_value(ax, flag, list, p, end, err));
            if (!comma)
                break;
            p = comma + 1;
        }
    }
    s->n_axes++;
    int n = px_sweep_n_points(s);
    if (n > PX_SWEEP_MAX_POINTS) {
        s->n_axes--;
        return PX_FAIL(err, PX_ERR_USAGE,
                       "%s: the product of the lists has %d points, more than the %d a sweep "
                       "runs; shorten a list or split the sweep",
                       flag, n, PX_SWEEP_MAX_POINTS);
    }
    return PX_OK;
}

px_status px_sweep_add(px_sweep_spec *s, const char *flag, const char *key_eq_list,
                       px_error *err)
{
    const char *eq = strchr(key_eq_list, '=');
    for (int k = 0; eq && k < PX_SWEEP_N_KEYS; k++) {
        size_t len = strlen(keys[k].name);
        if ((size_t)(eq - key_eq_list) == len && !strncmp(key_eq_list, keys[k].name, len))
            return px_sweep_add_list(s, flag, (px_sweep_key)k, eq + 1, err);
    }
    return PX_FAIL(err, PX_ERR_USAGE,
                   "%s \"%s\": expected KEY=LIST with KEY one of gpus, seq, global-batch, hw, "
                   "framework, precision (e.g. %s gpus=256..2048 %s seq=4096,8192)",
                   flag, key_eq_list, flag, flag);
}

const px_sweep_axis *px_sweep_find(const px_sweep_spec *s, px_sweep_key k)
{
    for (int a = 0; a < s->n_axes; a++)
        if (s->axis[a].key == k)
            return &s->axis[a];
    return NULL;
}

int px_sweep_n_points(const px_sweep_spec *s)
{
    int64_t n = 1;
    for (int a = 0; a < s->n_axes; a++)
        n *= s->axis[a].n; /* at most 64^6: no overflow */
    return n > (1 << 30) ? (1 << 30) : (int)n;
}

void px_sweep_value_text(const px_sweep_spec *s, const px_sweep_row *r, int a, char *buf,
                         size_t len)
{
    const px_sweep_axis *ax = &s->axis[a];
    if (keys[ax->key].number)
        snprintf(buf, len, "%lld", (long long)ax->num[r->idx[a]]);
    else
        snprintf(buf, len, "%s", ax->word[r->idx[a]]);
}

/* The profiles each point loads, so that a bad name is refused before any
 * search and not once per point. */
static px_status check_profiles(const px_sweep_spec *s, const char *release, px_hw *hw,
                                px_framework *fw, px_error *err)
{
    const px_sweep_axis *h = px_sweep_find(s, PX_SWEEP_HW),
                        *f = px_sweep_find(s, PX_SWEEP_FRAMEWORK);
    px_error e;
    for (int i = 0; h && i < h->n; i++)
        if (px_hw_load(h->word[i], NULL, hw, &e) != PX_OK)
            return PX_FAIL(err, e.code, "--sweep hw=%s: %s", h->word[i], e.msg);
    for (int i = 0; f && i < f->n; i++)
        if (px_framework_load_release(f->word[i], NULL, release, fw, &e) != PX_OK)
            return PX_FAIL(err, e.code, "--sweep framework=%s: %s", f->word[i], e.msg);
    return PX_OK;
}

/* Point i's options and profiles into o, hw, fw; its axis indices into r. */
static px_status set_point(const px_sweep_base *b, const px_sweep_spec *s, int i,
                           px_search_opts *o, px_hw *hw, px_framework *fw, px_sweep_row *r,
                           px_error *err)
{
    const char *hw_name = b->hw, *fw_name = b->framework;
    *o = *b->opts;
    r->gpus = b->gpus;
    for (int a = s->n_axes - 1; a >= 0; a--) { /* the last axis varies fastest */
        const px_sweep_axis *ax = &s->axis[a];
        int j = i % ax->n;
        i /= ax->n;
        r->idx[a] = j;
        switch (ax->key) {
        case PX_SWEEP_GPUS: r->gpus = (int)ax->num[j]; break;
        case PX_SWEEP_SEQ: o->seq_len = ax->num[j]; break;
        case PX_SWEEP_GLOBAL_BATCH: o->global_batch = ax->num[j]; break;
        case PX_SWEEP_HW: hw_name = ax->word[j]; break;
        case PX_SWEEP_FRAMEWORK: fw_name = ax->word[j]; break;
        case PX_SWEEP_PRECISION: {
            px_error e;
            px_precision_parse(ax->word[j], &o->precision, &e); /* checked when added */
            break;
        }
        default: break;
        }
    }
    PX_TRY(px_hw_load(hw_name, NULL, hw, err));
    return px_framework_load_release(fw_name, NULL, b->framework_release, fw, err);
}

typedef struct {
    px_search_result res;
    px_hw hw;
    px_framework fw;
    px_search_opts opts;
} sweep_work;

px_status px_sweep_run(const px_sweep_base *base, const px_sweep_spec *spec,
                       px_sweep_row *rows, px_error *err)
{
    sweep_work *w = malloc(sizeof *w);
    if (!w)
        return PX_FAIL(err, PX_ERR_NOMEM, "sweep: out of memory");
    px_status st = check_profiles(spec, base->framework_release, &w->hw, &w->fw, err);
    int n = px_sweep_n_points(spec);
    for (int i = 0; st == PX_OK && i < n; i++) {
        px_sweep_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        memset(&w->res, 0, sizeof w->res); /* a failed search's counts start at 0 */
        st = set_point(base, spec, i, &w->opts, &w->hw, &w->fw, r, err);
        if (st != PX_OK)
            break;
        snprintf(r->hw, sizeof r->hw, "%s", w->hw.name);
        snprintf(r->framework, sizeof r->framework, "%s", w->fw.name);
        px_error e;
        px_error_clear(&e);
        r->st = px_search_for_plan(base->model, &w->hw, &w->fw, r->gpus, &w->opts,
                                   base->partition_given, &w->res, NULL, &e);
        snprintf(r->precision, sizeof r->precision, "%s", px_precision_name(w->opts.precision));
        if (r->st == PX_OK)
            r->best = w->res.top[0];
        else
            px_error_format(&e, r->msg, sizeof r->msg);
        r->n_evaluated = w->res.n_evaluated;
        r->n_valid = w->res.n_valid;
        r->elapsed_s = w->res.elapsed_s;
        r->analytic_s = w->res.analytic_s;
        r->milp_s = w->res.milp_s;
        r->seq_len = w->res.seq_len;
        r->global_batch = w->res.global_batch;
        if (base->on_point)
            st = base->on_point(base->on_point_arg, r, &w->hw, &w->opts, &w->res, err);
    }
    free(w);
    return st;
}
