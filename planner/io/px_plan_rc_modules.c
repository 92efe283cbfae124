/* px_plan_rc_modules.c — parallel.recompute_modules of a plan file
 * (px_plan_rc_modules.h). */
#include "px_plan_rc_modules.h"

#include <string.h>

#include "px_plan.h"

px_status px_plan_rc_modules_write(unsigned set, json_t *po, px_error *err)
{
    if (set == PX_RCM_DEFAULT)
        return PX_OK;
    json_t *a = json_array();
    if (!a)
        return PX_FAIL(err, PX_ERR_NOMEM, "out of memory");
    for (int k = 0; k < PX_RCM_COUNT; k++)
        if (set & (1u << k))
            json_array_append_new(a, json_string(px_rc_module_names[k]));
    json_object_set_new(po, "recompute_modules", a);
    return PX_OK;
}

px_status px_plan_rc_modules_read(json_t *po, const char *file, unsigned *set, px_error *err)
{
    json_t *a = json_object_get(po, "recompute_modules"), *v;
    *set = PX_RCM_DEFAULT;
    if (!a)
        return PX_OK;
    if (!json_is_array(a) || json_array_size(a) == 0)
        return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                            "parallel.recompute_modules: expected a non-empty array of "
                            "core_attn, moe_act, layernorm, mla_up_proj, mlp, moe, "
                            "shared_experts");
    unsigned got = 0;
    size_t i;
    json_array_foreach(a, i, v) {
        const char *name = json_is_string(v) ? json_string_value(v) : NULL;
        int k = name ? px_rc_module_find(name, strlen(name)) : -1;
        if (k < 0 || (got & (1u << k)))
            return px_error_set(err, PX_ERR_INVALID, file, 0, 0,
                                "parallel.recompute_modules[%zu]: %s; allowed: core_attn, "
                                "moe_act, layernorm, mla_up_proj, mlp, moe, shared_experts, "
                                "each once",
                                i, k < 0 ? "not a module name" : "a repeated module");
        got |= 1u << k;
    }
    *set = got;
    return PX_OK;
}
