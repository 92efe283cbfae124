/* fuzz_hf — a Hugging Face config.json with the MoE and MLA fields
 * (seeds: tests/spec/hf/, the malformed corpus/hf): an accepted config must
 * validate, and the planner on it (8 H100s, analytic search) must give a
 * plan with finite, non-negative times and memory or refuse with a message.
 * Inputs without "model_type" are left to fuzz_model (presets). */
#include <math.h>

#include <jansson.h>

#include "fuzz_util.h"
#include "px_model.h"
#include "px_search.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static px_hw hw;
    static bool hw_loaded;
    static px_search_result res;
    px_error err;
    px_error_clear(&err);
    if (!hw_loaded) {
        if (px_hw_load("h100-sxm", NULL, &hw, &err) != PX_OK)
            abort();
        hw_loaded = true;
    }
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    bool is_hf = root && json_is_string(json_object_get(root, "model_type"));
    json_decref(root);
    if (!is_hf)
        return 0;
    px_model m;
    px_status st = px_model_load(px_fuzz_file(data, size, ".json"), NULL, &m, &err);
    px_fuzz_check_error(st, &err);
    if (st != PX_OK)
        return 0;
    if (px_model_validate(&m, &err) != PX_OK)
        abort();
    px_search_opts o;
    px_search_opts_init(&o);
    o.milp = false;
    o.top = 1;
    st = px_search_run(&m, &hw, 8, &o, &res, &err);
    px_fuzz_check_error(st, &err);
    if (st == PX_OK && res.n_top > 0) {
        const px_time *t = &res.top[0].pred.time;
        if (!isfinite(t->step_s) || !(t->step_s > 0) || !(t->compute_s >= 0) ||
            res.top[0].pred.mem.total < 0 || !isfinite(res.top[0].pred.mfu))
            abort();
    }
    return 0;
}
