/* px_overhead.c — per-step and per-micro-batch overheads (px_overhead.h). */
#include "px_overhead.h"

double px_overhead_microbatch_s(const px_fw_runtime *run)
{
    return run ? run->microbatch_overhead_s : 0.0;
}

double px_overhead_step_s(const px_fw_runtime *run)
{
    return run ? run->step_overhead_s : 0.0;
}
