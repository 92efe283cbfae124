/* px_jfield.c — strict, table-driven JSON <-> struct mapping (see px_jfield.h). */
#include "px_jfield.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *px_jf_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a real number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

void px_jf_join(char *buf, size_t buf_len, const char *path, const char *key)
{
    if (path && path[0])
        snprintf(buf, buf_len, "%s.%s", path, key);
    else
        snprintf(buf, buf_len, "%s", key);
}

static void append(char *buf, size_t buf_len, const char *s)
{
    size_t used = strlen(buf);
    if (used + 1 >= buf_len)
        return;
    snprintf(buf + used, buf_len - used, "%s%s", used ? ", " : "", s);
}

void px_jf_key_list(const px_jfield *fields, int n_fields, const char *const *extra_keys,
                    char *buf, size_t buf_len)
{
    if (buf_len == 0)
        return;
    buf[0] = '\0';
    for (int i = 0; i < n_fields; i++)
        append(buf, buf_len, fields[i].key);
    for (int i = 0; extra_keys && extra_keys[i]; i++)
        append(buf, buf_len, extra_keys[i]);
}

static void enum_list(const px_jfield *f, char *buf, size_t buf_len)
{
    buf[0] = '\0';
    for (int i = 0; i < f->n_names; i++)
        append(buf, buf_len, f->names[i]);
}

static const char *type_word(px_jf_type t)
{
    switch (t) {
    case PX_JF_INT:
    case PX_JF_I64: return "an integer";
    case PX_JF_DBL: return "a number";
    case PX_JF_BOOL: return "true or false";
    case PX_JF_STR: return "a string";
    case PX_JF_ENUM: return "a string";
    case PX_JF_DBYTES: return "an integer";
    }
    return "?";
}

/* The largest value a field allows: its table bound, else its type's. */
static double int_max(const px_jfield *f)
{
    double type_max = f->type == PX_JF_INT ? (double)INT32_MAX : 9007199254740992.0; /* 2^53 */
    return f->max > 0 && f->max < type_max ? f->max : type_max;
}

static double dbl_max(const px_jfield *f)
{
    return f->max > 0 ? f->max : DBL_MAX;
}

static px_status check_int(const px_jfield *f, int64_t x, const char *file, const char *fpath,
                           px_error *err)
{
    if ((double)x < f->min || (double)x > int_max(f))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s: %lld is out of range (allowed: integer %.0f..%.0f)", fpath,
                            (long long)x, f->min, int_max(f));
    return PX_OK;
}

static px_status check_dbl(const px_jfield *f, double x, const char *file, const char *fpath,
                           px_error *err)
{
    if (!(x >= f->min && x <= dbl_max(f)))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "%s: %g is out of range (allowed: number %g..%g)", fpath, x,
                            f->min, dbl_max(f));
    return PX_OK;
}

static px_status read_one(const px_jfield *f, json_t *v, void *base, const char *file,
                          const char *fpath, px_error *err)
{
    char *p = (char *)base + f->offset;
    switch (f->type) {
    case PX_JF_INT:
    case PX_JF_I64: {
        if (!json_is_integer(v))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected an integer in %.0f..%.0f, got %s", fpath, f->min,
                                int_max(f), px_jf_type_name(v));
        json_int_t x = json_integer_value(v);
        px_status st = check_int(f, (int64_t)x, file, fpath, err);
        if (st != PX_OK)
            return st;
        if (f->type == PX_JF_INT)
            *(int *)p = (int)x;
        else
            *(int64_t *)p = (int64_t)x;
        return PX_OK;
    }
    case PX_JF_DBL: {
        if (!json_is_number(v))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected a number in %g..%g, got %s", fpath, f->min,
                                dbl_max(f), px_jf_type_name(v));
        double x = json_number_value(v);
        px_status st = check_dbl(f, x, file, fpath, err);
        if (st != PX_OK)
            return st;
        *(double *)p = x;
        return PX_OK;
    }
    case PX_JF_DBYTES: {
        if (!json_is_integer(v) || (double)json_integer_value(v) < f->min)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected an integer number of bytes >= %.0f, got %s", fpath,
                                f->min, px_jf_type_name(v));
        *(double *)p = (double)json_integer_value(v);
        return PX_OK;
    }
    case PX_JF_BOOL:
        if (!json_is_boolean(v))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected true or false, got %s", fpath,
                                px_jf_type_name(v));
        *(bool *)p = json_is_true(v);
        return PX_OK;
    case PX_JF_STR: {
        if (!json_is_string(v))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected a string, got %s", fpath, px_jf_type_name(v));
        const char *s = json_string_value(v);
        if (strlen(s) >= f->size)
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: string too long (at most %zu characters)", fpath,
                                f->size - 1);
        snprintf(p, f->size, "%s", s);
        return PX_OK;
    }
    case PX_JF_ENUM: {
        char allowed[512];
        enum_list(f, allowed, sizeof allowed);
        if (!json_is_string(v))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: expected one of %s, got %s", fpath, allowed,
                                px_jf_type_name(v));
        const char *s = json_string_value(v);
        for (int i = 0; i < f->n_names; i++)
            if (strcmp(s, f->names[i]) == 0) {
                *(int *)p = i;
                return PX_OK;
            }
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "%s: \"%s\" is not one of %s",
                            fpath, s, allowed);
    }
    }
    return PX_FAIL(err, PX_ERR_INTERNAL, "%s: bad field type", fpath);
}

