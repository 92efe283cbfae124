/* fuzz_planner — the planner on a fuzzed model and profile: the input is a
 * JSON object {"model": {...}, "hw": {...}, "gpus": N}; when both parse,
 * the search runs (analytic pass, no GLPK program: it has its own limits)
 * on N GPUs (1..64).  Any result, or a clear refusal, passes; a crash,
 * overflow or NaN plan does not (the chosen plan's numbers must be finite
 * and its memory non-negative). */
#include <math.h>

#include <jansson.h>

#include "fuzz_util.h"
#include "px_plan_json.h"
#include "px_search.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!root)
        return 0;
    static px_model m;
    static px_hw hw;
    static px_search_result res;
    px_error err;
    px_error_clear(&err);
    json_t *jm = json_object_get(root, "model"), *jh = json_object_get(root, "hw");
    json_t *jg = json_object_get(root, "gpus");
    int gpus = json_is_integer(jg) ? (int)(json_integer_value(jg) % 64) : 8;
    if (gpus < 1)
        gpus = 1;
    if (jm && jh && px_model_from_json(jm, "fuzz", "model", &m, &err) == PX_OK &&
        px_hw_from_json(jh, "fuzz", "hw", &hw, &err) == PX_OK) {
        px_search_opts o;
        px_search_opts_init(&o);
        o.milp = false;
        o.top = 1;
        px_status st = px_search_run(&m, &hw, gpus, &o, &res, &err);
        px_fuzz_check_error(st, &err);
        if (st == PX_OK && res.n_top > 0) {
            const px_prediction *p = &res.top[0].pred;
            if (!isfinite(p->time.step_s) || !(p->time.step_s >= 0) || p->mem.total < 0 ||
                !isfinite(p->mfu))
                abort();
        }
    }
    json_decref(root);
    return 0;
}
