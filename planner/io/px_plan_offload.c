/* px_plan_offload.c — parallel.offload of a plan file (px_plan_offload.h). */
#include "px_plan_offload.h"

#include <math.h>
#include <string.h>

#include "px_plan.h"

px_status px_plan_offload_write(const px_offload *o, json_t *po, px_error *err)
{
    if (!px_offload_any(o))
        return PX_OK;
    json_t *obj = json_object();
    if (!obj)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    json_object_set_new(obj, "kind", json_string(px_offload_kind_name(o->kind)));
    json_object_set_new(obj, "fraction", json_real(o->fraction));
    if (o->activations) {
        json_object_set_new(obj, "activations", json_true());
        json_object_set_new(obj, "activation_layers", json_integer(o->act_layers));
    }
    json_object_set_new(po, "offload", obj);
    return PX_OK;
}

static px_status bad(const char *file, const char *field, const char *what, px_error *err)
{
    return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "parallel.offload.%s: %s", field,
                        what);
}

px_status px_plan_offload_read(json_t *po, const char *file, px_offload *out, px_error *err)
{
    px_offload_init(out);
    json_t *o = json_object_get(po, "offload");
    if (!o)
        return PX_OK;
    if (!json_is_object(o))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.offload: expected an object");
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        if (strcmp(key, "kind") != 0 && strcmp(key, "fraction") != 0 &&
            strcmp(key, "activations") != 0 && strcmp(key, "activation_layers") != 0)
            return bad(file, key,
                       "unknown field (allowed: kind, fraction, activations, activation_layers)",
                       err);
    }
    json_t *kind = json_object_get(o, "kind");
    if (!json_is_string(kind) ||
        px_offload_kind_parse(json_string_value(kind), &out->kind, NULL) != PX_OK)
        return bad(file, "kind", "expected one of none, optimizer", err);
    json_t *f = json_object_get(o, "fraction");
    if (!json_is_number(f) || !isfinite(json_number_value(f)) || json_number_value(f) <= 0.0 ||
        json_number_value(f) > 1.0)
        return bad(file, "fraction", "expected a share in (0, 1]", err);
    out->fraction = json_number_value(f);
    json_t *act = json_object_get(o, "activations");
    if (act && !json_is_boolean(act))
        return bad(file, "activations", "expected true or false", err);
    out->activations = act && json_is_true(act);
    json_t *n = json_object_get(o, "activation_layers");
    if (n && (!json_is_integer(n) || json_integer_value(n) < 0 ||
              json_integer_value(n) > PX_MAX_LAYERS))
        return bad(file, "activation_layers", "expected an integer in 0 .. the layer count",
                   err);
    out->act_layers = n ? (int)json_integer_value(n) : 0;
    return PX_OK;
}