static bool is_known(const px_jfield *fields, int n_fields, const char *const *extra,
                     const char *key)
{
    for (int i = 0; i < n_fields; i++)
        if (strcmp(fields[i].key, key) == 0)
            return true;
    for (int i = 0; extra && extra[i]; i++)
        if (strcmp(extra[i], key) == 0)
            return true;
    return false;
}

px_status px_jf_read(const px_jfield *fields, int n_fields, json_t *obj, void *base,
                     const char *file, const char *path, const char *const *extra_keys,
                     px_error *err)
{
    if (!json_is_object(obj))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "%s: expected an object, got %s",
                            path && path[0] ? path : "(root)", px_jf_type_name(obj));
    /* Unknown keys first: a typo in a key is the likeliest cause of a
     * "missing field" that follows. */
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        if (!is_known(fields, n_fields, extra_keys, key)) {
            char keys[2048], fpath[256];
            px_jf_key_list(fields, n_fields, extra_keys, keys, sizeof keys);
            px_jf_join(fpath, sizeof fpath, path, key);
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: unknown key \"%s\"; allowed keys: %s", fpath, key, keys);
        }
    }
    for (int i = 0; i < n_fields; i++) {
        char fpath[256];
        px_jf_join(fpath, sizeof fpath, path, fields[i].key);
        v = json_object_get(obj, fields[i].key);
        if (!v) {
            if (!fields[i].required)
                continue;
            if (fields[i].type == PX_JF_ENUM) {
                char allowed[512];
                enum_list(&fields[i], allowed, sizeof allowed);
                return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                    "%s: missing required field (one of %s)", fpath, allowed);
            }
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "%s: missing required field (%s)", fpath,
                                type_word(fields[i].type));
        }
        px_status st = read_one(&fields[i], v, base, file, fpath, err);
        if (st != PX_OK)
            return st;
    }
    return PX_OK;
}

px_status px_jf_check_bounds(const px_jfield *fields, int n_fields, const void *base,
                             const char *file, const char *path, px_error *err)
{
    for (int i = 0; i < n_fields; i++) {
        const px_jfield *f = &fields[i];
        const char *p = (const char *)base + f->offset;
        char fpath[256];
        px_jf_join(fpath, sizeof fpath, path, f->key);
        px_status st = PX_OK;
        if (f->type == PX_JF_INT)
            st = check_int(f, *(const int *)p, file, fpath, err);
        else if (f->type == PX_JF_I64)
            st = check_int(f, *(const int64_t *)p, file, fpath, err);
        else if (f->type == PX_JF_DBL)
            st = check_dbl(f, *(const double *)p, file, fpath, err);
        if (st != PX_OK)
            return st;
    }
    return PX_OK;
}

px_status px_jf_write(const px_jfield *fields, int n_fields, const void *base, json_t *obj,
                      const char *path, px_error *err)
{
    for (int i = 0; i < n_fields; i++) {
        const px_jfield *f = &fields[i];
        const char *p = (const char *)base + f->offset;
        json_t *v = NULL;
        switch (f->type) {
        case PX_JF_INT: v = json_integer(*(const int *)p); break;
        case PX_JF_I64: v = json_integer((json_int_t)*(const int64_t *)p); break;
        case PX_JF_DBL: {
            double x = *(const double *)p;
            if (!isfinite(x)) {
                char fpath[256];
                px_jf_join(fpath, sizeof fpath, path, f->key);
                return PX_FAIL(err, PX_ERR_INVALID, "%s: %g cannot be written as JSON", fpath,
                               x);
            }
            v = json_real(x);
            break;
        }
        case PX_JF_DBYTES: {
            double x = *(const double *)p;
            if (!isfinite(x) || fabs(x) > 9.0e18) {
                char fpath[256];
                px_jf_join(fpath, sizeof fpath, path, f->key);
                return PX_FAIL(err, PX_ERR_INVALID, "%s: %g bytes cannot be written", fpath, x);
            }
            v = json_integer((json_int_t)llround(x));
            break;
        }
        case PX_JF_BOOL: v = json_boolean(*(const bool *)p); break;
        case PX_JF_STR: v = json_string(p); break;
        case PX_JF_ENUM: {
            int e = *(const int *)p;
            if (e < 0 || e >= f->n_names) {
                char fpath[256];
                px_jf_join(fpath, sizeof fpath, path, f->key);
                return PX_FAIL(err, PX_ERR_INVALID, "%s: enum value %d out of range", fpath, e);
            }
            v = json_string(f->names[e]);
            break;
        }
        }
        if (!v || json_object_set_new(obj, f->key, v) != 0)
            return PX_FAIL(err, PX_ERR_NOMEM, "out of memory writing %s", f->key);
    }
    return PX_OK;
}

px_status px_jf_load_file(const char *path, json_t **out, px_error *err)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return px_error_set(err, PX_ERR_IO, path, 0, 0, "cannot open for reading");
    json_error_t je;
    json_t *root = json_loadf(fp, JSON_REJECT_DUPLICATES, &je);
    fclose(fp);
    if (!root)
        return px_error_set(err, PX_ERR_PARSE, path, je.line > 0 ? je.line : 0,
                            je.column > 0 ? je.column : 0, "malformed JSON: %s", je.text);
    *out = root;
    return PX_OK;
}
