/* fuzz_framework — a framework profile (seeds: frameworks/): an accepted
 * file must name itself and allow what the reader promises (a schedule, a
 * recompute mode, ZeRO 0 and a precision), and the planner under its
 * capabilities (tiny-moe on 8 H100s, analytic search) must give a plan
 * with finite, positive times or refuse with a message. */
#include <math.h>

#include "fuzz_util.h"
#include "px_framework.h"
#include "px_search.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static px_model m;
    static px_hw hw;
    static bool loaded;
    static px_framework fw;
    static px_search_result res;
    px_error err;
    px_error_clear(&err);
    if (!loaded) {
        if (px_hw_load("h100-sxm", NULL, &hw, &err) != PX_OK ||
            px_model_load("tiny-moe", NULL, &m, &err) != PX_OK)
            abort();
        loaded = true;
    }
    px_status st = px_framework_load(px_fuzz_file(data, size, ".json"), NULL, &fw, &err);
    px_fuzz_check_error(st, &err);
    if (st != PX_OK)
        return 0;
    if (!fw.name[0] || !fw.caps.precisions || !fw.caps.zero[0])
        abort();
    px_search_opts o;
    px_search_opts_init(&o);
    o.milp = false;
    o.top = 1;
    o.caps = &fw.caps;
    o.run = &fw.run;
    st = px_search_run(&m, &hw, 8, &o, &res, &err);
    px_fuzz_check_error(st, &err);
    if (st == PX_OK && res.n_top > 0) {
        const px_time *t = &res.top[0].pred.time;
        if (!isfinite(t->step_s) || !(t->step_s > 0) || res.top[0].pred.mem.total < 0)
            abort();
    }
    return 0;
}
