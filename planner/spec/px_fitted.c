/* px_fitted.c — the "fitted" provenance object of a profile (px_fitted.h). */
#include "px_fitted.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "px_jfield.h"

static px_status fail(px_error *err, const char *file, const char *fmt, const char *a,
                      const char *b)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, a, b);
    return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "fitted.%s", msg);
}

static bool only_keys(json_t *o, const char *const *keys, const char **bad)
{
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        int i = 0;
        while (keys[i] && strcmp(keys[i], k) != 0)
            i++;
        if (!keys[i]) {
            *bad = k;
            return false;
        }
    }
    return true;
}

static px_status read_runs(json_t *a, const char *file, px_fitted *out, px_error *err)
{
    if (!json_is_array(a) || json_array_size(a) == 0 ||
        json_array_size(a) > PX_FITTED_MAX_RUNS)
        return fail(err, file, "runs: expected an array of 1..32 run ids%s%s", "", "");
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (!s || !s[0] || strlen(s) >= PX_FITTED_ID_LEN)
            return fail(err, file, "runs: every entry is a run id (a string of 1..95 "
                        "characters)%s%s", "", "");
        snprintf(out->runs[i], PX_FITTED_ID_LEN, "%s", s);
    }
    out->n_runs = (int)json_array_size(a);
    return PX_OK;
}

static px_status read_factor(const char *name, json_t *o, const char *file,
                             const char *const *fields, px_fitted_factor *f, px_error *err)
{
    char allowed[256] = "";
    int i = 0;
    for (; fields[i]; i++) {
        size_t u = strlen(allowed);
        snprintf(allowed + u, sizeof allowed - u, "%s%s", i ? ", " : "", fields[i]);
    }
    for (i = 0; fields[i] && strcmp(fields[i], name) != 0; i++)
        ;
    if (!fields[i])
        return fail(err, file, "factors.%s: not a fitted field of this profile (allowed: %s)",
                    name, allowed);
    static const char *const keys[] = {"base", "fitted", NULL};
    const char *bad = NULL;
    if (!json_is_object(o))
        return fail(err, file, "factors.%s: expected an object {\"base\": x, \"fitted\": y}%s",
                    name, "");
    if (!only_keys(o, keys, &bad))
        return fail(err, file, "factors.%s: unknown key \"%s\" (allowed: base, fitted)", name,
                    bad);
    json_t *b = json_object_get(o, "base"), *y = json_object_get(o, "fitted");
    if (!json_is_number(b) || !json_is_number(y) || !isfinite(json_number_value(b)) ||
        !isfinite(json_number_value(y)) || json_number_value(b) < 0 ||
        json_number_value(y) < 0)
        return fail(err, file, "factors.%s: base and fitted must be finite numbers >= 0%s",
                    name, "");
    snprintf(f->field, sizeof f->field, "%s", name);
    f->base = json_number_value(b);
    f->fitted = json_number_value(y);
    return PX_OK;
}

px_status px_fitted_read(json_t *v, const char *file, const char *const *fields,
                         px_fitted *out, px_error *err)
{
    memset(out, 0, sizeof *out);
    static const char *const keys[] = {"base", "runs", "factors", NULL};
    const char *bad = NULL;
    if (!json_is_object(v))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "fitted: expected an object with base, runs and factors, got %s",
                            px_jf_type_name(v));
    if (!only_keys(v, keys, &bad))
        return fail(err, file, "%s: unknown key (allowed: base, runs, factors)%s", bad, "");
    json_t *b = json_object_get(v, "base");
    if (!json_is_string(b) || !json_string_value(b)[0] ||
        strlen(json_string_value(b)) >= sizeof out->base)
        return fail(err, file, "base: expected the base profile's name or path (1..127 "
                    "characters)%s%s", "", "");
    snprintf(out->base, sizeof out->base, "%s", json_string_value(b));
    px_status st = read_runs(json_object_get(v, "runs"), file, out, err);
    if (st != PX_OK)
        return st;
    json_t *fs = json_object_get(v, "factors");
    if (!json_is_object(fs) || json_object_size(fs) == 0 ||
        json_object_size(fs) > PX_FITTED_MAX_FACTORS)
        return fail(err, file, "factors: expected an object of 1..8 fitted fields%s%s", "", "");
    const char *k;
    json_t *o;
    json_object_foreach(fs, k, o) {
        st = read_factor(k, o, file, fields, &out->factors[out->n_factors], err);
        if (st != PX_OK)
            return st;
        out->n_factors++;
    }
    return PX_OK;
}

json_t *px_fitted_to_json(const px_fitted *f)
{
    json_t *o = json_object(), *runs = json_array(), *fs = json_object();
    if (!o || !runs || !fs) {
        json_decref(o);
        json_decref(runs);
        json_decref(fs);
        return NULL;
    }
    for (int i = 0; i < f->n_runs; i++)
        json_array_append_new(runs, json_string(f->runs[i]));
    for (int i = 0; i < f->n_factors; i++) {
        json_t *x = json_object();
        json_object_set_new(x, "base", json_real(f->factors[i].base));
        json_object_set_new(x, "fitted", json_real(f->factors[i].fitted));
        json_object_set_new(fs, f->factors[i].field, x);
    }
    json_object_set_new(o, "base", json_string(f->base));
    json_object_set_new(o, "runs", runs);
    json_object_set_new(o, "factors", fs);
    return o;
}

const px_fitted_factor *px_fitted_find(const px_fitted *f, const char *field)
{
    for (int i = 0; i < f->n_factors; i++)
        if (strcmp(f->factors[i].field, field) == 0)
            return &f->factors[i];
    return NULL;
}

px_status px_fitted_check(const px_fitted *f, const char *file,
                          double (*value_of)(const void *profile, const char *field),
                          const void *profile, px_error *err)
{
    for (int i = 0; i < f->n_factors; i++) {
        double have = value_of(profile, f->factors[i].field), want = f->factors[i].fitted;
        if (fabs(have - want) > 1e-9 * fabs(want))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "fitted.factors.%s.fitted: %g, but the profile's %s is %g "
                                "(they must agree)",
                                f->factors[i].field, want, f->factors[i].field, have);
    }
    return PX_OK;
}
