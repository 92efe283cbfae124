/* px_job_domain.c — a job's fast domain (px_job_domain.h). */
#include "px_job_domain.h"

int px_job_domain_gpus(const px_hw *hw, int64_t gpus)
{
    int node = hw->gpus_per_node > 0 ? hw->gpus_per_node : 1;
    int host = hw->gpus_per_host;
    if (host <= 0 || host >= node || gpus <= node || gpus % host != 0)
        return node;
    int64_t hosts = gpus / host;
    int per_domain = node / host;
    for (int seg = per_domain; seg > 1; seg--)
        if (hosts % seg == 0)
            return seg * host;
    return host;
}
