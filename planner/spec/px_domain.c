/* px_domain.c — see px_domain.h. */
#include "px_domain.h"

int px_domain_job_gpus(const px_hw *hw, int gpus)
{
    int g = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    int host = hw->gpus_per_host;
    if (host <= 0 || host >= g || gpus <= g || gpus % host != 0)
        return g;
    int hosts = gpus / host, per_domain = g / host;
    for (int seg = per_domain; seg > 1; seg--)
        if (hosts % seg == 0)
            return seg * host;
    return host;
}
