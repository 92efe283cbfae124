/* px_overhead.h — the time a framework spends outside the modelled kernels
 * and collectives, per step and per micro-batch (px_fw_runtime's
 * step_overhead_s and microbatch_overhead_s, 0 unless a profile fitted to
 * measured runs sets them: docs/calibration.md). */
#ifndef PX_OVERHEAD_H
#define PX_OVERHEAD_H

#include "px_framework.h"

/* Seconds added to each micro-batch of a stage (run may be NULL: 0). */
double px_overhead_microbatch_s(const px_fw_runtime *run);

/* Seconds added to each step (run may be NULL: 0). */
double px_overhead_step_s(const px_fw_runtime *run);

#endif
