/* px_plan_finetune.c — parallel.finetune of a plan file: {"mode": "full"} or
 * {"mode": "lora", "lora_rank": R, "lora_alpha": A, "lora_targets": [names]}
 * (px_plan_finetune.h, docs/plan-schema.md). */
#include "px_plan_finetune.h"

#include <math.h>
#include <string.h>

px_status px_plan_finetune_write(const px_finetune *ft, json_t *po, px_error *err)
{
    if (ft->mode == PX_FT_NONE)
        return PX_OK;
    json_t *o = json_object(), *targets = json_array();
    if (!o || !targets) {
        json_decref(o);
        json_decref(targets);
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    }
    json_object_set_new(o, "mode", json_string(px_finetune_mode_name(ft->mode)));
    if (px_finetune_is_lora(ft)) {
        json_object_set_new(o, "lora_rank", json_integer(ft->rank));
        json_object_set_new(o, "lora_alpha", json_real(ft->alpha));
        for (int i = 0; i < PX_LORA_TARGET_COUNT; i++)
            if (ft->targets & (1u << i))
                json_array_append_new(targets, json_string(px_lora_target_name(i)));
        json_object_set_new(o, "lora_targets", targets);
    } else {
        json_decref(targets);
    }
    json_object_set_new(po, "finetune", o);
    return PX_OK;
}

static px_status bad(const char *file, const char *field, const char *what, px_error *err)
{
    return px_error_set(err, PX_ERR_INVALID, file, 0, 0, "parallel.finetune.%s: %s", field,
                        what);
}

static bool is_lora_key(const char *key)
{
    return strncmp(key, "lora_", 5) == 0;
}

static px_status read_targets(json_t *a, const char *file, unsigned *out, px_error *err)
{
    const char *allowed = "expected a non-empty array of qkv, proj, fc1, fc2";
    if (!json_is_array(a) || json_array_size(a) == 0)
        return bad(file, "lora_targets", allowed, err);
    size_t i;
    json_t *v;
    unsigned bits = 0, one;
    json_array_foreach(a, i, v) {
        if (!json_is_string(v) || strcmp(json_string_value(v), "all") == 0 ||
            px_lora_targets_parse(json_string_value(v), &one, NULL) != PX_OK ||
            strchr(json_string_value(v), ','))
            return bad(file, "lora_targets", allowed, err);
        bits |= one;
    }
    *out = bits;
    return PX_OK;
}

px_status px_plan_finetune_read(json_t *po, const char *file, px_finetune *out, px_error *err)
{
    px_finetune_init(out);
    json_t *o = json_object_get(po, "finetune");
    if (!o)
        return PX_OK;
    if (!json_is_object(o))
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.finetune: expected an object");
    json_t *mode = json_object_get(o, "mode");
    if (!json_is_string(mode) ||
        px_finetune_mode_parse(json_string_value(mode), &out->mode, NULL) != PX_OK)
        return bad(file, "mode", "expected one of none, full, lora", err);
    const char *keys[] = {"mode", "lora_rank", "lora_alpha", "lora_targets"};
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v) {
        bool known = false;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
            known |= strcmp(key, keys[k]) == 0;
        if (!known || (is_lora_key(key) && !px_finetune_is_lora(out)))
            return bad(file, key, "unknown field (allowed: mode; under mode lora also "
                                  "lora_rank, lora_alpha, lora_targets)", err);
    }
    if (!px_finetune_is_lora(out))
        return PX_OK;
    json_t *r = json_object_get(o, "lora_rank"), *a = json_object_get(o, "lora_alpha");
    if (!json_is_integer(r) || json_integer_value(r) < 1 ||
        json_integer_value(r) > PX_LORA_MAX_RANK)
        return bad(file, "lora_rank", "expected an integer 1..65536", err);
    out->rank = (int)json_integer_value(r);
    if (!json_is_number(a) || !isfinite(json_number_value(a)) || json_number_value(a) <= 0.0)
        return bad(file, "lora_alpha", "expected a positive number", err);
    out->alpha = json_number_value(a);
    return read_targets(json_object_get(o, "lora_targets"), file, &out->targets, err);
}
