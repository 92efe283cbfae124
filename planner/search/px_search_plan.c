/* px_search_plan.c — the search `plan` runs; see px_search_plan.h. */
#include "px_search_plan.h"

px_status px_search_for_plan(const px_model *m, const px_hw *hw, const px_framework *fw,
                             int gpus, px_search_opts *o, bool partition_given,
                             px_search_result *res, bool *fixed_uniform, px_error *err)
{
    o->caps = &fw->caps;
    o->run = &fw->run; /* options the caller set (plan's --overlap) override its traits */
    o->precision = px_caps_precision(&fw->caps, o->precision); /* as the search runs it */
    bool uniform = !partition_given && px_search_fully_fixed(m, gpus, o);
    if (uniform)
        o->milp = false;
    if (fixed_uniform)
        *fixed_uniform = uniform;
    return px_search_run(m, hw, gpus, o, res, err);
}
