/* px_run_cost.c — days, GPU-hours, energy and cost of a training run. */
#include "px_run_cost.h"

#include <math.h>
#include <string.h>

bool px_run_cost_of(const px_prediction *pred, int gpus, const px_hw *hw,
                    double price_override, px_run_cost *out)
{
    memset(out, 0, sizeof *out);
    /* the goodput-adjusted days are what the GPUs are held (and billed) for */
    double days = pred->goodput_days;
    if (!(pred->train_tokens > 0.0) || !isfinite(days) || !(days > 0.0) || gpus < 1)
        return false;
    out->days = days;
    out->gpu_hours = days * 24.0 * (double)gpus;
    out->power_w = hw->power_w;
    out->price_per_gpu_hour = price_override > 0.0 ? price_override : hw->price_per_gpu_hour;
    out->has_energy = out->power_w > 0.0;
    if (out->has_energy)
        out->energy_mwh = out->gpu_hours * out->power_w / 1e6; /* W h -> MW h */
    out->has_cost = out->price_per_gpu_hour > 0.0;
    if (out->has_cost)
        out->cost_usd = out->gpu_hours * out->price_per_gpu_hour;
    return true;
}
