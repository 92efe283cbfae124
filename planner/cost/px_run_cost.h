/* px_run_cost.h — what training D tokens costs: wall-clock days, GPU-hours,
 * energy and money, from a prediction's time to train (px_prediction with
 * train_tokens set) and the hardware profile's power_w and
 * price_per_gpu_hour (docs/hw-schema.md says where each value comes from). */
#ifndef PX_RUN_COST_H
#define PX_RUN_COST_H

#include <stdbool.h>

#include "px_hw.h"
#include "px_plan.h"

typedef struct {
    double days;               /* wall clock the job holds its GPUs: the goodput-
                                * adjusted days (failures, restarts and checkpoint
                                * writes included) */
    double gpu_hours;          /* days * 24 * GPUs */
    double power_w;            /* per GPU; 0 = unknown */
    double energy_mwh;         /* GPU board energy, megawatt-hours (host, network and
                                * cooling excluded); valid when has_energy */
    double price_per_gpu_hour; /* US dollars; 0 = unknown */
    double cost_usd;           /* valid when has_cost */
    bool has_energy, has_cost;
} px_run_cost;

/* Fills *out for a prediction of `gpus` GPUs.  price_override > 0 replaces
 * the profile's price (plan --price-per-gpu-hour).  Returns false (out
 * zeroed) when the prediction has no finite time to train. */
bool px_run_cost_of(const px_prediction *pred, int gpus, const px_hw *hw,
                    double price_override, px_run_cost *out);

#endif
